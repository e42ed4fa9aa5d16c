"""End-to-end runs of the release job on an instance_for_test: pass, warn and block releases."""

from __future__ import annotations

import json
import re

import dagster as dg
import polars as pl
import pytest

from privgate.dagster.definitions import EVALUATE_JOB, REEVALUATE_JOB
from privgate.dagster.rule_checks import DECISION_CHECK

RELEASES = ("r-pass", "r-warn", "r-block")

RELEASE = dg.AssetKey("synthetic_release")
PUBLISHED = dg.AssetKey("published_release")


def _run(defs, instance, release_id, job=EVALUATE_JOB):  # noqa: D103
    instance.add_dynamic_partitions("releases", [release_id])
    return defs.resolve_job_def(job).execute_in_process(
        instance=instance, partition_key=release_id, raise_on_error=False
    )


def _checks(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _materialized(result) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


def _partition_events(instance, key, partition):
    return list(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=10
        ).records
    )


def _md(event_metadata) -> dict:
    return {k: v.value for k, v in event_metadata.items()}


def test_passing_release_is_published(three):
    example, result = three["example"], three["results"]["r-pass"]
    assert result.success
    assert _materialized(result) == {
        "real_data",
        "synthetic_release",
        "published_release",
        "synthetic_release_privacy_scorecard",
    }
    checks = _checks(result)
    # the first release has nothing to compare with: its trend rule yields no result (Dagster
    # shows it as skipped for this release), not a green success
    assert set(checks) == {
        DECISION_CHECK,
        "common_rows__threshold_warn",
        "common_rows__threshold_block",
        "hitting_rate__threshold_block",
    }
    assert all(c.passed for c in checks.values())
    # every result is tied to the release's partition and names the release
    assert {c.partition for c in checks.values()} == {"r-pass"}
    block = _md(checks["common_rows__threshold_block"].metadata)
    assert block["value"] == 0.0 and block["limit"] == 0.3 and block["release"] == "r-pass"
    assert checks["common_rows__threshold_block"].description.startswith("release r-pass: ")
    published = example["root"] / "published" / "r-pass.parquet"
    assert published.exists()
    original = pl.read_parquet(example["root"] / "releases" / "r-pass.parquet")
    assert pl.read_parquet(published).equals(original)


def test_blocked_release_fails_error_check_and_is_not_published(three):
    example, instance, result = three["example"], three["instance"], three["results"]["r-block"]
    assert not result.success
    mats = _materialized(result)
    assert "synthetic_release" in mats  # the release itself is stored ...
    assert "published_release" not in mats  # ... but nothing downstream of a failed ERROR check
    checks = _checks(result)
    blk = checks["common_rows__threshold_block"]
    assert not blk.passed and blk.severity == dg.AssetCheckSeverity.ERROR
    assert blk.partition == "r-block"
    md = _md(blk.metadata)
    # common_rows = 300 copied real records / 600 real records = 0.5 > 0.3
    assert md["value"] == pytest.approx(0.5) and md["limit"] == 0.3
    warn = checks["common_rows__threshold_warn"]
    assert not warn.passed and warn.severity == dg.AssetCheckSeverity.WARN
    decision = checks[DECISION_CHECK]
    assert not decision.passed and decision.severity == dg.AssetCheckSeverity.ERROR
    assert _md(decision.metadata)["decision"] == "block"
    assert "release r-block" in decision.description
    assert not (example["root"] / "published" / "r-block.parquet").exists()
    assert _partition_events(instance, PUBLISHED, "r-block") == []
    # the check page's history says which release failed: results per partition
    key = dg.AssetCheckKey(RELEASE, DECISION_CHECK)
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    assert {r.partition: r.evaluation.passed for r in records} == {"r-pass": True, "r-warn": True, "r-block": False}


def test_warn_only_release_is_published_with_warn_check(three):
    example, instance, result = three["example"], three["instance"], three["results"]["r-warn"]
    assert result.success
    assert "published_release" in _materialized(result)
    checks = _checks(result)
    warn = checks["common_rows__threshold_warn"]
    assert not warn.passed and warn.severity == dg.AssetCheckSeverity.WARN
    # 30 copied rows / 600 real rows = 0.05: over 0.02 (warn), under 0.3 (block)
    assert _md(warn.metadata)["value"] == pytest.approx(0.05)
    assert checks["common_rows__threshold_block"].passed
    assert checks[DECISION_CHECK].passed
    assert _md(checks[DECISION_CHECK].metadata)["decision"] == "warn"
    # the second release compares its trend with the first accepted one
    trend = _md(checks["authenticity__trend_warn"].metadata)
    assert _md(checks[DECISION_CHECK].metadata)["compared_with_release"] == "r-pass"
    # a trend rule's value is the increase over that release's value (4 significant digits)
    from privgate.history import HistoryStore

    store = HistoryStore(example["history"])
    try:
        auth = dict(store.metric_history("dagster-test", "authenticity").select("release_id", "value").iter_rows())
    finally:
        store.close()
    assert set(trend) == {"release", "value", "limit"} and trend["limit"] == 0.5
    assert trend["value"] == pytest.approx(auth["r-warn"] - auth["r-pass"], rel=1e-3, abs=1e-4)
    assert (example["root"] / "published" / "r-warn.parquet").exists()
    (pub,) = _partition_events(instance, PUBLISHED, "r-warn")
    assert _md(pub.asset_materialization.metadata)["verdict"] == "warn"


