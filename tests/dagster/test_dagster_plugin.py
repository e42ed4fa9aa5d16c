"""privgate on a user's own Dagster project: the documented example as written, the factory on
pandas / Arrow / path assets and partitioned assets, per-run config, and the resource."""

import re
import runpy
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from privgate.dagster import PrivgateResource, PrivgateRunConfig, build_privgate_checks
from privgate.dagster.rule_checks import DECISION_CHECK
from privgate.history import HistoryStore

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "dagster_existing_project.py"

GATE = "version: 1\ndataset: plugin\nmetrics:\n  common_rows:\n    threshold: {block: 0.1}\n"


def _checks(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_documented_example_is_at_most_15_lines_and_runs(tmp_path, monkeypatch, real_frame, instance):
    """docs/examples/dagster_existing_project.py exactly as in docs/dagster.md: loads, runs,
    and its blocking checks stop a leaky release's downstream asset."""
    lines = [ln for ln in EXAMPLE.read_text().splitlines() if ln.strip()]
    assert len(lines) <= 15
    assert EXAMPLE.read_text() in (REPO / "docs" / "dagster.md").read_text()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVGATE_HISTORY_URL", f"sqlite:///{tmp_path / 'h.sqlite'}")
    real_frame.write_parquet("customers.parquet")
    real_frame.head(300).write_parquet("synthetic_customers.parquet")  # 300 copied people
    defs = runpy.run_path(str(EXAMPLE))["defs"]
    dg.Definitions.validate_loadable(defs)

    @dg.asset(deps=["synthetic_customers"])
    def shared_with_partner() -> None:
        return None

    job = dg.Definitions.merge(
        defs, dg.Definitions(assets=[shared_with_partner])
    ).resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    checks = _checks(result)
    assert not checks[DECISION_CHECK].passed  # the shipped default gate blocks 50 % copies
    assert not result.success
    mats = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    # nothing downstream of the blocked release; its privacy scorecard is materialised
    assert mats == {"synthetic_customers", "synthetic_customers_privacy_scorecard"}
    # the default gate's holdout rules do not apply (no holdout): they pass saying so, and
    # Dagster never warns that a blocking check emitted no result
    assert checks["hitting_rate__baseline_block"].metadata["applied"].value is False
    logs = [e.message or "" for e in instance.all_logs(result.run_id)]
    assert not [m for m in logs if "emitted no result" in m]


@pytest.mark.parametrize("kind", ["pandas", "arrow", "path"])
def test_factory_takes_pandas_arrow_and_path_assets(kind, tmp_path, real_frame, instance):
    real = tmp_path / "real.parquet"
    real_frame.write_parquet(real)
    release = real_frame.head(100)  # 100 of 600 real records copied: common_rows 1/6 > 0.1
    (tmp_path / "gate.yaml").write_text(GATE)

    @dg.asset(name=f"release_{kind}")
    def release_asset():
        if kind == "pandas":
            return release.to_pandas()
        if kind == "arrow":
            return release.to_arrow()
        path = tmp_path / "release.parquet"
        release.write_parquet(path)
        return str(path)

    checks = build_privgate_checks(assets=[release_asset], gate_config=tmp_path / "gate.yaml")
    result = dg.materialize(
        [release_asset, *checks],
        instance=instance,
        raise_on_error=False,
        resources={"privgate": PrivgateResource(real_path=str(real), history_url=f"sqlite:///{tmp_path / 'h.sqlite'}")},
    )
    got = _checks(result)
    assert set(got) == {DECISION_CHECK, "common_rows__threshold_block"}
    rule = got["common_rows__threshold_block"]
    assert not rule.passed and rule.metadata["value"].value == pytest.approx(100 / 600, rel=1e-3)
    assert rule.partition is None  # an unpartitioned asset: the release id is the time the
    release = rule.metadata["release"].value  # release asset was materialised, never a run id
    assert release != result.run_id and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", release)


def test_partitioned_asset_per_run_config_and_resource_override(tmp_path, real_frame, instance):
    """Partition key = release id; run config gives another release id and a holdout; a
    gate configuration on the resource replaces the declared one at run time."""
    from privgate.history import HistoryStore

    real = tmp_path / "real.parquet"
    real_frame.write_parquet(real)
    holdout = tmp_path / "holdout.parquet"
    pl.read_parquet(REPO / "privgate" / "data" / "adult_holdout.parquet").head(600).write_parquet(holdout)
    (tmp_path / "gate.yaml").write_text(GATE + "  hitting_rate:\n    baseline: {when: with_holdout, warn: 0.5}\n")
    parts = dg.StaticPartitionsDefinition(["2024-05", "2024-06"])

    @dg.asset(partitions_def=parts)
    def monthly_release(context: dg.AssetExecutionContext) -> pl.DataFrame:
        seed = int(context.partition_key[-2:])  # every column shuffled on its own: no copies
        return pl.DataFrame({c: real_frame[c].shuffle(seed=seed + i) for i, c in enumerate(real_frame.columns)}).head(
            300
        )

    (checks,) = build_privgate_checks(assets=[monthly_release], gate_config=tmp_path / "gate.yaml")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    resource = PrivgateResource(real_path=str(real), history_url=url)
    op_name = checks.node_def.name
    # without a holdout the baseline rule does not apply: no result, not a green one
    r1 = dg.materialize(
        [monthly_release, checks],
        instance=instance,
        partition_key="2024-05",
        resources={"privgate": resource},
        raise_on_error=False,
    )
    assert "hitting_rate__baseline_warn" not in _checks(r1)
    assert {c.partition for c in _checks(r1).values()} == {"2024-05"}
    # per-run config: another release id and a holdout for this run only
    r2 = dg.materialize(
        [monthly_release, checks],
        instance=instance,
        partition_key="2024-06",
        resources={"privgate": resource},
        raise_on_error=False,
        run_config=dg.RunConfig(ops={op_name: PrivgateRunConfig(release_id="june-final", holdout_path=str(holdout))}),
    )
    got = _checks(r2)
    assert "hitting_rate__baseline_warn" in got
    assert got["hitting_rate__baseline_warn"].metadata["release"].value == "june-final"
    assert "lower" in got["hitting_rate__baseline_warn"].metadata
    store = HistoryStore(url)
    try:
        assert store.runs("plugin")["release_id"].to_list() == ["2024-05", "june-final"]
    finally:
        store.close()
    # the resource's own gate configuration wins at run time (dataset renamed)
    other = tmp_path / "other.yaml"
    other.write_text(GATE.replace("dataset: plugin", "dataset: renamed"))
    dg.materialize(
        [monthly_release, checks],
        instance=instance,
        partition_key="2024-05",
        resources={"privgate": PrivgateResource(real_path=str(real), history_url=url, gate_config=str(other))},
        raise_on_error=False,
    )
    store = HistoryStore(url)
    try:
        assert store.runs("renamed").height == 1
    finally:
        store.close()


def test_factory_rejects_multi_asset_and_empty_input():
    @dg.multi_asset(specs=[dg.AssetSpec("a"), dg.AssetSpec("b")])
    def two():
        yield dg.MaterializeResult(asset_key="a")
        yield dg.MaterializeResult(asset_key="b")

    with pytest.raises(dg.DagsterInvalidDefinitionError, match="2 assets"):
        build_privgate_checks(assets=[two])
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="no assets"):
        build_privgate_checks(assets=[])
    # an asset key works too (the asset may live in another code location)
    (c,) = build_privgate_checks(assets=["elsewhere"])
    assert {k.asset_key for k in c.check_keys} == {dg.AssetKey("elsewhere")}


