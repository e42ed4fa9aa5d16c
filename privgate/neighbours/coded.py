"""Exact k-NN when some columns are compared only as equal or not: coded columns.

A categorical column of many levels (a postcode, a diagnosis code) is held in a mixed space as
ONE coordinate carrying its integer code instead of a one-hot block of thousands of columns; a
mismatch on it adds a fixed amount ``cost`` to the squared distance, exactly what its one-hot
block (indicators scaled so that a mismatch adds ``cost``) would add. So with R(x, y) the squared
distance over the other coordinates ("the rest") and C the set of coded columns,

    d²(x, y) = R(x, y) + Σ_{j ∈ C, x_j ≠ y_j} cost_j .

**Why the candidates below contain the answer.** For a subset M of C, let S_M(x) be the k targets
that match x on every column of M with the smallest (R, index). Take a target t among x's k
nearest by (d², index) and let M be the coded columns on which t matches x. If t were not in
S_M(x), S_M(x) would hold k targets s with (R(s), s) < (R(t), t), each matching x at least on M,
so d²(s) ≤ R(s) + Σ_{j ∉ M} cost_j ≤ R(t) + Σ_{j ∉ M} cost_j = d²(t), with equality only when
R(s) = R(t), hence s < t: k targets before t, a contradiction. Hence the answer lies in the union
over every M ⊆ C of S_M(x) (S_∅ is the k nearest in the rest space; a larger M has smaller
groups), and the k nearest of that union by exact d² (ties by lowest index) is the exact answer.
Moreover such a t has d²(t) ≤ U(x), the k-th smallest d² of the k targets of S_∅(x) (they are k
candidates), and d²(t) = R(t) + Σ_{j ∉ M} cost_j for its M, so R(t) ≤ U(x) − Σ_{j ∉ M} cost_j: the
search for M keeps only the targets within that bound (widened far beyond rounding and the
decision's tie tolerance, ``_candidate_bound``), skips a query whose bound is negative, and ranks
none of a group's rows with at most k targets within it. Only targets that cannot be in the
answer are dropped, so the answer is the same, bit for bit.

The rest-space search S_∅ is the engine's own (every path: duplicates, groups of one-hot
categories, k-d trees, screens); the S_M for M ≠ ∅ are searches inside groups of equal codes:
pairs enumerated directly for groups of up to ``ENUMERATE_UP_TO`` targets (a postcode's groups
hold a few records) and, through ``ENUMERATE_PAIRS_UP_TO``, for the larger
groups whose rows left to search there have at most that many pairs with its targets (all such
groups at once), one float64 GEMM per block of another larger group's queries, and the engine's
own search for groups of more than ``ENGINE_ABOVE`` targets whose rows there make more than
``ENGINE_MIN_PAIRS`` pairs with them (below that its fixed costs — category codes, prepared
copies — outweigh a GEMM: on 25k Texas-like rows, identifiability and authenticity with their
baselines took 8.7 CPU-s with 384, 6.8 with 2,048). Memory and time grow with the pairs inside
groups, never with levels × records.

**A larger group's rows, by categories first** (when the rest space has one-hot categories). The
rest distance R of a target that differs from the row on a set J of categories is at least the
sum of their mismatch costs. So a row of a group of more than ``ENUMERATE_UP_TO`` targets is
first searched among the group's targets of its own combination of categories (a finer group:
codes and categories); their k-th R, when k are found, lowers its bound (a target beyond it has
k targets of the group before it). A row whose bound is then below the least mismatch cost is
done; one whose bound is below the two smallest costs summed can only need targets differing on
exactly one category — for each category j, the targets of its group whose combination equals
its own but for j (one sort per category of the mixed-radix numbers less j's code:
``_one_mismatch_pairs``); only the other rows are searched in their whole group. And a small
group's pair whose mismatching categories alone cost more than the row's bound is dropped before
its distance is computed; so is an enumerated pair whose squared distance over a few coordinates
outside the categories plus those costs — at most its R — exceeds the bound (``SCREEN_COLUMNS``:
in a space of numbers and one-hot categories with few numbers, that sum is R itself, and exact
distances are computed for the pairs within the bound alone). On Texas-like
frames of 100,000 records (rows drawn from 25,000 and jittered) this takes the rows searched in
their whole group from ~120,000 to ~12,000 per search (benchmarks/LOG.md).
"""

from __future__ import annotations

from itertools import combinations
from typing import Callable

import numpy as np

from .decide import distances_of_pairs, drop_self, take_sorted
from .grouped import _slice_cost, category_codes, refine_group_ids
from .memo import SearchMemo
from .result import Neighbours
from .settings import SearchSettings

