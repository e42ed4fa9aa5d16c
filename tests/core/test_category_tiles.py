"""The flat screen pruned by categorical tile bounds (privgate/neighbours/category_tiles.py): the
bound of a tile is a lower bound of every one of its records' squared distances, the pruned
screen is used where the categories separate the records, and its answers are the exact ones —
ties, duplicates and the query's own row included."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.neighbours import category_tiles, knn
from privgate.neighbours.category_tiles import pruned_candidates, tiles_for
from privgate.neighbours.exact import ExactSearch
from privgate.neighbours.problem import Problem
from privgate.neighbours.settings import DEFAULT_SETTINGS


def _mixed(n: int, rng, levels=(6, 4, 9, 3), scales=(2.5, 0.3, 1.1, 0.8), grid: bool = False):
    """Numeric columns (on a grid: many tied distances) and one-hot columns of unequal scales."""
    num = rng.normal(size=(n, 3)) * 0.4
    if grid:
        num = np.round(num * 2) / 2
    cols, slices, pos = [num], [], 3
    for n_levels, scale in zip(levels, scales):
        block = np.zeros((n, n_levels))
        block[np.arange(n), rng.zipf(1.6, n) % n_levels] = scale  # skewed levels
        cols.append(block)
        slices.append((pos, pos + n_levels))
        pos += n_levels
    return np.hstack(cols), slices


def _brute(q, t, k, exclude_self):
    d = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(-1))
    if exclude_self:
        np.fill_diagonal(d, np.inf)
    return d


@pytest.fixture(autouse=True)
def small_tiles(monkeypatch):
    """Tiles of 32 targets: a few hundred test records make enough tiles to prune."""
    monkeypatch.setattr(category_tiles, "TILE_TARGETS", 32)


def _used(monkeypatch) -> list:
    """Record what every call of the pruned screen returned (None: it declined)."""
    calls = []
    real = category_tiles.pruned_candidates

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out)
        return out

    monkeypatch.setattr("privgate.neighbours.screened.pruned_candidates", spy)
    return calls


@pytest.mark.parametrize(
    "k, exclude_self, grid", [(1, False, False), (2, True, False), (3, False, True), (5, True, True), (1, True, True)]
)
def test_pruned_screen_gives_the_exact_answers(monkeypatch, k, exclude_self, grid):
    rng = np.random.default_rng(10 + k)
    q, slices = _mixed(600, rng, grid=grid)
    if exclude_self:
        q[50:80] = q[20:50]  # exact duplicates: each other's nearest at distance 0
        t = q
    else:
        t, _ = _mixed(1500, rng, grid=grid)
        t[:40] = q[:40]  # release copies of some query rows
    calls = _used(monkeypatch)
    got = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, grouped=False, dedupe=False)
    assert any(c is not None for c in calls), "the pruned screen was not used"
    full = knn(q, t, k, exclude_self=exclude_self, grouped=False, dedupe=False)  # no slices: no tiles
    np.testing.assert_array_equal(got.idx, full.idx)
    np.testing.assert_array_equal(got.dist, full.dist)
    d = _brute(q, t, k, exclude_self)
    np.testing.assert_allclose(got.dist, np.sort(d, axis=1)[:, :k], rtol=1e-12, atol=1e-12)
    # after the grouped search too
    grouped = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, dedupe=False)
    np.testing.assert_array_equal(grouped.idx, full.idx)
    np.testing.assert_array_equal(grouped.dist, full.dist)


def test_a_tiles_bound_is_below_every_squared_distance_of_its_records():
    rng = np.random.default_rng(3)
    q, slices = _mixed(300, rng)
    t, _ = _mixed(2000, rng)
    ex = ExactSearch(Problem(q, t, 2, False, DEFAULT_SETTINGS), True, slices)
    tiles = tiles_for(ex)
    assert tiles is not None
    tt, qcodes, level_costs = tiles
    d2 = ((q[:, None, :] - t[None, :, :]) ** 2).sum(-1)
    absent = np.where(tt.present, 0.0, level_costs[None, :])
    lower = absent[:, tt.offsets[None, :] + qcodes].sum(axis=2).T  # rows × tiles, by hand
    tile_of = np.empty(t.shape[0], dtype=np.int64)
    for j in range(tt.n_tiles):
        tile_of[tt.members[tt.bounds[j] : tt.bounds[j + 1]]] = j
    assert (d2 >= lower[:, tile_of] - 1e-12).all()
    assert (lower > 0).mean() > 0.3  # the bounds say something: sorted tiles lack levels
    # the bound a row reports is the smallest of the tiles it did not compare: every record of
    # those tiles lies at least that far
    kk = 2 + 16
    d32, idx, bound, upper = pruned_candidates(ex, np.arange(q.shape[0]), kk, 2, tiles)
    assert (np.sort(d2, axis=1)[:, 1] <= upper).all()  # U bounds the 2nd smallest d² from above
    listed = np.zeros(d2.shape, dtype=bool)
    real = idx < t.shape[0]
    listed[np.nonzero(real)[0], idx[real]] = True
    assert real[:, :2].all()  # never fewer than k_bound listed
    beyond_list = np.where(listed, np.inf, d2)
    # a record never compared is at least `bound` away; a compared one not listed is at least as
    # far (in float32) as the last listed candidate, or beyond U
    for r in range(q.shape[0]):
        far = beyond_list[r] < bound[r] * (1 - 1e-4) - 1e-9
        assert ((d2[r, far] >= d32[r, -1] - 1e-3) | (d2[r, far] > upper[r])).all()
    assert np.isfinite(bound).mean() > 0.5  # most rows pruned some tiles
    assert (~real).any()  # the lists leave out targets beyond U


def test_the_screen_declines_where_the_categories_do_not_separate(monkeypatch):
    """One level in every column: no tile lacks a level, the full screen runs, same answers."""
    rng = np.random.default_rng(4)
    q, slices = _mixed(500, rng, levels=(1, 1), scales=(1.0, 1.0))
    t, _ = _mixed(900, rng, levels=(1, 1), scales=(1.0, 1.0))
    calls = _used(monkeypatch)
    got = knn(q, t, 2, categorical_slices=slices, grouped=False, dedupe=False)
    assert calls and all(c is None for c in calls)
    full = knn(q, t, 2, grouped=False, dedupe=False)
    np.testing.assert_array_equal(got.idx, full.idx)


def test_no_tiles_without_one_hot_columns_or_with_few_targets():
    rng = np.random.default_rng(5)
    q, slices = _mixed(100, rng)
    small = ExactSearch(Problem(q, q[:60], 1, False, DEFAULT_SETTINGS), True, slices)
    assert tiles_for(small) is None  # fewer than two tiles' targets
    t, _ = _mixed(1000, rng)
    assert tiles_for(ExactSearch(Problem(q, t, 1, False, DEFAULT_SETTINGS), True, None)) is None
    broken = t.copy()
    broken[0, slices[0][0] : slices[0][1]] = 0.0  # a record with no level: not one-hot
    assert tiles_for(ExactSearch(Problem(q, broken, 1, False, DEFAULT_SETTINGS), True, slices)) is None


def test_grouped_levels_after_level_0_only_where_the_screen_would_compare_many_targets(monkeypatch):
    """A level after level 0 is searched only when the tile bounds would leave more than
    ``grouped_deeper_share`` of the targets to compare for the rows left open; the answers are
    the same either way."""
    from privgate.neighbours import SearchSettings

    rng = np.random.default_rng(8)
    q, slices = _mixed(900, rng)
    shares = []
    real = category_tiles.compared_share

    def spy(*args, **kwargs):
        shares.append(real(*args, **kwargs))
        return shares[-1]

    monkeypatch.setattr("privgate.neighbours.search.compared_share", spy)
    got = {}
    for limit in (0.0, 1.0):
        got[limit] = knn(
            q,
            q,
            2,
            exclude_self=True,
            categorical_slices=slices,
            dedupe=False,
            settings=SearchSettings(grouped_deeper_share=limit),
        )
    assert 0 < shares[0] < 1.0  # the screen would compare some of the targets, not all
    # with limit 0 level 1 ran and settled rows level 0 left open; with limit 1 it did not
    assert got[0.0].search["settled_by"]["grouped"] > got[1.0].search["settled_by"]["grouped"]
    np.testing.assert_array_equal(got[0.0].idx, got[1.0].idx)
    np.testing.assert_array_equal(got[0.0].dist, got[1.0].dist)
    full = knn(q, q, 2, exclude_self=True, grouped=False, dedupe=False)
    np.testing.assert_array_equal(got[1.0].idx, full.idx)


def test_two_threads_share_the_rows_and_give_the_same_answers(monkeypatch):
    from privgate.threads import limited

    rng = np.random.default_rng(12)
    q, slices = _mixed(2200, rng)
    t, _ = _mixed(3000, rng)
    calls = _used(monkeypatch)
    with limited(1):
        one = knn(q, t, 3, categorical_slices=slices, grouped=False, dedupe=False)
    with limited(2):
        two = knn(q, t, 3, categorical_slices=slices, grouped=False, dedupe=False)
    assert calls and all(c is not None for c in calls)
    np.testing.assert_array_equal(one.idx, two.idx)
    np.testing.assert_array_equal(one.dist, two.dist)


def test_the_ivf_screen_counts_only_the_pairs_the_tiles_keep():
    """With ``approximate=True`` the IVF screen is tried only when the pairs the tile bounds keep
    pass ``exact_below_pairs``: here every pair would pass it, the kept ones do not, so the
    search is exact; where the categories separate nothing (one level each) it is screened."""
    from privgate.neighbours import SearchSettings

    rng = np.random.default_rng(13)
    screened = dict(ivf_max_probe_share=1.0, ivf_max_uncertain_share=1.0)
    q, slices = _mixed(700, rng)
    t, _ = _mixed(3000, rng)
    limit = int(0.55 * q.shape[0] * t.shape[0])
    got = knn(
        q,
        t,
        2,
        categorical_slices=slices,
        grouped=False,
        dedupe=False,
        approximate=True,
        seed=1,
        settings=SearchSettings(exact_below_pairs=limit, **screened),
    )
    assert got.search["exact"] is True and "ivf_screen" not in got.search["settled_by"]
    full = knn(q, t, 2, grouped=False, dedupe=False)
    np.testing.assert_array_equal(got.idx, full.idx)
    q1, slices1 = _mixed(700, rng, levels=(1, 1), scales=(1.0, 1.0))
    t1, _ = _mixed(3000, rng, levels=(1, 1), scales=(1.0, 1.0))
    other = knn(
        q1,
        t1,
        2,
        categorical_slices=slices1,
        grouped=False,
        dedupe=False,
        approximate=True,
        seed=1,
        settings=SearchSettings(exact_below_pairs=limit, **screened),
    )
    assert "ivf_screen" in other.search["settled_by"]


def test_columns_sort_by_expected_mismatch_cost_per_bit_of_entropy():
    """(cost × P(two targets differ)) / entropy, by hand: a balanced two-level column 0.5 / 1 bit,
    a uniform four-level one 0.75 / 2 bits, a constant one 0 (pure everywhere)."""
    from privgate.neighbours.category_tiles import sort_priority

    n = 400
    codes = np.column_stack([np.arange(n) % 4, np.zeros(n, dtype=int), np.arange(n) % 2])
    widths = np.array([4, 1, 2])
    np.testing.assert_array_equal(sort_priority(codes, widths, np.ones(3)), [2, 0, 1])  # 0.5 > 0.375 > 0
    # the four-level column at twice the cost buys 0.75 per bit: first
    np.testing.assert_array_equal(sort_priority(codes, widths, np.array([2.0, 1.0, 1.0])), [0, 2, 1])