def test_pool_per_dataset():
    (c,) = build_privgate_checks(assets=["x"])
    assert c.node_def.pool == "privgate_default"  # the default configuration's dataset
    (d,) = build_privgate_checks(assets=["x"], pool="mine")
    assert d.node_def.pool == "mine"


def test_ordered_history_compares_with_the_last_accepted_earlier_release(tmp_path, real_frame):
    """ReleaseOrderedHistory: the trend predecessor is the last accepted release *before* this
    one in release order -- a later release recorded first, or a blocked earlier one, is not."""
    from privgate.dagster.privgate_resource import ReleaseOrderedHistory
    from privgate.gates import run_gate
    from privgate.history import HistoryStore

    cfg = {"version": 1, "dataset": "order", "metrics": {"common_rows": {"threshold": {"block": 0.4}}}}
    store = HistoryStore(f"sqlite:///{tmp_path / 'h.sqlite'}")
    try:
        ok = real_frame.sample(300, seed=4, shuffle=True).with_columns(pl.col("age") + 1000)  # no copies: accepted
        for rid, frame in (("c", ok), ("a", ok), ("b", real_frame)):  # b: a copy, blocked
            run_gate(cfg, real_frame, frame, release_id=rid, history=store)
        view = ReleaseOrderedHistory(store, ["a", "b"])  # the release after b
        assert view.last_accepted("order").release_id == "a"  # not c (later), not b (blocked)
        assert ReleaseOrderedHistory(store, []).last_accepted("order") is None
        assert ReleaseOrderedHistory(store, None).last_accepted("order").release_id == "a"
    finally:
        store.close()


