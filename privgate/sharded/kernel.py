"""The exact k nearest neighbours of a block of query rows among one partition's target rows,
and the exact merge of such partial lists — the arithmetic of a sharded search, on plain arrays.

Distances are Euclidean in an encoded space whose last coordinates may hold level codes
(``coded``: (position, mismatch cost)), compared as equal or not: a mismatch adds its cost to d²,
as :mod:`privgate.neighbours.coded` does. Candidates are screened with a float64 GEMM and every
pair that may be among the k nearest (the screen's rounding bound included) is measured again
from coordinate differences; ties within :mod:`privgate.ties`' tolerance of a row's nearest
distance are snapped to it and broken by the lowest global index, the local engine's rule
(:mod:`privgate.neighbours.decide`). So each partial list holds the exact k nearest of its
partition, and :func:`merge_lists` of the partial lists of every partition gives the exact k
nearest of the whole target set, whatever the partitioning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..neighbours.decide import snap_ties
from ..ties import REL_TOL, le

__all__ = ["block_knn", "engine_knn", "merge_lists", "top_k"]

#: the GEMM screen's d² matrix is at most this many bytes (target rows taken in chunks)
SCREEN_BYTES = 32 * 2**20
#: relative rounding bound of a screened d² (|q|² + |t|² − 2q·t in float64), far above the
#: actual ~d·2⁻⁵² so that no pair within the k nearest is screened out
SCREEN_REL = 1e-8


def top_k(rows: np.ndarray, dist: np.ndarray, idx: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, k) distances and global indices of the k nearest candidates of each of ``n`` query rows
    from candidate triples (query row, distance, global index): distances within tolerance of the
    row's nearest are snapped to it, ties broken by the lowest index; rows with fewer than k
    candidates are padded with inf / −1."""
    out_d = np.full((n, k), np.inf)
    out_i = np.full((n, k), -1, dtype=np.int64)
    if rows.size == 0:
        return out_d, out_i
    rowmin = np.full(n, np.inf)
    np.minimum.at(rowmin, rows, dist)
    snapped = snap_ties(dist, rowmin[rows])
    order = np.lexsort((idx, snapped, rows))
    r, d, i = rows[order], snapped[order], idx[order]
    first = np.searchsorted(r, r, side="left")
    rank = np.arange(r.size) - first
    keep = rank < k
    out_d[r[keep], rank[keep]] = d[keep]
    out_i[r[keep], rank[keep]] = i[keep]
    return out_d, out_i


