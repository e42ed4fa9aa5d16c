"""The privacy scorecard in the Dagster UI: one asset per release asset, materialised by every
gate run, partitioned by release id, with the decision, the blocking rules' numbers, the reason
for a block in words and the report; and no blocking check left without a result ("emitted no
result" never appears in the run's event log)."""

import shutil
import tempfile
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from privgate.dagster import PrivgateResource, build_privgate_checks, build_privgate_scorecards
from privgate.dagster.scorecard import reason
from privgate.dagster.translator import PrivgateTranslator

REPO = Path(__file__).resolve().parents[2]


def permuted(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Each column shuffled on its own (marginals kept, no real record copied)."""
    return pl.DataFrame(
        {c: frame[c].sample(fraction=1.0, shuffle=True, seed=seed + i) for i, c in enumerate(frame.columns)}
    )


# blocking rules of every kind of applicability: always, with / without a holdout, and a trend
# rule that has nothing to compare with on the first release
GATE = """\
version: 1
dataset: scorecard
metrics:
  common_rows:
    threshold: {when: no_holdout, block: 0.01}
    baseline: {when: with_holdout, warn: 0.001, block: 0.01}
  hitting_rate:
    threshold: {block: 0.5}
    trend: {block: 0.4}
"""
RELEASES = ["2026-01", "2026-02", "2026-03"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, real_frame):
    shm = Path("/dev/shm")  # the event log's many synced writes are slow on a busy disk
    temp_dir = tempfile.mkdtemp(prefix="privgate-scorecard-", dir=shm if shm.is_dir() else None)
    try:
        with dg.instance_for_test(temp_dir=temp_dir) as instance:
            yield _run_three(tmp_path_factory.mktemp("scorecard"), real_frame, instance)
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def _run_three(tmp_path, real_frame, instance):
    real, holdout = tmp_path / "real.parquet", tmp_path / "holdout.parquet"
    real_frame.write_parquet(real)
    pl.read_parquet(REPO / "privgate" / "data" / "adult_holdout.parquet").head(600).write_parquet(holdout)
    (tmp_path / "gate.yaml").write_text(GATE)
    parts = dg.StaticPartitionsDefinition(RELEASES)

    @dg.asset(partitions_def=parts)
    def monthly_release(context: dg.AssetExecutionContext) -> pl.DataFrame:
        if context.partition_key == "2026-03":  # 100 of 600 real people copied: blocked
            return pl.concat([permuted(real_frame, 3).head(200), real_frame.head(100)])
        return permuted(real_frame, int(context.partition_key[-1])).head(300)

    checks = build_privgate_checks(assets=[monthly_release], gate_config=tmp_path / "gate.yaml")
    defs = dg.Definitions(
        assets=[monthly_release, *build_privgate_scorecards(assets=[monthly_release])],
        asset_checks=checks,
        resources={
            "privgate": PrivgateResource(
                real_path=str(real),
                holdout_path=str(holdout),
                reports_dir=str(tmp_path / "reports"),
                history_url=f"sqlite:///{tmp_path / 'h.sqlite'}",
            )
        },
    )
    job = defs.resolve_implicit_global_asset_job_def()
    results = [job.execute_in_process(instance=instance, partition_key=p, raise_on_error=False) for p in RELEASES]
    return {
        "results": results,
        "instance": instance,
        "key": PrivgateTranslator().get_asset_key({"kind": "scorecard", "asset_key": monthly_release.key}),
    }


def test_scorecard_across_releases(runs):
    inst, key = runs["instance"], runs["key"]
    assert key == dg.AssetKey("monthly_release_privacy_scorecard")
    events = {}
    for part in RELEASES:
        records = inst.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[part]), limit=1
        ).records
        events[part] = records[0].event_log_entry.asset_materialization
    md = {p: e.metadata for p, e in events.items()}
    assert [md[p]["release"].value for p in RELEASES] == RELEASES  # named by release id
    assert [md[p]["decision_code"].value for p in RELEASES] == [0, 0, 2]
    assert [md[p]["decision"].value for p in RELEASES] == ["pass", "pass", "block"]
    last = md["2026-03"]
    assert last["reason"].value.startswith("blocked: common_rows baseline: excess")
    # one plot per blocking rule, named by what it compares, rounded; the limits in the table
    assert last["common_rows excess"].value == pytest.approx(100 / 600, abs=2e-3)
    assert "hitting_rate" in last and "hitting_rate increase" in last
    assert "common_rows" not in last  # the no-holdout rule does not apply to these runs
    head = {r.data["rule"]: r.data for r in last["headline"].value.records}
    assert head["common_rows excess"]["limit"] == 0.01 and head["common_rows excess"]["verdict"] == "block"
    assert (
        head["common_rows excess"]["lower"]
        <= head["common_rows excess"]["value"]
        <= head["common_rows excess"]["upper"]
    )
    assert [r.data["release"] for r in last["releases"].value.records] == RELEASES
    # a blocked release is marked blocked in words, never shown like a passed one
    assert [r.data["decision"] for r in last["releases"].value.records] == ["passed", "passed", "BLOCKED"]
    assert events["2026-03"].description.startswith("release 2026-03: BLOCKED")
    # the trend by release of each rule with a block limit: value and interval per release, the
    # limits, the blocked release named; inline PNGs, no link
    trends = last["trends"].value
    assert (
        "**common_rows: excess over the holdout baseline by release (baseline rule)** — limits: warn 0.001, block 0.01; blocked: 2026-03"
        in trends
    )
    assert "**hitting_rate: value by release (threshold rule)** — limits: block 0.5; blocked: 2026-03" in trends
    assert trends.count("](data:image/png;base64,") == 2 and "http" not in trends
    assert "**Decision: BLOCK**" in last["report"].value and str(last["html_report"].value).endswith(".html")
    assert "first accepted release" not in md["2026-02"]["reason"].value


def test_no_blocking_check_is_silent_and_check_metadata_is_lean(runs):
    inst = runs["instance"]
    for result in runs["results"]:
        messages = [e.message or "" for e in inst.all_logs(result.run_id)]
        assert not [m for m in messages if "emitted no result" in m]
        for ev in result.get_asset_check_evaluations():
            if ev.check_name != "gate_decision":
                assert set(ev.metadata) <= {"release", "value", "lower", "upper", "limit", "applied"}
    first = {e.check_name: e for e in runs["results"][0].get_asset_check_evaluations()}
    trend = first["hitting_rate__trend_block"]
    assert trend.passed and trend.metadata["applied"].value is False
    assert first["common_rows__threshold_block"].metadata["applied"].value is False


def test_reason_in_words():
    from privgate.gates import GateCheck, GateOutcome, decision_of

    checks = [
        GateCheck(
            metric="common_rows",
            rule="threshold",
            value=0.5,
            raw=0.5,
            threshold=0.01,
            severity="block",
            verdict="block",
            message="value 0.5000 > 0.01",
        ),
        GateCheck(
            metric="dcr",
            rule="trend",
            value=0.5,
            raw=0.5,
            threshold=0.01,
            severity="warn",
            verdict="warn",
            message="increase +0.1 > 0.01",
        ),
    ]
    decision, code = decision_of(checks)
    outcome = GateOutcome(run_id="r", dataset="d", release_id="v1", decision=decision, checks=checks, exit_code=code)
    assert reason(outcome) == "blocked: common_rows threshold: value 0.5000 > 0.01"
