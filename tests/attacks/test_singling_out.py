"""singling_out on frames small enough to enumerate every predicate by hand, and its parts."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy.special import gamma

import privgate
from privgate.attacks.predicates import EQ, GE, ISNULL, LE, ConjunctionCounter, Predicates, match_counts
from privgate.attacks.singling_out import size_correction
from privgate.stats import control_risk


def test_univariate_by_hand():
    # distinct synthetic levels x, y, z each occur once → predicates a == x, a == y, a == z.
    # training [x, y, z, z]: x and y isolate one record (rows 0, 1), z matches two → 2 of 3;
    # holdout [y, y, w, w]: none isolates one → 0 of 3.
    real = pl.DataFrame({"a": ["x", "y", "z", "z"]})
    syn = pl.DataFrame({"a": ["x", "y", "y", "z"]})
    hold = pl.DataFrame({"a": ["y", "y", "w", "w"]})
    res = privgate.metrics.singling_out(real, syn, holdout=hold, mode="univariate", n_attacks=3)
    d = res.details
    assert d["n_predicates"] == 3 and d["n_success"] == 2 and d["n_control_success"] == 0
    expected = control_risk(2, 3, 0, 3)
    assert res.raw == pytest.approx(expected.risk) and res.value == pytest.approx(expected.risk)
    assert list(res.per_record) == [1.0, 1.0, 0.0, 0.0] and d["singled_out_rows"] == [0, 1]
    assert d["control_size_correction"] == 1.0


def test_multivariate_by_hand():
    # distinct synthetic records (A,1) (A,2) (B,3) (B,5); synthetic median of num = 2.5.
    # Built predicates: (A,1) → c == A & num <= 1 (isolates (A,1)); (A,2) → c == A & num <= 2
    # (matches two); (B,3) → c == B & num >= 3 (two); (B,5) → c == B & num >= 5 (isolates).
    # Training: c == A & num <= 1 → row 0 only; c == B & num >= 5 → row 2 only → 2 of 2.
    # Holdout: A & <= 1 → (A,0), (A,1): two; B & >= 5 → (B,9) only → 1 of 2.
    syn = pl.DataFrame({"c": ["A", "A", "B", "B", "B"], "num": [1.0, 2.0, 3.0, 5.0, 5.0]})
    real = pl.DataFrame({"c": ["A", "A", "B", "B"], "num": [1.0, 3.0, 6.0, 2.0]})
    hold = pl.DataFrame({"c": ["A", "A", "B", "C"], "num": [0.0, 1.0, 9.0, 4.0]})
    res = privgate.metrics.singling_out(real, syn, holdout=hold, n_cols=2, n_attacks=2, max_attempts=5000)
    d = res.details
    assert d["n_distinct_synthetic"] == 4 and d["n_predicates"] == 2
    assert d["n_success"] == 2 and d["n_control_success"] == 1
    assert d["singled_out_rows"] == [0, 2]
    assert res.raw == pytest.approx(control_risk(2, 2, 1, 2).risk)


def test_predicates_with_nulls_and_all_operators():
    x = np.array([[0.0, 1.0], [1.0, np.nan], [1.0, 3.0], [2.0, 3.0]])
    p = Predicates(
        np.array([[0, 1], [0, 1], [1, 1], [0, 0]]),
        np.array([[EQ, GE], [EQ, ISNULL], [LE, GE], [GE, LE]], dtype=np.int8),
        np.array([[1.0, 2.0], [1.0, 0.0], [3.0, 3.0], [1.0, 1.0]]),
    )
    counts, first = match_counts(x, p)
    # [a==1 & b>=2] → row 2; [a==1 & b null] → row 1; [b<=3 & b>=3] → rows 2, 3; [a>=1 & a<=1] → rows 1, 2
    assert counts.tolist() == [1, 1, 2, 2] and first[:2].tolist() == [2, 1]


@pytest.mark.parametrize("n", [1, 7, 64, 65, 1000])
def test_bitset_counter_equals_broadcast_counts(n):
    rng = np.random.default_rng(n)
    numeric = np.array([False, True, True, False])
    x = np.column_stack(
        [rng.integers(0, 3, n), rng.normal(size=n).round(1), rng.exponential(size=n).round(1), rng.integers(0, 5, n)]
    ).astype(float)
    x[rng.random(n) < 0.15, 1] = np.nan
    b = 2000
    cols = np.sort(np.argsort(rng.random((b, 4)), axis=1)[:, :3], axis=1)
    vals = x[rng.integers(0, n, b)[:, None], cols]
    ops = np.where(~numeric[cols], EQ, np.where(np.isnan(vals), ISNULL, np.where(rng.random(vals.shape) < 0.5, GE, LE)))
    preds = Predicates(cols, ops.astype(np.int8), np.where(np.isnan(vals), 0.0, vals))
    assert np.array_equal(ConjunctionCounter(x, numeric).counts(preds), match_counts(x, preds)[0])


def test_bitset_counter_counts_in_bounded_blocks_of_predicates(monkeypatch):
    import privgate.attacks.predicates as predicates_mod

    rng = np.random.default_rng(5)
    n, b = 3000, 700
    numeric = np.array([False, True])
    x = np.column_stack([rng.integers(0, 4, n), rng.normal(size=n).round(2)]).astype(float)
    rows = rng.integers(0, n, b)
    preds = Predicates(np.tile([0, 1], (b, 1)), np.tile(np.array([EQ, GE], np.int8), (b, 1)), x[rows])
    whole = ConjunctionCounter(x, numeric).counts(preds)
    blocks = []
    real_counts = ConjunctionCounter._counts
    monkeypatch.setattr(ConjunctionCounter, "_counts", lambda self, p: blocks.append(len(p)) or real_counts(self, p))
    monkeypatch.setattr(predicates_mod, "_BLOCK_BYTES", 8 * 47 * 100)  # 100 predicates of 47 words
    assert np.array_equal(ConjunctionCounter(x, numeric).counts(preds), whole)
    assert blocks == [100] * 7
    assert np.array_equal(whole, match_counts(x, preds)[0])


def test_size_correction_by_hand():
    # equal sizes: no correction
    assert size_correction(np.array([0, 1, 5]), 100, 100) == 1.0

    # one predicate matching m = 1 of n_h = 10 holdout records: w ~ Beta(1.5, 9.5);
    # E[n w (1 − w)^(n−1)] = n·B(2.5, 9.5 + n − 1)/B(1.5, 9.5), B(a, b) = Γ(a)Γ(b)/Γ(a + b)
    def beta(a, b):
        return gamma(a) * gamma(b) / gamma(a + b)

    def expected(n):
        return n * beta(2.5, 8.5 + n) / beta(1.5, 9.5)

    assert size_correction(np.array([1]), 10, 20) == pytest.approx(expected(20) / expected(10), rel=1e-9)
    # a larger training set makes isolating a record by chance less likely for such a predicate
    assert expected(20) / expected(10) < 1.0
    assert math.isfinite(size_correction(np.array([0, 3]), 2806, 2778))


def test_univariate_takes_columns_round_robin():
    # column "noise" has 200 unique values, "level" 3 rare ones: a budget of 6 takes all 3 rare levels
    rng = np.random.default_rng(0)
    syn = pl.DataFrame({"noise": rng.normal(size=200), "level": ["a", "b", "c"] + ["d"] * 197})
    res = privgate.metrics.singling_out(syn, syn, holdout=syn, mode="univariate", n_attacks=6)
    assert res.details["n_predicates"] == 6


def test_fewer_predicates_than_asked_count_as_failures():
    # the release holds one distinct record: one predicate isolates it; 49 of 50 attacks fail
    real = pl.DataFrame({"a": ["x", "y", "z"], "n": [1.0, 2.0, 3.0]})
    syn = pl.DataFrame({"a": ["x", "x", "x"], "n": [1.0, 1.0, 1.0]})
    res = privgate.metrics.singling_out(real, syn, holdout=real.head(2), n_attacks=50, max_attempts=100)
    d = res.details
    assert d["n_predicates"] == 1 and d["n_attacks"] == 50 and "note" in d
    assert d["n_success"] == 1 and d["attack_rate"] == pytest.approx(control_risk(1, 50, 0, 50).attack_rate)
