"""linkability by hand on one-column parts (nearest neighbour = nearest value)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.attacks.linkability import default_split, naive_link_probability
from privgate.context import EvaluationContext
from privgate.errors import ParameterError
from privgate.stats import control_risk

# synthetic s0 = (0, 0), s1 = (10, 10.2), s2 = (9.9, 20)
SYN = pl.DataFrame({"a": [0.0, 10.0, 9.9], "b": [0.0, 10.2, 20.0]})
# training: (0, 0) → a: s0, b: s0 → linked; (10, 10) → s1, s1 → linked; (20, 0) → a: s1, b: s0 → not
REAL = pl.DataFrame({"a": [0.0, 10.0, 20.0], "b": [0.0, 10.0, 0.0]})
# holdout: (9.9, 19) → s2, s2 → linked; (0.1, 10.1) → s0, s1 → not; (5.2, 5) → a: s2 (4.7), b: s0 (5) → not
HOLD = pl.DataFrame({"a": [9.9, 0.1, 5.2], "b": [19.0, 10.1, 5.0]})


def test_linkability_by_hand():
    res = privgate.metrics.linkability(REAL, SYN, holdout=HOLD, aux_cols=(["a"], ["b"]), n_attacks=10)
    d = res.details
    assert d["n_attacks"] == 3 and d["n_success"] == 2 and d["n_control_success"] == 1
    assert res.raw == pytest.approx(control_risk(2, 3, 1, 3).risk)
    assert list(res.per_record) == [1.0, 1.0, 0.0] and d["linked_rows"] == [0, 1]
    # naive: two random single synthetic records coincide with probability 1/3
    assert d["baseline_rate"] == pytest.approx(1 / 3)


def test_more_neighbours_link_more():
    # with k = 2 the third training record links too: a → {s1, s2}, b → {s0, s1} share s1
    res = privgate.metrics.linkability(REAL, SYN, holdout=HOLD, aux_cols=(["a"], ["b"]), n_neighbors=2)
    assert res.details["n_success"] == 3


def test_naive_link_probability_by_hand():
    assert naive_link_probability(10, 1) == pytest.approx(0.1)
    # k = 2 of m = 10: 1 − C(8, 2)/C(10, 2) = 1 − 28/45
    assert naive_link_probability(10, 2) == pytest.approx(1 - 28 / 45)
    assert naive_link_probability(3, 2) == 1.0


def test_default_split_and_one_column():
    assert default_split(["a", "b", "c"]) == (["a", "b"], ["c"])
    one = pl.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="at least two columns"):
        privgate.metrics.linkability(one, one, holdout=one)


def test_target_searches_go_through_the_context_and_match_the_full_search():
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"a": rng.normal(size=300), "b": rng.integers(0, 4, 300).astype(str)})
    ctx = EvaluationContext(frame, frame.sample(300, seed=1), holdout=frame.sample(200, seed=2))
    rows = np.array([3, 50, 299])
    part = ctx.neighbours(("mixed", ("a", "b")), "real", "synthetic", 2, rows=rows)
    full = ctx.neighbours(("mixed", ("a", "b")), "real", "synthetic", 2)
    assert np.array_equal(part.idx, full.idx[rows]) and np.allclose(part.dist, full.dist[rows])
    # once the full search is cached, row searches are slices of it
    sliced = ctx.neighbours(("mixed", ("a", "b")), "real", "synthetic", 1, rows=np.array([299, 3]))
    assert np.array_equal(sliced.idx[:, 0], full.idx[[299, 3], 0])
    again = ctx.neighbours(("mixed", ("a", "b")), "holdout", "synthetic", 1, rows=np.array([7]))
    assert again.idx.shape == (1, 1)


@pytest.mark.parametrize("k", [1, 3])
def test_stacked_sampled_searches_link_as_the_per_role_searches(k):
    """linkability searches each column set's targets and controls together with only those rows
    encoded (neighbours_of_rows); the links must be those of per-role searches in the whole space."""
    from privgate.attacks._control import sample_rows

    rng = np.random.default_rng(1)

    def frame(n):
        return pl.DataFrame(
            {
                "a": rng.integers(0, 4, n).astype(float),
                "b": rng.integers(0, 3, n).astype(str),
                "c": rng.integers(0, 4, n).astype(float),
                "d": rng.integers(0, 2, n).astype(str),
            }
        )

    real, syn, hold = frame(260), frame(240), frame(220)
    res = privgate.metrics.linkability(
        real, syn, holdout=hold, aux_cols=(["a", "b"], ["c", "d"]), n_neighbors=k, n_attacks=100, seed=2
    )
    ctx = EvaluationContext(real, syn, holdout=hold)
    ctx.mixed(["a", "b"]), ctx.mixed(["c", "d"])  # the whole spaces, searched per role

    def linked(role, rows):
        a = ctx.neighbours(("mixed", ("a", "b")), role, "synthetic", k, rows=rows).idx
        b = ctx.neighbours(("mixed", ("c", "d")), role, "synthetic", k, rows=rows).idx
        return (a[:, :, None] == b[:, None, :]).any(axis=(1, 2))

    targets, controls = sample_rows(260, 100, 2, "attack.targets"), sample_rows(220, 100, 2, "attack.controls")
    ok_t, ok_c = linked("real", targets), linked("holdout", controls)
    assert res.details["linked_rows"] == targets[ok_t].tolist()
    assert res.details["n_control_success"] == int(ok_c.sum())
    assert 0 < ok_t.sum() < 100 and 0 < ok_c.sum() < 100
