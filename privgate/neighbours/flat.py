"""The flat float32 screen's candidates: for each query row the ``kk`` targets of smallest float32
squared distance ‖q‖² + ‖t‖² − 2 q·t, and those distances, sorted — computed with NumPy's GEMM.

NumPy's BLAS, not the one a dependency bundles: the OpenBLAS inside the faiss-cpu wheels (0.3.15)
does not know current server CPUs and falls back to generic kernels (Prescott, SSE3) on some
AVX-512 Xeons — an exact 25k × 25k float32 search 3.6× slower than with the CPU's own kernels —
while NumPy's OpenBLAS picks them. ``blas_report`` says which kernels each library chose.

The query rows go in tiles whose distance matrix stays in the CPU's caches (``tile_bytes``); per
tile, one GEMM, then a threshold that at least ``kk`` targets of each row reach — the largest of
``kk`` column groups' minima: each group's minimum is a different target — and the row's targets
at or below it (a few times ``kk`` on continuous data) sorted by distance, ties by the lower
index. With many targets a tile of whole rows would hold only a few query rows, and each of its
GEMMs would stream the whole target matrix from memory for them (a memory-bound product: 20,000
rows against 300,000 targets took 1.6× the same GEMM's time); there the tiles are
``BLOCK_ROWS`` query rows × a part of the targets, and each row keeps its ``kk`` best candidates
from one target part to the next (merged by distance, ties by the lower index: the same
candidates). Only speed depends on the tiling; the float32 values are those of the GEMM, whose
rounding the caller's error bound covers (as it covers faiss').
"""

from __future__ import annotations

import numpy as np

from .backends import workers

TILE_BYTES = 8 * 2**20
MIN_TILE_ROWS = 16
#: Query rows of a tile when the targets are split in parts: a tile of whole rows would hold fewer
#: than this many (more than ``TILE_BYTES`` / (4 · BLOCK_ROWS) targets, 8,192 by default).
BLOCK_ROWS = 256
# a transposed (d × m) copy of the targets speeds the GEMM (~25 %, measured 4,000 × 25,000 × 95)
# but costs 4·d bytes per target: made only up to this size
TRANSPOSED_COPY_BYTES = 64 * 2**20


