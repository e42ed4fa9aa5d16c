"""privgate.neighbours.refine_group_ids: integer code columns folded in one at a time give the
numbering of np.unique(columns, axis=0) — used by the grouped neighbour search and hitting_rate,
which folds its equality columns as it reads them so it never holds them all."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.neighbours import refine_group_ids
from privgate.neighbours.grouped import group_ids


def _folded(cols):
    ids = None
    for c in cols:
        ids = refine_group_ids(ids, c)
    return ids


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_folded_group_numbers_equal_the_lexicographic_unique_of_all_columns(seed):
    rng = np.random.default_rng(seed)
    n = 500
    cols = [rng.integers(0, k, n) for k in (2, 5, 1, 40, 3)]
    cols.append(rng.integers(-3, 2, n))  # negative codes too
    cols.append(rng.random(n) < 0.3)  # a boolean null indicator
    expected = np.unique(np.column_stack(cols).astype(np.int64), axis=0, return_inverse=True)[1].ravel()
    np.testing.assert_array_equal(_folded(cols), expected)


@pytest.mark.parametrize("seed", [0, 1])
def test_unordered_numbers_are_the_same_groups_in_order_of_first_appearance(seed):
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, k, 800) for k in (3, 4, 2, 6)] + [rng.random(800) < 0.2]
    ordered, unordered = None, None
    for c in cols:
        ordered = refine_group_ids(ordered, c)
        unordered = refine_group_ids(unordered, c, ordered=False)
    # the same partition: a one-to-one map between the two numberings
    pairs = np.unique(np.column_stack([ordered, unordered]), axis=0)
    assert len(np.unique(pairs[:, 0])) == len(np.unique(pairs[:, 1])) == len(pairs)
    # numbered 0, 1, 2, ... in order of first appearance
    _, first = np.unique(unordered, return_index=True)
    np.testing.assert_array_equal(unordered[np.sort(first)], np.arange(unordered.max() + 1))
    np.testing.assert_array_equal(refine_group_ids(None, np.array([5, 9, 5, 7]), ordered=False), [0, 1, 0, 2])


def test_one_column_is_its_dense_rank_and_empty_input_stays_empty():
    np.testing.assert_array_equal(refine_group_ids(None, np.array([5, 9, 5, 7])), [0, 2, 0, 1])
    assert refine_group_ids(None, np.zeros(0, dtype=np.int64)).size == 0


def test_the_grouped_search_ids_are_shared_by_query_and_target_rows():
    qc = np.array([[0, 1], [2, 0], [0, 1]])
    tc = np.array([[2, 0], [1, 1], [0, 1]])
    q_ids, t_ids = group_ids(qc, tc)
    np.testing.assert_array_equal(q_ids, [0, 2, 0])
    np.testing.assert_array_equal(t_ids, [2, 1, 0])
