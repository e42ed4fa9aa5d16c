"""Mapping a gate outcome to asset-check results, including every fail-closed branch."""

from __future__ import annotations

import dagster as dg
import pytest

from privgate.dagster.metadata import summary_markdown
from privgate.dagster.rule_checks import DECISION_CHECK, check_name, check_results, check_specs
from privgate.gates import Decision, GateCheck, GateOutcome, decision_of, parse_gate_config

CFG = parse_gate_config(
    {
        "version": 1,
        "dataset": "unit",
        "metrics": {
            "common_rows": {"threshold": {"warn": 0.0, "block": 0.01}},
            "hitting_rate": {
                "threshold": {"max": 0.5, "severity": "block"},
                "baseline": {"when": "with_holdout", "warn": 0.03},
            },
            "dcr": {"optional": True, "trend": {"warn": 0.05}},
        },
    }
)


def _outcome(checks, has_holdout=False):
    decision, code = decision_of(checks)
    return GateOutcome(
        run_id="run1",
        dataset="unit",
        release_id="r1",
        decision=decision,
        checks=checks,
        exit_code=code,
        config=CFG,
        has_holdout=has_holdout,
    )


def _check(metric, rule, severity, verdict, value=0.0, threshold=0.0, **kw):
    return GateCheck(
        metric=metric,
        rule=rule,
        value=value,
        raw=value,
        threshold=threshold,
        severity=severity,
        verdict=verdict,
        compared=kw.pop("compared", value),
        **kw,
    )


def _by_name(results):
    return {r.check_name: r for r in results}


def test_specs_names_and_blocking():
    specs = {s.name: s for s in check_specs(CFG)}
    assert set(specs) == {
        DECISION_CHECK,
        "common_rows__threshold_warn",
        "common_rows__threshold_block",
        "hitting_rate__threshold_block",
        "hitting_rate__baseline_warn",
        "dcr__trend_warn",
    }
    assert {n for n, s in specs.items() if s.blocking} == {
        DECISION_CHECK,
        "common_rows__threshold_block",
        "hitting_rate__threshold_block",
    }
    assert check_name("a-b", "threshold", "warn") == "a_b__threshold_warn"


def test_specs_tied_to_partitions():
    parts = dg.StaticPartitionsDefinition(["r1", "r2"])
    specs = check_specs(CFG, "release", partitions_def=parts)
    assert all(s.partitions_def == parts for s in specs)
    assert {s.asset_key for s in specs} == {dg.AssetKey("release")}