def merge_lists(lists: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest of each query row over several partial (n, k') lists of the same query rows
    (exact: each partial list holds its partition's k nearest)."""
    lists = [lst for lst in lists if lst[0].size]
    if not lists:
        raise ValueError("no partial list to merge")
    n = lists[0][0].shape[0]
    d = np.concatenate([lst[0] for lst in lists], axis=1)
    i = np.concatenate([lst[1] for lst in lists], axis=1)
    ok = i >= 0
    rows = np.broadcast_to(np.arange(n)[:, None], d.shape)[ok]
    return top_k(rows, d[ok], i[ok], n, k)


def _split(x: np.ndarray, coded: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dense float64 coordinates, level codes, mismatch costs)."""
    pos = [p for p, _ in coded]
    dense_at = np.setdiff1d(np.arange(x.shape[1]), pos)
    dense = np.ascontiguousarray(x[:, dense_at], dtype=np.float64)
    codes = np.asarray(x[:, pos], dtype=np.float64)
    return dense, codes, np.array([c for _, c in coded], dtype=np.float64)


def block_knn(
    query: np.ndarray,
    query_ids: np.ndarray,
    target: np.ndarray,
    target_ids: np.ndarray,
    k: int,
    *,
    coded: Sequence[tuple[int, float]] = (),
    exclude_self: bool = False,
    query_exclude: np.ndarray | None = None,
    target_labels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The exact k nearest ``target`` rows of every ``query`` row: (nq, k) distances and global
    target indices (``target_ids``), padded with inf / −1 where the partition has fewer. A
    target row whose global index is the query's own (``exclude_self``) or whose label
    (``target_labels``) is the query's excluded label (``query_exclude``) is never listed."""
    nq = query.shape[0]
    if nq == 0 or target.shape[0] == 0:
        return np.full((nq, k), np.inf), np.full((nq, k), -1, dtype=np.int64)
    qd, qc, cost = _split(query, coded)
    td, tc, _ = _split(target, coded)
    qn = np.einsum("ij,ij->i", qd, qd)
    tn = np.einsum("ij,ij->i", td, td)
    best_d = np.full((nq, k), np.inf)
    best_i = np.full((nq, k), -1, dtype=np.int64)
    chunk = max(1, SCREEN_BYTES // (8 * nq))
    for s in range(0, target.shape[0], chunk):
        e = min(target.shape[0], s + chunk)
        d2 = qn[:, None] + tn[None, s:e] - 2.0 * (qd @ td[s:e].T)
        for j in range(cost.size):
            d2 += cost[j] * (qc[:, j][:, None] != tc[s:e, j][None, :])
        if exclude_self:
            d2[query_ids[:, None] == target_ids[None, s:e]] = np.inf
        if query_exclude is not None:
            d2[query_exclude[:, None] == target_labels[None, s:e]] = np.inf
        kk = min(k, e - s)
        kth = np.partition(d2, kk - 1, axis=1)[:, kk - 1]
        bound = SCREEN_REL * (1.0 + qn + tn[s:e].max() + cost.sum())
        # every pair within the k-th screened d² (+ the rounding bound and the tie tolerance)
        qi, ti = np.nonzero(d2 <= (kth + bound + 4.0 * REL_TOL * (1.0 + kth))[:, None])
        del d2
        fin = np.isfinite(kth)[qi]
        qi, ti = qi[fin], ti[fin] + s
        diff = qd[qi] - td[ti]
        exact2 = np.einsum("ij,ij->i", diff, diff)
        del diff
        if cost.size:
            exact2 += ((qc[qi] != tc[ti]) * cost[None, :]).sum(axis=1)
        cand_rows = np.concatenate([np.repeat(np.arange(nq), k)[best_i.ravel() >= 0], qi])
        cand_d = np.concatenate([best_d.ravel()[best_i.ravel() >= 0], np.sqrt(exact2)])
        cand_i = np.concatenate([best_i.ravel()[best_i.ravel() >= 0], target_ids[ti]])
        best_d, best_i = top_k(cand_rows, cand_d, cand_i, nq, k)
    return best_d, best_i


def engine_knn(
    query: np.ndarray,
    query_ids: np.ndarray,
    target: np.ndarray,
    target_ids: np.ndarray,
    k: int,
    *,
    coded: Sequence[tuple[int, float]] = (),
    categorical_slices: Sequence[tuple[int, int]] = (),
    exclude_self: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`block_knn` gives, by the local engine's exact search
    (:func:`privgate.neighbours.knn`, ``approximate=False``: its grouped, tiled and coded paths,
    which settle categorical data far sooner than one screen of every pair): the k nearest — the
    k + 2 nearest when a record may be listed as its own neighbour, itself then dropped by global
    index (or, if exact duplicates of lower index keep it out, the last ones; and listing more
    where its own distance 0 hid a tie at its nearest other record: :func:`_without_self`)."""
    from ..neighbours import knn

    nq = query.shape[0]
    out_d = np.full((nq, k), np.inf)
    out_i = np.full((nq, k), -1, dtype=np.int64)
    # excluding itself: its k + 2 nearest, so that the last listed is past its nearest other record
    # and a tie there shows (``_without_self``) without searching every row twice
    kk = min(k + (2 if exclude_self else 0), target.shape[0])
    if nq == 0 or kk == 0:
        return out_d, out_i

    def search(q: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        nb = knn(
            q,
            target,
            width,
            categorical_slices=list(categorical_slices) or None,
            coded_columns=list(coded) or None,
            approximate=False,
            use_faiss=False,
        )
        return nb.dist, target_ids[nb.idx]

    dist, idx = search(query, kk)
    if exclude_self:
        return _without_self(query, query_ids, target.shape[0], k, kk, search, dist, idx)
    m = min(k, kk)
    out_d[:, :m], out_i[:, :m] = dist[:, :m], idx[:, :m]
    return out_d, out_i


def _without_self(query, query_ids, m: int, k: int, width: int, search, dist, idx) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other records of each query row from its ``width`` nearest (``dist``,
    ``idx``: global indices), itself dropped by global index. A row that listed itself had its
    ties snapped to its own distance 0, so the tie class at its nearest other record may be cut
    short (targets at that distance but for rounding, of lower index, not listed): the rows whose
    last listed distance ties with their nearest other (:func:`privgate.ties.le`) are searched again,
    listing twice as many, until it is not or every target is listed (a loop over rounds)."""
    rows_out, dist_out, idx_out = [], [], []
    todo = np.arange(query.shape[0])
    while True:
        own = idx == query_ids[todo, None]
        listed = own.any(axis=1)
        other = np.where(own, np.inf, dist).min(axis=1)
        last = dist[:, -1]
        again = listed & (width < m) & le(last, other)  # tied with it, as snap_ties would tie them
        keep = ~own & ~again[:, None]
        rows_out.append(np.broadcast_to(todo[:, None], idx.shape)[keep])
        dist_out.append(dist[keep])
        idx_out.append(idx[keep])
        if not again.any():
            break
        todo, width = todo[again], min(2 * width, m)
        dist, idx = search(np.ascontiguousarray(query[todo]), width)
    return top_k(np.concatenate(rows_out), np.concatenate(dist_out), np.concatenate(idx_out), query.shape[0], k)