def test_dataset_lock_serialises_threads(tmp_path):
    import threading
    import time

    from privgate.dagster.privgate_resource import dataset_lock

    inside, overlap = [], []

    def work():
        with dataset_lock("d", f"sqlite:///{tmp_path / 'h.sqlite'}", str(tmp_path)):
            inside.append(1)
            if len(inside) > 1:
                overlap.append(1)
            time.sleep(0.2)
            inside.pop()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not overlap


def test_postgres_advisory_lock(tmp_path):
    import os
    import threading
    import time

    url = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL not set")
    from privgate.dagster.privgate_resource import dataset_lock

    order = []

    def work(i):
        with dataset_lock(f"lock-test-{tmp_path.name}", url):
            order.append(("in", i))
            time.sleep(0.3)
            order.append(("out", i))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e for e, _ in order] == ["in", "out", "in", "out"]


def test_sensor_runs_plan_only_the_rules_that_apply(tmp_path):
    """With a holdout, `when: no_holdout` rules are left out of the runs the sensor requests
    (Dagster then shows them as not evaluated for those releases, not as executed)."""
    from privgate.dagster.build_checks import applicable_check_keys
    from privgate.dagster.definitions import build_definitions
    from privgate.gates import default_gate_config

    cfg = default_gate_config()
    with_h = {k.name for k in applicable_check_keys("r", cfg, has_holdout=True)}
    without = {k.name for k in applicable_check_keys("r", cfg, has_holdout=False)}
    whens = {f"{m.name}__{r.kind}_{r.severity}": r.when for m in cfg.metrics.values() for r in m.rules}
    assert with_h == {DECISION_CHECK} | {n for n, w in whens.items() if w != "no_holdout"}
    assert without == {DECISION_CHECK} | {n for n, w in whens.items() if w != "with_holdout"}
    root = tmp_path / "root"
    (root / "releases").mkdir(parents=True)
    (root / "releases" / "r1.parquet").write_bytes(b"")
    defs = build_definitions(data_dir=root, holdout_path=tmp_path / "h.parquet", env={}, sensor_settle_seconds=0)
    with dg.instance_for_test() as inst:
        sensor = defs.resolve_sensor_def("new_release_sensor")
        result = sensor(
            dg.build_sensor_context(
                instance=inst, definitions=defs, resources={"locations": defs.resources["locations"]}
            )
        )
    (request,) = result.run_requests
    assert {k.name for k in request.asset_check_keys} == with_h


def test_unwritable_reports_block_the_release_and_the_history_says_so(tmp_path):
    """A fail-open path through Dagster: the resource writes the reports before it records the
    run (privgate.finalise.finalise_run, as `privgate gate` does), so a reports folder
    that cannot be written blocks the release and the history row is that final decision."""
    from privgate.dagster import PrivgateResource
    from privgate.data import load_example

    real = tmp_path / "real.parquet"
    frame = load_example()
    frame.write_parquet(real)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a regular file where the reports folder should be")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    resource = PrivgateResource(real_path=str(real), history_url=url, reports_dir=str(blocker))
    release = pl.DataFrame({c: frame[c].shuffle(seed=i) for i, c in enumerate(frame.columns)})
    gate = {"version": 1, "dataset": "reports", "metrics": {"common_rows": {"threshold": {"block": 0.5}}}}
    from privgate.gates import parse_gate_config

    outcome, reports = resource.evaluate(release, release_id="r1", declared=parse_gate_config(gate))
    assert reports == {} and outcome.exit_code == 3 and str(outcome.decision) == "block"
    assert any(c.metric == "(report)" for c in outcome.checks)
    store = HistoryStore(url)
    try:
        runs = store.runs("reports")
        assert runs["decision"].to_list() == ["block"] and runs["exit_code"].to_list() == [3]
        assert store.last_accepted("reports") is None
    finally:
        store.close()
    # with a writable folder the same release passes, both reports are written, and it is recorded
    ok = resource.model_copy(update={"reports_dir": str(tmp_path / "reports")})
    outcome, reports = ok.evaluate(release, release_id="r2", declared=parse_gate_config(gate))
    assert outcome.exit_code == 0 and sorted(reports) == ["html", "json"]
    assert all(p.is_file() for p in reports.values())