def test_fired_block_rule_is_failed_error_and_warn_rule_failed_warn():
    checks = [
        _check("common_rows", "threshold", "warn", "warn", 0.02, 0.0),
        _check("common_rows", "threshold", "block", "block", 0.02, 0.01),
        _check("hitting_rate", "threshold", "block", "pass", 0.1, 0.5),
        _check("dcr", "trend", "warn", "pass", 0.9, 0.05, skipped=True, message="first accepted release"),
    ]
    res = _by_name(check_results(CFG, _outcome(checks)))
    # the skipped trend rule and the baseline rule (no holdout) yield no result: Dagster shows
    # them as skipped / not evaluated for this release, not as green successes
    assert set(res) == {
        DECISION_CHECK,
        "common_rows__threshold_warn",
        "common_rows__threshold_block",
        "hitting_rate__threshold_block",
    }
    cb = res["common_rows__threshold_block"]
    assert (cb.passed, cb.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert cb.metadata["limit"].value == 0.01 and cb.metadata["value"].value == 0.02
    assert cb.metadata["release"].value == "r1" and cb.description.startswith("release r1: ")
    cw = res["common_rows__threshold_warn"]
    assert (cw.passed, cw.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert res["hitting_rate__threshold_block"].passed
    d = res[DECISION_CHECK]
    assert (d.passed, d.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert d.metadata["decision"].value == "block" and d.metadata["decision_code"].value == 2
    assert d.metadata["release"].value == "r1" and "release r1" in d.description


def test_metadata_is_what_a_person_plots_value_interval_and_limit():
    """The rule's quantity (the excess for a baseline rule, the estimate for a threshold rule),
    the ends of its interval (the rule's own, GateCheck.interval, over the metric's) and the
    limit -- nothing else to plot; the release id as text."""
    from types import SimpleNamespace

    from privgate.results import MetricResult

    res_hr = MetricResult(name="hitting_rate", value=0.12, raw=0.12)
    res_hr.ci = (0.10, 0.14)
    res_hr.with_baseline(0.08, (0.06, 0.10), (0.01, 0.07))
    res_hr.p_value = 0.003
    checks = [
        _check("common_rows", "threshold", "warn", "pass"),
        _check("common_rows", "threshold", "block", "pass"),
        _check("hitting_rate", "threshold", "block", "pass", 0.12, 0.5),
        _check("hitting_rate", "baseline", "warn", "warn", 0.12, 0.03, compared=0.04, baseline=0.08),
    ]
    checks[-1].interval = (0.01, 0.07)
    checks[-1].on = "lower"
    outcome = _outcome(checks, has_holdout=True)
    outcome.report = SimpleNamespace(results={"hitting_rate": res_hr})
    md = _by_name(check_results(CFG, outcome))["hitting_rate__baseline_warn"].metadata
    numbers = {k: v.value for k, v in md.items() if isinstance(v.value, float)}
    assert numbers == pytest.approx({"value": 0.04, "lower": 0.01, "upper": 0.07, "limit": 0.03})
    assert set(md) - set(numbers) == {"release"}
    thr = _by_name(check_results(CFG, outcome))["hitting_rate__threshold_block"].metadata
    assert {k: v.value for k, v in thr.items() if isinstance(v.value, float)} == pytest.approx(
        {"value": 0.12, "lower": 0.10, "upper": 0.14, "limit": 0.5}
    )


def test_numbers_are_rounded_to_4_significant_digits():
    from privgate.dagster.rule_checks import significant

    assert significant(-0.35050000000000003) == -0.3505 and significant(0.0) == 0.0
    assert significant(123456.7) == 123500.0 and significant(1.23456e-7) == 1.235e-7
    checks = [_check("common_rows", "threshold", "block", "block", 0.35050000000000003, 0.01)]
    res = _by_name(check_results(CFG, _outcome(checks)))
    assert res["common_rows__threshold_block"].metadata["value"].value == 0.3505


def test_declared_checks_are_the_rules_that_apply():
    with_h = {s.name for s in check_specs(CFG, has_holdout=True)}
    without = {s.name for s in check_specs(CFG, has_holdout=False)}
    assert "hitting_rate__baseline_warn" in with_h and "hitting_rate__baseline_warn" not in without
    assert with_h - {"hitting_rate__baseline_warn"} == without


def test_a_blocking_rule_that_does_not_apply_passes_saying_so():
    """Never a silent blocking check: a block rule the run did not apply passes with
    applied = false and the reason (Dagster would otherwise warn that it emitted no result)."""
    cfg = parse_gate_config(
        {
            "version": 1,
            "dataset": "unit",
            "metrics": {"common_rows": {"baseline": {"when": "with_holdout", "block": 0.01}, "trend": {"block": 0.05}}},
        }
    )
    checks = [
        _check(
            "common_rows",
            "trend",
            "block",
            "pass",
            0.0,
            0.05,
            skipped=True,
            message="first accepted release of dataset 'unit'; nothing to compare with",
        )
    ]
    decision, code = decision_of(checks)
    outcome = GateOutcome(
        run_id="run1",
        dataset="unit",
        release_id="r1",
        decision=decision,
        checks=checks,
        exit_code=code,
        config=cfg,
        has_holdout=False,
    )
    res = _by_name(check_results(cfg, outcome))
    for name, why in (
        ("common_rows__baseline_block", "only to runs with a holdout"),
        ("common_rows__trend_block", "first accepted release"),
    ):
        assert res[name].passed and res[name].metadata["applied"].value is False
        assert "not applied" in res[name].description and why in res[name].description


EVIDENCE_CFG = parse_gate_config(
    {
        "version": 1,
        "dataset": "unit",
        "metrics": {
            "memorisation": {
                "threshold": {"on": "lower", "warn": 0.0, "block": 0.01},
                "test": {"warn": 0.05, "block": 0.01},
            },
            "authenticity": {"baseline": {"on": "upper", "block": 0.1}},
            "common_rows": {"threshold": {"block": 0.01}},
        },
    }
)


def test_descriptions_say_what_each_rule_compares():
    specs = {s.name: s for s in check_specs(EVIDENCE_CFG)}
    test_block = specs["memorisation__test_block"].description
    assert "p-value must be ≥ 0.01" in test_block and "≤" not in test_block
    assert "without a p-value fails the check" in test_block
    lower = specs["memorisation__threshold_block"].description
    assert "the lower end of the 95 % interval of the risk value must be ≤ 0.01" in lower
    assert "without that interval fails the check" in lower
    upper = specs["authenticity__baseline_block"].description
    assert "the upper end of the 95 % interval of the excess over the holdout baseline must be ≤ 0.1" in upper
    plain = specs["common_rows__threshold_block"].description
    assert "risk value must be ≤ 0.01" in plain and "interval" not in plain and "fails closed" not in plain
    md = specs["memorisation__test_warn"].metadata
    assert (md["rule_kind"].value, md["decided_on"].value, md["limit"].value) == ("test", "p_value", 0.05)
    assert specs["memorisation__threshold_warn"].metadata["decided_on"].value == "lower"
    assert specs["common_rows__threshold_block"].metadata["decided_on"].value == "estimate"


def test_test_rule_and_missing_interval_results_carry_the_rule():
    """A fired test rule fails with its p-value as the compared number; a rule whose interval
    the result lacks (the gate's fail-closed error check) fails and still names ``on``."""
    checks = [
        _check("memorisation", "threshold", "warn", "pass", 0.02, 0.0, compared=0.0, on="lower"),
        _check("memorisation", "threshold", "block", "pass", 0.02, 0.01, compared=0.0, on="lower"),
        _check("memorisation", "test", "warn", "warn", 0.02, 0.05, compared=0.03, on="p_value", p_value=0.03),
        _check("memorisation", "test", "block", "pass", 0.02, 0.01, compared=0.03, on="p_value", p_value=0.03),
        GateCheck(
            metric="authenticity",
            rule="error",
            value=0.5,
            raw=0.5,
            threshold=0.1,
            severity="block",
            verdict="block",
            on="upper",
            message="the rule compares the upper bound of the excess's interval and "
            "authenticity reports no excess_ci (fails closed)",
        ),
        _check("common_rows", "threshold", "block", "pass", 0.0, 0.01),
    ]
    decision, code = decision_of(checks)
    outcome = GateOutcome(
        run_id="run1",
        dataset="unit",
        release_id="r1",
        decision=decision,
        checks=checks,
        exit_code=code,
        config=EVIDENCE_CFG,
        has_holdout=True,
    )
    res = _by_name(check_results(EVIDENCE_CFG, outcome))
    tw = res["memorisation__test_warn"]
    assert (tw.passed, tw.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert tw.metadata["value"].value == 0.03 and tw.metadata["limit"].value == 0.05
    assert "lower" not in tw.metadata  # a p-value has no interval
    assert res["memorisation__test_block"].passed
    err = res["authenticity__baseline_block"]
    assert (err.passed, err.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert "excess_ci" in err.description
    assert err.metadata["limit"].value == 0.1
    assert res[DECISION_CHECK].passed is False and code == 3


def test_failed_metric_fails_its_rules_closed():
    checks = [
        GateCheck(
            metric="common_rows",
            rule="error",
            value=None,
            raw=None,
            threshold=None,
            severity="block",
            verdict="block",
            message="metric failed: MetricComputationError (fails closed)",
        ),
        _check("hitting_rate", "threshold", "block", "pass", 0.1, 0.5),
    ]
    res = _by_name(check_results(CFG, _outcome(checks)))
    for name in ("common_rows__threshold_block", "common_rows__threshold_warn"):
        assert not res[name].passed
        assert "could not be computed" in res[name].description
        assert "value" not in res[name].metadata  # no number where the metric produced none
    assert res["common_rows__threshold_block"].severity == dg.AssetCheckSeverity.ERROR
    assert not res[DECISION_CHECK].passed
    assert "MetricComputationError" in res[DECISION_CHECK].metadata["error_messages"].value


def test_optional_metric_failure_is_shown_but_does_not_block():
    checks = [
        _check("common_rows", "threshold", "warn", "pass"),
        _check("common_rows", "threshold", "block", "pass"),
        _check("hitting_rate", "threshold", "block", "pass"),
        GateCheck(
            metric="dcr",
            rule="error",
            value=None,
            raw=None,
            threshold=None,
            severity="warn",
            verdict="pass",
            optional=True,
            skipped=True,
            message="metric failed: X; optional metric, ignored",
        ),
    ]
    outcome = _outcome(checks)
    assert outcome.decision == Decision.PASS
    res = _by_name(check_results(CFG, outcome))
    dcr = res["dcr__trend_warn"]
    assert (dcr.passed, dcr.severity) == (False, dg.AssetCheckSeverity.WARN)  # not green, not blocking
    assert res[DECISION_CHECK].passed


def test_run_level_error_fails_every_rule_and_the_decision():
    checks = [
        GateCheck(
            metric="(synthetic)",
            rule="error",
            value=None,
            raw=None,
            threshold=None,
            severity="block",
            verdict="block",
            message="cannot load synthetic: InputLoadError (fails closed)",
        )
    ]
    outcome = _outcome(checks)
    assert outcome.exit_code == 3
    res = _by_name(check_results(CFG, outcome))
    # the baseline rule does not apply without a holdout; every other rule fails: not evaluated
    assert "hitting_rate__baseline_warn" not in res
    assert not any(r.passed for r in res.values())
    for name, r in res.items():
        if name != DECISION_CHECK:
            assert "not evaluated" in r.description
    assert res["dcr__trend_warn"].severity == dg.AssetCheckSeverity.WARN


def test_summary():
    checks = [
        _check("common_rows", "threshold", "block", "block", 0.5, 0.01, message="value 0.5000 > 0.01"),
        _check("hitting_rate", "threshold", "block", "pass", float("nan"), 0.5),
    ]
    md = summary_markdown(_outcome(checks))
    assert "**Decision: BLOCK**" in md and "| common_rows | threshold | 0.5000 " in md
    assert "**BLOCK**" in md and "value 0.5000 > 0.01" in md
    assert md.count("\n|") == 4  # header, separator, two rows


def test_summary_has_the_columns_and_cells_of_the_cli_table():
    import re

    from privgate.gates import format_checks

    outcome = _outcome([_check("common_rows", "threshold", "warn", "warn", 0.004, 0.0, message="value 0.0040 > 0")])
    md_lines = summary_markdown(outcome).splitlines()
    cli_lines = format_checks(outcome).splitlines()
    md_head = [h.replace("95 % CI", "95% CI") for h in md_lines[2].strip("| ").split(" | ")]
    assert md_head == re.split(r"\s{2,}", cli_lines[0].strip())
    md_row = [c.strip("*") for c in md_lines[4].strip("| ").split(" | ")]
    assert md_row == re.split(r"\s{2,}", cli_lines[2].strip())


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), None, "x", True])
def test_non_finite_values_are_not_float_metadata(bad):
    checks = [_check("common_rows", "threshold", "block", "pass", bad, 0.01, compared=bad)]
    res = _by_name(check_results(CFG, _outcome(checks)))
    md = res["common_rows__threshold_block"].metadata
    assert "value" not in md


def test_a_copy_with_permuted_labels_fails_the_decision_check(tmp_path):
    """The checks built from the default gate fail a copy of the training data whose category
    levels were permuted within each column (no unknown level appears): nothing publishes it."""
    import privgate
    from privgate.dagster.rule_checks import DECISION_CHECK, check_results
    from privgate.data import load_example
    from privgate.gates import default_gate_config, run_gate

    real, holdout = load_example().head(800), load_example("adult_holdout").head(800)
    release = privgate.baselines.disguised_copy(real, "permuted", seed=2)
    cfg = default_gate_config("disguise")
    for h in (holdout, None):
        outcome = run_gate(cfg, real, release, h, release_id="r1")
        results = {r.check_name: r for r in check_results(cfg, outcome)}
        assert outcome.exit_code == 2 and not results[DECISION_CHECK].passed
        assert any(not r.passed for name, r in results.items() if name.startswith("label_free"))
