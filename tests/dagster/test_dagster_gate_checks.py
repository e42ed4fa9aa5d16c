"""Mapping a gate outcome to asset-check results, including every fail-closed branch."""

from __future__ import annotations

import dagster as dg
import pytest

from privgate.dagster.gate_checks import DECISION_CHECK, check_name, check_results, check_specs
from privgate.dagster.metadata import outcome_frame, summary_markdown
from privgate.gates import Decision, GateCheck, GateOutcome, decision_of, parse_gate_config

CFG = parse_gate_config({
    "version": 1, "dataset": "unit",
    "metrics": {
        "common_rows": {"threshold": {"warn": 0.0, "block": 0.01}},
        "hitting_rate": {"threshold": {"max": 0.5, "severity": "block"},
                         "baseline": {"when": "with_holdout", "warn": 0.03}},
        "dcr": {"optional": True, "trend": {"warn": 0.05}},
    },
})


def _outcome(checks, has_holdout=False):
    decision, code = decision_of(checks)
    return GateOutcome(run_id="run1", dataset="unit", release_id="r1", decision=decision,
                       checks=checks, exit_code=code, config=CFG, has_holdout=has_holdout)


def _check(metric, rule, severity, verdict, value=0.0, threshold=0.0, **kw):
    return GateCheck(metric=metric, rule=rule, value=value, raw=value, threshold=threshold,
                     severity=severity, verdict=verdict, compared=kw.pop("compared", value), **kw)


def _by_name(results):
    return {r.check_name: r for r in results}


def test_specs_names_and_blocking():
    specs = {s.name: s for s in check_specs(CFG)}
    assert set(specs) == {DECISION_CHECK, "common_rows__threshold_warn", "common_rows__threshold_block",
                          "hitting_rate__threshold_block", "hitting_rate__baseline_warn",
                          "dcr__trend_warn"}
    assert {n for n, s in specs.items() if s.blocking} == {
        DECISION_CHECK, "common_rows__threshold_block", "hitting_rate__threshold_block"}
    assert check_name("a-b", "threshold", "warn") == "a_b__threshold_warn"


def test_fired_block_rule_is_failed_error_and_warn_rule_failed_warn():
    checks = [_check("common_rows", "threshold", "warn", "warn", 0.02, 0.0),
              _check("common_rows", "threshold", "block", "block", 0.02, 0.01),
              _check("hitting_rate", "threshold", "block", "pass", 0.1, 0.5),
              _check("dcr", "trend", "warn", "pass", 0.9, 0.05, skipped=True,
                     message="first accepted release")]
    res = _by_name(check_results(CFG, _outcome(checks)))
    assert len(res) == 6
    cb = res["common_rows__threshold_block"]
    assert (cb.passed, cb.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert cb.metadata["threshold"].value == 0.01 and cb.metadata["verdict"].value == "block"
    assert cb.metadata["compared"].value == 0.02
    cw = res["common_rows__threshold_warn"]
    assert (cw.passed, cw.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert res["hitting_rate__threshold_block"].passed
    assert res["dcr__trend_warn"].passed and res["dcr__trend_warn"].metadata["status"].value == "skipped"
    # the baseline rule applies only with a holdout: reported as passed, not applicable
    hb = res["hitting_rate__baseline_warn"]
    assert hb.passed and hb.metadata["status"].value == "not_applicable"
    d = res[DECISION_CHECK]
    assert (d.passed, d.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert d.metadata["decision"].value == "block" and d.metadata["decision_code"].value == 2


def test_failed_metric_fails_its_rules_closed():
    checks = [GateCheck(metric="common_rows", rule="error", value=None, raw=None, threshold=None,
                        severity="block", verdict="block",
                        message="metric failed: MetricComputationError (fails closed)"),
              _check("hitting_rate", "threshold", "block", "pass", 0.1, 0.5)]
    res = _by_name(check_results(CFG, _outcome(checks)))
    for name in ("common_rows__threshold_block", "common_rows__threshold_warn"):
        assert not res[name].passed
        assert res[name].metadata["status"].value == "metric_failed"
        assert "value" not in res[name].metadata  # no number where the metric produced none
    assert res["common_rows__threshold_block"].severity == dg.AssetCheckSeverity.ERROR
    assert not res[DECISION_CHECK].passed
    assert "MetricComputationError" in res[DECISION_CHECK].metadata["error_messages"].value


def test_optional_metric_failure_is_ignored():
    checks = [_check("common_rows", "threshold", "warn", "pass"),
              _check("common_rows", "threshold", "block", "pass"),
              _check("hitting_rate", "threshold", "block", "pass"),
              GateCheck(metric="dcr", rule="error", value=None, raw=None, threshold=None,
                        severity="warn", verdict="pass", optional=True, skipped=True,
                        message="metric failed: X; optional metric, ignored")]
    outcome = _outcome(checks)
    assert outcome.decision == Decision.PASS
    res = _by_name(check_results(CFG, outcome))
    assert res["dcr__trend_warn"].passed
    assert res["dcr__trend_warn"].metadata["status"].value == "metric_failed_optional"
    assert all(r.passed for r in res.values())


def test_run_level_error_fails_every_rule_and_the_decision():
    checks = [GateCheck(metric="(synthetic)", rule="error", value=None, raw=None, threshold=None,
                        severity="block", verdict="block",
                        message="cannot load synthetic: InputLoadError (fails closed)")]
    outcome = _outcome(checks)
    assert outcome.exit_code == 3
    res = _by_name(check_results(CFG, outcome))
    assert not any(r.passed for r in res.values())
    for name, r in res.items():
        if name != DECISION_CHECK:
            assert r.metadata["status"].value == "not_evaluated"
    assert res["dcr__trend_warn"].severity == dg.AssetCheckSeverity.WARN
    assert res[DECISION_CHECK].metadata["exit_code"].value == 3


def test_outcome_frame_and_summary():
    checks = [_check("common_rows", "threshold", "block", "block", 0.5, 0.01,
                     message="value 0.5000 > 0.01"),
              _check("hitting_rate", "threshold", "block", "pass", float("nan"), 0.5)]
    outcome = _outcome(checks)
    frame = outcome_frame(outcome, "abc")
    assert frame.height == 2 and frame["decision"].unique().to_list() == ["block"]
    assert frame["release_fingerprint"].to_list() == ["abc", "abc"]
    assert frame["value"].to_list() == [0.5, None]  # non-finite numbers are stored as null
    md = summary_markdown(outcome)
    assert "**Decision: BLOCK**" in md and "| common_rows | threshold | 0.5000 |" in md
    assert md.count("\n|") == 4  # header, separator, two rows


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), None, "x", True])
def test_non_finite_values_are_not_float_metadata(bad):
    checks = [_check("common_rows", "threshold", "block", "pass", bad, 0.01, compared=bad)]
    res = _by_name(check_results(CFG, _outcome(checks)))
    md = res["common_rows__threshold_block"].metadata
    assert "compared" not in md
