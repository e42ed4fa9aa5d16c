"""Audit rules: each fires and does not fire at hand-set numbers; audits fail closed."""

from __future__ import annotations

import math

import pytest
from audit_helpers import make_result

from privgate.errors import ConfigError
from privgate.gates import parse_gate_config
from privgate.gates.audit_rules import (
    AuditRequirement,
    decide_audit,
    default_audit_config,
    load_audit_config,
    parse_audit_config,
)

CLAIMED = {"rules": {"epsilon": {"block": "claimed"}}}
BOTH = {"rules": {"epsilon": {"warn": 0.5, "block": "claimed"}, "auc_lower": {"warn": 0.6, "block": 0.8}}}


def verdicts(outcome):
    return [(c.rule, c.severity, c.verdict) for c in outcome.checks]


@pytest.mark.parametrize("eps, decision, code", [(1.2, "block", 2), (1.0, "pass", 0), (0.99, "pass", 0)])
def test_epsilon_block_claimed_fires_only_strictly_above_the_claim(eps, decision, code):
    out = decide_audit(make_result(eps, claimed=1.0), CLAIMED)
    assert (out.decision, out.exit_code) == (decision, code)
    c = out.checks[0]
    assert c.compared == eps and c.limit == 1.0 and c.limit_is_claim
    assert ("DP violation" in c.message) is (decision == "block")
    assert out.accepted is (decision != "block")


@pytest.mark.parametrize(
    "eps, auc, decision, code",
    [
        (0.4, 0.55, "pass", 0),  # nothing fires
        (0.7, 0.55, "warn", 1),  # ε above the warn number, below the claim
        (0.4, 0.65, "warn", 1),  # AUC lower bound above the warn limit
        (0.4, 0.85, "block", 2),  # AUC lower bound above the block limit
        (1.5, 0.55, "block", 2),  # ε above the claim
    ],
)
def test_epsilon_and_auc_rules_at_hand_set_numbers(eps, auc, decision, code):
    out = decide_audit(make_result(eps, auc, claimed=1.0), BOTH)
    assert (out.decision, out.exit_code) == (decision, code)
    fired = {(r, s) for r, s, v in verdicts(out) if v != "pass"}
    expect = set()
    if eps > 0.5:
        expect.add(("epsilon", "warn"))
    if eps > 1.0:
        expect.add(("epsilon", "block"))
    if auc > 0.6:
        expect.add(("auc_lower", "warn"))
    if auc > 0.8:
        expect.add(("auc_lower", "block"))
    assert fired == expect


def test_a_number_limit_on_epsilon_and_a_bare_number_is_a_block_limit():
    cfg = parse_audit_config({"rules": {"epsilon": 2, "auc_lower": 0.7}})
    assert [(r.kind, r.severity, r.limit) for r in cfg.rules] == [
        ("epsilon", "block", 2.0),
        ("auc_lower", "block", 0.7),
    ]
    assert decide_audit(make_result(2.5, claimed=None), cfg).decision == "block"
    assert decide_audit(make_result(1.9, 0.69, claimed=None), cfg).decision == "pass"


def test_an_audit_that_checked_nothing_fails_closed_whatever_the_numbers():
    out = decide_audit(make_result(0.0, 0.0, n_audited=0), BOTH)
    assert (out.decision, out.exit_code, out.accepted) == ("error", 3, False)
    assert "no target could be audited" in out.checks[0].message
    # the default configuration too
    assert decide_audit(make_result(0.0, 0.0, n_audited=0)).exit_code == 3


@pytest.mark.parametrize("field", ["epsilon_lower", "auc_lower"])
def test_a_non_finite_number_fails_closed(field):
    res = make_result(0.2, 0.55)
    setattr(res, field, math.nan)
    out = decide_audit(res, BOTH)
    assert out.exit_code == 3 and out.decision == "error"
    assert any("not a finite number" in c.message for c in out.checks)


def test_claimed_limit_without_a_claim_fails_closed_but_the_default_skips_it():
    out = decide_audit(make_result(5.0, claimed=None), CLAIMED)
    assert out.exit_code == 3 and "no claim was given" in out.checks[0].message
    dflt = decide_audit(make_result(5.0, 0.55, claimed=None))
    assert dflt.exit_code == 0 and dflt.checks[0].skipped
    # the default with a claim checks it
    assert decide_audit(make_result(1.2, 0.55, claimed=1.0)).exit_code == 2


