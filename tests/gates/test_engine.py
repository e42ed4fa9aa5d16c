"""Gate decisions on hand-made metric results: each exit code, each rule kind, failing closed."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
import pytest

from privgate.gates import (
    EXIT_CODES,
    Decision,
    GateOutcome,
    decide,
    decision_of,
    format_checks,
    parse_gate_config,
    run_gate,
    safe_message,
)
from privgate.gates import run as gate_run
from privgate.results import MetricResult


def R(name, value, raw=None, baseline=None, seconds=0.01):
    r = MetricResult(name=name, value=value, raw=value if raw is None else raw, seconds=seconds)
    if baseline is not None:
        r.with_baseline(baseline)
    return r


CFG = parse_gate_config(
    {
        "dataset": "d",
        "metrics": {
            "common_rows": {"threshold": {"warn": 0.0, "block": 0.01}},
            "authenticity": {
                "baseline": {"when": "with_holdout", "warn": 0.05, "block": 0.15},
                "trend": {"warn": 0.05},
            },
            "hitting_rate": {"threshold": {"max": 0.2, "severity": "warn", "when": "no_holdout"}},
        },
    }
)


def verdicts(checks):
    return {(c.metric, c.rule, c.severity): c.verdict for c in checks}


def test_threshold_rules_and_boundaries():
    # value equal to a limit passes (rules fire strictly above); 0.005 > 0.0 warns only
    res = {
        "common_rows": R("common_rows", 0.0),
        "authenticity": R("authenticity", 0.4),
        "hitting_rate": R("hitting_rate", 0.2),
    }
    checks = decide(CFG, res, {}, has_holdout=False)
    assert decision_of(checks) == (Decision.PASS, 0)
    v = verdicts(checks)
    assert v[("common_rows", "threshold", "warn")] == "pass"
    assert v[("hitting_rate", "threshold", "warn")] == "pass"
    # no holdout: the baseline rule (when: with_holdout) is not applied at all
    assert not any(c.rule == "baseline" for c in checks)

    res["common_rows"] = R("common_rows", 0.005)
    checks = decide(CFG, res, {}, has_holdout=False)
    assert decision_of(checks) == (Decision.WARN, 1)
    res["common_rows"] = R("common_rows", 0.0101)
    checks = decide(CFG, res, {}, has_holdout=False)
    assert decision_of(checks) == (Decision.BLOCK, 2)
    blocked = [c for c in checks if c.verdict == "block"]
    assert len(blocked) == 1 and blocked[0].threshold == 0.01 and blocked[0].compared == pytest.approx(0.0101)


def test_baseline_rules_compare_the_excess():
    # authenticity 0.60 against a holdout baseline 0.50: excess 0.10 > warn 0.05, ≤ block 0.15
    res = {
        "common_rows": R("common_rows", 0.0),
        "authenticity": R("authenticity", 0.6, baseline=0.5),
        "hitting_rate": R("hitting_rate", 0.9),
    }
    checks = decide(CFG, res, {}, has_holdout=True)
    v = verdicts(checks)
    assert v[("authenticity", "baseline", "warn")] == "warn"
    assert v[("authenticity", "baseline", "block")] == "pass"
    # hitting_rate's rule is no_holdout only: 0.9 does not count with a holdout
    assert not any(c.metric == "hitting_rate" for c in checks)
    assert decision_of(checks) == (Decision.WARN, 1)
    base = next(c for c in checks if c.rule == "baseline" and c.severity == "warn")
    assert base.compared == pytest.approx(0.1) and base.baseline == 0.5

    # a holdout was given but the baseline is missing → fails closed
    res["authenticity"] = R("authenticity", 0.6)
    checks = decide(CFG, res, {}, has_holdout=True)
    assert decision_of(checks) == (Decision.BLOCK, 3)


def test_trend_rules_use_the_previous_accepted_value():
    res = {
        "common_rows": R("common_rows", 0.0),
        "authenticity": R("authenticity", 0.30),
        "hitting_rate": R("hitting_rate", 0.0),
    }
    checks = decide(CFG, res, {}, has_holdout=False, previous={"authenticity": 0.24})
    trend = next(c for c in checks if c.rule == "trend")
    # 0.30 - 0.24 = 0.06 > 0.05
    assert trend.verdict == "warn" and trend.compared == pytest.approx(0.06) and trend.previous == 0.24
    checks = decide(CFG, res, {}, has_holdout=False, previous={"authenticity": 0.26})
    assert next(c for c in checks if c.rule == "trend").verdict == "pass"
    checks = decide(CFG, res, {}, has_holdout=False, previous=None, previous_note="first release")
    trend = next(c for c in checks if c.rule == "trend")
    assert trend.skipped and trend.verdict == "pass" and trend.message == "first release"


def test_metric_error_blocks_unless_optional():
    res = {"common_rows": R("common_rows", 0.0), "hitting_rate": R("hitting_rate", 0.0)}
    errors = {"authenticity": "metric 'authenticity' failed: ValueError: could not parse 'Jane Doe 1961'"}
    checks = decide(CFG, res, errors, has_holdout=False)
    assert decision_of(checks) == (Decision.BLOCK, EXIT_CODES["error"])
    err = next(c for c in checks if c.rule == "error")
    assert err.metric == "authenticity" and "Jane" not in err.message and "ValueError" in err.message

    opt = parse_gate_config(
        {
            "dataset": "d",
            "metrics": {"common_rows": {"threshold": 0.01}, "authenticity": {"optional": True, "trend": 0.05}},
        }
    )
    checks = decide(opt, res, errors, has_holdout=False)
    assert decision_of(checks) == (Decision.PASS, 0)
    assert next(c for c in checks if c.rule == "error").skipped


def test_safe_message_keeps_privgate_text_and_drops_foreign_text():
    assert safe_message("metric 'x' failed: KeyError: 'secret-value'") == "metric 'x' failed: KeyError"
    assert (
        safe_message("column 'age' of real has only nulls (3 rows)") == "column 'age' of real has only nulls (3 rows)"
    )
    assert len(safe_message("x" * 1000)) == 400


def test_table_puts_warn_and_block_limits_of_a_rule_on_one_row():
    res = {"common_rows": R("common_rows", 0.005), "authenticity": R("authenticity", 0.6, baseline=0.5)}
    checks = decide(CFG, res, {"hitting_rate": "x"}, has_holdout=True, previous={"authenticity": 0.5})
    decision, code = decision_of(checks)
    text = format_checks(GateOutcome("rid", "ds", "r1", decision, checks, code))
    lines = text.splitlines()
    assert lines[0].split() == [
        "metric",
        "rule",
        "value",
        "[95%",
        "CI]",
        "compared",
        "[95%",
        "CI]",
        "limits",
        "p",
        "verdict",
        "note",
    ]
    rows = [ln.split() for ln in lines[2:]]
    # two limits of common_rows' threshold rule → one row, the warn limit decides (0.005 > 0, ≤ 0.01)
    assert rows[0][:11] == [
        "common_rows",
        "threshold",
        "0.0050",
        "0.0050",
        "warn",
        "0",
        "/",
        "block",
        "0.01",
        "-",
        "WARN",
    ]
    # baseline: excess 0.6 − 0.5 = +0.1 > warn 0.05, ≤ block 0.15
    assert rows[1][:11] == [
        "authenticity",
        "baseline",
        "0.6000",
        "+0.1000",
        "warn",
        "0.05",
        "/",
        "block",
        "0.15",
        "-",
        "WARN",
    ]
    assert rows[2][:8] == ["authenticity", "trend", "0.6000", "+0.1000", "warn", "0.05", "-", "WARN"]
    assert rows[3][:7] == ["hitting_rate", "error", "-", "-", "-", "-", "BLOCK"]
    assert len(rows) == 6 and rows[4] == []  # 4 rows, a blank line, the decision
    assert lines[-1].startswith("decision: BLOCK (error") and "exit code 3" in lines[-1]
    assert all(ln == ln.rstrip() for ln in lines)


def test_table_shows_intervals_and_p_values():
    """The table's numbers come from the results and the rules: a baseline rule on the lower end
    of the excess interval compares that end, shown with the interval it decided on."""
    cfg = parse_gate_config(
        {
            "dataset": "d",
            "metrics": {
                "common_rows": {"threshold": {"warn": 0.0, "block": 0.01}},
                "authenticity": {"baseline": {"on": "lower", "warn": 0.05, "block": 0.15}, "test": {"block": 0.01}},
            },
        }
    )
    common = R("common_rows", 0.012).set_ci((0.004, 0.031), "wilson")
    auth = R("authenticity", 0.6)
    auth.with_baseline(0.5, (0.45, 0.55), (0.02, 0.18))  # excess 0.1, its interval 0.02 to 0.18
    auth.p_value = 0.00002
    checks = decide(cfg, {"common_rows": common, "authenticity": auth}, {}, has_holdout=True, previous=None)
    outcome = GateOutcome(
        "rid",
        "ds",
        "r1",
        *decision_of(checks)[:1],
        checks,
        decision_of(checks)[1],
        report=FakeReport({"common_rows": common, "authenticity": auth}),
    )
    rows = {(r.split()[0], r.split()[1]): r for r in outcome.table().splitlines()[2:] if r.strip()}
    # the threshold rule: the value 0.012 with the result's interval, compared as such
    assert "0.0120 [0.0040, 0.0310]  0.0120 [0.0040, 0.0310]" in rows[("common_rows", "threshold")]
    # the baseline rule on: lower compares the lower end 0.02 of the excess interval (≤ 0.05: pass)
    base_row = rows[("authenticity", "baseline")]
    assert "baseline (lower)" in base_row and "+0.0200 [+0.0200, +0.1800]" in base_row
    assert base_row.split()[-1] == "pass"
    # the test rule: the metric's p-value, shown as <0.0001, below 0.01: blocks
    assert "<0.0001" in rows[("authenticity", "test")] and "BLOCK" in rows[("authenticity", "test")]
    doc = outcome.to_dict()
    base = next(c for c in doc["checks"] if c["rule"] == "baseline")
    assert base["on"] == "lower" and base["interval"] == [0.02, 0.18] and base["compared"] == 0.02
    assert (
        doc["results"]["authenticity"]["excess_ci"] == [0.02, 0.18]
        and doc["results"]["authenticity"]["p_value"] == 0.00002
    )


# ------------------------------------------------------------------ rules on evidence


def RI(name, value, ci=None, p_value=None, baseline=None, excess_ci=None):
    """A result with an interval and/or a p-value."""
    r = R(name, value, baseline=baseline)
    if ci is not None:
        r.set_ci(ci, "test interval")
    if baseline is not None:
        r.with_baseline(baseline, excess_ci=excess_ci)
    r.p_value = p_value
    return r


EVIDENCE = parse_gate_config(
    {
        "dataset": "d",
        "metrics": {
            "memorisation": {
                "threshold": {"on": "lower", "warn": 0.0, "block": 0.01},
                "test": {"warn": 0.05, "block": 0.001},
            },
            "nnaa": {"baseline": {"on": "upper", "max": 0.05, "severity": "warn"}},
            "authenticity": {"threshold": {"on": "estimate", "block": 0.6}, "baseline": {"on": "lower", "block": 0.1}},
        },
    }
)


def by_rule(checks):
    return {(c.metric, c.rule, c.severity): c for c in checks}


def test_on_lower_and_upper_compare_the_interval_ends():
    res = {
        "memorisation": RI("memorisation", 0.012, ci=(0.004, 0.02), p_value=0.002),
        "nnaa": RI("nnaa", 0.52, baseline=0.5, excess_ci=(-0.01, 0.06)),
        "authenticity": RI("authenticity", 0.55, ci=(0.5, 0.7), baseline=0.5, excess_ci=(0.02, 0.08)),
    }
    checks = decide(EVIDENCE, res, {}, has_holdout=True)
    c = by_rule(checks)
    # lower bound 0.004 > warn 0 but ≤ block 0.01, although the estimate 0.012 is above 0.01
    assert c[("memorisation", "threshold", "warn")].verdict == "warn"
    assert c[("memorisation", "threshold", "block")].verdict == "pass"
    m = c[("memorisation", "threshold", "block")]
    assert m.on == "lower" and m.compared == pytest.approx(0.004) and m.interval == (0.004, 0.02)
    assert m.p_value == pytest.approx(0.002) and "lower bound 0.0040" in m.message
    # p = 0.002 < warn 0.05, ≥ block 0.001
    assert c[("memorisation", "test", "warn")].verdict == "warn"
    t = c[("memorisation", "test", "block")]
    assert t.verdict == "pass" and t.on == "p_value" and t.compared == pytest.approx(0.002) and t.interval is None
    # upper end of the excess interval: +0.06 > 0.05 warns although the excess is +0.02
    n = c[("nnaa", "baseline", "warn")]
    assert n.verdict == "warn" and n.compared == pytest.approx(0.06) and n.interval == (-0.01, 0.06)
    assert n.p_value is None and "upper bound +0.0600" in n.message
    # estimate ignores the interval; lower end of the excess 0.02 ≤ 0.1
    assert c[("authenticity", "threshold", "block")].verdict == "pass"
    assert c[("authenticity", "threshold", "block")].interval == (0.5, 0.7)
    assert c[("authenticity", "baseline", "block")].verdict == "pass"
    assert decision_of(checks) == (Decision.WARN, 1)

    res["memorisation"] = RI("memorisation", 0.05, ci=(0.03, 0.07), p_value=1e-9)
    checks = decide(EVIDENCE, res, {}, has_holdout=True)
    assert decision_of(checks) == (Decision.BLOCK, 2)
    assert by_rule(checks)[("memorisation", "test", "block")].verdict == "block"


def test_test_rule_fires_strictly_below_and_lower_rule_strictly_above():
    res = {
        "memorisation": RI("memorisation", 0.0, ci=(0.0, 0.01), p_value=0.05),
        "nnaa": RI("nnaa", 0.5, baseline=0.5, excess_ci=(-0.05, 0.05)),
        "authenticity": RI("authenticity", 0.6, ci=(0.5, 0.7), baseline=0.5, excess_ci=(0.0, 0.1)),
    }
    checks = decide(EVIDENCE, res, {}, has_holdout=True)
    assert decision_of(checks) == (Decision.PASS, 0), [c.message for c in checks if c.verdict != "pass"]


@pytest.mark.parametrize(
    "res, missing",
    [
        (RI("memorisation", 0.02, ci=None, p_value=0.001), "reports no ci"),
        (RI("memorisation", 0.02, ci=(0.01, 0.03), p_value=None), "needs a p-value"),
    ],
)
def test_a_rule_asking_for_missing_evidence_fails_closed(res, missing):
    others = {
        "nnaa": RI("nnaa", 0.5, baseline=0.5, excess_ci=(-0.05, 0.0)),
        "authenticity": RI("authenticity", 0.5, ci=(0.4, 0.6), baseline=0.5, excess_ci=(-0.1, 0.0)),
    }
    checks = decide(EVIDENCE, {"memorisation": res, **others}, {}, has_holdout=True)
    errs = [c for c in checks if c.rule == "error"]
    assert errs and all(missing in c.message and "fails closed" in c.message for c in errs)
    assert decision_of(checks) == (Decision.BLOCK, EXIT_CODES["error"])
    # an excess without its interval, compared on its upper end
    no_excess_ci = {
        **others,
        "memorisation": RI("memorisation", 0.0, ci=(0.0, 0.0), p_value=1.0),
        "nnaa": RI("nnaa", 0.5, baseline=0.5),
    }
    checks = decide(EVIDENCE, no_excess_ci, {}, has_holdout=True)
    err = next(c for c in checks if c.rule == "error")
    assert err.metric == "nnaa" and "excess_ci" in err.message
    assert decision_of(checks) == (Decision.BLOCK, EXIT_CODES["error"])
    # an optional metric's missing evidence is shown and ignored
    opt = parse_gate_config(
        {"dataset": "d", "metrics": {"memorisation": {"optional": True, "threshold": {"on": "lower", "block": 0.01}}}}
    )
    checks = decide(opt, {"memorisation": RI("memorisation", 0.02)}, {}, has_holdout=True)
    assert decision_of(checks) == (Decision.PASS, 0) and checks[0].skipped


def test_checks_serialise_the_evidence_fields():
    res = {
        "memorisation": RI("memorisation", 0.012, ci=(0.004, 0.02), p_value=0.002),
        "nnaa": RI("nnaa", 0.52, baseline=0.5, excess_ci=(-0.01, 0.06)),
        "authenticity": RI("authenticity", 0.55, ci=(0.5, 0.7), baseline=0.5, excess_ci=(0.02, 0.08)),
    }
    d = decide(EVIDENCE, res, {}, has_holdout=True)[0].to_dict()
    assert d["on"] == "lower" and d["interval"] == [0.004, 0.02] and d["p_value"] == pytest.approx(0.002)


def test_holdout_only_metric_not_required_without_a_holdout(monkeypatch):
    cfg = parse_gate_config(
        {
            "dataset": "d",
            "metrics": {
                "memorisation": {"threshold": {"on": "lower", "block": 0.01, "when": "with_holdout"}},
                "common_rows": {"threshold": 0.01},
            },
        }
    )
    checks = decide(cfg, {"common_rows": R("common_rows", 0.0)}, {}, has_holdout=False)
    assert decision_of(checks) == (Decision.PASS, 0) and [c.metric for c in checks] == ["common_rows"]
    # with a holdout, a missing result still fails closed
    checks = decide(cfg, {"common_rows": R("common_rows", 0.0)}, {}, has_holdout=True)
    assert decision_of(checks) == (Decision.BLOCK, EXIT_CODES["error"])


# ------------------------------------------------------------------ run_gate with a stub evaluate


@dataclass
class FakeReport:
    results: dict
    errors: dict = field(default_factory=dict)


@pytest.fixture
def frames():
    real = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    return real, real.clone()


def _stub(monkeypatch, values, errors=None, calls=None):
    def fake(real, synthetic, **kw):
        if calls is not None:
            calls.append(kw)
        res = {n: R(n, v, baseline=(v - 0.01 if kw.get("baseline") else None)) for n, v in values.items()}
        return FakeReport(res, dict(errors or {}))

    monkeypatch.setattr(gate_run, "_evaluate", fake)


@pytest.mark.parametrize(
    "values, code, decision",
    [
        ({"common_rows": 0.0, "authenticity": 0.1, "hitting_rate": 0.0}, 0, "pass"),
        ({"common_rows": 0.004, "authenticity": 0.1, "hitting_rate": 0.0}, 1, "warn"),
        ({"common_rows": 0.5, "authenticity": 0.1, "hitting_rate": 0.0}, 2, "block"),
    ],
)
def test_run_gate_exit_codes(monkeypatch, frames, values, code, decision):
    calls = []
    _stub(monkeypatch, values, calls=calls)
    out = run_gate(CFG, *frames, release_id="r1")
    assert out.exit_code == code and out.decision == decision and str(out.decision) == decision
    assert out.accepted is (decision != "block")
    assert calls[0]["on_error"] == "record" and calls[0]["baseline"] is False
    assert calls[0]["metrics"] == ["common_rows", "authenticity", "hitting_rate"]
    assert out.fingerprint["real"]["rows"] == 3 and len(out.fingerprint["real"]["content_sha256"]) == 64
    d = out.to_dict()
    assert d["decision"] == decision and d["exit_code"] == code and len(d["checks"]) == len(out.checks)
    assert "decision:" in out.table()


def test_run_gate_asks_for_baselines_only_with_a_holdout(monkeypatch, frames):
    calls = []
    _stub(monkeypatch, {"common_rows": 0.0, "authenticity": 0.1, "hitting_rate": 0.0}, calls=calls)
    out = run_gate(CFG, *frames, holdout=frames[0])
    assert calls[0]["baseline"] is True and out.has_holdout
    assert any(c.rule == "baseline" and not c.skipped for c in out.checks)


def test_run_gate_fails_closed_on_metric_error(monkeypatch, frames):
    _stub(
        monkeypatch,
        {"common_rows": 0.0, "hitting_rate": 0.0},
        errors={"authenticity": "metric 'authenticity' failed: RuntimeError: boom"},
    )
    out = run_gate(CFG, *frames)
    assert out.decision == Decision.BLOCK and out.exit_code == 3


def test_run_gate_fails_closed_on_missing_and_corrupt_inputs(tmp_path, frames):
    missing = run_gate(CFG, tmp_path / "nope.parquet", frames[1])
    assert missing.exit_code == 3 and missing.decision == "block"
    assert "file not found" in missing.checks[0].message
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    corrupt = run_gate(CFG, frames[0], bad)
    assert corrupt.exit_code == 3 and corrupt.checks[0].metric == "(synthetic)"
    none = run_gate(CFG, frames[0], None)
    assert none.exit_code == 3


def test_run_gate_fails_closed_on_invalid_config(frames):
    out = run_gate({"metrics": {"common_rows": {"threshold": 7}}}, *frames)
    assert out.exit_code == 3 and out.checks[0].metric == "(config)"
    assert "metrics.common_rows.threshold" in out.checks[0].message


def test_run_gate_invalid_dataset_override_blocks_instead_of_raising(frames):
    out = run_gate(CFG, *frames, dataset="   ")
    assert out.exit_code == 3 and out.checks[0].metric == "(config)"
    assert "dataset: must be a non-empty string" in out.checks[0].message


def test_run_gate_requires_holdout_when_configured(monkeypatch, frames):
    _stub(monkeypatch, {"common_rows": 0.0})
    cfg = parse_gate_config({"require_holdout": True, "metrics": {"common_rows": {"threshold": 0.01}}})
    out = run_gate(cfg, *frames)
    assert out.exit_code == 3 and out.checks[0].metric == "(holdout)"


def test_run_gate_unexpected_evaluation_failure_withholds_details(monkeypatch, frames):
    def boom(*a, **k):
        raise ValueError("row 2 has value 'Jane Doe'")

    monkeypatch.setattr(gate_run, "_evaluate", boom)
    out = run_gate(CFG, *frames)
    assert out.exit_code == 3 and "Jane" not in out.checks[0].message


class BrokenStore:
    """A history store that fails on reading (``read``) or writing (``write``)."""

    def __init__(self, fail):
        self.fail = fail

    def last_accepted(self, dataset):
        if self.fail == "read":
            raise OSError("disk gone")
        return None

    def record(self, outcome):
        from privgate.errors import HistoryError

        raise HistoryError("history: cannot record run x: OperationalError")


@pytest.mark.parametrize("fail", ["read", "write"])
def test_run_gate_fails_closed_when_history_fails(monkeypatch, frames, fail):
    # every metric passes: only the history failure can block
    _stub(monkeypatch, {"common_rows": 0.0, "authenticity": 0.1, "hitting_rate": 0.0})
    out = run_gate(CFG, *frames, history=BrokenStore(fail))
    assert out.decision == Decision.BLOCK and out.exit_code == 3 and not out.accepted
    assert not out.recorded
    hist = [c for c in out.checks if c.metric == "(history)"]
    assert hist and all(c.verdict == "block" for c in hist)
    if fail == "read":
        assert "cannot read history: OSError" in hist[0].message and "disk gone" not in hist[0].message
    else:
        assert "cannot record the run: HistoryError" in hist[-1].message


def test_trend_notes_a_changed_real_dataset(monkeypatch, frames, tmp_path):
    from privgate.history import HistoryStore

    _stub(monkeypatch, {"common_rows": 0.0, "authenticity": 0.1, "hitting_rate": 0.0})
    store = HistoryStore(tmp_path / "h.sqlite")
    real, syn = frames
    first = run_gate(CFG, real, syn, release_id="a", history=store)
    assert first.previous_release_id is None
    same = run_gate(CFG, real, syn, release_id="b", history=store)
    trend = next(c for c in same.checks if c.rule == "trend")
    assert same.previous_release_id == "a" and not trend.skipped and "differ" not in trend.message
    changed = run_gate(CFG, real.with_columns(pl.col("a") + 1), syn, release_id="c", history=store)
    trend = next(c for c in changed.checks if c.rule == "trend")
    assert changed.previous_release_id == "b" and "real data differ from release 'b'" in trend.message


def test_run_gate_passes_its_thread_budget_to_the_evaluation(monkeypatch, tmp_path):
    """The Dagster resource's `threads` reaches the evaluation (an outer limit alone was
    overridden by evaluate's own budget of the free cores)."""
    import polars as pl

    seen = {}
    real_eval = gate_run._evaluate

    def spy(*args, **kwargs):
        seen["threads"] = kwargs["options"].threads
        return real_eval(*args, **kwargs)

    monkeypatch.setattr(gate_run, "_evaluate", spy)
    frame = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["x", "y", "x", "y"]})
    out = run_gate(
        {"dataset": "t", "metrics": {"common_rows": {"threshold": {"block": 0.5}}}}, frame, frame.reverse(), threads=1
    )
    assert seen["threads"] == 1 and out.exit_code == 2  # a copy: every real record copied


def test_compared_number_picks_estimate_or_interval_end():
    from privgate.gates.rules import compared_number

    assert compared_number(0.3, (0.1, 0.5), "estimate") == 0.3
    assert compared_number(0.3, (0.1, 0.5), "lower") == 0.1
    assert compared_number(0.3, (0.1, 0.5), "upper") == 0.5
    assert compared_number(0.3, None, "estimate") == 0.3
    assert compared_number(0.3, None, "lower") is None  # the caller fails closed
    with pytest.raises(ValueError, match="on must be"):
        compared_number(0.3, (0.1, 0.5), "middle")
