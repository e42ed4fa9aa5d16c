"""The grouped search's target side kept for the next search (privgate/neighbours/grouped.py): group
ids of the target alone (mixed-radix numbers of the slice widths), the targets sorted by group
kept in the SearchMemo per (target matrix, dropped columns), and a level's trees kept for its
retry. Answers are the same to the last bit as a fresh search without memo, and the sorted
targets are built once per target and set of dropped columns."""

from __future__ import annotations

import numpy as np
import pytest
from onehot_points import one_hot_blocks
from test_neighbours import brute_tolerant

import privgate.neighbours.grouped as grouped
from privgate.neighbours import SearchMemo, SearchSettings, knn

LEVELS = (3, 4, 2, 3, 5, 3)


def _points(n, rng, numeric_range=3):
    """Two small-range integer numerics (ties everywhere) and six one-hot categoricals."""
    blocks, slices = one_hot_blocks(n, rng, LEVELS, start=2)
    return np.hstack([rng.integers(0, numeric_range, size=(n, 2)).astype(float)] + blocks), slices


def _settings():
    # small blocks: the open rows never fit one GEMM block, so level 1 runs
    return SearchSettings(block_bytes=4 * 600 * 8, grouped_levels=1)


def _counting_builds(monkeypatch):
    built = []
    original = grouped._TargetGroups.__init__

    def counting(self, tg):
        built.append(tg.size)
        original(self, tg)

    monkeypatch.setattr(grouped._TargetGroups, "__init__", counting)
    return built


def _same(a, b):
    np.testing.assert_array_equal(a.idx, b.idx)
    np.testing.assert_array_equal(a.dist, b.dist)
    assert a.search == b.search


@pytest.mark.parametrize("k, exclude_self", [(1, False), (3, False), (1, True), (3, True)])
def test_searches_with_the_memo_match_fresh_searches_and_sort_the_target_once(k, exclude_self, monkeypatch):
    rng = np.random.default_rng(5)
    t, slices = _points(700, rng)
    queries = [t] if exclude_self else [_points(300, rng)[0], _points(200, rng)[0]]
    opt = dict(exclude_self=exclude_self, categorical_slices=slices, dedupe=False, settings=_settings())
    fresh = [knn(q, t, k, **opt) for q in queries]
    for q, nb in zip(queries, fresh):
        d, i = brute_tolerant(q, t, k, exclude_self=exclude_self)
        np.testing.assert_allclose(nb.dist, d, rtol=1e-12)
        assert nb.search["settled_by"]["grouped"] > 0
    built = _counting_builds(monkeypatch)
    memo = SearchMemo()
    for _ in range(2):  # the second round reads the memo's sorted targets
        for q, nb in zip(queries, fresh):
            _same(knn(q, t, k, memo=memo, **opt), nb)
    # level 0 and one per dropped column (level 1), each once for the target
    assert 1 < len(built) <= 1 + len(LEVELS)
    assert set(built) == {t.shape[0]}
    assert sum(1 for key in memo._items if key[1][0] == "grouped_target_groups") == len(built)


def test_the_dense_fallback_ids_are_not_kept(monkeypatch):
    """Ids of query and target together (the mixed-radix numbers would not be exact) depend on the
    query: they are sorted for the call and never put in the memo."""
    rng = np.random.default_rng(6)
    t, slices = _points(500, rng)
    q = _points(200, rng)[0]
    opt = dict(categorical_slices=slices, dedupe=False, settings=_settings())
    radix = knn(q, t, 1, **opt)
    real_init = grouped._Groups.__init__

    def dense_only(self, *a, **kw):
        real_init(self, *a, **kw)
        self.radix = False

    monkeypatch.setattr(grouped._Groups, "__init__", dense_only)
    memo = SearchMemo()
    dense = knn(q, t, 1, memo=memo, **opt)
    _same(dense, radix)
    assert not any(key[1][0] == "grouped_target_groups" for key in memo._items)


@pytest.mark.parametrize("k, exclude_self", [(1, False), (3, True)])
def test_trees_kept_for_the_retry_give_the_same_answers(k, exclude_self, monkeypatch):
    """Numerics of one value: lists are cut in ties and retried; the retry queries the first
    pass's tree (over a superset of its groups) instead of building one — same answers as with
    no tree kept."""
    rng = np.random.default_rng(7)
    t, slices = _points(800, rng, numeric_range=1)
    q = t if exclude_self else _points(300, rng, numeric_range=1)[0]
    opt = dict(exclude_self=exclude_self, categorical_slices=slices, dedupe=False, settings=_settings())
    runs, hits = {}, []
    original_get = grouped._KeptTrees.get

    def counted_get(self, key, groups):
        hit = original_get(self, key, groups)
        hits.append(hit is not None)
        return hit

    monkeypatch.setattr(grouped._KeptTrees, "get", counted_get)
    original_init = grouped._KeptTrees.__init__
    for budget in (0, 2**40):
        monkeypatch.setattr(grouped._KeptTrees, "__init__", lambda self, _b, budget=budget: original_init(self, budget))
        hits.clear()
        runs[budget] = knn(q, t, k, **opt)
        assert any(hits) == (budget > 0)
    _same(runs[0], runs[2**40])
    np.testing.assert_array_equal(runs[0].idx, knn(q, t, k, exclude_self=exclude_self, grouped=False, dedupe=False).idx)


def test_ids_from_slice_widths_group_rows_as_the_dense_ids_do():
    """Strides from the slice widths (codes below them, some levels unused) give the same
    partition of query and target rows as dense ids, with and without dropped columns."""
    rng = np.random.default_rng(8)
    widths = np.array([3, 5, 2, 4])
    qc = np.column_stack([rng.integers(0, w - 1, 300) for w in widths])  # the top level unused
    tc = np.column_stack([rng.integers(0, w, 400) for w in widths])
    groups = grouped._Groups(qc, tc, 10.0, widths)
    assert groups.radix
    for drop in (None, 1, (0, 2), (0, 1, 2, 3)):
        q, t = groups.ids(drop)
        keep = [j for j in range(widths.size) if j not in grouped._dropped(drop)]
        dq, dt = grouped.group_ids(qc[:, keep], tc[:, keep])
        pairs = np.unique(np.column_stack([np.concatenate([q, t]), np.concatenate([dq, dt])]), axis=0)
        assert len(np.unique(pairs[:, 0])) == len(np.unique(pairs[:, 1])) == len(pairs)


@pytest.mark.parametrize("m", [5, 300, 5000])
def test_sorted_targets_count_and_list_the_members_as_isin_does(m):
    rng = np.random.default_rng(m)
    tg = rng.integers(0, 40, m) * 3
    sorted_t = grouped._TargetGroups(tg)
    for size in (1, 3, 30):
        qg = rng.integers(-2, 45, size) * 3
        at, count = sorted_t.count(qg)
        np.testing.assert_array_equal(count, (tg[None, :] == qg[:, None]).sum(axis=1))
        present = count > 0
        if present.any():  # few groups (sorted) and many (the mask over the targets)
            members = sorted_t.members(at[present])
            assert members.dtype == np.int64
            np.testing.assert_array_equal(members, np.flatnonzero(np.isin(tg, qg[present])))