#: a group of at most this many targets is searched by enumerating its pairs (exact distances);
#: larger groups one at a time by float64 GEMM
ENUMERATE_UP_TO = 16
#: distances a GEMM block of a larger group holds (float64)
GEMM_ENTRIES = 1 << 22
#: a group of more targets than this is searched by the engine itself (its float32 screen with
#: an error bound, k-d trees and category tiles beat a float64 GEMM of every pair there)
ENGINE_ABOVE = 2048
#: ... and only when its rows searched there make more than this many pairs with its targets:
#: below, the engine's fixed cost per call (~12 ms: category codes, prepared copies, its screen)
#: outweighs a float64 GEMM of those pairs (~14 ns a pair). On Texas-like frames of 100,000
#: records, 54 of the engine's 117 calls inside groups had under 50 rows (~1 M pairs) and took
#: 0.66 CPU-s
ENGINE_MIN_PAIRS = 1 << 20
#: how many coordinates of the rest space outside its one-hot categories (those of largest
#: variance in the targets) screen enumerated pairs before their exact distances: the squared
#: distance over them plus the costs of the categories the pair differs on (from their level
#: codes) is at most the whole, so a pair whose screen distance is beyond the row's bound is
#: dropped — as the bound would drop it after — from a few coordinates and codes instead of every
#: coordinate (at 100k Texas-like records, 95: the exact distances of 5.2 M pairs took 2.7 CPU-s,
#: memory-bound; the screen leaves the 0.9 M within the bound and few more)
SCREEN_COLUMNS = 16
#: pairs enumerated at once (distances in float64: 8 bytes each, plus the indices)
PAIRS_PER_BLOCK = 1 << 21
#: whether a larger group's rows are first searched among the targets of their own combination of
#: categories (``_Tiles``) — off only to compare with the search without that step
TILES_FIRST = True
#: a group of a set searched against itself by the engine is searched whole (every row against
#: every row) when its open rows number at least 1/SELF_SHARE of it, else only those rows against
#: the group (k + 1, less themselves): the same answers. On Texas-like frames of 100,000 records
#: a self search's large groups had 2 % of their rows open; searched whole they cost 7 of the 10
#: CPU-s the engine spent inside groups, searched for their open rows the engine's part fell to 5
SELF_SHARE = 2
#: whether the engine's searches inside groups are handed the rows' category codes (else it
#: computes them from the gathered coordinates) — off only to compare
PRIME_CODES = True
#: whether a large group's rows whose bound affords one mismatching category are searched among
#: the targets of their group that differ from them on one category (``_one_mismatch_pairs``)
#: instead of the whole group — off only to compare
ONE_MISMATCH = True
#: whether a small group's pairs whose mismatching categories alone cost more than the bound are
#: dropped before their distances are computed — off only to compare
CATEGORY_PRUNE = True
#: a row is searched that way when those targets are at most this many (else in its whole group)
ONE_MISMATCH_MAX = 256
#: a larger group (up to ``ENGINE_ABOVE`` targets) whose rows searched in it have at most this
#: many pairs with its targets is searched by enumerating them, with the other such groups at once
#: (each row's k nearest kept with every target tied with its k-th but for rounding:
#: ``_k_nearest_within``). At 100k Texas-like records it replaces ~5,500 GEMM calls (~1 CPU-s)
ENUMERATE_PAIRS_UP_TO = 4096
#: how the one-mismatch search sorts the targets' keys: an unstable sort (about twice as fast as
#: a stable one); a window's targets may then come in any order, which changes nothing — each
#: pair's distance is its own, and the k nearest are picked by (distance, index)
ONE_MISMATCH_SORT = "quicksort"

Search = Callable[..., Neighbours]
#: candidate pairs: (query rows, target rows, rest distances)
_Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]
#: the groups of equal codes: each query's group, the targets by group (lowest index first), and
#: each group's first position in that order and size
_Layout = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: the rest space's combinations of one-hot categories: each query's and each target's number
#: (its level codes as one mixed-radix number: equal numbers, equal categories), the squared
#: distance a mismatch on each one-hot slice adds, the query's and target's level codes, and the
#: radix strides
_Tiles = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: the screen's coordinates of the query and target rest matrices (``SCREEN_COLUMNS``)
_Screen = tuple[np.ndarray, np.ndarray]
#: the category codes of the query and target rest matrices, the memo and the tag under which the
#: engine reads a matrix's codes: given to the engine for the matrices of a group's rows
_Prime = tuple[np.ndarray, np.ndarray, SearchMemo, tuple]