def test_the_configuration_claim_applies_and_must_agree_with_the_audits():
    out = decide_audit(make_result(1.5, claimed=None), {"claimed_epsilon": 1.0, **CLAIMED})
    assert out.exit_code == 2 and out.claimed_epsilon == 1.0
    assert decide_audit(make_result(1.5, claimed=None), {"claimed_epsilon": 2.0, **CLAIMED}).exit_code == 0
    clash = decide_audit(make_result(0.1, claimed=4.0), {"claimed_epsilon": 1.0, **CLAIMED})
    assert clash.exit_code == 3 and "run for a claim of 4" in clash.checks[0].message
    delta = decide_audit(make_result(0.1, delta=1e-5), {"delta": 0.0, **CLAIMED})
    assert delta.exit_code == 3 and "δ" in delta.checks[0].message


def test_a_block_giving_only_the_claim_keeps_the_default_rules():
    cfg = parse_audit_config({"claimed_epsilon": 2, "delta": 0})
    assert cfg.claimed_epsilon == 2.0 and cfg.rules == default_audit_config().rules


def test_not_an_audit_result_fails_closed():
    out = decide_audit({"epsilon_lower": 0.0}, CLAIMED)
    assert out.exit_code == 3 and "not an audit result" in out.checks[0].message


@pytest.mark.parametrize(
    "block, key",
    [
        ({"rules": {"epsilon": {"block": -1}}}, "audit.rules.epsilon.block"),
        ({"rules": {"epsilon": {"block": "claim"}}}, "audit.rules.epsilon.block"),
        ({"rules": {"epsilon": {"block": float("inf")}}}, "audit.rules.epsilon.block"),
        ({"rules": {"auc_lower": {"warn": 1.5}}}, "audit.rules.auc_lower.warn"),
        ({"rules": {"auc_lower": {"block": "claimed"}}}, "audit.rules.auc_lower.block"),
        ({"rules": {"auc_lower": {"warn": 0.9, "block": 0.8}}}, "audit.rules.auc_lower.warn"),
        ({"rules": {"auc_lower": {"stop": 0.9}}}, "audit.rules.auc_lower.stop"),
        ({"rules": {"dcr": 0.3}}, "audit.rules.dcr"),
        ({"rules": {}}, "audit.rules"),
        ({"claimed_epsilon": -1, **CLAIMED}, "audit.claimed_epsilon"),
        ({"delta": 1.0, **CLAIMED}, "audit.delta"),
        ({"confidence": 0.9, **CLAIMED}, "audit.confidence"),
    ],
)
def test_validation_errors_name_the_key(block, key):
    with pytest.raises(ConfigError) as exc:
        parse_audit_config(block)
    assert str(exc.value).startswith(key + ":"), str(exc.value)


def test_default_configuration():
    cfg = default_audit_config()
    assert [(r.kind, r.severity, r.claimed, r.limit) for r in cfg.rules] == [
        ("epsilon", "block", True, None),
        ("auc_lower", "warn", False, 0.6),
        ("auc_lower", "block", False, 0.8),
    ]


def test_audit_block_in_a_gate_file_and_in_its_own_file(tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(
        "dataset: d\nmetrics:\n  common_rows: {threshold: {block: 0.01}}\n"
        "audit:\n  claimed_epsilon: 2\n  rules:\n    epsilon: {block: claimed}\n"
        'require_audit: {generator: g, version: "3"}\n',
        encoding="utf-8",
    )
    cfg = parse_gate_config(__import__("yaml").safe_load(gate.read_text()))
    assert cfg.audit.claimed_epsilon == 2.0 and cfg.require_audit == AuditRequirement("g", "3")
    assert load_audit_config(gate).claimed_epsilon == 2.0
    own = tmp_path / "audit.toml"
    own.write_text("delta = 0.0\n[rules]\nauc_lower = {warn = 0.6}\n", encoding="utf-8")
    assert [(r.kind, r.limit) for r in load_audit_config(own).rules] == [("auc_lower", 0.6)]
    plain = tmp_path / "plain.yaml"
    plain.write_text("metrics:\n  common_rows: {threshold: 0.01}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="^audit: missing"):
        load_audit_config(plain)
    with pytest.raises(ConfigError, match="^require_audit.generator:"):
        parse_gate_config({"metrics": {"common_rows": {"threshold": 0.01}}, "require_audit": {"version": "1"}})


def test_a_gate_configuration_without_audit_keys_keeps_its_form():
    base = {"metrics": {"common_rows": {"threshold": 0.01}}}
    cfg = parse_gate_config(base)
    assert "audit" not in cfg.to_dict() and "require_audit" not in cfg.to_dict()
    with_req = parse_gate_config({**base, "require_audit": "g"})
    assert with_req.hash != cfg.hash


def test_table_fits_100_columns_and_names_errors_in_full():
    out = decide_audit(make_result(1.2, 0.85, claimed=1.0), BOTH)
    assert all(len(line) <= 100 for line in out.table().splitlines())
    err = decide_audit(make_result(5.0, claimed=None), CLAIMED)
    assert "no claim was given" in err.table() and "ERROR" in err.table()
