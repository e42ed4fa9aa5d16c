"""The demo's decision table — the default gate with a holdout, the widest cells it writes (signed
intervals, the longest metric name) — fits 100 columns with every row on one line, and the demo
says what it is doing from its first second."""

from __future__ import annotations

import uuid

from privgate.gates import GateOutcome, decide, decision_of, default_gate_config
from privgate.results import MetricResult
from privgate.text_tables import TABLE_WIDTH, format_table


def _outcome() -> GateOutcome:
    cfg = default_gate_config("adult-demo")
    results = {
        name: MetricResult(
            name=name,
            value=0.5912,
            raw=0.5912,
            ci=(0.5700, 0.6100),
            baseline=0.9809,
            excess=-0.3897,
            excess_ci=(-0.4087, -0.3710),
            baseline_ci=(0.97, 0.99),
        )
        for name in cfg.metrics
    }
    checks = decide(cfg, results, {}, has_holdout=True, previous=None)
    decision, code = decision_of(checks)
    return GateOutcome(
        run_id=uuid.uuid4().hex,
        dataset="adult-demo",
        release_id="release-3-noisy-copy",
        decision=decision,
        checks=checks,
        exit_code=code,
        config=cfg,
        has_holdout=True,
    )


def test_the_default_gate_table_fits_100_columns_without_wrapping_a_cell():
    outcome = _outcome()
    text = outcome.table(compact=True)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= TABLE_WIDTH
    table = lines[: lines.index("")]
    # a wrapped cell would put a line starting with spaces (its continuation) in the table; the
    # notes are the only indented lines, each a check's message
    rows = [line for line in table[2:] if not line.startswith(" ")]
    notes = [line for line in table[2:] if line.startswith("    ")]
    assert len(rows) + len(notes) == len(table) - 2
    assert all(n.strip() in {c.message for c in outcome.checks} or len(n) > 90 for n in notes)
    assert "-0.3897 [-0.4087, -0.3710]" in text and "label_free_memorisation" in text


def test_gaps_close_before_a_cell_is_wrapped():
    rows = [["a" * 30, "b" * 30, "c" * 36]]  # 100 with two spaces: kept
    assert format_table(["x", "y", "z"], rows, width=100).splitlines()[2] == f"{'a' * 30}  {'b' * 30}  {'c' * 36}"
    rows = [["a" * 30, "b" * 30, "c" * 38]]  # 102 with two spaces, 100 with one: no cell wrapped
    assert format_table(["x", "y", "z"], rows, width=100).splitlines()[2] == f"{'a' * 30} {'b' * 30} {'c' * 38}"
    rows = [["a" * 50, "b" * 50, "c" * 10]]
    wrapped = format_table(["x", "y", "z"], rows, width=100).splitlines()
    assert max(len(line) for line in wrapped) <= 100 and len(wrapped) > 3
    assert "-  -" in wrapped[1]  # wrapping anyway: the gaps stay two spaces
