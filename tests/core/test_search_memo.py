"""The search memo (structures derived from one matrix — category codes, the screen's k-means
lists — kept for the other searches of that matrix): answers with and without it are the same to
the last bit, it is really reused, and it never outlives or confuses its arrays."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from onehot_points import one_hot_blocks

import privgate.neighbours.ivf_lists as lists_mod
from privgate.neighbours import SearchMemo, SearchSettings, knn

# a screen at every size, calibrated and checked on 100 rows each
SCREEN = SearchSettings(exact_below_pairs=0, ivf_check_rows=100, ivf_max_uncertain_share=1.0)


def _mixed(n, rng, levels=(3, 2, 4), n_numeric=3):
    blocks, slices = one_hot_blocks(n, rng, levels, start=n_numeric)
    cols = [rng.integers(0, 5, size=(n, n_numeric)).astype(float), *blocks]
    x = np.hstack(cols)
    x[rng.random(n) < 0.05, 0] = 9.0  # a far "null-like" value, and integer ties everywhere
    return x, slices


def _searches(real, syn, slices, memo, settings=SCREEN):
    """The family's four mixed searches, screened (approximate) so that lists are built."""
    opt = dict(categorical_slices=slices, approximate=True, settings=settings, seed=4, memo=memo, dedupe=False)
    return [
        knn(real, syn, 1, **opt),
        knn(real, real, 3, exclude_self=True, **opt),
        knn(syn, real, 1, **opt),
        knn(syn, syn, 1, exclude_self=True, **opt),
    ]


def test_memo_gives_the_same_answers_and_builds_each_target_structure_once(monkeypatch):
    rng = np.random.default_rng(8)
    real, slices = _mixed(1500, rng)
    syn = _mixed(1400, rng)[0]
    built = []
    original = lists_mod.Lists.__init__

    def counting(self, exact, nlist, train_rows, seed):
        built.append(exact.t.shape[0])
        original(self, exact, nlist, train_rows, seed)

    monkeypatch.setattr(lists_mod.Lists, "__init__", counting)
    ungrouped = dataclasses.replace(SCREEN, grouped_max_numeric=-1)  # no grouped search: every row screened
    plain = _searches(real, syn, slices, None, ungrouped)
    assert len(built) == 4
    built.clear()
    memo = SearchMemo()
    shared = _searches(real, syn, slices, memo, ungrouped)
    assert sorted(built) == [1400, 1500]  # one list set per target matrix
    for a, b in zip(plain, shared):
        assert a.search.get("exact") is False  # the screen ran
        np.testing.assert_array_equal(a.idx, b.idx)
        np.testing.assert_array_equal(a.dist, b.dist)
        assert a.search == b.search


@pytest.mark.parametrize("k", [1, 3])
def test_grouped_search_with_memo_matches_brute_force_with_ties(k):
    rng = np.random.default_rng(9)
    real, slices = _mixed(400, rng)
    syn = _mixed(350, rng)[0]
    memo = SearchMemo()
    for _ in range(2):  # second round reads the memo's codes
        for q, t, same in ((real, syn, False), (real, real, True), (syn, syn, True)):
            got = knn(q, t, k, exclude_self=same, categorical_slices=slices, dedupe=False, memo=memo)
            d = np.sqrt(((q[:, None] - t[None]) ** 2).sum(-1))
            if same:
                np.fill_diagonal(d, np.inf)
            np.testing.assert_allclose(got.dist, np.sort(d, axis=1)[:, :k], rtol=1e-12)
            ref = knn(q, t, k, exclude_self=same, grouped=False, dedupe=False)
            np.testing.assert_array_equal(got.idx, ref.idx)


def test_memo_entries_are_for_the_same_living_array_only():
    memo = SearchMemo()
    a = np.zeros((3, 2))
    assert memo.get(a, ("x",), lambda: 1) == 1
    assert memo.get(a, ("x",), lambda: 2) == 1  # reused for the same array
    assert memo.get(a.copy(), ("x",), lambda: 3) == 3  # equal values, another array: not reused
    del a
    gc.collect()
    assert not any(v == 1 for _, v in memo._items.values())  # freed with its array
