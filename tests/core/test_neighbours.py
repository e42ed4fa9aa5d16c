"""The shared neighbour engine: exact against brute force, ties by lowest index, self excluded by
index, bounded blocks, faiss screen and NumPy path identical."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.context import EvaluationContext
from privgate.neighbours import any_within_box, knn


def brute(q, t, k, exclude_self=False):
    d = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(-1))
    if exclude_self:
        np.fill_diagonal(d, np.inf)
    # stable sort: equal distances keep the lowest index first
    idx = np.argsort(d, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


@pytest.mark.parametrize("use_faiss", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_matches_brute_force_on_continuous_data(use_faiss, k):
    rng = np.random.default_rng(3)
    q, t = rng.normal(size=(300, 6)), rng.normal(size=(250, 6))
    nb = knn(q, t, k, use_faiss=use_faiss)
    d, i = brute(q, t, k)
    np.testing.assert_allclose(nb.dist, d, rtol=1e-12)
    np.testing.assert_array_equal(nb.idx, i)


@pytest.mark.parametrize("use_faiss", [True, False])
def test_ties_go_to_the_lowest_index_and_self_is_excluded_by_index(use_faiss):
    rng = np.random.default_rng(0)
    # 3 binary columns over 2000 rows: every record has hundreds of exact duplicates
    x = rng.integers(0, 2, size=(2000, 3)).astype(float)
    nb = knn(x, x, 2, exclude_self=True, use_faiss=use_faiss)
    d, i = brute(x, x, 2, exclude_self=True)
    np.testing.assert_array_equal(nb.idx, i)
    assert (nb.dist == 0).all()  # duplicates are each other's neighbours at distance 0
    assert (nb.idx[:, 0] != np.arange(2000)).all()


def test_tiny_blocks_give_the_same_answer():
    rng = np.random.default_rng(1)
    q, t = rng.integers(0, 3, size=(200, 4)).astype(float), rng.integers(0, 3, size=(180, 4)).astype(float)
    a = knn(q, t, 2, use_faiss=False, block_bytes=4 * 180 * 7)  # 7 query rows per block
    b = knn(q, t, 2, use_faiss=False)
    np.testing.assert_array_equal(a.idx, b.idx)
    np.testing.assert_array_equal(a.dist, b.dist)


def test_near_ties_within_1e9_are_ties():
    # target 1 is farther than target 0 by 1e-12: equal within tolerance → lowest index (0) wins,
    # even though it is listed second here
    q = np.array([[0.0]])
    t = np.array([[1.0 + 1e-12], [1.0]])
    assert knn(q, t, 1).idx[0, 0] == 0
    t = np.array([[1.0 + 1e-6], [1.0]])  # a real difference decides
    assert knn(q, t, 1).idx[0, 0] == 1


def test_exact_copies_have_distance_exactly_zero():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(500, 20)) * 1000
    nb = knn(x, x.copy(), 1)
    assert (nb.dist == 0).all() and (nb.idx[:, 0] == np.arange(500)).all()


def test_errors():
    x = np.zeros((3, 2))
    with pytest.raises(ValueError, match="cannot find 3 neighbours among 2"):
        knn(x, x, 3, exclude_self=True)
    with pytest.raises(ValueError, match="equal widths"):
        knn(x, np.zeros((3, 1)), 1)


def test_box_query_is_inclusive():
    t = np.array([[0.0, 0.0], [5.0, 5.0]])
    q = np.array([[1.0, -1.0], [1.0, 1.0000001], [4.0, 6.0], [2.5, 2.5]])
    np.testing.assert_array_equal(any_within_box(q, t, 1.0), [True, False, True, False])


def test_context_computes_each_search_once_and_shares_it(monkeypatch):
    import privgate.context as context_mod

    calls = []
    real_knn = context_mod.knn

    def counting(*a, **kw):
        calls.append(1)
        return real_knn(*a, **kw)

    monkeypatch.setattr(context_mod, "knn", counting)
    r = pl.DataFrame({"a": [0.0, 1, 2, 3, 4], "b": list("xyxyx")})
    s = pl.DataFrame({"a": [0.5, 1, 2, 9, 4], "b": list("xxxyx")})
    ctx = EvaluationContext(r, s)
    import privgate.metrics as m

    for f in (m.close_values, m.distant_values, m.nsnd, m.authenticity, m.median_dcr):
        f(ctx)
    # real→synthetic and real→real in the mixed space: two searches for five metrics
    assert len(calls) == 2
    ctx.neighbours("mixed", "real", "synthetic", 2)  # a larger k recomputes once
    ctx.neighbours("mixed", "real", "synthetic", 1)
    assert len(calls) == 3
    # a context for a holdout baseline reuses the real→real search
    base = ctx.with_synthetic(s.reverse())
    m.authenticity(base)
    assert len(calls) == 4


@pytest.mark.parametrize("exclude_self", [False, True])
def test_low_dimensional_kdtree_path_matches_brute_force_with_ties(exclude_self):
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, size=(400, 2)).astype(float)  # many exact ties in 2-D
    t = x if exclude_self else rng.integers(0, 4, size=(300, 2)).astype(float)
    nb = knn(x, t, 2, exclude_self=exclude_self)
    d, i = brute(x, t, 2, exclude_self=exclude_self)
    np.testing.assert_array_equal(nb.idx, i)
    np.testing.assert_allclose(nb.dist, d)
    y = rng.normal(size=(300, 2))
    nb = knn(y, y, 3, exclude_self=True)
    d, i = brute(y, y, 3, exclude_self=True)
    np.testing.assert_array_equal(nb.idx, i)


@pytest.mark.parametrize("exclude_self", [False, True])
def test_deduplicated_k1_path_matches_brute_force(exclude_self):
    rng = np.random.default_rng(7)
    # 5 categorical-like columns: 1500 rows over at most 3^5 = 243 distinct points
    x = rng.integers(0, 3, size=(1500, 5)).astype(float)
    t = x if exclude_self else rng.integers(0, 3, size=(1200, 5)).astype(float)
    fast = knn(x, t, 1, exclude_self=exclude_self)
    slow = knn(x, t, 1, exclude_self=exclude_self, dedupe=False)
    d, i = brute(x, t, 1, exclude_self=exclude_self)
    np.testing.assert_array_equal(fast.idx, i)
    np.testing.assert_array_equal(slow.idx, i)
    np.testing.assert_allclose(fast.dist, d)
    # a record without duplicates in its own set still finds its nearest other record
    y = np.vstack([x, [[9.0] * 5]])
    nb = knn(y, y, 1, exclude_self=True)
    d, i = brute(y, y, 1, exclude_self=True)
    np.testing.assert_array_equal(nb.idx, i)
