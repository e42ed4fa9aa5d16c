"""The per-target preparation cache of privgate.neighbours gives the same answers as no cache."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import privgate.neighbours as nb
from privgate.neighbours.memo import target_cache_size


def _mixed(n: int, seed: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, 3))
    cats = []
    for levels in (3, 4):
        onehot = np.zeros((n, levels))
        onehot[np.arange(n), rng.integers(0, levels, n)] = 1.0 / np.sqrt(2.0)
        cats.append(onehot)
    x = np.hstack([num] + cats + [rng.normal(size=(n, 12))])
    return x, [(3, 6), (6, 10)]


@pytest.mark.parametrize("approximate", [False, True])
def test_cached_target_preparations_give_the_uncached_answers(approximate):
    t, slices = _mixed(3000, 1)
    q1, _ = _mixed(400, 2)
    q2, _ = _mixed(500, 3)
    # a screen at every size that never declines
    settings = nb.SearchSettings(exact_below_pairs=0, ivf_max_probe_share=1.0)
    opts = dict(categorical_slices=slices, approximate=approximate, seed=5, dedupe=False, settings=settings)
    plain = [nb.knn(q, t, 2, **opts) for q in (q1, q2)]
    plain_rows = nb.knn_rows(t, np.arange(0, 3000, 7), 1, **opts)
    opts["settings"] = dataclasses.replace(settings, target_cache_min_rows=100)
    nb.clear_target_cache()
    cached = [nb.knn(q, t, 2, **opts) for q in (q1, q2)]  # the second search reuses the first's
    cached_rows = nb.knn_rows(t, np.arange(0, 3000, 7), 1, **opts)
    assert target_cache_size() == 1
    for a, b in zip(plain + [plain_rows], cached + [cached_rows]):
        np.testing.assert_array_equal(a.idx, b.idx)
        np.testing.assert_array_equal(a.dist, b.dist)
        assert repr(a.search) == repr(b.search)  # (a recall of nan compares unequal to itself)
    other, _ = _mixed(2000, 4)
    nb.knn(q1, other, 1, **opts)
    assert target_cache_size() == settings.target_cache_size  # least recently used target dropped
    nb.clear_target_cache()
