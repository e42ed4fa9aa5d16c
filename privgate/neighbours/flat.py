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
``PART_ROWS`` query rows × a part of the targets (computed target-major, see
:func:`_tiles_of_parts`), and each row keeps its ``kk`` best candidates from one target part to
the next (merged by distance, ties by the lower index: the same candidates; after the first
part a row's ``kk``-th best so far is its threshold). Only speed depends on the tiling; the float32 values are those of the GEMM, whose
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
#: Query rows × bytes of one tile of a target part: 512 rows × 1,024 targets (2 MiB) measured
#: fastest among 128–1,024 rows × 0.5–8 MiB (2,000 × 2M targets, d = 7 and 15: 1.8–2× the
#: speed of the former 256 × 8 MiB tiles with the target-major GEMM below).
PART_ROWS = 512
PART_BYTES = 2 * 2**20
# a transposed (d × m) copy of the targets speeds the GEMM (~25 %, measured 4,000 × 25,000 × 95)
# but costs 4·d bytes per target: made only up to this size
TRANSPOSED_COPY_BYTES = 64 * 2**20
#: A part's rows are selected from one by one (their columns copied) when at most 1/this of
#: them have a value below their kk-th best; else the whole part is compared.
FEW_ROWS_DIVISOR = 4
#: Spaces of at most this many dimensions take the target-major parts (:func:`_tiles_of_parts`),
#: measured 1.5–1.9× faster there (2,000 × 2M targets, d = 7–16); wider spaces keep the row-major
#: parts, near GEMM speed already. The two layouts' float32 products may differ in the last bit
#: (the BLAS kernel's summation order, which depends on the CPU); the caller's error bound holds
#: for any order, so the decided answers are the same either way.
TARGET_MAJOR_MAX_DIM = 31


def _row_blocks(n: int, step: int, target_major: bool) -> list[tuple[int, int]]:
    """(start, end) of the row blocks: ``step`` rows (the row-major tiles), or ``PART_ROWS`` in
    the target-major parts — but a last row that the row-major parts' ``BLOCK_ROWS`` blocks
    would have searched alone stays alone (a one-row product is a GEMV, whose rounding differs
    from the GEMM's), so that every row's float32 values are those of the row-major tiling."""
    if not target_major:
        return [(s, min(n, s + step)) for s in range(0, n, step)]
    alone = n > 1 and n % BLOCK_ROWS == 1
    body = n - 1 if alone else n
    blocks = [(s, min(body, s + PART_ROWS)) for s in range(0, body, PART_ROWS)]
    return blocks + [(n - 1, n)] if alone else blocks


def flat_candidates(
    q32: np.ndarray, qn: np.ndarray, t32: np.ndarray, tn: np.ndarray, kk: int, tile_bytes: int = TILE_BYTES
) -> tuple[np.ndarray, np.ndarray]:
    """(float32 d² (rows × kk), int64 target indices (rows × kk)) of the ``kk`` nearest targets of
    every row of ``q32`` by float32 d², ascending (ties by lower index). ``qn`` / ``tn``: float32
    squared norms of the rows of ``q32`` / ``t32``."""
    n, m = q32.shape[0], t32.shape[0]
    if not 1 <= kk <= m:
        raise ValueError(f"cannot list {kk} candidates among {m} targets")
    out_d = np.empty((n, kk), dtype=np.float32)
    out_i = np.empty((n, kk), dtype=np.int64)
    step = max(MIN_TILE_ROWS, tile_bytes // max(1, 4 * m))
    parts = step < BLOCK_ROWS and m > kk
    target_major = parts and q32.shape[1] <= TARGET_MAJOR_MAX_DIM
    if parts:  # row-major parts: tiles of BLOCK_ROWS rows × `width` targets
        step = BLOCK_ROWS
    blocks = _row_blocks(n, step, target_major)
    if target_major:
        t32 = np.ascontiguousarray(t32)
        width = max(kk, min(tile_bytes, PART_BYTES) // (4 * PART_ROWS))
    else:
        width = max(kk, tile_bytes // (4 * BLOCK_ROWS))
    if not target_major or any(e - s == 1 for s, e in blocks):
        tt = np.ascontiguousarray(t32.T) if t32.nbytes <= TRANSPOSED_COPY_BYTES else t32.T

    def run(mine: list[tuple[int, int]]) -> None:
        for s, e in mine:
            if target_major and e - s > 1:
                _tiles_of_parts(q32[s:e], qn[s:e], t32, tn, kk, width, out_d[s:e], out_i[s:e])
            elif parts:
                _row_major_parts(q32[s:e], qn[s:e], tt, tn, kk, width, out_d[s:e], out_i[s:e])
            else:
                _tile(q32[s:e], qn[s:e], tt, tn, kk, out_d[s:e], out_i[s:e])

    starts = blocks
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


def _tile(
    q: np.ndarray, qn: np.ndarray, tt: np.ndarray, tn: np.ndarray, kk: int, out_d: np.ndarray, out_i: np.ndarray
) -> None:
    b, m = q.shape[0], tt.shape[1]
    # v = ‖t‖² − 2 q·t ((−2q)·t is exactly −2(q·t) in floating point); ‖q‖² is added to the kept
    # values only: the order within a row is the same, and rounding is monotone
    v = (q * np.float32(-2.0)) @ tt
    v += tn[None, :]
    if kk == m:
        order = np.argsort(v, axis=1, kind="stable")
    else:
        width = m // kk
        thr = v[:, : kk * width].reshape(b, kk, width).min(axis=2).max(axis=1)
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


def _tiles_of_parts(
    q: np.ndarray,
    qn: np.ndarray,
    t: np.ndarray,
    tn: np.ndarray,
    kk: int,
    width: int,
    out_d: np.ndarray,
    out_i: np.ndarray,
) -> None:
    """:func:`_tile` of the rows ``q`` with the (row-major) targets ``t`` in parts of ``width``: per
    part one GEMM, the part's targets below the row's kk-th best so far (and, while a row has
    fewer than kk finite values, at or below a value kk of them reach), merged with the best so
    far by (value, index) — the kk smallest (value, index) pairs overall, as :func:`_tile` gives.

    The part's distances are computed target-major, ``t_part @ (−2q)ᵀ`` (targets × rows): the
    products of ``(−2q) @ t_partᵀ`` up to the kernel's rounding order (which the caller's error
    bound covers) at 1.2–3× the speed of OpenBLAS' row-major kernels at few dimensions. A part's target never displaces an equal kk-th best (its index is higher), so only
    values strictly below it are taken; after the first parts few rows have any, and when few do,
    only their columns are selected from."""
    b, m = q.shape[0], t.shape[0]
    q2t = (q * np.float32(-2.0)).T
    best_v = np.full((b, kk), np.inf, dtype=np.float32)
    best_i = np.full((b, kk), m, dtype=np.int64)
    for c0 in range(0, m, width):
        c1 = min(m, c0 + width)
        v = t[c0:c1] @ q2t
        v += tn[c0:c1, None]
        thr = _below_kth(best_v[:, kk - 1])
        rows = None
        if np.isinf(thr).any():  # the first part: a value kk of the part's targets reach bounds the rows
            if c1 - c0 > kk:
                group = (c1 - c0) // kk
                thr = np.minimum(thr, v[: kk * group].reshape(kk, group, b).min(axis=1).max(axis=0))
        else:
            rows = np.flatnonzero(v.min(axis=0) <= thr)
            if rows.size == 0:
                continue
            if rows.size > b // FEW_ROWS_DIVISOR:
                rows = None
            else:
                v, thr = np.take(v, rows, axis=1), thr[rows]
        if rows is None:
            _merge_part(v, thr, best_v, best_i, c0, m)
        else:
            sub_v, sub_i = best_v[rows], best_i[rows]
            _merge_part(v, thr, sub_v, sub_i, c0, m)
            best_v[rows], best_i[rows] = sub_v, sub_i
    out_i[:] = best_i
    out_d[:] = best_v + qn[:, None]


def _below_kth(kth: np.ndarray) -> np.ndarray:
    """Per row the largest float32 below its kk-th best ``kth`` (values at or below it are below
    the kk-th best), ``kth`` itself where it is not finite (a row with fewer than kk finite
    values so far takes every value)."""
    return np.where(np.isfinite(kth), np.nextafter(kth, np.float32(-np.inf)), kth)


def _merge_part(v: np.ndarray, thr: np.ndarray, best_v: np.ndarray, best_i: np.ndarray, c0: int, m: int) -> None:
    """Merge the values at or below the row's ``thr`` of the target-major part ``v`` (targets ×
    rows; its first target is ``c0``) into the rows' sorted kk best (``best_v`` / ``best_i``,
    updated in place), sorted with the best by (value, index)."""
    b = best_v.shape[0]
    flat = np.flatnonzero(v <= thr[None, :])
    if flat.size == 0:
        return
    tc, cr = np.divmod(flat, b)
    vals = v.ravel()[flat]
    by_row = np.argsort(cr, kind="stable")
    best_v[:], best_i[:] = _merged(best_v, best_i, cr[by_row], tc[by_row] + c0, vals[by_row], m)


def _merged(
    best_v: np.ndarray, best_i: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows' kk best (value, index) pairs of their sorted kk best so far (``best_v`` /
    ``best_i``) and the new candidates (``rows`` ascending, target index ``cols``, value
    ``vals``), sorted by (value, index)."""
    b, kk = best_v.shape
    counts = np.bincount(rows, minlength=b)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pad_v = np.full((b, kk + int(counts.max())), np.inf, dtype=np.float32)
    pad_i = np.full(pad_v.shape, m, dtype=np.int64)
    pad_v[:, :kk], pad_i[:, :kk] = best_v, best_i
    slot = kk + np.arange(rows.size) - first[rows]
    pad_v[rows, slot] = vals
    pad_i[rows, slot] = cols
    order = np.lexsort((pad_i, pad_v), axis=1)[:, :kk]
    return np.take_along_axis(pad_v, order, axis=1), np.take_along_axis(pad_i, order, axis=1)


def _row_major_parts(
    q: np.ndarray,
    qn: np.ndarray,
    tt: np.ndarray,
    tn: np.ndarray,
    kk: int,
    width: int,
    out_d: np.ndarray,
    out_i: np.ndarray,
) -> None:
    """:func:`_tile` of the rows ``q`` with the targets in parts of ``width`` (row-major, for
    spaces of more than ``TARGET_MAJOR_MAX_DIM`` dimensions and one-row blocks): per part one GEMM,
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
        if c0 == 0 and w > kk:
            # the first part: a value at least kk of its targets reach (the largest of kk groups'
            # minima); later parts compare with the row's kk-th best so far, which already holds
            # over every earlier target (a pass over each later tile saved: ~15 % of the screen)
            group = w // kk
            thr = np.minimum(thr, v[:, : kk * group].reshape(b, kk, group).min(axis=2).max(axis=1))
        flat = np.flatnonzero(v <= thr[:, None])
        if flat.size == 0:
            continue
        cr, cc = np.divmod(flat, w)  # rows ascending (row-major)
        best_v, best_i = _merged(best_v, best_i, cr, cc + c0, v.ravel()[flat], m)
    out_i[:] = best_i
    out_d[:] = best_v + qn[:, None]