def test_decision_metadata_reports_and_history(three):
    from pathlib import Path

    from privgate.history import HistoryStore

    example, results = three["example"], three["results"]
    md = _md(_checks(results["r-warn"])[DECISION_CHECK].metadata)
    assert "| metric | rule |" in md["summary"] and md["release"] == "r-warn"
    # the HTML and JSON reports are written where the metadata says
    for key in ("html_report", "json_report"):
        path = Path(md[key])
        assert path.exists() and path.stat().st_size > 0
        assert path.parent == example["root"] / "reports" / "dagster-test" / "r-warn"
    assert "<html" in Path(md["html_report"]).read_text(encoding="utf-8").lower()
    assert json.loads(Path(md["json_report"]).read_text())["decision"] == "warn"
    # the run wrote to the same score history store as the CLI would (SQLite URL given)
    store = HistoryStore(f"sqlite:///{example['history']}")
    try:
        runs = store.runs("dagster-test")
        assert runs.height == 3
        assert set(runs.get_column("release_id").to_list()) == set(RELEASES)
        hist = store.metric_history("dagster-test", "common_rows")
        assert sorted(hist.get_column("value").to_list()) == pytest.approx([0.0, 0.05, 0.5])
    finally:
        store.close()


def test_no_real_record_in_any_metadata(three, real_frame):
    """Every metadata value of every event of the three runs, as text, contains no real value:
    no categorical value of the real data and no numeric value with five or more digits."""
    instance = three["instance"]
    texts: list[str] = []
    for run in instance.get_runs():
        for entry in instance.all_logs(run.run_id):
            event = entry.dagster_event
            if event is None:
                continue
            data = event.event_specific_data
            md = getattr(data, "materialization", None) or getattr(data, "asset_check_evaluation", None) or data
            metadata = getattr(md, "metadata", None) or {}
            for value in metadata.values():
                texts.append(str(getattr(value, "value", value)))
    text = "\n".join(texts)
    # the scan covers the materialisations, the summary table and the check results
    assert "| metric | rule |" in text and "BLOCK" in text
    categorical = [c for c, t in real_frame.schema.items() if t == pl.String]
    values = set()
    for c in categorical:
        values |= {v for v in real_frame[c].drop_nulls().unique().to_list() if len(v) >= 4}
    leaked = sorted(v for v in values if v in text)
    assert not leaked, f"real categorical values in metadata: {leaked[:5]}"
    tokens = set(re.split(r"[^0-9]+", text))
    numeric = [c for c, t in real_frame.schema.items() if t.is_numeric()]
    big = {str(int(v)) for c in numeric for v in real_frame[c].drop_nulls().to_list() if abs(v) >= 10000}
    assert not (tokens & big), f"real numeric values in metadata: {sorted(tokens & big)[:5]}"


def test_reevaluation_job_reuses_stored_release(defs, example, instance):
    assert _run(defs, instance, "r-pass").success
    again = _run(defs, instance, "r-pass", job=REEVALUATE_JOB)
    assert again.success
    # re-read and re-checked (the scorecard records the new evaluation), not published
    assert _materialized(again) == {"synthetic_release", "synthetic_release_privacy_scorecard"}
    assert _checks(again) and all(c.passed for c in _checks(again).values())


def test_publish_refuses_blocked_or_modified_release(defs, example, instance):
    """published_release materialised alone re-checks the stored decision and content digest."""
    assert not _run(defs, instance, "r-block").success
    only_publish = dg.AssetSelection.assets(PUBLISHED)
    job = dg.define_asset_job("publish_only", selection=only_publish)
    d2 = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    res = d2.resolve_job_def("publish_only").execute_in_process(
        instance=instance, partition_key="r-block", raise_on_error=False
    )
    assert not res.success
    assert not (example["root"] / "published" / "r-block.parquet").exists()
    # a passing release whose stored content changed after the evaluation is refused too
    assert _run(defs, instance, "r-pass").success
    (example["root"] / "published" / "r-pass.parquet").unlink()
    changed = pl.read_parquet(example["root"] / "releases" / "r-warn.parquet")
    changed.write_parquet(example["root"] / "storage" / "synthetic_release" / "r-pass.parquet")
    res = d2.resolve_job_def("publish_only").execute_in_process(
        instance=instance, partition_key="r-pass", raise_on_error=False
    )
    assert not res.success
    assert not (example["root"] / "published" / "r-pass.parquet").exists()


