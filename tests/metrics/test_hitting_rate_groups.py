"""hitting_rate's group numbers (privgate.metrics.distance._GroupNumbers): code columns folded one
at a time give the numbering of np.unique(columns, axis=0), so the box query sees the same
coordinates as when every equality column was stacked at once."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.metrics.distance import _GroupNumbers


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_folded_group_numbers_equal_the_lexicographic_unique_of_all_columns(seed):
    rng = np.random.default_rng(seed)
    n_r, n_s = 300, 200
    cols = [rng.integers(0, k, n_r + n_s) for k in (2, 5, 1, 40, 3)]
    cols.append(rng.integers(-3, 2, n_r + n_s))  # negative codes too
    g = _GroupNumbers()
    for c in cols:
        g.add(c[:n_r], c[n_r:])
    expected = np.unique(np.column_stack(cols), axis=0, return_inverse=True)[1].ravel()
    np.testing.assert_array_equal(g.ids, expected)


def test_no_columns_leaves_no_group_and_one_column_is_its_dense_rank():
    g = _GroupNumbers()
    assert g.ids is None
    g.add(np.array([5, 9, 5]), np.array([7]))
    np.testing.assert_array_equal(g.ids, [0, 2, 0, 1])
