"""A stored audit is evidence only when its numbers carry its decision: every tampered row is
refused (exit 3) with a reason naming the field, on SQLite and PostgreSQL; a schema-3 audits
table is migrated; the audit's power is the bound an attack that never errs would show."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
import sqlalchemy as sa
from audit_helpers import DIGEST, evidence_result

from privgate.gates import run_gate
from privgate.gates.audit_evidence import largest_showable_bound
from privgate.gates.audit_rules import decide_audit
from privgate.history import HistoryStore
from privgate.history import schema as S

RULES = {"rules": {"epsilon": {"block": "claimed"}, "auc_lower": {"warn": 0.6, "block": 0.8}}}
LAX = {"rules": {"epsilon": {"block": 50.0}, "auc_lower": {"block": 0.99}}}
FRAMES = (pl.DataFrame({"a": [float(i) for i in range(20)]}), pl.DataFrame({"a": [i + 0.5 for i in range(20)]}))


def _json_edit(**changes):
    def edit(d):
        for path, value in changes.items():
            *head, last = path.split("__")
            at = d
            for k in head:
                at = at[int(k)] if isinstance(at, list) else at[k]
            at[last] = value
        return d

    return edit


# (case, which audit is recorded, cell changes {column: (sqlite value, postgresql value)}, result_json
#  edit, config_json replacement, the field the refusal must name)
_VIOLATION = {"decision": ("pass", "pass"), "accepted": (1, True), "exit_code": (0, 0)}
CASES = [
    ("accepted text 'no'", "pass", {"accepted": ("no", "no")}, None, None, "accepted"),
    ("accepted 1 where blocked", "block", {"accepted": (1, True)}, None, None, "accepted"),
    ("decision garbage", "pass", {"decision": ("garbage", "garbage")}, None, None, "decision"),
    ("decision pass where the numbers block", "block", _VIOLATION, None, None, "decision"),
    ("exit code of a block on a pass", "pass", {"exit_code": (2, 2)}, None, None, "exit_code"),
    ("epsilon_lower 99", "pass", {"epsilon_lower": (99.0, 99.0)}, None, None, "epsilon_lower"),
    ("epsilon_lower NaN", "pass", {"epsilon_lower": ("NaN", float("nan"))}, None, None, "epsilon_lower"),
    ("epsilon_lower -5", "pass", {"epsilon_lower": (-5.0, -5.0)}, None, None, "epsilon_lower"),
    ("epsilon_lower text", "pass", {"epsilon_lower": ("low", None)}, None, None, "epsilon_lower"),
    ("auc_lower 1.5", "pass", {"auc_lower": (1.5, 1.5)}, None, None, "auc_lower"),
    ("runs inflated", "pass", {"runs": (100000, 100000)}, None, None, "runs"),
    ("claim column raised", "pass", {"claimed_epsilon": (100.0, 100.0)}, None, None, "claimed_epsilon"),
    ("config hash replaced", "pass", {"config_hash": ("0" * 64, "0" * 64)}, None, None, "config_hash"),
    ("lax rules swapped in", "block", _VIOLATION, None, LAX, "config_hash"),
    ("no rules stored", "pass", {"config_json": (None, None)}, None, None, "config_json"),
    ("result not JSON", "pass", {"result_json": ("{not json", "{not json")}, None, None, "result_json"),
    (
        "bound lowered in the result and the column",
        "block",
        {**_VIOLATION, "epsilon_lower": (0.0, 0.0)},
        _json_edit(epsilon_lower=0.0),
        None,
        "epsilon_lower",
    ),
    (
        "error counts and bounds rewritten but not the best pair",
        "block",
        {**_VIOLATION, "epsilon_lower": (0.0, 0.0)},
        _json_edit(
            epsilon_lower=0.0,
            targets__0__attacks__distance__false_positives=25,
            targets__0__attacks__distance__false_negatives=25,
            targets__0__attacks__distance__epsilon_lower=0.0,
        ),
        None,
        "epsilon_lower",
    ),
    (
        "an attack's bound without its counts",
        "pass",
        {},
        _json_edit(targets__1__attacks__distance__epsilon_lower=0.3),
        None,
        "ε lower bound",
    ),
    ("delta NaN", "pass", {}, _json_edit(delta=float("nan")), None, "delta"),
    ("confidence 0.2", "pass", {}, _json_edit(confidence=0.2), None, "confidence"),
    ("n_audited as text", "pass", {}, _json_edit(n_audited="2"), None, "n_audited"),
    (
        "counts above the runs",
        "pass",
        {},
        _json_edit(targets__1__attacks__distance__false_positives=999),
        None,
        "error counts",
    ),
    ("alpha per test inflated", "pass", {}, _json_edit(design__alpha_per_test=0.5), None, "alpha_per_test"),
]


def _record(store, kind):
    result = evidence_result() if kind == "pass" else evidence_result(fp=0, fn=0)
    outcome = decide_audit(result, RULES)
    assert outcome.decision == kind
    store.record_audit(outcome, dataset="d")


def _tamper(store, cells, edit, config):
    pg = store.engine.dialect.name == "postgresql"
    with store.engine.begin() as conn:
        row = conn.execute(sa.select(S.audits.c.result_json, S.audits.c.config_json)).one()
        values = {col: v[1] if pg else v[0] for col, v in cells.items()}
        if edit is not None:
            values["result_json"] = json.dumps(edit(json.loads(row.result_json)))
        if config is not None:
            cfg = json.loads(row.config_json)
            cfg["rules"] = LAX["rules"]
            values["config_json"] = json.dumps(cfg)
        for col, v in values.items():  # raw SQL: the cell as a hand edit leaves it
            conn.execute(sa.text(f"UPDATE privgate_audits SET {col} = :v"), {"v": v})


@pytest.mark.parametrize("case,kind,cells,edit,config,field", CASES, ids=[c[0] for c in CASES])
def test_a_tampered_audit_row_is_refused_naming_the_field(store_url, case, kind, cells, edit, config, field):
    with HistoryStore(store_url) as store:
        if store.engine.dialect.name == "postgresql" and any(
            pg is None and col != "config_json" for col, (_, pg) in cells.items()
        ):
            pytest.skip("PostgreSQL's typed column refuses text where a number belongs")
        _record(store, kind)
        cfg = {
            "dataset": "d",
            "metrics": {"common_rows": {"threshold": {"block": 0.5}}},
            "require_audit": {"generator": "g"},
        }
        before = run_gate(
            cfg, *FRAMES, release_id="r", history=store, record=False, generator_version="1", generator_digest=DIGEST
        )
        assert before.exit_code == (0 if kind == "pass" else 2)
        _tamper(store, cells, edit, config)
        out = run_gate(
            cfg, *FRAMES, release_id="r", history=store, record=False, generator_version="1", generator_digest=DIGEST
        )
    check = [c for c in out.checks if c.metric == "(audit)"][0]
    assert (str(out.decision), out.exit_code) == ("block", 3), check.message
    assert check.rule == "error" and "is not evidence" in check.message
    assert field in check.message.split("is not evidence:")[1], check.message
    assert not any(tok in check.message for tok in ("99.0", "garbage", "'low'", "100000", "-5"))


def test_a_version_3_audits_table_is_migrated_and_its_old_rows_are_not_evidence(store_url):
    url = store_url if "://" in store_url else f"sqlite:///{store_url}"
    with HistoryStore(store_url) as store:
        _record(store, "pass")
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # as a schema-3 privgate left it: no digest, no rules
        if engine.dialect.name == "sqlite":
            for col in ("generator_digest", "config_json"):
                conn.exec_driver_sql(f"ALTER TABLE privgate_audits DROP COLUMN {col}")
        else:
            conn.exec_driver_sql("ALTER TABLE privgate_audits DROP COLUMN generator_digest, DROP COLUMN config_json")
        conn.execute(sa.update(S.meta).values(value="3"))
    engine.dispose()
    with HistoryStore(store_url) as store:
        assert store.schema_version == 4
        cfg = {
            "dataset": "d",
            "metrics": {"common_rows": {"threshold": {"block": 0.5}}},
            "require_audit": {"generator": "g", "digest": DIGEST},
        }
        out = run_gate(cfg, *FRAMES, release_id="r", history=store, record=False, generator_version="1")
        assert out.exit_code == 3 and "config_json is missing" in out.checks[-1].message
        _record(store, "pass")  # a new audit records both
        assert run_gate(cfg, *FRAMES, release_id="r", history=store, record=False, generator_version="1").exit_code == 0


def test_the_largest_showable_bound_is_the_bound_of_an_attack_that_never_errs():
    from privgate.stats.dp_audit import epsilon_lower_bound

    r = evidence_result(n_out=50, n_in=50)
    # the best pair at α/2 = 0.025 dominates the per-attack tests at α/(2·2) = 0.0125
    expected = epsilon_lower_bound(0, 50, 0, 50, delta=0.0, alpha=0.025)
    assert largest_showable_bound(r) == pytest.approx(expected)
    # by hand: Clopper–Pearson one-sided upper bound of 0 errors in 50 at 0.0125 is 1 − 0.0125^(1/50)
    hi = 1 - 0.0125 ** (1 / 50)
    assert expected == pytest.approx(math.log((1 - hi) / hi), rel=1e-9)
    assert largest_showable_bound(evidence_result(n_out=2, n_in=2, fp=1, fn=1)) == 0.0
