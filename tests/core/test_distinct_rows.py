"""Duplicate folding's distinct rows come from hashed rows checked against their group's first
row; the answer is the row sort's (``np.unique(axis=0)``) in every case, collisions included."""

from __future__ import annotations

import numpy as np

from privgate.neighbours import duplicates as du
from privgate.neighbours.ivf_lists import nonzero_2d


def _by_sort(x: np.ndarray) -> tuple[np.ndarray, ...]:
    _, first, inv = np.unique(x, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return x[first[order]], first[order], rank[inv.ravel()]


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(p, q, equal_nan=True) for p, q in zip(a, b))


def test_hashed_groups_equal_the_row_sort():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (20_000, 9)).astype(float)  # small integers: words with all-zero low bits
    x[:, 0] = rng.normal(size=20_000).round(1)
    x[rng.random(20_000) < 0.2, 2] = -0.0  # equal to 0.0, as the sort compares
    assert du._hashed_row_groups(x) is not None
    assert _same(du._distinct_rows(x), _by_sort(x))
    assert du._distinct_rows(x)[0].shape[0] < 20_000


def test_a_hash_collision_or_a_nan_falls_back_to_the_row_sort(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (3_000, 4)).astype(float)
    want = _by_sort(x)
    monkeypatch.setattr(du, "_mix64", lambda w: np.zeros_like(w))  # every row the same hash
    assert du._hashed_row_groups(x) is None
    assert _same(du._distinct_rows(x), want)
    monkeypatch.undo()
    y = x.copy()
    y[::7, 1] = np.nan
    assert du._hashed_row_groups(y) is None
    assert _same(du._distinct_rows(y), _by_sort(y))


def test_nonzero_2d_is_numpys():
    rng = np.random.default_rng(6)
    for shape in [(50, 37), (1, 5), (5, 1), (0, 4)]:
        mask = rng.random(shape) < 0.1
        for a, b in zip(nonzero_2d(mask), np.nonzero(mask)):
            np.testing.assert_array_equal(a, b)
