"""The exact search's float32 copies drop one coordinate per one-hot column (Helmert contrasts of
the column's levels, privgate/neighbours/prepared.py): every distance is kept, so the screens'
candidates and the float64 answers are those of the full coordinates."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.neighbours import knn
from privgate.neighbours.prepared import PreparedSearch, _helmert, _rows32, one_hot_reduction, reducible_columns
from privgate.neighbours.problem import Problem
from privgate.neighbours.settings import DEFAULT_SETTINGS, SearchSettings


def _mixed(n: int, rng, levels=(3, 7, 2, 12), scales=(0.7, 1.3, 0.2, 2.0), zero_row_in: int | None = None):
    cols, slices, pos = [rng.normal(size=(n, 3))], [], 3
    for c, (L, s) in enumerate(zip(levels, scales)):
        block = np.zeros((n, L))
        block[np.arange(n), rng.integers(0, L, n)] = s
        if c == zero_row_in:
            block[0] = 0.0  # a row without a level: the column's rows do not all sum to one value
        cols.append(block)
        slices.append((pos, pos + L))
        pos += L
    return np.hstack(cols), slices


def test_helmert_contrasts_keep_every_distance_between_rows_of_equal_sums():
    rng = np.random.default_rng(0)
    x, slices = _mixed(40, rng, levels=(9, 2, 5), scales=(1.7, 0.4, 1.0))
    h = _rows32(x, np.zeros(x.shape[1]), one_hot_reduction(x.shape[1], reducible_columns(x, x, slices))).astype(
        np.float64
    )
    basis = _helmert(6)
    np.testing.assert_allclose(basis.T @ basis, np.eye(5), atol=1e-15)  # orthonormal columns
    np.testing.assert_allclose(basis.sum(axis=0), 0.0, atol=1e-15)  # orthogonal to the ones
    assert h.shape == (40, x.shape[1] - 3)
    d = ((x[:, None] - x[None]) ** 2).sum(-1)
    np.testing.assert_allclose(((h[:, None] - h[None]) ** 2).sum(-1), d, rtol=1e-6, atol=1e-6)


def test_only_columns_whose_rows_sum_to_one_value_are_reduced():
    rng = np.random.default_rng(1)
    q, slices = _mixed(50, rng, zero_row_in=1)
    t, _ = _mixed(60, rng)
    assert reducible_columns(q, t, slices) == (slices[0], slices[2], slices[3])
    basis = one_hot_reduction(q.shape[1], reducible_columns(q, t, slices))
    a, b = slices[1]  # the column with a row of zeros keeps its coordinates, as they are
    assert basis.shape == (q.shape[1], q.shape[1] - 3) and (basis[a:b] != 0).sum() == b - a
    assert reducible_columns(q, t, None) == () and one_hot_reduction(q.shape[1], ()) is None
    p = Problem(q, t, 1, False, DEFAULT_SETTINGS)
    prep = PreparedSearch(p, categorical_slices=slices)
    assert prep.q32.shape[1] == prep.t32.shape[1] == q.shape[1] - 3
    full = PreparedSearch(p)
    assert full.q32.shape[1] == q.shape[1]
    # the float32 distances agree with the full coordinates' to float32 rounding
    d_red = ((prep.q32[:, None].astype(float) - prep.t32[None].astype(float)) ** 2).sum(-1)
    d_full = ((q[:, None] - t[None]) ** 2).sum(-1)
    np.testing.assert_allclose(d_red, d_full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "k, exclude_self, tied", [(1, False, False), (3, False, True), (2, True, True), (5, True, False)]
)
def test_reduced_screen_gives_the_full_coordinates_answers(k, exclude_self, tied):
    rng = np.random.default_rng(2 + k)
    q, slices = _mixed(700, rng)
    if tied:  # numeric coordinates on a grid: long runs of equal distances
        q[:, :3] = np.round(q[:, :3])
    t = q if exclude_self else _mixed(900, rng)[0]
    if tied and not exclude_self:
        t[:, :3] = np.round(t[:, :3])
    reduced = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, grouped=False, dedupe=False)
    full = knn(q, t, k, exclude_self=exclude_self, grouped=False, dedupe=False)
    assert "faiss_flat" in reduced.search["settled_by"]
    np.testing.assert_array_equal(reduced.idx, full.idx)
    np.testing.assert_array_equal(reduced.dist, full.dist)
    # after the grouped search only its open rows get float32 copies: the same answers
    grouped = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, dedupe=False)
    assert grouped.search["settled_by"].get("faiss_flat", 0) > 0
    if k < 5:  # (5 neighbours inside groups of equal categories: none here)
        assert grouped.search["settled_by"]["grouped"] > 0
    np.testing.assert_array_equal(grouped.idx, full.idx)
    np.testing.assert_array_equal(grouped.dist, full.dist)


def test_screens_of_one_target_with_other_reductions_keep_lists_of_their_own_coordinates():
    """The IVF lists kept for a target (trained on its float32 copies) are shared only by searches
    whose copies have the same coordinates: a second query set with a row of zeros in a one-hot
    column keeps that column whole, so its screen builds lists of its own — both answers exact."""
    from privgate.neighbours.memo import SearchMemo

    rng = np.random.default_rng(9)
    t, slices = _mixed(3000, rng)
    q1, _ = _mixed(400, rng)
    q2, _ = _mixed(400, rng, zero_row_in=2)
    memo = SearchMemo()
    screened = SearchSettings(exact_below_pairs=0, ivf_max_probe_share=1.0, ivf_max_uncertain_share=1.0)
    for q in (q1, q2):
        got = knn(
            q,
            t,
            2,
            categorical_slices=slices,
            grouped=False,
            dedupe=False,
            approximate=True,
            settings=screened,
            memo=memo,
            seed=1,
        )
        assert "ivf_screen" in got.search["settled_by"]
        exact = knn(q, t, 2, grouped=False, dedupe=False)
        np.testing.assert_array_equal(got.idx, exact.idx)
        np.testing.assert_array_equal(got.dist, exact.dist)
