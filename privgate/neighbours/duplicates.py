"""Exact shortcuts for data with many exact duplicates (categorical data): search distinct
points only, with the same answers as searching every row."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from .problem import Options
from .result import Neighbours

#: the engine's search without duplicate folding: (query, target, k, exclude_self, options)
Search = Callable[[np.ndarray, np.ndarray, int, bool, Options], Neighbours]


def fold_duplicates(
    q: np.ndarray, t: np.ndarray, k: int, exclude_self: bool, opts: Options, search: Search
) -> Neighbours | None:
    """The search's answer by a duplicate-folding shortcut, or None when none applies (too few
    pairs or too few duplicates)."""
    if q.shape[0] * t.shape[0] < opts.settings.dedup_min_pairs:
        return None
    if k == 1:
        return _knn1_deduplicated(q, t, exclude_self, opts, search)
    if not exclude_self:
        return _knn_folded(q, t, k, opts, search)
    return _knn_self_folded(t, k, opts, search)


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``x`` ordered by their first occurrence: (rows, first index, inverse)."""
    groups = _hashed_row_groups(x)
    if groups is None:  # a hash collision or a NaN: the row sort decides
        _, first, inv = np.unique(x, axis=0, return_index=True, return_inverse=True)
    else:
        first, inv = groups
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return x[first[order]], first[order], rank[inv.ravel()]


