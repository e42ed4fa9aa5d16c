"""Rule kinds are one table (privgate.gates.rule_kinds): a kind declared in one place works in the
gate's decision, in the GX expectations and in the Dagster scorecard, and a kind no declaration
has fails loudly, naming itself and the known kinds, wherever it is met."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from privgate.errors import ConfigError, UnknownRuleKindError
from privgate.gates import GateOutcome, decide, decision_of, parse_gate_config
from privgate.gates.checks import GateCheck
from privgate.gates.config_model import Rule
from privgate.gates.rule_kinds import GxForm, RuleKind, kind_names, register_rule_kind, rule_kind, unregister_rule_kind
from privgate.gates.rules import check_quantity, compare, fires
from privgate.results import MetricResult

# a kind of the test's own: the holdout's own risk (the baseline) must stay below a limit —
# declared here and nowhere else
HOLDOUT_RISK = RuleKind(
    name="holdout_risk",
    quantity="baseline",
    words="holdout's risk value",
    message="holdout risk {estimate:.4f}",
    interval_field="baseline_ci",
    ons=("estimate", "lower", "upper"),
    needs_holdout=True,
    gx=GxForm("risk", "baseline"),
    scorecard=" holdout risk",
    chart=("baseline", None, None, "holdout's risk value"),
)

CONFIG = {
    "version": 1,
    "dataset": "kinds",
    "metrics": {"common_rows": {"threshold": {"block": 0.5}, "holdout_risk": {"warn": 0.05, "block": 0.2}}},
}


@pytest.fixture
def holdout_risk():
    register_rule_kind(HOLDOUT_RISK)
    yield HOLDOUT_RISK
    unregister_rule_kind(HOLDOUT_RISK.name)


def _result(baseline: float) -> MetricResult:
    res = MetricResult(name="common_rows", value=0.3, raw=0.3, ci=(0.25, 0.35))
    return res.with_baseline(
        baseline,
        baseline_ci=(baseline - 0.02, baseline + 0.02),
        excess_ci=(0.3 - baseline - 0.03, 0.3 - baseline + 0.03),
    )


def test_a_declared_kind_is_parsed_and_decides(holdout_risk):
    cfg = parse_gate_config(CONFIG)
    assert [r.kind for _, r in cfg.rules()] == ["threshold", "holdout_risk", "holdout_risk"]
    assert cfg.needs_baseline  # the kind needs a holdout: the evaluation computes the baseline

    checks = decide(cfg, {"common_rows": _result(0.25)}, {}, has_holdout=True)
    fired = [c for c in checks if c.rule == "holdout_risk"]
    assert [c.verdict for c in fired] == ["warn", "block"]
    assert fired[1].compared == pytest.approx(0.25) and fired[1].interval == pytest.approx((0.23, 0.27))
    assert fired[1].message.startswith("holdout risk 0.2500 > 0.2")
    assert decision_of(checks) == ("block", 2)

    calm = decide(cfg, {"common_rows": _result(0.01)}, {}, has_holdout=True)
    assert all(c.verdict == "pass" for c in calm)
    skipped = decide(cfg, {"common_rows": _result(0.25)}, {}, has_holdout=False)
    assert [c.skipped for c in skipped if c.rule == "holdout_risk"] == [True, True]


def test_a_declared_kind_limits_and_on_come_from_its_declaration(holdout_risk):
    doc = {**CONFIG, "metrics": {"common_rows": {"holdout_risk": {"block": 0.2, "on": "upper"}}}}
    (rule,) = [r for _, r in parse_gate_config(doc).rules()]
    c = compare(rule.kind, rule.on, _result(0.19))
    assert c.number == pytest.approx(0.21) and fires(rule.kind, c.number, rule.limit)
    with pytest.raises(ConfigError, match="holdout_risk.block"):
        parse_gate_config({**CONFIG, "metrics": {"common_rows": {"holdout_risk": {"block": 1.5}}}})


def test_a_declared_kind_is_a_gx_expectation(holdout_risk):
    pytest.importorskip("great_expectations")
    from privgate.catalogue import get_metric
    from privgate.gx.compute import payload_from_result
    from privgate.gx.gate_config import suite_from_gate_config
    from privgate.gx.risk_metric import RISK_METRIC

    suite = suite_from_gate_config(CONFIG, real="real.parquet", holdout="holdout.parquet")
    exp = next(
        e
        for e in suite.expectations
        if e.meta["privgate_rule"]["kind"] == "holdout_risk" and e.meta["privgate_rule"]["severity"] == "block"
    )
    assert exp.compare_to == "baseline" and exp.meta["check_name"] == "common_rows__holdout_risk_block"
    for baseline, success in ((0.25, False), (0.01, True)):
        payload = payload_from_result(_result(baseline), get_metric("common_rows"))
        out = exp._validate({RISK_METRIC: payload})
        assert out["success"] is success
        assert out["result"]["observed_value"] == pytest.approx(baseline)


def test_a_declared_kind_is_in_the_dagster_scorecard(holdout_risk):
    pytest.importorskip("dagster")
    from privgate.dagster.rule_checks import rule_description
    from privgate.dagster.scorecard import _headline, rule_label

    cfg = parse_gate_config(CONFIG)
    res = _result(0.25)
    checks = decide(cfg, {"common_rows": res}, {}, has_holdout=True)
    decision, exit_code = decision_of(checks)
    outcome = GateOutcome(
        run_id="r",
        dataset="kinds",
        release_id="1",
        decision=decision,
        checks=checks,
        exit_code=exit_code,
        report=SimpleNamespace(results={"common_rows": res}),
        config=cfg,
    )
    rows = {r["label"]: r for r in _headline(cfg, outcome)}
    assert rule_label("common_rows", "holdout_risk") == "common_rows holdout risk"
    row = rows["common_rows holdout risk"]
    assert (row["value"], row["lower"], row["upper"], row["limit"], row["verdict"]) == (
        pytest.approx(0.25),
        pytest.approx(0.23),
        pytest.approx(0.27),
        0.2,
        "block",
    )
    rule = next(r for _, r in cfg.rules("holdout_risk"))
    assert "holdout's risk value must be ≤ 0.05" in rule_description(rule)


def test_an_unknown_kind_fails_loudly_everywhere():
    assert "holdout_risk" not in kind_names()
    known = ", ".join(kind_names())
    check = GateCheck(metric="m", rule="ceiling", value=0.1, raw=0.1, threshold=0.1, severity="block", verdict="pass")
    for call in (
        lambda: rule_kind("ceiling"),
        lambda: Rule("ceiling", 0.1, "block"),
        lambda: compare("ceiling", "estimate", _result(0.1)),
        lambda: fires("ceiling", 0.5, 0.1),
        lambda: check_quantity(check),
    ):
        with pytest.raises(UnknownRuleKindError, match=f"unknown rule kind 'ceiling'; known rule kinds: {known}"):
            call()
    with pytest.raises(ConfigError, match="common_rows.ceiling: unknown key"):
        parse_gate_config({"metrics": {"common_rows": {"ceiling": 0.1}}})
    # a mistyped kind is named with the closest declared one, as a mistyped metric is
    with pytest.raises(
        UnknownRuleKindError,
        match=f"unknown rule kind 'treshold'; did you mean 'threshold'\\?; known rule kinds: {known}",
    ):
        Rule("treshold", 0.1, "block")


def test_an_unknown_kind_fails_loudly_in_the_adapters():
    pytest.importorskip("dagster")
    from privgate.dagster.scorecard import rule_label

    with pytest.raises(UnknownRuleKindError, match="'ceiling'"):
        rule_label("common_rows", "ceiling")
