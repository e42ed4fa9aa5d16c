"""The grouped search's levels (privgate/neighbours/grouped.py): level L searches the records equal
on all categorical columns but L, and settles a row whose k-th distance is below the L + 1
smallest mismatch costs. Each level settles more rows, every level count gives the brute-force
answer and, to the last bit, the ungrouped path's; rows whose level-1 lists were cut are retried
with longer lists; a level needing more trees than ``grouped_max_trees`` is not searched."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from onehot_points import one_hot_blocks
from test_neighbours import brute_tolerant

from privgate.neighbours import SearchSettings, knn

LEVELS = (3, 4, 2, 3, 5, 3)


def _points(n, rng, numeric_range=4):
    """Two integer numerics (small range: neighbours often differ in one or two categories) and
    six one-hot categoricals scaled so that a mismatch adds 1 to d²."""
    blocks, slices = one_hot_blocks(n, rng, LEVELS, start=2)
    return np.hstack([rng.integers(0, numeric_range, size=(n, 2)).astype(float)] + blocks), slices


def _settings(**kw):
    # small blocks: the open rows never fit one GEMM block, so every level runs
    return SearchSettings(block_bytes=4 * 600 * 8, **kw)


def _grouped(nb):
    return nb.search["settled_by"].get("grouped", 0)


@pytest.mark.parametrize("k, exclude_self", [(1, False), (3, False), (1, True), (3, True)])
def test_each_level_settles_more_rows_with_the_brute_force_answer(k, exclude_self):
    rng = np.random.default_rng(21)
    q, slices = _points(400, rng)
    t = q if exclude_self else _points(600, rng)[0]
    d, i = brute_tolerant(q, t, k, exclude_self=exclude_self)
    flat = knn(q, t, k, exclude_self=exclude_self, grouped=False, dedupe=False)
    settled = []
    for levels in (0, 1, 2):
        nb = knn(
            q,
            t,
            k,
            exclude_self=exclude_self,
            categorical_slices=slices,
            dedupe=False,
            settings=_settings(grouped_levels=levels),
        )
        np.testing.assert_allclose(nb.dist, d, rtol=1e-12)
        if k == 1:
            np.testing.assert_array_equal(nb.idx, i)
        np.testing.assert_array_equal(nb.idx, flat.idx)
        np.testing.assert_array_equal(nb.dist, flat.dist)
        settled.append(_grouped(nb))
    assert settled[0] < settled[1] < settled[2], settled


def test_rows_cut_at_level_one_are_retried_with_longer_lists():
    """Numerics of one value: every record of a group is at the same numeric distance, so a list
    of k + 2 is cut inside the row's k-th distance whenever the group is larger; the retry with
    k + ``extra_candidates`` settles those rows (without it, with extra_candidates = 2, it cannot)."""
    rng = np.random.default_rng(4)
    q, slices = _points(300, rng, numeric_range=1)
    t = _points(900, rng, numeric_range=1)[0]
    counts = {}
    for extra in (2, 16):
        for levels in (0, 1):
            nb = knn(
                q,
                t,
                1,
                categorical_slices=slices,
                dedupe=False,
                settings=_settings(grouped_levels=levels, extra_candidates=extra),
            )
            np.testing.assert_array_equal(nb.idx, brute_tolerant(q, t, 1)[1])
            counts[extra, levels] = _grouped(nb)
    assert counts[16, 1] - counts[16, 0] > counts[2, 1] - counts[2, 0], counts


def test_a_level_needing_more_trees_than_allowed_is_not_searched():
    rng = np.random.default_rng(21)
    q, slices = _points(400, rng)
    t = _points(600, rng)[0]
    pairs = comb(len(LEVELS), 2)
    one = knn(q, t, 1, categorical_slices=slices, dedupe=False, settings=_settings(grouped_levels=1))
    capped = knn(
        q,
        t,
        1,
        categorical_slices=slices,
        dedupe=False,
        settings=_settings(grouped_levels=2, grouped_max_trees=pairs - 1),
    )
    two = knn(
        q, t, 1, categorical_slices=slices, dedupe=False, settings=_settings(grouped_levels=2, grouped_max_trees=pairs)
    )
    assert _grouped(capped) == _grouped(one) < _grouped(two)
    np.testing.assert_array_equal(capped.idx, two.idx)
