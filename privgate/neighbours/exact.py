"""The exact general search: float32 distances on centred data with a rigorous error bound,
decided in float64 — the flat screen (:mod:`.screened`), then, for the rows it cannot settle,
blocks of one GEMM each (never an n×m matrix) — and scipy's cKDTree for low-dimensional spaces."""

from __future__ import annotations

import numpy as np

from .. import progress
from ..ties import REL_TOL
from .backends import kdtree, workers
from .decide import distances_of_pairs, drop_self, order_rows, take_sorted
from .flat import TILE_BYTES
from .prepared import PreparedSearch
from .problem import Problem
from .screened import knn_flat

#: Fewest query rows of a block of the blocked path (within ``block_bytes``): each block's GEMM
#: reads every target, so with many targets few rows a block make it memory-bound (200 rows ×
#: 1M targets × 95, k = 1: 1.26 CPU-s in blocks of 16 rows, 1.03 in blocks of 50).
BLOCK_MIN_ROWS = 64


class ExactSearch(PreparedSearch):
    """The exact general search of chosen query rows of ``problem``: the flat screen with the
    float32 error bound, then the blocked NumPy path for rows the bound cannot settle. Holds
    float32 copies centred on the target mean (smaller norms, so a tighter error bound) and their
    squared norms — float32 matrices (compact spaces) themselves, uncentred — the target side
    from the target cache when the matrix is large (:class:`.prepared.PreparedSearch`, whose
    constructor it uses)."""

    def rows(self, todo: np.ndarray, out_d: np.ndarray, out_i: np.ndarray, settled: dict | None = None) -> None:
        """Fill ``out_d`` / ``out_i`` at the query rows ``todo``; count the rows per path in
        ``settled``."""
        settled = {} if settled is None else settled
        if todo.size and self.use_faiss:
            left = knn_flat(self, todo, out_d, out_i)
            settled["faiss_flat"] = settled.get("faiss_flat", 0) + int(todo.size - left.size)
            todo = left
        if todo.size:
            settled["blocked"] = settled.get("blocked", 0) + int(todo.size)
        m, k = self.t.shape[0], self.k
        # blocks whose float32 distances stay in the CPU's caches, as the flat screen's tiles: its
        # elementwise passes over a block of 192 MiB ran at memory speed (2,556 rows × 25,000
        # targets × 95 dimensions, k = 1: 0.55–0.80 CPU-s in one block each, 0.27 in 8 MiB
        # blocks); at least BLOCK_MIN_ROWS rows, as each block's GEMM streams every target
        tile = max(BLOCK_MIN_ROWS, TILE_BYTES // max(1, 4 * m))
        block = max(1, min(max(todo.size, 1), tile, self.block_bytes // max(1, 4 * m)))
        for s in range(0, todo.size, block):
            rows = todo[s : s + block]
            bd = np.empty((rows.size, k))
            bi = np.empty((rows.size, k), dtype=np.int64)
            self._block(rows, bd, bi)
            out_d[rows] = bd
            out_i[rows] = bi
            progress.report(s + rows.size, todo.size, "query rows of an exact search")

    def _block(self, qrows: np.ndarray, out_d: np.ndarray, out_i: np.ndarray) -> None:
        """One block of query rows: one float32 GEMM, the candidates whose lower bound reaches
        the k-th's upper bound, decided in float64."""
        k, c, ctn = self.k, self.c, self.ctn
        qbn = self.qn[qrows]
        b = qrows.size
        rows = np.arange(b)
        dist = self.q32[qrows] @ self.t32.T
        dist *= np.float32(-2.0)
        dist += qbn[:, None]
        dist += self.tn[None, :]
        if self.exclude_self:
            dist[rows, qrows] = np.inf
        # upper bound of the exact k-th smallest d² per row
        if k == 1:
            # any target's upper bound bounds the exact minimum; argmin is ~40× cheaper than argpartition
            part = dist.argmin(axis=1)[:, None]
        else:
            part = np.argpartition(dist, k - 1, axis=1)[:, :k]
        upper = (dist[rows[:, None], part] + c * qbn[:, None] + ctn[part]).max(axis=1)
        # candidates: lower bound of exact d² ≤ upper bound of the k-th
        dist -= ctn[None, :]
        dist -= (c * qbn)[:, None]
        cand = dist <= upper[:, None]
        if self.exclude_self:
            cand[rows, qrows] = False
        cr, cc = np.nonzero(cand)
        del dist, cand
        d64 = distances_of_pairs(self.q, self.t, qrows[cr], cc, self.settings)
        take_sorted(cr, cc, d64, n_rows=b, k=k, out_d=out_d, out_i=out_i)


def knn_kdtree(p: Problem, out_d: np.ndarray, out_i: np.ndarray) -> np.ndarray:
    """Low-dimensional spaces (the 2-D FAMD projection): scipy's cKDTree gives the exact k + 2
    nearest in float64, then k + 16 for the rows whose last candidate is not strictly beyond the
    k-th (as the grouped search's short lists: 25,000 × 25,000 FAMD points, k = 1, 0.16 instead of
    0.33 CPU-s); rows still cut inside a run of ties are returned open, for the NumPy path."""
    tree = kdtree(p.t)
    todo = np.arange(p.n)
    for extra in (p.settings.grouped_extra, p.settings.extra_candidates):
        todo = _kdtree_rows(p, tree, todo, min(p.available, p.k + extra), out_d, out_i)
        if todo.size == 0:
            break
    return todo


def _kdtree_rows(p: Problem, tree, rows: np.ndarray, kk: int, out_d: np.ndarray, out_i: np.ndarray) -> np.ndarray:
    """The query ``rows`` searched in ``tree`` for ``kk`` candidates, decided in float64: fill the
    rows whose last candidate lies beyond the k-th's tie band (or that hold every target) and
    return the others."""
    n, k = rows.size, p.k
    search_k = min(p.m, kk + (1 if p.exclude_self else 0))
    _, idx = tree.query(p.q[rows], k=search_k, workers=workers())
    idx = idx.reshape(n, search_k).astype(np.int64)
    if p.exclude_self:
        (idx,) = drop_self(rows, idx)
    idx = idx[:, :kk]
    d64 = distances_of_pairs(p.q, p.t, np.repeat(rows, kk), idx.ravel(), p.settings).reshape(n, kk)
    kth = np.sort(d64, axis=1)[:, k - 1]
    if kk < p.available:
        tol = REL_TOL * (1.0 + np.abs(kth))
        complete = d64.max(axis=1) > kth + 2 * tol
    else:
        complete = np.ones(n, dtype=bool)
    sel = np.flatnonzero(complete)
    if sel.size:
        order = order_rows(d64[sel], idx[sel], k)
        out_i[rows[sel]] = np.take_along_axis(idx[sel], order, axis=1)
        out_d[rows[sel]] = np.take_along_axis(d64[sel], order, axis=1)
    return rows[~complete]
