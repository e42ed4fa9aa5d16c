"""The flat float32 screen: k + 16 candidates per query (:func:`.flat.flat_candidates`: NumPy's
GEMM in cache-sized tiles and a threshold selection — as fast as faiss' flat search where faiss'
bundled BLAS has the CPU's kernels, 2–3.6× faster where it does not), then a rigorous
float32 error bound checks, row by row, that no target outside the candidates could be among the
k nearest in exact arithmetic; the candidates are decided in float64. Rows that fail the check
(long runs of tied distances) are left for the blocked path."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import progress
from .category_tiles import pruned_candidates, tiles_for
from .decide import distances_of_pairs, drop_self, order_rows
from .flat import flat_candidates
from .ivf_lists import nonzero_2d

if TYPE_CHECKING:
    from .prepared import PreparedSearch

#: Query rows per call of the flat screen (progress is reported between calls).
FLAT_PART_ROWS = 16_384


def knn_flat(ex: "PreparedSearch", todo: np.ndarray, out_d: np.ndarray, out_i: np.ndarray) -> np.ndarray:
    """Screen query rows ``todo`` with the flat float32 search; fill the rows whose candidates
    provably contain the exact k nearest; return the rows that still need the blocked path. Rows
    with long runs of tied candidates are retried once with ``retry_candidates`` extra."""
    settings = ex.settings
    t32 = np.ascontiguousarray(ex.t32)
    # the first pass compares only the tiles of targets whose categories could hold a row's k
    # nearest (:mod:`.category_tiles`); the retry with many extra candidates compares every target
    tiles = tiles_for(ex) if todo.size else None
    for extra in (settings.extra_candidates, settings.retry_candidates):
        if todo.size == 0:
            break
        # in parts of rows, so that a long search reports its progress (each row's answer is
        # decided from its own candidates and the error bound: the parts change no answer)
        done = np.zeros(todo.size, dtype=bool)
        for s in range(0, todo.size, FLAT_PART_ROWS):
            done[s : s + FLAT_PART_ROWS] = _flat_pass(
                t32, ex, todo[s : s + FLAT_PART_ROWS], extra, out_d=out_d, out_i=out_i, tiles=tiles
            )
            progress.report(min(todo.size, s + FLAT_PART_ROWS), todo.size, "query rows of an exact search")
        todo = todo[~done]
        tiles = None
    return todo


def _flat_pass(
    t32: np.ndarray,
    ex: "PreparedSearch",
    rows: np.ndarray,
    extra: int,
    *,
    out_d: np.ndarray,
    out_i: np.ndarray,
    tiles: tuple | None = None,
) -> np.ndarray:
    """One screen of query ``rows`` against the float32 targets ``t32`` for k + ``extra``
    candidates; returns which rows it settled. ``tiles`` (:func:`.category_tiles.tiles_for`):
    only the tiles that could hold a row's k nearest are compared, when few enough are."""
    k, m = ex.k, t32.shape[0]
    available = m - 1 if ex.exclude_self else m
    kk = min(available, k + extra)
    search_k = min(m, kk + (1 if ex.exclude_self else 0))
    pruned = None
    if tiles is not None:
        pruned = pruned_candidates(ex, rows, search_k, min(m, k + (1 if ex.exclude_self else 0)), tiles)
    if pruned is None:
        d32, idx = flat_candidates(ex.q32[rows], ex.qn[rows], t32, ex.tn, search_k)
        beyond = None
    else:
        d32, idx, beyond, pruned_upper = pruned
    if ex.exclude_self:  # drop the self entry (or the last one when self was not returned)
        idx, d32 = drop_self(rows, idx, d32)
    idx = idx[:, :kk]
    d32 = d32[:, :kk].astype(np.float64)
    empty = (idx < 0) | (idx >= m)
    idx = np.where(empty, 0, idx)
    qn64 = ex.qn[rows].astype(np.float64)
    tn64 = ex.tn.astype(np.float64)
    c = ex.c
    # upper bound of the exact k-th smallest d² (max over the first k candidates' upper bounds)
    upper = ex.kth_upper(d32, idx, rows, k)
    if pruned is None:  # an empty slot: the row goes on to the retry
        bad = empty.any(axis=1)
    else:
        # the pruned screen's lists leave out only targets beyond the bound it pruned by (also an
        # upper bound of the k-th exact d²), and have an empty slot only where nothing else is
        # below it; its first k slots are never empty
        upper = np.minimum(upper, pruned_upper)
        bad = empty[:, :k].any(axis=1)
    if kk < available:
        # A target j outside the candidates has float32 d² ≥ the last candidate's. If its norm
        # is at most cap, its exact d² ≥ d32_last − c(‖q‖² + cap); if larger, the triangle
        # inequality gives d ≥ √cap − ‖q‖. cap is chosen so the second bound exceeds `upper`.
        cap = 1.25 * (np.sqrt(qn64) + np.sqrt(np.maximum(upper, 0)) + 1e-6) ** 2
        complete = d32[:, -1] - c * (qn64 + cap) > upper
    else:
        complete = np.ones(rows.size, dtype=bool)
    complete &= ~bad
    if beyond is not None:  # every target not compared lies beyond the k-th and its ties
        complete &= beyond > upper
    sel = np.flatnonzero(complete)
    if sel.size:
        lower = d32[sel] - c * (qn64[sel, None] + tn64[idx[sel]])
        _decide(ex, rows[sel], idx[sel], lower, upper[sel], out_d=out_d, out_i=out_i)
    return complete


def _decide(
    ex: "PreparedSearch",
    rows: np.ndarray,
    idx: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    out_d: np.ndarray,
    out_i: np.ndarray,
) -> None:
    """The k nearest of settled ``rows`` among their candidates ``idx``. float64 distances only
    for candidates whose float32 lower bound reaches ``upper``: the others have exact
    d² > upper ≥ the first k candidates' exact d², beyond the tie tolerance of the row minimum,
    so they sort after those k (same answer as computing all)."""
    k = ex.k
    need = lower <= upper[:, None] * (1 + 1e-6) + 1e-6
    need[:, :k] = True
    si, sj = nonzero_2d(need)
    d64 = np.full(idx.shape, np.inf)
    d64[si, sj] = distances_of_pairs(ex.q, ex.t, rows[si], idx[si, sj], ex.settings)
    order = order_rows(d64, idx, k, ~need)
    out_i[rows] = np.take_along_axis(idx, order, axis=1)
    out_d[rows] = np.take_along_axis(d64, order, axis=1)
