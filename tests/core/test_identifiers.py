"""Identifier columns: detected before any metric, left out of every other metric, their reuse
measured by identifier_reuse, never an error, never a value in any output."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.context import EvaluationContext

N = 200


def _frame(seed: int, id_start: int | None) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    f = pl.DataFrame({"x": rng.normal(size=N), "c": rng.choice(["a", "b", "c"], N)})
    if id_start is not None:
        f = f.with_columns(pl.Series("pid", [f"ID-{id_start + i:06d}" for i in range(N)]))
    return f


def test_detection_rules():
    real = _frame(0, 0)
    assert EvaluationContext(real, _frame(1, 5000)).identifiers == ["pid"]
    # one duplicate in 200 rows: 199 distinct < 99.9 % — a quasi-identifier, compared as equal or not
    dup = real.with_columns(
        pl.when(pl.int_range(N) == 1).then(pl.lit("ID-000000")).otherwise(pl.col("pid")).alias("pid")
    )
    assert EvaluationContext(dup, _frame(1, 5000)).identifiers == []
    # fewer than 100 rows: never; a numeric column: never; a column the caller named: kept
    assert EvaluationContext(real.head(99), _frame(1, 5000).head(99)).identifiers == []
    assert EvaluationContext(real, _frame(1, 5000), schema={"pid": "categorical", "x": "numeric"}).identifiers == [
        "pid"
    ]
    assert EvaluationContext(real, _frame(1, 5000), keys=["pid"]).identifiers == []
    only = real.select("pid")
    assert EvaluationContext(only, _frame(1, 5000).select("pid")).identifiers == []  # nothing would be left


def test_a_copy_under_fresh_identifiers_is_still_a_copy_and_the_identifiers_are_measured():
    real, holdout = _frame(0, 0), _frame(2, 9000)
    fresh = real.with_columns(pl.Series("pid", [f"ID-{700000 + i:06d}" for i in range(N)]))
    rep = privgate.evaluate(real, fresh, ["common_rows", "authenticity", "identifier_reuse"], holdout=holdout)
    assert rep.results["common_rows"].value == 1.0 and rep.results["authenticity"].value == 1.0
    assert rep.results["identifier_reuse"].value == 0.0
    assert rep.params["columns"]["identifiers_left_out"] == ["pid"]
    half = fresh.with_columns(pl.when(pl.int_range(N) < N // 2).then(real["pid"]).otherwise(pl.col("pid")).alias("pid"))
    res = privgate.metrics.identifier_reuse(real, half)
    assert res.value == res.raw == pytest.approx(0.5)
    assert res.ci is not None and res.ci[0] < 0.5 < res.ci[1]
    text = privgate.evaluate(real, half, ["identifier_reuse", "common_rows"], holdout=holdout).to_json()
    assert "ID-" not in text  # never a value


def test_reused_row_numbers_are_chance_with_a_holdout():
    """Identifiers that are row positions in every frame are shared by the holdout as much as by
    the release: nothing beyond chance."""
    real, holdout, release = _frame(0, 0), _frame(2, 0), _frame(1, 0)
    res = privgate.metrics.identifier_reuse(real, release, holdout=holdout)
    assert res.raw == 1.0 and res.value == 0.0 and res.details["chance_share_holdout"] == 1.0
    assert privgate.metrics.identifier_reuse(real, release).value == 1.0  # without one: reuse is reuse


def test_no_identifier_column_scores_zero_and_says_so():
    res = privgate.metrics.identifier_reuse(_frame(0, None), _frame(1, None))
    assert res.value == 0.0 and res.details["identifier_columns"] == []