def flat_candidates(q32: np.ndarray, qn: np.ndarray, t32: np.ndarray, tn: np.ndarray, kk: int,
                    tile_bytes: int = TILE_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """(float32 d² (rows × kk), int64 target indices (rows × kk)) of the ``kk`` nearest targets of
    every row of ``q32`` by float32 d², ascending (ties by lower index). ``qn`` / ``tn``: float32
    squared norms of the rows of ``q32`` / ``t32``."""
    n, m = q32.shape[0], t32.shape[0]
    if not 1 <= kk <= m:
        raise ValueError(f"cannot list {kk} candidates among {m} targets")
    out_d = np.empty((n, kk), dtype=np.float32)
    out_i = np.empty((n, kk), dtype=np.int64)
    step = tile_bytes // max(1, 4 * m)
    parts = step < BLOCK_ROWS and m > kk
    if parts:  # tiles of BLOCK_ROWS rows × `width` targets
        step = BLOCK_ROWS
        width = max(kk, tile_bytes // (4 * BLOCK_ROWS))
    step = max(MIN_TILE_ROWS, step)
    tt = np.ascontiguousarray(t32.T) if t32.nbytes <= TRANSPOSED_COPY_BYTES else t32.T
    starts = list(range(0, n, step))

    def run(mine: list[int]) -> None:
        for s in mine:
            e = min(n, s + step)
            if parts:
                _tiles_of_parts(q32[s:e], qn[s:e], tt, tn, kk, width, out_d[s:e], out_i[s:e])
            else:
                _tile(q32[s:e], qn[s:e], tt, tn, kk, out_d[s:e], out_i[s:e])

    n_workers = min(max(1, workers()), len(starts))  # the run's thread budget
    if n_workers > 1:
        # tiles split between threads, each GEMM single-threaded (NumPy releases the GIL): the
        # selection runs in parallel too, and each tile's values are the same whichever thread
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1), ThreadPoolExecutor(n_workers) as pool:
            list(pool.map(run, [starts[w::n_workers] for w in range(n_workers)]))
    else:
        run(starts)
    return out_d, out_i


def _tile(q: np.ndarray, qn: np.ndarray, tt: np.ndarray, tn: np.ndarray, kk: int,
          out_d: np.ndarray, out_i: np.ndarray) -> None:
    b, m = q.shape[0], tt.shape[1]
    # v = ‖t‖² − 2 q·t ((−2q)·t is exactly −2(q·t) in floating point); ‖q‖² is added to the kept
    # values only: the order within a row is the same, and rounding is monotone
    v = (q * np.float32(-2.0)) @ tt
    v += tn[None, :]
    if kk == m:
        order = np.argsort(v, axis=1, kind="stable")
    else:
        width = m // kk
        thr = v[:, :kk * width].reshape(b, kk, width).min(axis=2).max(axis=1)
        flat = np.flatnonzero(v <= thr[:, None])
        cr, cc = np.divmod(flat, m)
        counts = np.bincount(cr, minlength=b)
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        width_c = int(counts.max())
        pad = np.full((b, width_c), np.inf, dtype=np.float32)
        col = np.full((b, width_c), m, dtype=np.int64)
        slot = np.arange(cr.size) - first[cr]
        pad[cr, slot] = v.ravel()[flat]
        col[cr, slot] = cc
        # stable: equal values keep their column order (lowest index first)
        order = np.argsort(pad, axis=1, kind="stable")[:, :kk]
        out_i[:] = np.take_along_axis(col, order, axis=1)
        out_d[:] = np.take_along_axis(pad, order, axis=1) + qn[:, None]
        return
    order = order[:, :kk]
    out_i[:] = order
    out_d[:] = np.take_along_axis(v, order, axis=1) + qn[:, None]


def _tiles_of_parts(q: np.ndarray, qn: np.ndarray, tt: np.ndarray, tn: np.ndarray, kk: int, width: int,
                    out_d: np.ndarray, out_i: np.ndarray) -> None:
    """:func:`_tile` of the rows ``q`` with the targets in parts of ``width``: per part one GEMM,
    the part's targets at or below the smaller of a value kk of them reach and the row's kk-th
    best so far, merged with the best so far by (value, index) — the kk smallest (value, index) pairs
    overall, as :func:`_tile` gives."""
    b, m = q.shape[0], tt.shape[1]
    q2 = q * np.float32(-2.0)
    best_v = np.full((b, kk), np.inf, dtype=np.float32)
    best_i = np.full((b, kk), m, dtype=np.int64)
    for c0 in range(0, m, width):
        c1 = min(m, c0 + width)
        v = q2 @ tt[:, c0:c1]
        v += tn[None, c0:c1]
        w = c1 - c0
        thr = best_v[:, kk - 1]
        if w > kk:  # a value at least kk of the part's targets reach: the largest of kk groups' minima
            group = w // kk
            thr = np.minimum(thr, v[:, :kk * group].reshape(b, kk, group).min(axis=2).max(axis=1))
        flat = np.flatnonzero(v <= thr[:, None])
        if flat.size == 0:
            continue
        cr, cc = np.divmod(flat, w)
        counts = np.bincount(cr, minlength=b)
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        pad_v = np.full((b, kk + int(counts.max())), np.inf, dtype=np.float32)
        pad_i = np.full(pad_v.shape, m, dtype=np.int64)
        pad_v[:, :kk], pad_i[:, :kk] = best_v, best_i
        slot = kk + np.arange(cr.size) - first[cr]
        pad_v[cr, slot] = v.ravel()[flat]
        pad_i[cr, slot] = cc + c0
        order = np.lexsort((pad_i, pad_v), axis=1)[:, :kk]
        best_v = np.take_along_axis(pad_v, order, axis=1)
        best_i = np.take_along_axis(pad_i, order, axis=1)
    out_i[:] = best_i
    out_d[:] = best_v + qn[:, None]
