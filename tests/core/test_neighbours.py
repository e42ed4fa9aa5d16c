"""The shared neighbour engine: exact against brute force, ties by lowest index, self excluded by
index, bounded blocks, faiss screen and NumPy path identical."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.context import EvaluationContext
from privgate.data import load_example
from privgate.neighbours import SearchSettings, any_within_box, knn

# a screen at every size, calibrated and checked on 200 rows each
SCREEN_200 = SearchSettings(exact_below_pairs=0, ivf_check_rows=200, ivf_max_uncertain_share=1.0)


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
    a = knn(q, t, 2, use_faiss=False, settings=SearchSettings(block_bytes=4 * 180 * 7))  # 7 query rows per block
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
    import privgate.context_search as context_mod  # where the context's searches call knn

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


@pytest.mark.parametrize(
    "d, k, exclude_self, grid", [(5, 1, False, False), (8, 3, True, False), (6, 2, False, True), (4, 5, True, True)]
)
def test_numeric_spaces_up_to_eight_dimensions_take_the_kdtree_with_the_flat_screens_answers(d, k, exclude_self, grid):
    rng = np.random.default_rng(d + k)
    x = rng.normal(size=(700, d)) * rng.uniform(0.1, 10, size=d)
    if grid:
        x = np.round(x)  # runs of tied distances
    t = x if exclude_self else rng.normal(size=(900, d)) * rng.uniform(0.1, 10, size=d)
    if grid and not exclude_self:
        t = np.round(t)
    tree = knn(x, t, k, exclude_self=exclude_self, dedupe=False, settings=SearchSettings(kdtree_min_pairs=0))
    assert "kdtree" in tree.search["settled_by"]
    flat = knn(x, t, k, exclude_self=exclude_self, dedupe=False, settings=SearchSettings(kdtree_max_dim=3))
    assert "kdtree" not in flat.search["settled_by"]
    np.testing.assert_array_equal(tree.idx, flat.idx)
    np.testing.assert_array_equal(tree.dist, flat.dist)
    d_brute, _ = brute(x, t, k, exclude_self=exclude_self)
    np.testing.assert_allclose(tree.dist, d_brute, rtol=1e-12, atol=1e-12)
    # small searches and mixed spaces keep their paths
    assert "kdtree" not in knn(x, t, k, exclude_self=exclude_self, dedupe=False).search["settled_by"]
    one_hot = np.eye(3)[rng.integers(0, 3, x.shape[0])]
    mixed = np.hstack([x[:, :2], one_hot])
    nb = knn(
        mixed,
        mixed,
        1,
        exclude_self=True,
        categorical_slices=[(2, 5)],
        dedupe=False,
        settings=SearchSettings(kdtree_min_pairs=0),
    )
    assert "kdtree" not in nb.search["settled_by"]


@pytest.mark.parametrize("k, exclude_self", [(1, False), (2, True), (3, False)])
def test_kdtree_short_lists_then_long_lists_match_brute_force(monkeypatch, k, exclude_self):
    """The k-d tree path asks k + 2 candidates, then k + 16 for rows cut inside a run of ties,
    then leaves rows with longer runs to the general search: continuous points with copies
    repeated 3 times (the long lists settle them) and 40 times (open)."""
    from privgate.neighbours import exact

    widths = []
    real = exact._kdtree_rows
    monkeypatch.setattr(
        exact,
        "_kdtree_rows",
        lambda p, tree, rows, kk, *a: widths.append((rows.size, kk)) or real(p, tree, rows, kk, *a),
    )
    rng = np.random.default_rng(5)
    base = rng.normal(size=(600, 2))
    x = np.vstack([base, np.repeat(base[:20], 3, axis=0), np.repeat(base[20:22], 40, axis=0)])
    t = (
        x
        if exclude_self
        else np.vstack([rng.normal(size=(500, 2)), np.repeat(x[:30], 4, axis=0), np.repeat(x[-1:], 40, axis=0)])
    )
    nb = knn(x, t, k, exclude_self=exclude_self, dedupe=False)
    d, i = brute(x, t, k, exclude_self=exclude_self)
    np.testing.assert_array_equal(nb.idx, i)
    np.testing.assert_allclose(nb.dist, d)
    assert [w for _, w in widths] == [k + 2, k + 16] and 0 < widths[1][0] < widths[0][0]
    assert 0 < nb.search["settled_by"]["kdtree"] < x.shape[0]


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


# ------------------------------------------------------------- grouped (categorical) search
def _mixed_points(n, rng, levels=(3, 2, 4), n_numeric=2, weight=1.0):
    """Integer numerics (exact float sums, so brute force and the engine see the same ties) and
    one-hot categoricals scaled like the mixed space (a mismatch adds weight² to d²)."""
    cols, slices, pos = [rng.integers(0, 6, size=(n, n_numeric)).astype(float)], [], n_numeric
    for n_levels in levels:
        onehot = np.zeros((n, n_levels))
        onehot[np.arange(n), rng.integers(0, n_levels, n)] = weight / np.sqrt(2)
        cols.append(onehot)
        slices.append((pos, pos + n_levels))
        pos += n_levels
    return np.hstack(cols), slices


def brute_tolerant(q, t, k, exclude_self=False):
    """Brute force with the engine's tie rule: distances within 1e-9·(1 + d) of the row's
    minimum are that minimum (a category mismatch, 2·(1/√2)², differs from 1 in the last bit)."""
    d = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(-1))
    if exclude_self:
        np.fill_diagonal(d, np.inf)
    low = d.min(axis=1, keepdims=True)
    key = np.where(d - low <= 1e-9 * (1 + np.maximum(d, low)), low, d)
    key[~np.isfinite(d)] = np.inf
    idx = np.lexsort((np.broadcast_to(np.arange(t.shape[0]), d.shape), key), axis=-1)[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


def _grouped_matches_brute_force_and_flat(q, t, slices, k, exclude_self):
    """The grouped search's answer, checked against brute force (distances; indices for k = 1)
    and, to the last bit, against the general (ungrouped) path."""
    nb = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, dedupe=False)
    d, i = brute_tolerant(q, t, k, exclude_self=exclude_self)
    if k == 1:
        np.testing.assert_array_equal(nb.idx, i)
    np.testing.assert_allclose(nb.dist, d, rtol=1e-12)
    flat = knn(q, t, k, exclude_self=exclude_self, grouped=False, dedupe=False)
    np.testing.assert_array_equal(nb.idx, flat.idx)
    np.testing.assert_array_equal(nb.dist, flat.dist)
    return nb


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("exclude_self", [False, True])
@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_grouped_search_matches_brute_force(k, exclude_self, weight):
    rng = np.random.default_rng(11)
    q, slices = _mixed_points(500, rng, weight=weight)
    t = q if exclude_self else _mixed_points(400, rng, weight=weight)[0]
    nb = _grouped_matches_brute_force_and_flat(q, t, slices, k, exclude_self)
    assert nb.search["exact"] and nb.search["settled_by"].get("grouped", 0) > 0


def test_grouped_search_refuses_slices_that_are_not_one_hot():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 5))
    nb = knn(x, x, 1, exclude_self=True, categorical_slices=[(2, 5)], dedupe=False)
    d, i = brute(x, x, 1, exclude_self=True)
    np.testing.assert_array_equal(nb.idx, i)
    assert "grouped" not in nb.search["settled_by"] or nb.search["settled_by"]["grouped"] == 0


def test_knn_rows_equals_the_full_self_search_on_those_rows():
    from privgate.neighbours import knn_rows

    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, size=(600, 3)).astype(float)  # many exact duplicates
    rows = np.sort(rng.choice(600, 50, replace=False))
    for k in (1, 2):
        full = knn(x, x, k, exclude_self=True)
        part = knn_rows(x, rows, k)
        np.testing.assert_array_equal(part.idx, full.idx[rows])
        np.testing.assert_array_equal(part.dist, full.dist[rows])


# ------------------------------------------------------------------ approximate screen
@pytest.mark.parametrize("exclude_self", [False, True])
def test_approximate_screen_reports_its_measured_recall(exclude_self):
    rng = np.random.default_rng(5)
    q = rng.normal(size=(2000, 8))
    t = q if exclude_self else rng.normal(size=(2500, 8))
    approx = knn(q, t, 1, exclude_self=exclude_self, approximate=True, settings=SCREEN_200, seed=3)
    exact = knn(q, t, 1, exclude_self=exclude_self)
    s = approx.search
    assert s["exact"] is False and s["n_checked"] == 200 and s["n_screened"] == 2000 - 400
    true_recall = float((np.abs(approx.dist - exact.dist) <= 1e-9 * (1 + exact.dist)).all(axis=1).mean())
    lo, hi = s["recall_ci"]
    assert lo <= s["recall"] <= hi and 0.9 <= true_recall
    assert abs(s["recall"] - true_recall) < 0.05
    assert s["share_rows_possibly_wrong"] >= 1 - true_recall - 0.02
    # the screen never decides: reported distances are exact float64 distances of the returned
    # rows, never below the true nearest
    np.testing.assert_allclose(approx.dist[:, 0], np.linalg.norm(q - t[approx.idx[:, 0]], axis=1), rtol=1e-12)
    assert (approx.dist >= exact.dist - 1e-12).all()
    again = knn(q, t, 1, exclude_self=exclude_self, approximate=True, settings=SCREEN_200, seed=3)
    np.testing.assert_array_equal(again.idx, approx.idx)  # seeded: deterministic


def test_context_switches_to_the_screen_above_the_size_and_exact_true_forces_exact(monkeypatch):
    import privgate.metrics as m
    import privgate.neighbours.settings as settings_mod

    rng = np.random.default_rng(6)
    r = pl.DataFrame(
        {
            "a": rng.normal(size=900),
            "b": rng.normal(size=900),
            "c": rng.normal(size=900),
            "d": rng.normal(size=900),
            "e": rng.choice(list("xyz"), 900),
        }
    )
    s = pl.DataFrame(
        {
            "a": rng.normal(size=800),
            "b": rng.normal(size=800),
            "c": rng.normal(size=800),
            "d": rng.normal(size=800),
            "e": rng.choice(list("xyz"), 800),
        }
    )
    exact = m.authenticity(EvaluationContext(r, s))
    assert exact.details["neighbour_search"]["exact"] is True
    assert exact.details["neighbour_search"]["share_rows_possibly_wrong"] == 0.0
    monkeypatch.setattr(settings_mod, "DEFAULT_SETTINGS", SearchSettings(exact_below_pairs=1000))
    approx = m.authenticity(EvaluationContext(r, s))
    search = approx.details["neighbour_search"]
    # the two whole searches, and the jackknife's exact re-search of rows whose two listed
    # neighbours were both deleted
    assert search["exact"] is False and set(search["searches"]) - {"jackknife refill"} == {
        "mixed real→synthetic",
        "mixed real→real",
    }
    assert abs(approx.value - exact.value) <= search["share_rows_possibly_wrong"] + 1e-12
    forced = m.authenticity(EvaluationContext(r, s, exact=True))
    assert forced.value == exact.value and forced.details["neighbour_search"]["exact"] is True


def test_real_sample_is_seeded_and_rows_search_matches_the_full_search():
    rng = np.random.default_rng(7)
    r = pl.DataFrame({"a": rng.normal(size=400), "e": rng.choice(list("xyz"), 400)})
    s = pl.DataFrame({"a": rng.normal(size=300), "e": rng.choice(list("xyz"), 300)})
    ctx = EvaluationContext(r, s, seed=3, sample_real=100)
    rows = ctx.real_sample()
    assert rows.size == 100 and (np.diff(rows) > 0).all()
    np.testing.assert_array_equal(rows, EvaluationContext(r, s, seed=3, sample_real=100).real_sample())
    assert not np.array_equal(rows, EvaluationContext(r, s, seed=4, sample_real=100).real_sample())
    assert ctx.sample_description() == {
        "n": 100,
        "of": 400,
        "seed": 3,
        "side": "real",
        "method": "simple random sample without replacement",
        "rule": "explicit sample size",
    }
    for target in ("synthetic", "real"):
        full = ctx.neighbours("mixed", "real", target, 1)
        part = ctx.neighbours("mixed", "real", target, 1, rows=rows)
        np.testing.assert_array_equal(part.idx, full.idx[rows])
    assert EvaluationContext(r, s, sample_real=400).real_sample() is None  # nothing to sample
    from privgate.errors import ParameterError

    with pytest.raises(ParameterError, match="sample_real"):
        EvaluationContext(r, s, sample_real=0)


def test_a_sampled_search_on_few_distinct_points_is_folded_and_exact_instead_of_screened(monkeypatch):
    """Sampled query rows on a key space (many records, few distinct points): above the screen's
    size the search folds duplicates first, so it stays exact and equals the full search's rows
    (unfolded, every sampled row would be screened with the whole run of tied copies)."""
    import privgate.neighbours.settings as settings_mod

    rng = np.random.default_rng(8)
    r = pl.DataFrame(
        {
            "a": rng.choice(list("pqrs"), 3000),
            "b": rng.choice(list("xyz"), 3000),
            "c": rng.integers(0, 4, 3000).astype(float),
        }
    )
    s = pl.DataFrame(
        {
            "a": rng.choice(list("pqrs"), 2000),
            "b": rng.choice(list("xyz"), 2000),
            "c": rng.integers(0, 4, 2000).astype(float),
        }
    )
    full = EvaluationContext(r, s, exact=True).neighbours("mixed", "real", "synthetic", 3)
    monkeypatch.setattr(settings_mod, "DEFAULT_SETTINGS", SearchSettings(exact_below_pairs=10_000))
    ctx = EvaluationContext(r, s, sample_real=1000, seed=1)
    rows = ctx.real_sample()
    part = ctx.neighbours("mixed", "real", "synthetic", 3, rows=rows)
    assert part.search["exact"] is True
    np.testing.assert_array_equal(part.idx, full.idx[rows])
    np.testing.assert_array_equal(part.dist, full.dist[rows])
    stacked = EvaluationContext(r, s, seed=1).neighbours_of_rows("mixed", {"real": rows}, "synthetic", 3)
    assert stacked["real"].search["exact"] is True
    np.testing.assert_array_equal(stacked["real"].idx, full.idx[rows])


def test_grouped_search_without_mixed_radix_ids_gives_the_same_answer(monkeypatch):
    import privgate.neighbours.grouped as nbm

    rng = np.random.default_rng(12)
    q, slices = _mixed_points(400, rng)
    fast = knn(q, q, 2, exclude_self=True, categorical_slices=slices, dedupe=False)
    real_init = nbm._Groups.__init__

    def dense_only(self, *a, **kw):
        real_init(self, *a, **kw)
        self.radix = False

    monkeypatch.setattr(nbm._Groups, "__init__", dense_only)
    dense = knn(q, q, 2, exclude_self=True, categorical_slices=slices, dedupe=False)
    np.testing.assert_array_equal(fast.idx, dense.idx)
    np.testing.assert_array_equal(fast.dist, dense.dist)


# ------------------------------------------------------------------ the IVF list scan
def _lists_for(q, t, k, exclude_self, nlist, seed=0):
    from privgate.neighbours import DEFAULT_SETTINGS
    from privgate.neighbours.exact import ExactSearch
    from privgate.neighbours.ivf_lists import Lists
    from privgate.neighbours.problem import Problem

    exact = ExactSearch(
        Problem(
            np.ascontiguousarray(q, dtype=np.float64),
            np.ascontiguousarray(t, dtype=np.float64),
            k,
            exclude_self,
            DEFAULT_SETTINGS,
        )
    )
    m = t.shape[0]
    per_list = DEFAULT_SETTINGS.ivf_train_per_list
    train = np.sort(np.random.default_rng(seed).choice(m, min(m, nlist * per_list), replace=False))
    return exact, Lists(exact, nlist, train, seed)


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_list_scan_probing_every_list_is_the_exact_search_to_the_last_bit(k, exclude_self):
    """With every list probed the screen is the exact search: same neighbours (ties by the lowest
    index, duplicates, mixed data) and same float64 distances as the exact flat path."""
    rng = np.random.default_rng(21)
    q, _ = _mixed_points(700, rng, levels=(3, 2, 4, 2), n_numeric=3)
    t = q if exclude_self else _mixed_points(600, rng, levels=(3, 2, 4, 2), n_numeric=3)[0]
    exact, lists = _lists_for(q, t, k, exclude_self, nlist=16)
    rows = np.sort(rng.choice(q.shape[0], 300, replace=False))
    d = np.empty((rows.size, k))
    i = np.empty((rows.size, k), dtype=np.int64)
    lists.screen(rows, 16, d, i)
    ref = knn(q, t, k, exclude_self=exclude_self, dedupe=False, grouped=False)
    np.testing.assert_array_equal(i, ref.idx[rows])
    np.testing.assert_array_equal(d, ref.dist[rows])
    bd, bi = brute_tolerant(q, t, k, exclude_self=exclude_self)
    if k == 1:
        np.testing.assert_array_equal(i, bi[rows])
    np.testing.assert_allclose(d, bd[rows], rtol=1e-12)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_list_scan_is_exact_within_the_probed_lists(k, exclude_self):
    """With a few lists probed, each row gets the exact k nearest (tie rule included) among the
    targets of the lists it probed — brute force restricted to those targets."""
    rng = np.random.default_rng(22)
    q = rng.integers(0, 4, size=(500, 6)).astype(float)  # many ties and exact duplicates
    t = q if exclude_self else rng.integers(0, 4, size=(450, 6)).astype(float)
    exact, lists = _lists_for(q, t, k, exclude_self, nlist=16, seed=5)
    rows = np.arange(q.shape[0])
    d = np.empty((rows.size, k))
    i = np.empty((rows.size, k), dtype=np.int64)
    lists.screen(rows, 3, d, i)
    _, probe = lists.quantizer.search(exact.q32, 3)
    full = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(-1))
    if exclude_self:
        np.fill_diagonal(full, np.inf)
    probed = (lists.assign[None, :, None] == probe[:, None, :]).any(axis=2)
    full[~probed] = np.inf
    low = full.min(axis=1, keepdims=True)
    key = np.where(full - low <= 1e-9 * (1 + np.maximum(full, low)), low, full)
    key[~np.isfinite(full)] = np.inf
    want = np.lexsort((np.broadcast_to(np.arange(t.shape[0]), full.shape), key), axis=-1)[:, :k]
    own = probed[rows, rows] if exclude_self else 0
    enough = probed.sum(axis=1) - own >= k
    assert enough.mean() > 0.9
    np.testing.assert_array_equal(i[enough], want[enough])
    np.testing.assert_array_equal(d[enough], np.take_along_axis(full, want, axis=1)[enough])


def test_screen_declines_when_calibration_needs_too_many_lists_and_search_is_exact():
    """Heavy ties at the k-th distance (k = 5 on a few integer levels) keep the calibrated recall
    low; the screen then declines and every row is searched exactly."""
    # an unreachable target recall forces the decline
    declining = SearchSettings(exact_below_pairs=0, ivf_check_rows=100, ivf_target_recall=1.01)
    rng = np.random.default_rng(23)
    q = rng.integers(0, 3, size=(1500, 5)).astype(float)
    t = rng.integers(0, 3, size=(1200, 5)).astype(float)
    nb = knn(q, t, 5, approximate=True, settings=declining)
    assert nb.search["exact"] is True and nb.search["screen"].startswith("declined")
    assert "ivf_screen" not in nb.search["settled_by"]
    assert sum(nb.search["settled_by"].values()) == q.shape[0]
    ref = knn(q, t, 5)
    np.testing.assert_array_equal(nb.idx, ref.idx)
    np.testing.assert_array_equal(nb.dist, ref.dist)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_grouped_search_with_mostly_empty_groups_matches_brute_force(k, exclude_self):
    """Many categorical columns: most records are alone in their group (and in most groups equal
    on all columns but one), so the k-d tree queries are skipped for them; the answers stay those
    of brute force and of the general path, to the last bit."""
    rng = np.random.default_rng(24)
    q, slices = _mixed_points(400, rng, levels=(4, 3, 5, 4, 3, 4), n_numeric=2)
    t = q if exclude_self else _mixed_points(350, rng, levels=(4, 3, 5, 4, 3, 4), n_numeric=2)[0]
    nb = _grouped_matches_brute_force_and_flat(q, t, slices, k, exclude_self)
    if k == 1:  # (with k = 3 few records have three group-mates: the general path settles them)
        assert nb.search["settled_by"].get("grouped", 0) > 0


@pytest.mark.parametrize("k", [1, 2, 5, 16])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_grouped_search_ranks_k_nearest_on_full_distances_only_where_needed(k, exclude_self, monkeypatch):
    """k > 1: the grouped search ranks candidates by the compact form and computes full-coordinate
    distances only near each row's k-th (ties included); the answer is still the general path's
    to the last bit — with exact duplicate records (tie runs at every rank) — even when the
    compact form is off in its last digits (here made 1e-12 larger, as rounding could: a compact
    value that reached the k nearest or the reported distances would show), and fewer pairs are
    computed in full than there are candidates."""
    import privgate.neighbours.grouped as gm

    rng = np.random.default_rng(31)
    q, slices = _mixed_points(600, rng, levels=(3, 2, 3), n_numeric=2)
    q[:, :2] += rng.normal(0, 0.3, size=(600, 2))
    q[300:360] = q[:60]  # duplicates: runs of equal distances across the k-th
    q = q.astype(np.float32)
    t = q if exclude_self else np.vstack([q[::3], q[:50]])
    full_pairs, candidates = [], []
    compact, ranking, pairs = (
        gm._GroupedSearch.compact_distance,
        gm._GroupedSearch.ranking_distances,
        gm.distances_of_pairs,
    )

    def rounded(self, qi, ti):
        return compact(self, qi, ti) * (1 + 1e-12)

    def counted(self, rows, idx, unset):
        candidates.append(int((~unset).sum()))
        return ranking(self, rows, idx, unset)

    def counted_pairs(q_, t_, qi, ti, settings):
        full_pairs.append(qi.size)
        return pairs(q_, t_, qi, ti, settings)

    monkeypatch.setattr(gm._GroupedSearch, "compact_distance", rounded)
    monkeypatch.setattr(gm._GroupedSearch, "ranking_distances", counted)
    monkeypatch.setattr(gm, "distances_of_pairs", counted_pairs)
    nb = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, dedupe=False)
    flat = knn(q, t, k, exclude_self=exclude_self, grouped=False, dedupe=False)
    np.testing.assert_array_equal(nb.idx, flat.idx)
    np.testing.assert_array_equal(nb.dist, flat.dist)
    assert nb.search["settled_by"].get("grouped", 0) > 0
    if k > 1:
        assert 0 < sum(full_pairs) < sum(candidates)


def test_category_codes_in_row_blocks_equal_the_whole_matrix_at_once():
    from privgate.neighbours import DEFAULT_SETTINGS
    from privgate.neighbours.grouped import category_codes

    adult = load_example()
    sp = EvaluationContext(adult[:600], adult[600:900]).mixed()
    whole = category_codes(sp.real, sp.categorical_slices, DEFAULT_SETTINGS.pair_chunk_bytes)
    seven_rows = 8 * 7 * sum(b - a for a, b in sp.categorical_slices)  # 7-row blocks
    blocked = category_codes(sp.real, sp.categorical_slices, seven_rows)
    assert np.array_equal(whole[0], blocked[0]) and whole[1] == blocked[1] == 0.0
    # by hand: the position of the one nonzero of each slice
    expect = np.stack([np.argmax(sp.real[:, a:b] != 0, axis=1) for a, b in sp.categorical_slices], axis=1)
    assert np.array_equal(blocked[0], expect)
    # a row that is not one-hot in a later block is still found
    bad = sp.real.copy()
    a, b = sp.categorical_slices[0]
    bad[-1, a:b] = 0.0
    assert category_codes(bad, sp.categorical_slices, seven_rows) is None
    scaled = sp.real.copy()
    scaled[-1, a:b] *= 2.0  # another nonzero value than the other rows'
    assert category_codes(scaled, sp.categorical_slices, seven_rows) is None
