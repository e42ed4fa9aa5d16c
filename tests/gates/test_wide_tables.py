"""A very wide table gets its gate verdict: 1,000 columns (numeric and categorical) of a few dozen
records, with a holdout, through the shipped default gate — a decision (pass, warn or block with
the metrics computed), not a deadline stop or an error. Not timed: the deadline is the default
one; the measured times are benchmarks/bench_wide.py's."""

from __future__ import annotations

import numpy as np
import polars as pl

from privgate.gates import default_gate_config, run_gate


def _wide(rows: int, columns: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    levels = np.array(["p", "q", "r", "s"])
    return pl.DataFrame(
        {
            (f"n{j}" if j % 2 else f"c{j}"): (
                np.round(rng.normal(size=rows), 3) if j % 2 else levels[rng.integers(0, 4, rows)]
            )
            for j in range(columns)
        }
    )


def test_a_1000_column_table_gets_a_verdict_with_every_metric_computed():
    real, holdout, release = (_wide(60, 1000, s) for s in (1, 2, 3))
    outcome = run_gate(default_gate_config("wide"), real, release, holdout=holdout, record=False)
    assert outcome.exit_code in (0, 1, 2), [(c.metric, c.rule, c.message) for c in outcome.checks if c.rule == "error"]
    assert not [c for c in outcome.checks if c.rule == "error"]
    # every metric of the default gate gave a value: none was skipped for the width
    assert outcome.report is not None and not outcome.report.errors
    assert set(outcome.report.results) == {c.metric for c in outcome.checks}
    assert all(np.isfinite(r.value) for r in outcome.report.results.values())
