"""The flat screen's candidates (privgate/neighbours/flat.py) do not depend on how the distance
matrix is tiled: tiles of whole rows and tiles of row blocks × target parts (used when a tile of
whole rows would hold few query rows) give the same kk candidates, in the same order — the kk
smallest float32 values, ties by the lower index — as one tile of every row and target, and as a
brute-force sort. On exact small-integer data the float32 values are equal too; on continuous data
a target-major part's product may round differently in the last bit (the BLAS kernel's summation
order, which depends on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.neighbours import flat


def _case(seed, n, m, d, tied):
    rng = np.random.default_rng(seed)
    if tied:  # small integers: runs of equal distances across target parts
        q = rng.integers(0, 3, size=(n, d)).astype(np.float32)
        t = rng.integers(0, 3, size=(m, d)).astype(np.float32)
    else:
        q = rng.normal(size=(n, d)).astype(np.float32)
        t = rng.normal(size=(m, d)).astype(np.float32)
    return q, np.einsum("ij,ij->i", q, q), t, np.einsum("ij,ij->i", t, t)


def _brute(q, qn, t, tn, kk):
    v = (q * np.float32(-2.0)) @ t.T + tn[None, :]
    cols = np.broadcast_to(np.arange(t.shape[0]), v.shape)
    order = np.lexsort((cols, v), axis=1)[:, :kk]
    return order


@pytest.mark.parametrize(
    "seed, n, m, d, kk, tied",
    [
        (0, 300, 5_003, 7, 17, True),  # parts of 41 targets, the last one short
        (1, 257, 4_000, 12, 1, True),  # k = 1, a second row block of one row
        (2, 100, 3_001, 5, 40, True),  # kk near the part width
        (3, 200, 6_000, 16, 17, False),
        (4, 50, 90, 3, 90, True),  # kk = every target: no parts
    ],
)
def test_parts_give_the_candidates_of_one_tile(seed, n, m, d, kk, tied):
    q, qn, t, tn = _case(seed, n, m, d, tied)
    whole_d, whole_i = flat.flat_candidates(q, qn, t, tn, kk, tile_bytes=10**12)
    # 4 · PART_ROWS · 41 bytes: row blocks of PART_ROWS × parts of ~41 targets (tile rows would be < 256)
    parts_d, parts_i = flat.flat_candidates(q, qn, t, tn, kk, tile_bytes=4 * flat.PART_ROWS * 41)
    rows_d, rows_i = flat.flat_candidates(q, qn, t, tn, kk, tile_bytes=4 * m * 20)  # whole-row tiles of 20
    for d_, i_ in ((parts_d, parts_i), (rows_d, rows_i)):
        np.testing.assert_array_equal(i_, whole_i)
        if tied:  # exact small-integer products: every layout's float32 values are the same
            np.testing.assert_array_equal(d_, whole_d)
        else:  # the BLAS kernel may sum a target-major product in another order: the last bits
            np.testing.assert_allclose(d_, whole_d, rtol=1e-5)
    if tied:  # exact small-integer products: the brute-force order is the same to the last index
        np.testing.assert_array_equal(whole_i, _brute(q, qn, t, tn, kk))


def test_a_large_target_set_is_tiled_in_parts(monkeypatch):
    """The parts path is the one taken when a whole-row tile would hold fewer than BLOCK_ROWS rows."""
    calls = []
    real = flat._tiles_of_parts
    monkeypatch.setattr(flat, "_tiles_of_parts", lambda *a: calls.append(1) or real(*a))
    q, qn, t, tn = _case(5, 40, 3_000, 4, True)
    flat.flat_candidates(q, qn, t, tn, 3, tile_bytes=4 * 3_000 * 10)
    assert calls
    calls.clear()
    flat.flat_candidates(q, qn, t, tn, 3, tile_bytes=4 * 3_000 * flat.BLOCK_ROWS)
    assert not calls


@pytest.mark.parametrize("kk", [1, 2, 5])
@pytest.mark.parametrize("d, tied", [(7, True), (15, True), (16, False), (7, False), (31, False), (95, True)])
def test_small_kk_parts_with_ties(kk, d, tied):
    """k = 1, 2, 5 (kk the screen's candidates): the parts path — rows skipped when no value of
    a part is below their kk-th best, few rows selected from by their columns — gives the
    candidates of one whole tile and (exact small integers) of a brute-force sort."""
    q, qn, t, tn = _case(10 + kk + d, 700, 9_001, d, tied)
    whole_d, whole_i = flat.flat_candidates(q, qn, t, tn, kk, tile_bytes=10**12)
    for width in (37, 300):
        parts_d, parts_i = flat.flat_candidates(q, qn, t, tn, kk, tile_bytes=4 * flat.PART_ROWS * width)
        np.testing.assert_array_equal(parts_i, whole_i)
        if tied:  # exact small integers: every product order gives the same float32 values
            np.testing.assert_array_equal(parts_d, whole_d)
        else:  # the two product layouts may round differently in the last bit (the BLAS kernel's
            # choice; the caller's error bound covers any order), never more
            np.testing.assert_allclose(parts_d, whole_d, rtol=1e-5, atol=1e-5)
    if tied:
        np.testing.assert_array_equal(whole_i, _brute(q, qn, t, tn, kk))


@pytest.mark.parametrize("n", [1, 257, 513, 1_025])
def test_a_last_row_alone_keeps_its_row_major_values(n):
    """Row counts whose row-major parts end in a one-row block (a GEMV): that row is still
    searched alone, so its float32 values are the same as one row searched alone."""
    q, qn, t, tn = _case(20, n, 5_000, 7, False)
    d_, i_ = flat.flat_candidates(q, qn, t, tn, 3, tile_bytes=4 * flat.PART_ROWS * 200)
    one_d, one_i = flat.flat_candidates(q[-1:], qn[-1:], t, tn, 3, tile_bytes=4 * flat.PART_ROWS * 200)
    np.testing.assert_array_equal(i_[-1:], one_i)
    np.testing.assert_array_equal(d_[-1:], one_d)