def split_coded(matrix: np.ndarray, coded: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(the rest coordinates, C-contiguous; the integer codes, (n, h) int64) of a matrix whose
    last ``len(coded)`` coordinates are the coded columns."""
    d = check_layout(matrix.shape[1], coded)
    return np.ascontiguousarray(matrix[:, :d]), matrix[:, d:].astype(np.int64)


def check_layout(width: int, coded: list[tuple[int, float]]) -> int:
    """The rest width of a ``width``-wide matrix whose coded columns ``coded`` must be its last
    coordinates (as a mixed space lays them out); a ValueError otherwise."""
    h = len(coded)
    d = width - h
    if [p for p, _ in coded] != list(range(d, d + h)):
        raise ValueError(
            f"coded columns must be the last {h} coordinates of the {width}; got positions {[p for p, _ in coded]}"
        )
    return d


def knn_coded(
    q: np.ndarray,
    t: np.ndarray,
    k: int,
    exclude_self: bool,
    coded: list[tuple[int, float]],
    search: Search,
    settings: SearchSettings,
    rest: tuple[np.ndarray, np.ndarray] | None = None,
    categorical_slices: list[tuple[int, int]] | None = None,
    memo: SearchMemo | None = None,
) -> Neighbours:
    """The exact k nearest ``t`` rows of each ``q`` row by d² = R + the costs of the coded columns
    that differ (module docstring). ``search(query, target, k, exclude_self=...)``: the engine's
    search of rest-space matrices. ``rest``: the rest matrices of ``q`` and ``t`` when the caller
    keeps them (so that the engine's structures prepared for one matrix object are reused).
    ``categorical_slices``: the rest space's one-hot (start, stop) ranges, so that a larger
    group's rows are first searched among the targets of their own categories (``_tiles``);
    ``memo``: where the matrices' category codes are kept (:class:`.memo.SearchMemo`)."""
    check_layout(q.shape[1], coded)
    (qr, qc), (tr, tc) = (
        (split_coded(q, coded), split_coded(t, coded))
        if rest is None
        else (
            (rest[0], q[:, q.shape[1] - len(coded) :].astype(np.int64)),
            (rest[1], t[:, t.shape[1] - len(coded) :].astype(np.int64)),
        )
    )
    n, m = qr.shape[0], tr.shape[0]
    cost = np.array([c for _, c in coded], dtype=np.float64)
    base = search(qr, tr, k, exclude_self=exclude_self)
    bound = _candidate_bound(base, qc, tc, cost)
    tiles = _tiles(qr, tr, categorical_slices, settings, memo) if TILES_FIRST else None
    prime = _primed(qr, tr, categorical_slices, settings, memo)
    screen = _screen(qr, tr, categorical_slices, memo)
    rows = [np.repeat(np.arange(n, dtype=np.int64), k)]
    cols = [base.idx.ravel()]
    dists = [base.dist.ravel()]
    n_grouped = 0
    h = len(coded)
    numbers: dict[tuple[int, ...], np.ndarray] = {}  # each subset's group numbers (queries, then targets)
    for size in range(1, h + 1):
        for subset in combinations(range(h), size):
            # a target whose exact set of matching columns is ``subset`` pays the others' costs
            other = float(np.delete(cost, list(subset)).sum())
            # the subset less its last column was numbered before: refined by that column
            numbers[subset] = refine_group_ids(
                numbers.get(subset[:-1]), np.concatenate([qc[:, subset[-1]], tc[:, subset[-1]]])
            )
            subset_args = (qc[:, subset], tc[:, subset], k, exclude_self, settings, search, bound - other)
            r, c, d = _within_groups(qr, tr, *subset_args, tiles, prime, numbers[subset], screen)
            rows.append(r)
            cols.append(c)
            dists.append(d)
            n_grouped += r.size
    out_d, out_i = _decided(rows, cols, dists, qc, tc, cost, k, m)
    described = dict(base.search)
    described["coded_columns"] = {"columns": h, "subsets_searched": 2**h - 1, "pairs_within_groups": int(n_grouped)}
    return Neighbours(out_d, out_i, described)


def _decided(
    rows: list[np.ndarray],
    cols: list[np.ndarray],
    dists: list[np.ndarray],
    qc: np.ndarray,
    tc: np.ndarray,
    cost: np.ndarray,
    k: int,
    m: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest of each query row (distances, indices) by exact d² from its candidates:
    the rest-space search's (first in ``rows``/``cols``/``dists``, k a row) and the groups'. Every
    candidate's rest distance is exact (from coordinate differences); a pair found twice is kept
    once. With k = 1 a row no group listed has one candidate, its answer as it is: only the other
    rows are sorted (the same values: each d² is the same sum)."""
    n = rows[0].size // max(k, 1)
    out_d = np.empty((n, k))
    out_i = np.empty((n, k), dtype=np.int64)
    alone = np.ones(n, dtype=bool)
    for r in rows[1:]:
        alone[r] = False
    if k != 1 or not alone.any():
        alone[:] = False
    if alone.any():
        c = cols[0][alone]
        d2 = dists[0][alone] ** 2
        d2 += (qc[alone] != tc[c]).astype(np.float64) @ cost
        out_d[alone, 0], out_i[alone, 0] = np.sqrt(d2), c
    listed = ~alone[rows[0]]
    r = np.concatenate([rows[0][listed]] + rows[1:])
    c = np.concatenate([cols[0][listed]] + cols[1:])
    _, first = np.unique(r * m + c, return_index=True)
    r, c = r[first], c[first]
    d2 = np.concatenate([dists[0][listed]] + dists[1:])[first] ** 2
    d2 += (qc[r] != tc[c]).astype(np.float64) @ cost
    take_sorted(r, c, np.sqrt(d2), n_rows=n, k=k, out_d=out_d, out_i=out_i, rows=np.flatnonzero(~alone))
    return out_d, out_i


def _candidate_bound(base: Neighbours, qc: np.ndarray, tc: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Per query row, a squared rest distance above which no target can be among its k nearest:
    the k-th smallest whole d² of the rest-space neighbours (R plus the costs of the coded columns
    they differ on; an answer's d² is at most that, and its R at most its d²), widened by a
    relative 1e-6 — a million times the tolerance within which the decision snaps ties
    (:mod:`privgate.ties`) and the error of a GEMM's squared distances — so that a grouped
    search may drop the targets beyond it and still hold every target of the answer (module
    docstring). Infinite where a row has no k finite distances."""
    d2 = base.dist**2
    if base.idx.size:
        d2 = d2 + (qc[:, None, :] != tc[base.idx]).astype(np.float64) @ cost
    u = np.sqrt(d2.max(axis=1)) if d2.shape[1] else np.full(d2.shape[0], np.inf)
    u = u * (1.0 + 1e-6) + 1e-6
    return np.where(np.isfinite(u), u * u, np.inf)


def _tiles(
    qr: np.ndarray,
    tr: np.ndarray,
    slices: list[tuple[int, int]] | None,
    settings: SearchSettings,
    memo: SearchMemo | None,
) -> _Tiles | None:
    """The combinations of categories of the rest matrices ``qr`` and ``tr`` (``_Tiles``), or None
    when the rest space has no one-hot slice or one is not one-hot. The level codes are the
    engine's own (:func:`.grouped.category_codes`), and a matrix's combinations its codes as one
    mixed-radix number (the slices' widths the radices), both kept in ``memo`` for the other
    searches of the same matrix."""
    if not slices:
        return None
    slices = [tuple(s) for s in slices]
    width = [b - a for a, b in slices]
    if float(np.prod(np.asarray(width, dtype=np.float64))) >= 2.0**40:  # not one exact number a row
        return None
    stride = np.concatenate([[1], np.cumprod(width[:-1])]).astype(np.int64)

    def numbers(x: np.ndarray) -> np.ndarray | None:
        codes = _codes(x, slices, settings, memo)
        return None if codes is None else codes.astype(np.int64) @ stride

    qt = SearchMemo.get_or_build(memo, qr, ("category_numbers", tuple(slices)), lambda: numbers(qr))
    tt = qt if tr is qr else SearchMemo.get_or_build(memo, tr, ("category_numbers", tuple(slices)), lambda: numbers(tr))
    if qt is None or tt is None:
        return None
    costs = np.array([_slice_cost(qr, tr, a, b) for a, b in slices])
    qcodes, tcodes = _codes(qr, slices, settings, memo), _codes(tr, slices, settings, memo)
    if max(width) <= np.iinfo(np.int8).max:  # the same codes in a byte each: pairs gather 2-8× less
        qcodes = qcodes.astype(np.int8)
        tcodes = qcodes if tr is qr else tcodes.astype(np.int8)
    return qt, tt, costs, qcodes, tcodes, stride


def _primed(
    qr: np.ndarray,
    tr: np.ndarray,
    slices: list[tuple[int, int]] | None,
    settings: SearchSettings,
    memo: SearchMemo | None,
) -> _Prime | None:
    """What the engine's searches inside groups are given (``_Prime``), or None without a memo,
    slices, or one-hot slices."""
    if memo is None or not slices or not PRIME_CODES:
        return None
    qcodes, tcodes = _codes(qr, slices, settings, memo), _codes(tr, slices, settings, memo)
    if qcodes is None or tcodes is None:
        return None
    return qcodes, tcodes, memo, ("category_codes", tuple(map(tuple, slices)))


def _screen(
    qr: np.ndarray, tr: np.ndarray, slices: list[tuple[int, int]] | None, memo: SearchMemo | None
) -> _Screen | None:
    """The screen coordinates of the rest matrices (``_Screen``): of their columns outside the
    one-hot ``slices``, the ``SCREEN_COLUMNS`` of largest variance in the targets, as contiguous
    copies in the matrices' own precision (float32 in compact spaces: differenced in float64 as
    every exact distance is; kept in ``memo`` for the other searches of the same matrices); None
    when they are all of the rest space or none of it."""
    free = np.ones(tr.shape[1], dtype=bool)
    for a, b in slices or ():
        free[a:b] = False
    free = np.flatnonzero(free)
    if not free.size or not tr.shape[0] or (free.size == tr.shape[1] and free.size <= SCREEN_COLUMNS):
        return None
    if free.size > SCREEN_COLUMNS:
        # the variance from at most ~65,536 evenly spaced rows: any choice of columns screens exactly
        spread = tr[:: max(1, tr.shape[0] // 65536), free].var(axis=0)
        free = np.sort(free[np.argsort(-spread, kind="stable")[:SCREEN_COLUMNS]])
    cols = free
    tag = ("coded_screen", tuple(cols.tolist()))

    def columns(x: np.ndarray) -> np.ndarray:
        return SearchMemo.get_or_build(memo, x, tag, lambda: np.ascontiguousarray(x[:, cols]))

    return columns(qr), (columns(tr) if tr is not qr else columns(qr))


def _codes(x: np.ndarray, slices: list[tuple[int, int]], settings: SearchSettings, memo: SearchMemo | None):
    """The level codes of ``x``'s one-hot slices (:func:`.grouped.category_codes`, kept in
    ``memo`` under the engine's own tag), or None when a slice is not one-hot."""
    tag = ("category_codes", tuple(map(tuple, slices)))
    found = SearchMemo.get_or_build(memo, x, tag, lambda: category_codes(x, slices, settings.pair_chunk_bytes))
    return None if found is None else found[0]


def _within_groups(
    qr: np.ndarray,
    tr: np.ndarray,
    qc: np.ndarray,
    tc: np.ndarray,
    k: int,
    exclude_self: bool,
    settings: SearchSettings,
    search: Search | None = None,
    bound: np.ndarray | None = None,
    tiles: _Tiles | None = None,
    prime: _Prime | None = None,
    gid: np.ndarray | None = None,
    screen: _Screen | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate pairs (query row, target row, exact rest distance): per query row the (up to) k targets of equal codes
    on every column of ``qc``/``tc`` with the smallest (rest distance, index) — itself excluded
    when ``exclude_self``. Groups of up to ``ENUMERATE_UP_TO`` targets by their pairs' exact
    distances, all at once; larger ones group by group by one float64 GEMM per block of queries
    (|q|² + |t|² − 2 q·t: the order of targets whose squared distances differ by more than
    ~1e-15 of the squared norms; the final decision recomputes every candidate's distance from
    coordinate differences).

    ``bound``: per query row a squared rest distance beyond which no target of these groups can
    be in its answer (module docstring); targets beyond it are dropped from the pairs returned (so
    a row may get fewer than k, none of which the answer needed), a row of negative bound is not
    searched, and a large group's block only ranks the rows with more than k targets within it.

    ``tiles``: the rest space's combinations of categories (``_Tiles``). A large group's rows are
    then first searched among the targets of the group that share their categories (groups of
    equal codes and categories, this same search). A target of the group that differs from the
    row on some category has a rest distance of at least the least mismatch cost; and one beyond
    the k-th of those found (widened as the bound is) has k targets of the group before it. So a
    row's bound becomes the smaller of the two, and only the rows whose bound still reaches the
    least mismatch cost are searched in their whole group — with that bound.

    ``gid``: the group numbers of the query rows, then the targets, when the caller has them
    (``_group_numbers`` of ``qc`` over ``tc``: the same numbers)."""
    n = qr.shape[0]
    if bound is None:
        bound = np.full(n, np.inf)
    if gid is None:
        gid = _group_numbers(np.vstack([qc, tc]))
    gq, order, start, size = _group_layout(gid, n)
    own = size[gq] - (1 if exclude_self else 0)  # targets each query may list
    needed = (own > 0) & (bound >= 0.0)
    small = needed & (size[gq] <= ENUMERATE_UP_TO)
    layout = (gq, order, start, size)
    found = _small_group_pairs(qr, tr, np.flatnonzero(small), layout, k, exclude_self, settings, bound, tiles, screen)
    large = needed & ~small
    if tiles is not None and large.any():
        qt, tt, costs = tiles[:3]
        least = float(costs.min())
        inner = np.where(large, bound, -1.0)  # only the large groups' rows are searched here
        r, c, d = _within_groups(
            qr,
            tr,
            np.column_stack([qc, qt]),
            np.column_stack([tc, tt]),
            k,
            exclude_self,
            settings,
            search,
            inner,
            prime=prime,
            # the groups refined by the combination of categories: those of all the columns
            gid=refine_group_ids(gid, np.concatenate([qt, tt])),
            screen=screen,
        )
        found.append((r, c, d))
        bound = np.where(large, _tighter_bound(r, d, n, k, bound), bound)
        large &= bound >= least
        if ONE_MISMATCH and large.any():
            # rows whose bound affords one mismatching category only (two cost at least the two
            # smallest costs): the targets of their group that differ from them on one category
            two = float(np.sort(costs)[:2].sum()) if costs.size > 1 else np.inf
            one = np.flatnonzero(large & (bound < two))
            pairs, done = _one_mismatch_pairs(qr, tr, one, layout, tiles, k, exclude_self, settings, bound, screen)
            found += pairs
            large[done] = False
    found += _large_group_pairs(
        qr, tr, np.flatnonzero(large), layout, k, exclude_self, settings, search, bound, prime, tiles, screen
    )
    if not found:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    out_r, out_c, out_d = zip(*found)
    return np.concatenate(out_r), np.concatenate(out_c), np.concatenate(out_d)


def _one_mismatch_pairs(
    qr: np.ndarray,
    tr: np.ndarray,
    rows: np.ndarray,
    layout: _Layout,
    tiles: _Tiles,
    k: int,
    exclude_self: bool,
    settings: SearchSettings,
    bound: np.ndarray,
    screen: _Screen | None = None,
) -> tuple[list[_Pairs], np.ndarray]:
    """(candidate pairs, the rows they settle) for the query rows ``rows`` of large groups whose
    bound affords at most one mismatching category: per row the (up to) k targets of its group
    that differ from it on exactly one category, within its bound, with the smallest (rest
    distance, index). With the targets of its own categories (searched before), they hold every
    target of its group within the bound. For category j, such targets share the row's group and
    its combination of categories but for j: its mixed-radix number less j's code times j's
    stride — one sort of the targets per category, no pairs of other combinations. A row with
    more than ``ONE_MISMATCH_MAX`` such targets is not settled here (its whole group is searched)."""
    if not rows.size:
        return [], rows
    gq, order, start, size = layout
    qt, tt, costs, qcodes, tcodes, stride = tiles
    gt = np.empty(tr.shape[0], dtype=np.int64)
    gt[order] = np.repeat(np.arange(size.size), size)
    # every combination's number (and with one code taken out) lies below this
    width = int(stride[-1]) * (int(max(qcodes[:, -1].max(initial=0), tcodes[:, -1].max(initial=0))) + 1)
    ts = np.flatnonzero(np.isin(gt, np.unique(gq[rows])))  # the targets of these rows' groups
    windows = []
    count = np.zeros(rows.size, dtype=np.int64)
    for j in range(stride.size):
        # a target differing on category j alone has R ≥ its cost: only rows whose bound reaches
        # it look there (none: category j is not sorted at all)
        reach = np.flatnonzero(bound[rows] >= costs[j])
        if not reach.size:
            continue
        tkey = gt[ts] * width + (tt[ts] - tcodes[ts, j].astype(np.int64) * stride[j])
        by = np.argsort(tkey, kind=ONE_MISMATCH_SORT)  # a window's targets ordered below
        sorted_key = tkey[by]
        qkey = gq[rows[reach]] * width + (qt[rows[reach]] - qcodes[rows[reach], j].astype(np.int64) * stride[j])
        # rows of one group and combination share a key: each distinct key looked up once, in
        # ascending order (a sorted search narrows from the last one's place)
        keys, back = np.unique(qkey, return_inverse=True)
        lo = np.zeros(rows.size, dtype=np.int64)
        hi = np.zeros(rows.size, dtype=np.int64)
        lo[reach] = np.searchsorted(sorted_key, keys, side="left")[back]
        hi[reach] = np.searchsorted(sorted_key, keys, side="right")[back]
        windows.append((ts[by], lo, hi, j))
        count += hi - lo
    ok = np.flatnonzero(count <= ONE_MISMATCH_MAX)
    out: list[_Pairs] = []
    step = max(1, PAIRS_PER_BLOCK // ONE_MISMATCH_MAX)
    for s in range(0, ok.size, step):  # blocks of rows: at most PAIRS_PER_BLOCK pairs held
        part = ok[s : s + step]
        pr, pc, pf = [], [], []
        for targets, lo, hi, j in windows:
            lo, hi = lo[part], hi[part]
            cnt = hi - lo
            r = np.repeat(rows[part], cnt)
            first = np.repeat(np.cumsum(cnt) - cnt, cnt)
            c = targets[np.repeat(lo, cnt) + (np.arange(r.size) - first)]
            keep = qcodes[r, j] != tcodes[c, j]  # the same combination: searched among its categories
            if exclude_self:
                keep &= r != c
            pr.append(r[keep])
            pc.append(c[keep])
            pf.append(np.full(pc[-1].size, costs[j]))  # they differ on category j alone
        r, c = np.concatenate(pr), np.concatenate(pc)
        out.append(_k_nearest_within(qr, tr, r, c, k, settings, bound, screen, np.concatenate(pf)))
    return out, rows[ok]


def _tighter_bound(r: np.ndarray, d: np.ndarray, n: int, k: int, bound: np.ndarray) -> np.ndarray:
    """The bound of each of ``n`` rows given candidate pairs (rows ``r``, rest distances ``d``)
    of a subset of its group, at most k per row, all within ``bound``: a row with k of them
    needs no target beyond the largest (widened by a relative 1e-6, as ``_candidate_bound``
    widens), the others keep ``bound``."""
    count = np.bincount(r, minlength=n)
    kth = np.zeros(n)
    np.maximum.at(kth, r, d)
    kth = kth * (1.0 + 1e-6) + 1e-6
    return np.where(count >= k, np.minimum(bound, kth * kth), bound)


def _group_layout(gid: np.ndarray, n: int) -> _Layout:
    """The groups of equal codes (see ``_Layout``) from their dense numbers ``gid`` of the ``n``
    query rows, then the targets (``_group_numbers``)."""
    gq, gt = gid[:n], gid[n:]
    n_groups = int(gid.max()) + 1
    # targets by group, lowest index first: numbers of 16 bits by NumPy's stable sort (a radix
    # sort); more by a quicker unstable sort of (group, index) as one number (no two equal)
    m = gt.size
    if n_groups <= 1 << 16:
        order = np.argsort(gt.astype(np.uint16), kind="stable")
    elif n_groups * max(m, 1) < 1 << 62:
        order = np.argsort(gt * m + np.arange(m))
    else:
        order = np.argsort(gt, kind="stable")
    size = np.bincount(gt, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    return gq, order, start, size


def _small_group_pairs(
    qr: np.ndarray,
    tr: np.ndarray,
    qs: np.ndarray,
    layout: _Layout,
    k: int,
    exclude_self: bool,
    settings: SearchSettings,
    bound: np.ndarray,
    tiles: _Tiles | None = None,
    screen: _Screen | None = None,
) -> list[_Pairs]:
    """The candidate pairs of the query rows ``qs`` of small groups: every pair of a row and a
    target of its group by exact distance, in blocks of whole rows, each row's k nearest within
    its ``bound``. ``tiles``: the rest space's categories; a pair whose mismatching categories
    alone cost more than the row's bound (its R is at least that) is dropped before its distance
    is computed — as the bound would drop it after."""
    gq, order, start, size = layout
    out: list[_Pairs] = []
    if not qs.size:
        return out
    bounds = np.cumsum(size[gq[qs]])
    block = (bounds - 1) // PAIRS_PER_BLOCK  # blocks of whole query rows
    for part in np.split(qs, np.flatnonzero(np.diff(block)) + 1):
        cnt = size[gq[part]]
        r = np.repeat(part, cnt)
        first = np.repeat(np.cumsum(cnt) - cnt, cnt)
        c = order[np.repeat(start[gq[part]], cnt) + (np.arange(r.size) - first)]
        if exclude_self:
            keep = r != c
            r, c = r[keep], c[keep]
        floor: np.ndarray | float = 0.0
        if tiles is not None and CATEGORY_PRUNE:
            costs, qcodes, tcodes = tiles[2], tiles[3], tiles[4]
            floor = _category_floor(np.take(qcodes, r, axis=0) != np.take(tcodes, c, axis=0), costs)
            keep = floor <= bound[r]
            r, c, floor = r[keep], c[keep], floor[keep]
        out.append(_k_nearest_within(qr, tr, r, c, k, settings, bound, screen, floor))
    return out


def _category_floor(mismatch: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """Per pair, at most the squared distance its mismatching categories add (``mismatch``: pairs
    × categories): their costs summed in float32 — a matrix product 5-8× faster than one of
    booleans in float64 — less a relative 1e-5, far more than float32's rounding of a sum of
    a few dozen costs, so that it stays below the float64 sum (it only prunes)."""
    total = mismatch.astype(np.float32) @ costs.astype(np.float32)
    return total.astype(np.float64) * (1.0 - 1e-5)


def _k_nearest_within(
    qr: np.ndarray,
    tr: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    k: int,
    settings: SearchSettings,
    bound: np.ndarray,
    screen: _Screen | None = None,
    floor: np.ndarray | float = 0.0,
) -> _Pairs:
    """Of the pairs (query rows ``r``, target rows ``c``): each row's (up to) k with the smallest
    (exact rest distance, index) among those within its ``bound``, and every other within a
    relative 1e-6 of its k-th, or whose squared distance is within 1e-6 of (1 + its k-th's + the
    bound) (the decision snaps ties within 1e-9 of the whole distance and then takes the lowest
    index, which a cut by exact distance could have dropped) — rows ascending. ``screen``: the
    rest matrices' screen coordinates (``SCREEN_COLUMNS``) and ``floor``, per pair (or for all)
    at most the squared distance its one-hot categories add: a pair whose squared distance over
    the screen plus its floor exceeds its row's bound (by more than rounding) is dropped before
    its exact distance."""
    if screen is not None and r.size:
        part = distances_of_pairs(screen[0], screen[1], r, c, settings)
        # sums over disjoint coordinates of the same squares: beyond the bound by more than a
        # relative 1e-9 (far above rounding), the whole is beyond it too
        near = part * part + floor <= bound[r] * (1.0 + 1e-9)
        r, c = r[near], c[near]
    d = distances_of_pairs(qr, tr, r, c, settings)
    near = d * d <= bound[r]  # the others cannot be in the answer
    r, c, d = r[near], c[near], d[near]
    pick = np.lexsort((c, d, r))
    r, c, d = r[pick], c[pick], d[pick]
    first = np.searchsorted(r, r, side="left")
    last = np.searchsorted(r, r, side="right") - 1
    kth = d[np.minimum(first + k - 1, last)]
    keep = (np.arange(r.size) - first < k) | (d <= kth * (1.0 + 1e-6) + 1e-6)
    # a tie of whole distances D within 1e-9·(1 + D) is a difference of rest distances R of at most
    # ~4e-9·(1 + D²), and D² ≤ the row's bound plus the coded costs its targets pay: 1e-6 of
    # (1 + R + bound) covers it while those costs stay below ~250× (1 + bound)
    scale = np.where(np.isfinite(bound[r]), bound[r], 0.0)
    keep |= d * d <= kth * kth + 1e-6 * (1.0 + kth * kth + scale)
    return r[keep], c[keep], d[keep]


def _large_group_pairs(
    qr: np.ndarray,
    tr: np.ndarray,
    large: np.ndarray,
    layout: _Layout,
    k: int,
    exclude_self: bool,
    settings: SearchSettings,
    search: Search | None,
    bound: np.ndarray,
    prime: _Prime | None = None,
    tiles: _Tiles | None = None,
    screen: _Screen | None = None,
) -> list[_Pairs]:
    """The candidate pairs of the query rows ``large`` of large groups, group by group: the
    engine's search for the largest groups, else a float64 GEMM per block of queries — or, for
    the groups whose rows here have at most ``ENUMERATE_PAIRS_UP_TO`` pairs with its targets,
    every pair by exact distance (``_small_group_pairs``, with ``tiles``), all such groups at once."""
    gq, order, start, size = layout
    out: list[_Pairs] = []
    if not large.size:
        return out
    by_group = large[np.argsort(gq[large], kind="stable")]
    groups, first = np.unique(gq[by_group], return_index=True)
    open_rows = np.diff(np.append(first, by_group.size))
    # groups whose open rows have few pairs with its targets: every pair enumerated, all such
    # groups at once (a GEMM per group costs far more than its few pairs there)
    few = (open_rows * size[groups] <= ENUMERATE_PAIRS_UP_TO) & (size[groups] <= ENGINE_ABOVE)
    if few.any():
        rows = by_group[np.repeat(few, open_rows)]
        out += _small_group_pairs(qr, tr, np.sort(rows), layout, k, exclude_self, settings, bound, tiles, screen)
    for g, rows, enumerated in zip(groups, np.split(by_group, first[1:]), few):  # a loop over groups
        if enumerated:
            continue
        tg = order[start[g] : start[g] + size[g]]
        if size[g] > ENGINE_ABOVE and rows.size * size[g] > ENGINE_MIN_PAIRS and search is not None:
            r, c, d = _engine_in_group(qr, tr, rows, tg, k, exclude_self, search, prime)
        else:
            r, c = _k_smallest_in_group(qr, tr, rows, tg, k, exclude_self, bound)
            d = distances_of_pairs(qr, tr, r, c, settings)
        out.append((r, c, d))
    return out


def _engine_in_group(
    qr: np.ndarray,
    tr: np.ndarray,
    rows: np.ndarray,
    tg: np.ndarray,
    k: int,
    exclude_self: bool,
    search: Search,
    prime: _Prime | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k nearest of the targets ``tg`` of each query row of ``rows`` by the engine's search
    (exact; ties by lowest index), with their distances. ``prime``: the full matrices' category
    codes, handed to the engine's memo for the rows gathered (``_Prime``)."""
    t = _gathered(tr, tg, prime, 1)
    if (
        exclude_self and rows.size * SELF_SHARE >= tg.size
    ):  # most of the group's targets are its queries: one set against itself
        kk = int(min(k, tg.size - 1))
        found = search(t, t, kk, exclude_self=True)
        rows = tg
    elif exclude_self:  # some of them: their k + 1 nearest in the group, less themselves
        kk = int(min(k, tg.size - 1))
        here = np.searchsorted(tg, rows)  # both ascending
        found = search(_gathered(qr, rows, prime, 0), t, kk + 1, exclude_self=False)
        idx, dist = drop_self(here, found.idx, found.dist)
        return np.repeat(rows, kk), tg[idx].ravel(), dist.ravel()
    else:
        kk = int(min(k, tg.size))
        found = search(_gathered(qr, rows, prime, 0), t, kk, exclude_self=False)
    return np.repeat(rows, kk), tg[found.idx].ravel(), found.dist.ravel()


def _gathered(x: np.ndarray, rows: np.ndarray, prime: _Prime | None, side: int) -> np.ndarray:
    """The rows ``rows`` of ``x`` as a new C-contiguous matrix; with ``prime``, its category codes
    (the rows of ``x``'s, ``side`` 0 the query's, 1 the target's) put in the memo under the
    engine's tag, so that the engine does not compute them again from the coordinates (the same
    codes: a row's codes are its own)."""
    out = np.take(x, rows, axis=0)  # a row gather (~7× faster than fancy indexing at 95 columns)
    if prime is not None:
        codes, memo, tag = prime[side], prime[2], prime[3]
        memo.get(out, tag, lambda: (np.take(codes, rows, axis=0), 0.0))
    return out


def _k_smallest_in_group(
    qr: np.ndarray,
    tr: np.ndarray,
    rows: np.ndarray,
    tg: np.ndarray,
    k: int,
    exclude_self: bool,
    bound: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per query row of ``rows``, its min(k, available) nearest of the targets ``tg`` (ascending
    indices) by (float64 GEMM squared distance, index), itself excluded when ``exclude_self`` —
    of the targets within ``bound`` (squared, per query row; widened here by the GEMM's error)
    only: a row with at most that many such targets lists them all (a subset of its k nearest,
    in the same GEMM order), the others their k nearest as without a bound."""
    t = np.take(tr, tg, axis=0).astype(np.float64, copy=False)
    tn = np.einsum("ij,ij->i", t, t)
    kk = int(min(k, tg.size - (1 if exclude_self else 0)))
    step = max(1, GEMM_ENTRIES // tg.size)
    out_r, out_c = [], []
    for s in range(0, rows.size, step):  # blocks of queries: at most GEMM_ENTRIES distances held
        part = rows[s : s + step]
        q = np.take(qr, part, axis=0).astype(np.float64, copy=False)
        d = q @ t.T
        d *= -2.0
        d += tn[None, :]  # |q|² is the same along a row: it orders nothing
        if exclude_self:
            own = np.searchsorted(tg, part)
            here = (own < tg.size) & (tg[np.minimum(own, tg.size - 1)] == part)
            d[np.flatnonzero(here), own[here]] = np.inf
        many = np.ones(part.size, dtype=bool)
        if bound is not None:
            qn = np.einsum("ij,ij->i", q, q)
            # d + |q|² is the squared distance up to the GEMM's rounding (~1e-15 of the squared
            # norms): a margin of 1e-9 of them keeps every target within the bound
            limit = bound[part] - qn + 1e-9 * (qn + float(tn.max(initial=0.0)) + bound[part])
            within = d <= limit[:, None]
            if exclude_self:  # (an infinite limit would keep the row's own infinite entry)
                within[np.flatnonzero(here), own[here]] = False
            many = within.sum(axis=1) > kk
            few = np.flatnonzero(~many)
            if few.size:  # rows listing every target within the bound (row-major: by index)
                fr, fc = np.nonzero(within[few])
                out_r.append(part[few[fr]])
                out_c.append(tg[fc])
            if not many.any():
                continue
            part, d = part[many], d[many]
        pick = np.argpartition(d, kk - 1, axis=1)[:, :kk]
        kth = np.take_along_axis(d, pick, axis=1).max(axis=1)
        # rows whose k-th value is tied with a target outside the pick: the lowest indices at it
        clash = np.flatnonzero((d <= kth[:, None]).sum(axis=1) > kk)
        for i in clash:  # rows with exact ties at the k-th value only (a loop over such rows)
            pick[i] = np.lexsort((np.arange(tg.size), d[i]))[:kk]
        out_r.append(np.repeat(part, kk))
        out_c.append(tg[pick.ravel()])
    if not out_r:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_r), np.concatenate(out_c)


def _group_numbers(codes: np.ndarray) -> np.ndarray:
    """Dense numbers of the distinct rows of an (n, j) integer code matrix, in lexicographic
    order (those of ``np.unique(codes, axis=0)``, by folding one column at a time:
    :func:`.grouped.refine_group_ids`)."""
    ids = None
    for j in range(codes.shape[1]):
        ids = refine_group_ids(ids, codes[:, j])
    return ids