def _hashed_row_groups(x: np.ndarray, chunk_bytes: int = 64 * 2**20) -> tuple[np.ndarray, np.ndarray] | None:
    """The groups of equal rows of float ``x`` (equal by value, as ``np.unique(x, axis=0)`` compares
    them: -0.0 equals 0.0), as (first row of each group, group of each row), by a 64-bit hash of
    each row's words, checked row by row against its group's first row: a sort of n integers
    instead of n rows (``np.unique(axis=0)`` took 4.6 CPU-s on a million rows of 47 features).
    None when two different rows share a hash or a value is NaN (then the caller sorts rows)."""
    n, d = x.shape
    if n == 0 or d == 0:
        return None
    z = np.ascontiguousarray(x, dtype=np.float64) + 0.0  # -0.0 → 0.0: equal values, equal words
    if np.isnan(z).any():
        return None
    mult = np.random.default_rng(0).integers(1, 2**63, size=d, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    h = np.empty(n, dtype=np.uint64)
    step = max(1, chunk_bytes // (8 * d))
    for s in range(0, n, step):  # blocks of rows: the word products stay small
        h[s : s + step] = (_mix64(z[s : s + step].view(np.uint64)) * mult).sum(axis=1, dtype=np.uint64)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.ravel()
    for s in range(0, n, step):
        if not (z[s : s + step] == z[first[inv[s : s + step]]]).all():
            return None
    return first, inv


def _mix64(w: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser of each 64-bit word: every input bit moves the low bits too (a
    float's low mantissa bits are often all zero)."""
    w = (w ^ (w >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    w = (w ^ (w >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return w ^ (w >> np.uint64(31))


def _distinct_lower_bound(x: np.ndarray) -> int:
    """A lower bound of the number of distinct rows: the number of distinct values of a fixed
    random projection (equal rows project equally) — a cheap test that duplicates are too few to
    pay off, before sorting whole rows."""
    w = np.random.default_rng(0).normal(size=x.shape[1])
    if x.dtype == np.float64:
        return int(np.unique(x @ w).size)
    # float32 rows (compact spaces) in blocks: x @ w would first copy the whole matrix to float64
    step = 2**16
    return int(
        np.unique(np.concatenate([x[s : s + step].astype(np.float64) @ w for s in range(0, x.shape[0], step)])).size
    )


def _knn1_deduplicated(
    q: np.ndarray, t: np.ndarray, exclude_self: bool, opts: Options, search: Search
) -> Neighbours | None:
    """k = 1 on data with many exact duplicates: search distinct points only.

    Distinct target points are ordered by their first row, so the lowest-index tie rule carries
    over; a query with an exact duplicate elsewhere in its own set (exclude_self) gets the lowest
    other row of its group at distance 0. Returns None when duplicates are too few to pay off.
    """
    share = opts.settings.dedup_max_share
    if _distinct_lower_bound(t) > share * t.shape[0]:
        return None
    tu, tfirst, tinv = _distinct_rows(t)
    if tu.shape[0] > share * t.shape[0]:
        return None
    if not exclude_self:
        qu, _, qinv = _distinct_rows(q)
        nb = search(qu, tu, 1, False, opts)
        return Neighbours(nb.dist[qinv], tfirst[nb.idx[qinv]], {**nb.search, "distinct_points": True})
    # query set == target set
    n = q.shape[0]
    counts = np.bincount(tinv, minlength=tu.shape[0])
    out_d = np.empty((n, 1))
    out_i = np.empty((n, 1), dtype=np.int64)
    # rows of a group with ≥ 2 members: the lowest other member, at distance 0
    order = np.lexsort((np.arange(n), tinv))  # rows grouped, ascending within group
    start = np.searchsorted(tinv[order], np.arange(tu.shape[0]))
    first_of = order[start]
    second_of = order[np.minimum(start + 1, n - 1)]
    dup = counts[tinv] >= 2
    rows = np.arange(n)
    other = np.where(first_of[tinv] == rows, second_of[tinv], first_of[tinv])
    out_i[dup, 0] = other[dup]
    out_d[dup, 0] = 0.0
    single = ~dup
    found = {"exact": True, "settled_by": {"duplicates": int(dup.sum())}, "distinct_points": True}
    if single.any():
        if tu.shape[0] < 2:
            return None
        nb = search(tu, tu, 1, True, opts)
        g = tinv[single]
        out_i[single, 0] = tfirst[nb.idx[g, 0]]
        out_d[single, 0] = nb.dist[g, 0]
        found = {**nb.search, "distinct_points": True}
    return Neighbours(out_d, out_i, found)


def _copy_ranks(t: np.ndarray, max_share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(distinct point of each row, the row's rank among its point's copies — 0 for the lowest
    index —, the first row of each point), or None when the distinct points are more than
    ``max_share`` of the rows."""
    m = t.shape[0]
    if _distinct_lower_bound(t) > max_share * m:
        return None
    _, first, inv = _distinct_rows(t)
    if first.size > max_share * m:
        return None
    order = np.lexsort((np.arange(m), inv))  # rows grouped by point, ascending within
    start = np.searchsorted(inv[order], np.arange(first.size))
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m) - start[inv[order]]
    return inv, rank, first


def first_copies(t: np.ndarray, k: int, max_share: float) -> np.ndarray | None:
    """The target rows a k-nearest search needs of a set with many exact duplicates: for each
    distinct point, its k lowest-index copies (sorted row positions). Copies of one point are at
    the same float64 distance from any query (the same arithmetic on the same coordinates), so
    under the tie rule (equal distances → lowest index) a copy behind k lower-index copies of its
    point is never among the k nearest: searching the kept rows gives the same lists as searching
    all. A run of equal neighbours is thereby bounded by k per point instead of materialised.
    None when duplicates are too few to pay off (more than ``max_share`` of the rows kept)."""
    ranks = _copy_ranks(t, max_share)
    if ranks is None:
        return None
    keep = np.flatnonzero(ranks[1] < k)
    if keep.size > max_share * t.shape[0]:
        return None
    return keep


def _knn_self_folded(t: np.ndarray, k: int, opts: Options, search: Search) -> Neighbours | None:
    """k > 1 nearest other rows of a set with many exact duplicates (query set == target set;
    numeric data of few distinct points, where every row's run of distance-0 copies would
    otherwise be materialised: 10,000 rows of 5 binary columns took 3.4 CPU-s, quadratic in the
    rows). With each point's k + 1 lowest-index copies kept (:func:`first_copies`' argument: a
    copy behind them is never listed, and a row's own copy, when kept, leaves k others):

    * a kept row's k nearest other rows are those among the kept rows — one exact search of the
      kept rows against themselves;
    * a row behind its point's first k + 1 copies is never among its own k nearest (k + 1 lower
      copies precede it at distance 0), so its list is that of its point searched against the
      kept rows with nothing excluded — one search per distinct point.

    Exact (``approximate`` off); with ``approximate`` on, only when the kept rows make at most
    ``exact_below_pairs`` pairs — otherwise None, as when duplicates are too few."""
    n = t.shape[0]
    share = opts.settings.dedup_max_share
    ranks = _copy_ranks(t, share)
    if ranks is None:
        return None
    inv, rank, first = ranks
    keep = np.flatnonzero(rank <= k)
    if keep.size > share * n or (opts.approximate and keep.size * keep.size > opts.settings.exact_below_pairs):
        return None  # a screen, when allowed, keeps its recall sample over every row
    exact = replace(opts, approximate=False)
    out_d = np.empty((n, k))
    out_i = np.empty((n, k), dtype=np.int64)
    kept = t[keep]
    nb = search(kept, kept, k, True, exact)
    out_d[keep], out_i[keep] = nb.dist, keep[nb.idx]
    behind = np.flatnonzero(rank > k)
    found = {**nb.search, "targets_searched": int(keep.size), "rows_behind_copies": int(behind.size)}
    if behind.size:
        points, at = np.unique(inv[behind], return_inverse=True)
        pts = search(t[first[points]], kept, k, False, exact)
        out_d[behind], out_i[behind] = pts.dist[at], keep[pts.idx[at]]
    return Neighbours(out_d, out_i, found)


def _knn_folded(q: np.ndarray, t: np.ndarray, k: int, opts: Options, search: Search) -> Neighbours | None:
    """k > 1 neighbours (query set ≠ target set) on data with many exact duplicates — e.g. the
    key columns of the reconstruction metrics: 25k Texas records hold 1.3k distinct key
    combinations. Two exact reductions:

    * targets: only each distinct point's k lowest-index copies are searched
      (:func:`first_copies`);
    * queries: the distinct query rows are searched once each and every row gets its distinct
      row's answer (an exact search's answer depends on the query point alone).

    The search left is exact when its pairs (distinct queries × kept targets) are at most
    ``exact_below_pairs`` or ``approximate`` is off. Otherwise it is screened — over every query
    row, not the distinct ones, so that the screen's seeded recall sample and
    ``share_rows_possibly_wrong`` stay shares of rows. Returns None when neither reduction
    applies."""
    n = q.shape[0]
    share = opts.settings.dedup_max_share
    keep = first_copies(t, k, share)
    tt = t if keep is None else t[keep]
    qu = qinv = None
    if _distinct_lower_bound(q) <= share * n:
        qu, _, qinv = _distinct_rows(q)
        if qu.shape[0] > share * n:
            qu = qinv = None
    n_search = n if qu is None else qu.shape[0]
    screen = opts.approximate and n_search * tt.shape[0] > opts.settings.exact_below_pairs
    if screen:
        qu = qinv = None
    if keep is None and qu is None:
        return None
    nb = search(q if qu is None else qu, tt, k, False, replace(opts, approximate=screen))
    idx = nb.idx if keep is None else keep[nb.idx]
    found = dict(nb.search)
    if keep is not None:
        found["targets_searched"] = int(keep.size)
    if qu is not None:
        found["distinct_queries"] = int(qu.shape[0])
        return Neighbours(nb.dist[qinv], idx[qinv], found)
    return Neighbours(nb.dist, idx, found)