def test_corrupt_release_fails_closed(defs, example, instance):
    """A release file that cannot be read stops the run before the gate: nothing is published,
    and the error names the file, not its content."""
    (example["root"] / "releases" / "r-bad.parquet").write_bytes(b"PAR1 not really parquet")
    result = _run(defs, instance, "r-bad")
    assert not result.success
    assert not (example["root"] / "published" / "r-bad.parquet").exists()
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert [e.step_key for e in failures] == ["synthetic_release"]
    err, text = failures[0].event_specific_data.error, ""
    while err is not None:
        text += err.message
        err = err.cause
    assert "r-bad.parquet" in text and "cannot read" in text


def test_holdout_baseline_rule_and_metadata(example, instance, real_frame, tmp_path):
    """With a holdout, baseline rules compare the excess over the holdout baseline: the check's
    value is the excess, with the ends of its interval; the scorecard names the reason."""
    from privgate.dagster.definitions import build_definitions

    holdout = tmp_path / "holdout.parquet"
    from privgate.data import load_example

    load_example("adult_holdout").head(600).write_parquet(holdout)
    gate = tmp_path / "gate_holdout.yaml"
    gate.write_text(
        "version: 1\ndataset: dagster-holdout\nmetrics:\n"
        "  common_rows:\n    baseline: {when: with_holdout, block: 0.1}\n"
    )
    defs = build_definitions(
        data_dir=example["root"],
        gate_config=gate,
        holdout_path=holdout,
        history_url=f"sqlite:///{tmp_path / 'h.sqlite'}",
        executor="in_process",
        env={},
    )
    result = _run(defs, instance, "r-block")
    assert not result.success
    check = _checks(result)["common_rows__baseline_block"]
    md = _md(check.metadata)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    # 300 of the 600 real records are copied (0.5); a holdout sample of 300 other people shares
    # (almost) no exact record with them, so the excess is about 0.5 > 0.1
    assert 0.45 < md["value"] <= 0.5 and md["lower"] <= md["value"] <= md["upper"]
    assert set(md) == {"release", "value", "lower", "upper", "limit"} and md["limit"] == 0.1
    (card,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "synthetic_release_privacy_scorecard"
    ]
    card_md = _md(card.materialization.metadata)
    assert card_md["reason"].startswith("blocked: common_rows baseline: excess")
    assert card_md["common_rows excess"] == md["value"] and card_md["decision_code"] == 2


def test_runtime_configuration_or_holdout_errors_block_and_are_recorded(example, instance, tmp_path):
    """The gate configuration made invalid after the code location loaded, or a holdout file
    that does not exist: the gate fails closed -- a blocked run in the history, every blocking
    check failed, nothing published."""
    from privgate.dagster.definitions import build_definitions
    from privgate.history import HistoryStore

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    defs = build_definitions(
        data_dir=example["root"], gate_config=example["gate"], history_url=url, executor="in_process", env={}
    )
    example["gate"].write_text("version: 1\nmetrics:\n  common_rows:\n    threshold: {block: 7}\n")
    result = _run(defs, instance, "r-pass")
    assert not result.success
    checks = _checks(result)
    assert not checks[DECISION_CHECK].passed
    assert all(not c.passed for c in checks.values())
    assert "invalid configuration" in _md(checks[DECISION_CHECK].metadata)["error_messages"]
    assert not (example["root"] / "published" / "r-pass.parquet").exists()

    gate2 = tmp_path / "ok.yaml"
    gate2.write_text("version: 1\ndataset: dagster-test\nmetrics:\n  common_rows:\n    threshold: {block: 0.3}\n")
    defs2 = build_definitions(
        data_dir=example["root"],
        gate_config=gate2,
        history_url=url,
        holdout_path=tmp_path / "missing.parquet",
        executor="in_process",
        env={},
    )
    result2 = _run(defs2, instance, "r-warn")
    assert not result2.success
    assert "holdout" in _md(_checks(result2)[DECISION_CHECK].metadata)["error_messages"]
    store = HistoryStore(url)
    try:
        runs = store.runs("dagster-test")
        assert sorted(runs.get_column("release_id").to_list()) == ["r-pass", "r-warn"]
        assert set(runs.get_column("decision").to_list()) == {"block"}
    finally:
        store.close()
