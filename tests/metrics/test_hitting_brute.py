"""hitting_rate against a brute-force check of its definition on small mixed data with nulls, ties
at the tolerance and a constant column (its k-d tree folds every equality column into one
group coordinate; the answer must be the definition's)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate.metrics as m


def _frame(rng: np.random.Generator, n: int) -> pl.DataFrame:
    a = rng.integers(0, 31, n).astype(float)  # range 30 → h = 1: integer steps hit at ±1
    a[rng.random(n) < 0.15] = np.nan
    b = rng.integers(0, 4, n).astype(float) * 0.5
    return pl.DataFrame(
        {
            "a": pl.Series(a, nan_to_null=True),
            "b": b,
            "const": np.full(n, 7.0),
            "c": pl.Series(rng.choice(np.array(["x", "y", None], dtype=object), n).tolist(), dtype=pl.String),
            "d": rng.choice(["u", "v"], n),
        }
    )


def _brute(real: pl.DataFrame, syn: pl.DataFrame, divisor: float = 30.0) -> np.ndarray:
    hit = np.ones((real.height, syn.height), dtype=bool)
    for col in real.columns:
        r, s = real[col], syn[col]
        rn, sn = r.is_null().to_numpy(), s.is_null().to_numpy()
        if r.dtype == pl.String:
            rv = r.fill_null("<null>").to_numpy()
            sv = s.fill_null("<null>").to_numpy()
            hit &= rv[:, None] == sv[None, :]
            continue
        rv = r.fill_null(0).to_numpy().astype(float)
        sv = s.fill_null(0).to_numpy().astype(float)
        ok = rv[~rn]
        h = (ok.max() - ok.min()) / divisor
        both_null = rn[:, None] & sn[None, :]
        none_null = ~rn[:, None] & ~sn[None, :]
        close = np.abs(rv[:, None] - sv[None, :]) <= h * (1 + 1e-9) if h > 0 else rv[:, None] == sv[None, :]
        hit &= both_null | (none_null & close)
    return hit.any(axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hitting_rate_matches_brute_force_with_nulls_ties_and_constant_columns(seed):
    rng = np.random.default_rng(seed)
    real, syn = _frame(rng, 300), _frame(rng, 250)
    res = m.hitting_rate(real, syn)
    want = _brute(real, syn)
    assert 0 < want.sum() < want.size  # the case is not trivial either way
    np.testing.assert_array_equal(res.per_record.astype(bool), want)
    assert res.value == pytest.approx(want.mean())
