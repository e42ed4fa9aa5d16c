"""Exact k nearest neighbours among records of equal or nearly equal categorical values, in a
mixed space (:mod:`privgate.spaces`: a mismatch in categorical column c adds a fixed c_c to the
squared distance).

Level 0: a k-d tree over the numeric coordinates plus one far-apart group coordinate (one group
per combination of categories) returns each query's k + 2 nearest records of its own group (rows
cut inside a run of near-equal distances are retried with k + 16). Level L (1, and up to
``SearchSettings.grouped_levels``), for the rows the levels before left open: one such tree per
set of L categorical columns, grouping records equal on every column but those L (C(c, L) trees;
a level needing more than ``grouped_max_trees`` is not searched), rows with a list cut inside
their k-th distance retried once with k + 16. A record that mismatches the query in at most L
columns is in one of those groups. A row is settled when (i) every tree's candidate list
reaches past the k-th nearest distance found (no unseen record of those groups can be nearer or
tied: its numeric distance alone is at least the list's last), and (ii) every record outside the
groups searched is provably farther: it mismatches at least L + 1 columns, d² ≥ the L + 1
smallest c_c summed. Distances are recomputed in float64 from the full coordinates and ties
broken by the lowest index, as on every other path. The rows left open go to the general search.
"""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Callable

import numpy as np

from ..ties import REL_TOL
from .backends import kdtree, workers
from .decide import distances_of_pairs, drop_self, order_rows
from .ivf_lists import nonzero_2d
from .memo import SearchMemo
from .problem import Problem


def category_codes(x: np.ndarray, slices: list[tuple[int, int]], chunk_bytes: int) -> tuple[np.ndarray, float] | None:
    """Per row, the level index of each one-hot slice, and the slices' common nonzero values;
    None when a slice is not one-hot with one positive value per slice.

    All one-hot columns at once, by products with a column → slice indicator (exact: sums of
    small integers, or of one nonzero value and zeros): per slice the number of nonzeros, the
    position of the nonzero (valid when there is exactly one) and its value — in blocks of rows
    of ``chunk_bytes``, so that the one-hot block's copies stay small at a million rows (the
    products are exact, so blocking changes no bit)."""
    if not slices:
        return np.zeros((x.shape[0], 0), dtype=np.int64), 0.0
    cols = np.concatenate([np.arange(a, b) for a, b in slices])
    width = [b - a for a, b in slices]
    member = np.zeros((cols.size, len(slices)))
    member[np.arange(cols.size), np.repeat(np.arange(len(slices)), width)] = 1.0
    position = member * np.concatenate([np.arange(w) for w in width]).astype(np.float64)[:, None]
    # held per searched matrix for the evaluation (SearchMemo): the narrowest integer that holds
    # every level index (11 Texas columns: 22 bytes a row instead of 88)
    codes = np.empty((x.shape[0], len(slices)), dtype=np.int16 if max(width) <= 2**15 else np.int32)
    first = None
    step = max(1, chunk_bytes // (8 * cols.size))
    for start in range(0, x.shape[0], step):
        block = x[start : start + step, cols]
        nonzero = (block != 0).astype(np.float64)
        if (nonzero @ member != 1.0).any():
            return None
        codes[start : start + step] = nonzero @ position
        top = block @ member
        first = top[:1] if first is None else first
        if (top != first).any() or (top <= 0).any():
            return None
    return codes, 0.0


#: ``refine_group_ids`` numbers (number, code) pairs by counting when they span at most this many
#: times the rows (else by sorting them)
DENSE_NUMBERING_SPAN = 4


def refine_group_ids(ids: np.ndarray | None, codes: np.ndarray, *, ordered: bool = True) -> np.ndarray:
    """Dense group numbers of the rows after one more integer code column: ``ids`` (the numbers so
    far, None before the first column) refined by ``codes``. Folding columns in one at a time
    numbers the distinct rows in lexicographic order — the inverse of ``np.unique(columns,
    axis=0)`` — without holding all columns, and renumbering after each column keeps the
    (number, code) pairs from overflowing. ``ordered=False``: the same groups numbered in order of
    first appearance, by a hash table in time linear in the rows (a caller that only compares
    numbers for equality; the sort of ``np.unique`` grew as n^1.3 from 2M to 4M rows)."""
    codes = np.asarray(codes).astype(np.int64, copy=False)
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(codes.min())
    pairs = codes - low if ids is None else ids * (int(codes.max()) - low + 1) + (codes - low)
    if not ordered:
        import pandas as pd  # noqa: PLC0415 - a dependency; its hash-table factorize

        return pd.factorize(pairs)[0].astype(np.int64, copy=False)
    top = int(pairs.max())
    if pairs.ndim == 1 and top <= DENSE_NUMBERING_SPAN * pairs.size:
        # few possible numbers: the rank of each among those present (one count, linear) — the
        # same numbers as the sort of ``np.unique``
        present = np.bincount(pairs, minlength=top + 1) > 0
        return (np.cumsum(present) - 1)[pairs].astype(np.int64, copy=False)
    return np.unique(pairs, return_inverse=True)[1].ravel().astype(np.int64, copy=False)


def group_ids(qc: np.ndarray, tc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One integer per distinct combination of category codes, shared by query and target rows."""
    both = np.vstack([qc, tc])
    g = np.zeros(both.shape[0], dtype=np.int64)
    for j in range(both.shape[1]):
        g = refine_group_ids(g, both[:, j])
    return g[: qc.shape[0]], g[qc.shape[0] :]


class _Groups:
    """Group ids of query and target rows for a set of categorical columns: mixed-radix numbers of
    the codes when they stay exact in float64 after scaling by the gap (then dropping a column is
    a subtraction), else dense ids from successive np.unique.

    The radix of column j is its slice's width (``levels``: every code is below it), not the
    largest code seen, so a target's numbers depend on the target alone and its sorted groups
    (:class:`_TargetGroups`) can be kept for every search of that target."""

    def __init__(self, qc: np.ndarray, tc: np.ndarray, gap: float, levels: np.ndarray | None = None) -> None:
        self.qc, self.tc = qc, tc
        if levels is None:  # no slice widths given: the codes' own range
            levels = np.maximum(qc.max(axis=0, initial=0), tc.max(axis=0, initial=0)) + 1
        levels = np.asarray(levels, dtype=np.int64)
        self.strides = np.concatenate([[1], np.cumprod(levels)[:-1]]).astype(np.int64) if levels.size else levels
        total = float(np.prod(levels.astype(np.float64))) if levels.size else 1.0
        self.radix = total * (gap + 1.0) < 2.0**52
        if self.radix:
            self.q_all, self.t_all = qc @ self.strides, tc @ self.strides

    def ids(self, drop: int | tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(query ids, target ids) grouping rows equal on every column (but those in ``drop``)."""
        if self.qc.shape[1] == 0:
            return np.zeros(self.qc.shape[0], dtype=np.int64), np.zeros(self.tc.shape[0], dtype=np.int64)
        dropped = _dropped(drop)
        if self.radix:
            q, t = self.q_all, self.t_all
            for j in dropped:
                q = q - self.qc[:, j].astype(np.int64) * self.strides[j]
                t = t - self.tc[:, j].astype(np.int64) * self.strides[j]
            return q, t
        keep = ~np.isin(np.arange(self.qc.shape[1]), dropped)
        return group_ids(self.qc[:, keep], self.tc[:, keep])


def _dropped(drop: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """The dropped columns as a tuple of ints (a memo key part)."""
    if drop is None:
        return ()
    return (int(drop),) if isinstance(drop, (int, np.integer)) else tuple(int(j) for j in drop)


class _TargetGroups:
    """The target rows sorted by group id (one set of dropped columns): ``order`` (target positions,
    ascending within a group), the distinct ``groups`` ascending, each one's ``starts`` offset in
    ``order`` and ``counts``. Depends on the target ids alone; with mixed-radix ids of slice widths
    it is kept in the :class:`SearchMemo` for every search of the same target — the sort of a
    million ids (two per tree and retry before: np.unique and np.isin) is made once."""

    def __init__(self, tg: np.ndarray) -> None:
        order = np.argsort(tg, kind="stable")
        ordered = tg[order]
        edge = np.empty(ordered.size, dtype=bool)
        edge[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=edge[1:])
        starts = np.flatnonzero(edge)
        self.groups = ordered[starts]
        counts = np.diff(np.append(starts, ordered.size))
        # kept per target and dropped-column set: positions in int32 where they fit (a level-1 set
        # of a million targets has hundreds of thousands of groups)
        small = np.int32 if tg.size < 2**31 else np.int64
        self.order, self.starts, self.counts = order.astype(small), starts.astype(small), counts.astype(small)
        self.size = int(tg.size)

    def count(self, qg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query id: (its position among ``groups``, its target count — 0 when no target has it)."""
        if self.groups.size == 0:
            return np.zeros(qg.size, dtype=np.int64), np.zeros(qg.size, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.groups, qg), self.groups.size - 1)
        return at, np.where(self.groups[at] == qg, self.counts[at], 0)

    def members(self, at: np.ndarray) -> np.ndarray:
        """The target positions of the groups at positions ``at`` (repeats allowed), ascending —
        the order ``np.flatnonzero(np.isin(tg, those ids))`` gives, so each tree is built over
        the same points in the same order as before."""
        at = np.unique(at)
        counts = self.counts[at]
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        # positions in `order`: each group's run start, then +1 along the run
        step = np.ones(total, dtype=np.int64)
        heads = np.cumsum(counts)[:-1]
        step[0] = self.starts[at[0]]
        step[heads] = self.starts[at[1:]] - (self.starts[at[:-1]] + counts[:-1] - 1)
        picked = self.order[np.cumsum(step)]
        if total * 16 < self.size:  # few: sort them
            return np.sort(picked).astype(np.int64, copy=False)
        mask = np.zeros(self.size, dtype=bool)  # many: one pass over the targets
        mask[picked] = True
        return np.flatnonzero(mask)


class _KeptTrees:
    """The k-d trees of one level's first pass, kept for its retry (the retried rows are some of
    the first pass's rows, so their groups are among those a kept tree holds) while their
    estimated memory stays within ``budget`` bytes: the retry of a million-target level 1 would
    otherwise build all its trees again. Only for the duration of one level of one search."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.items: dict[tuple, tuple[np.ndarray, np.ndarray, object]] = {}

    @staticmethod
    def nbytes(members: np.ndarray, width: int) -> int:
        """Estimated bytes of a tree over ``members`` points of ``width`` coordinates (the
        coordinates, the tree's index and nodes, the member positions)."""
        return int(members.size) * (8 * width + 32)

    def offer(self, key: tuple, groups: np.ndarray, members: np.ndarray, tree: object, width: int) -> None:
        """Keep ``tree`` (over ``members``, the targets of group positions ``groups``) if it fits."""
        size = self.nbytes(members, width)
        if size <= self.budget:
            self.budget -= size
            self.items[key] = (groups, members, tree)

    def get(self, key: tuple, groups: np.ndarray) -> tuple[np.ndarray, object] | None:
        """(members, tree) kept under ``key`` when it holds every group of ``groups``, else None."""
        hit = self.items.get(key)
        if hit is None or not np.isin(groups, hit[0]).all():
            return None
        return hit[1], hit[2]


def _slice_cost(q: np.ndarray, t: np.ndarray, a: int, b: int) -> float:
    """Squared distance a mismatch in the one-hot slice [a, b) adds (2·scale²)."""
    v = q[0, a:b] if q.shape[0] else t[0, a:b]
    return 2.0 * float(np.abs(v).max()) ** 2


def knn_grouped(
    p: Problem,
    slices: list[tuple[int, int]],
    out_d: np.ndarray,
    out_i: np.ndarray,
    deeper: Callable[[np.ndarray], bool] | None = None,
) -> np.ndarray:
    """Settle the rows of ``p`` the grouped search can (module docstring) into ``out_d`` /
    ``out_i``; return the rows still open, for the general search. ``deeper(open rows)``: asked
    before each level after level 0 — False ends the search there (the general search of those
    rows costs less than the level)."""
    search = _GroupedSearch.of(p, slices, out_d, out_i)
    if search is None:
        return np.arange(p.n)
    todo = search.level0()
    settings = p.settings
    for depth in range(1, settings.grouped_levels + 1):
        if todo.size == 0 or search.costs.size < depth or comb(search.costs.size, depth) > settings.grouped_max_trees:
            return todo
        if few_open_rows(todo.size, p.m, p.k, settings.block_bytes):
            return todo
        if deeper is not None and not deeper(todo):
            return todo
        todo = search.level(todo, depth)
    return todo


def few_open_rows(n_rows: int, m: int, k: int, block_bytes: int) -> bool:
    """Shape rule: a level builds one tree over the targets per set of dropped columns; for k = 1,
    open rows whose float32 distances to every target fit in ``block_bytes`` cost less in the
    exact search (1,000 × 25,000 × 90, 10 categorical columns: level 1's 10 trees settled 145 of
    580 rows for ~0.2 CPU-s; one GEMM block did all 580 for ~0.1, the flat screen does them for
    ~0.04), so the level is skipped."""
    return k == 1 and n_rows * m * 4 <= block_bytes


#: k > 1: candidates whose compact distance is within this relative margin of the row's k-th compact
#: distance get their full-coordinate distance (the two forms differ by rounding, ~1e-15 relative;
#: the tie tolerance is 1e-9): a margin far above both, so no candidate that can rank among the k
#: nearest or tie with them is left on its compact distance
FULL_DISTANCE_MARGIN = 1e-6

#: bytes held per candidate pair while rows are settled (int64 lists and their sorted copy, float64
#: distances and their sorted copy, pair positions, the coordinates differenced per pair)
SETTLE_BYTES_PER_PAIR = 128


class _GroupedSearch:
    """One grouped search: the rows' category codes and numeric coordinates, the mismatch costs,
    and the answers it fills."""

    def __init__(
        self,
        p: Problem,
        qc: np.ndarray,
        tc: np.ndarray,
        costs: np.ndarray,
        *,
        slices: list[tuple[int, int]],
        out: tuple[np.ndarray, np.ndarray],
    ) -> None:
        self.p, self.qc, self.tc, self.costs = p, qc, tc, costs
        self.out_d, self.out_i = out
        q, t = p.q, p.t
        cat = np.zeros(q.shape[1], dtype=bool)
        for a, b in slices:
            cat[a:b] = True
        self.num = num = np.flatnonzero(~cat)
        lo = np.minimum(q[:, num].min(axis=0, initial=np.inf), t[:, num].min(axis=0, initial=np.inf))
        hi = np.maximum(q[:, num].max(axis=0, initial=-np.inf), t[:, num].max(axis=0, initial=-np.inf))
        span = float(np.sqrt(((hi - lo) ** 2).sum())) if num.size else 0.0
        self.gap = 2.0 * span + 1.0  # farther than any two records of one group
        self.ordered = np.sort(costs)
        # float64 (of float32 coordinates in a compact space): ranked as the full distances are computed
        self.qnum = np.ascontiguousarray(q[:, num], dtype=np.float64)
        self.tnum = np.ascontiguousarray(t[:, num], dtype=np.float64)
        self.groups = _Groups(qc, tc, self.gap, np.array([b - a for a, b in slices], dtype=np.int64))
        self.slices_key = tuple((int(a), int(b)) for a, b in slices)

    def target_groups(self, drop: int | tuple[int, ...] | None, tg: np.ndarray) -> _TargetGroups:
        """The target ids ``tg`` (of the columns but ``drop``) sorted by group: kept in the search
        memo for this target matrix when the ids are mixed-radix numbers of the slice widths
        (then they depend on the target alone); built for this call otherwise."""
        if not self.groups.radix:  # dense ids of query and target together: this search's own
            return _TargetGroups(tg)
        tag = ("grouped_target_groups", self.slices_key, _dropped(drop))
        return SearchMemo.get_or_build(self.p.memo, self.p.t, tag, lambda: _TargetGroups(tg))

    @classmethod
    def of(
        cls, p: Problem, slices: list[tuple[int, int]], out_d: np.ndarray, out_i: np.ndarray
    ) -> "_GroupedSearch | None":
        """The search, or None when a slice is not one-hot (then no row is settled here)."""
        q, t = p.q, p.t
        if not slices:
            return cls(
                p,
                np.zeros((p.n, 0), dtype=np.int64),
                np.zeros((p.m, 0), dtype=np.int64),
                np.zeros(0),
                slices=slices,
                out=(out_d, out_i),
            )
        tag = ("category_codes", tuple(map(tuple, slices)))
        chunk = p.settings.pair_chunk_bytes
        qcodes = SearchMemo.get_or_build(p.memo, q, tag, lambda: category_codes(q, slices, chunk))
        tcodes = SearchMemo.get_or_build(p.memo, t, tag, lambda: category_codes(t, slices, chunk))
        if qcodes is None or tcodes is None:
            return None
        costs = np.array([_slice_cost(q, t, a, b) for a, b in slices])
        return cls(p, qcodes[0], tcodes[0], costs, slices=slices, out=(out_d, out_i))

    def compact_distance(self, qi: np.ndarray, ti: np.ndarray) -> np.ndarray:
        """The mixed distance of pairs (qi, ti) from the compact form (numeric part + mismatch
        costs): equal to the full coordinates' distance up to rounding (a few ulps). In chunks of
        pairs whose gathered coordinates fit ``settings.pair_chunk_bytes``."""
        out = np.empty(qi.size)
        width = self.qnum.shape[1] + self.costs.size
        chunk = max(1024, self.p.settings.pair_chunk_bytes // (8 * max(width, 1)))
        for s in range(0, qi.size, chunk):
            q, t = qi[s : s + chunk], ti[s : s + chunk]
            diff = self.qnum[q] - self.tnum[t]
            d2 = np.einsum("ij,ij->i", diff, diff)
            if self.costs.size:
                d2 += (self.qc[q] != self.tc[t]) @ self.costs
            out[s : s + chunk] = np.sqrt(d2)
        return out

    def ranking_distances(self, rows: np.ndarray, idx: np.ndarray, unset: np.ndarray) -> np.ndarray:
        """(rows, width) distances of the candidate lists ``idx`` of query ``rows`` (inf where
        ``unset``), for ranking. k = 1: the compact form (the nearest is decided with the tie
        tolerance; the distance returned is recomputed from the full coordinates). k > 1: the
        full coordinates' float64 distance for every candidate whose compact distance is within
        ``FULL_DISTANCE_MARGIN`` of the row's k-th compact distance — the k nearest and everything
        tied with them, so the order of the 2nd, 3rd, … nearest is the same to the last bit as on
        every other path — and the compact distance for the rest, which are provably beyond the
        k-th and its tie tolerance (the compact and full forms differ by rounding only, far less
        than the margin), so they sort after the k nearest as their full distances would."""
        d = np.full(idx.shape, np.inf)
        r, c = nonzero_2d(~unset)
        d[r, c] = self.compact_distance(rows[r], idx[r, c])
        k = self.p.k
        if k == 1:
            return d
        full = ~unset
        if idx.shape[1] > k:
            kth = np.partition(d, k - 1, axis=1)[:, k - 1 : k]  # inf when a row has fewer than k
            full &= d <= kth * (1.0 + FULL_DISTANCE_MARGIN) + FULL_DISTANCE_MARGIN  # distances ≥ 0
        r, c = nonzero_2d(full)
        d[r, c] = distances_of_pairs(self.p.q, self.p.t, rows[r], idx[r, c], self.p.settings)
        return d

    def level0(self) -> np.ndarray:
        """Own group; every other record mismatches ≥ 1 column. Rows whose short list was cut
        inside a run of near-equal distances are retried once with k + ``extra_candidates``.
        Returns the rows left open."""
        p, settings = self.p, self.p.settings
        beyond0 = float(np.sqrt(self.ordered[0])) if self.costs.size else np.inf
        qg, tg = self.groups.ids()
        sorted_t = self.target_groups(None, tg)
        # a short candidate list: with numeric columns ties are rare, and a row whose list is cut
        # in a tie run is retried, then goes on to the general search
        width = min(p.available, p.k + settings.grouped_extra)
        kept = _KeptTrees(settings.block_bytes)
        idx, reach = self.candidates(np.arange(p.n), qg, tg, sorted_t, width, beyond0, kept=kept)
        todo, cut = self.settle(np.arange(p.n), idx, [reach], beyond0, width)
        if cut.size == 0 or width == p.available:
            return todo
        todo = np.setdiff1d(todo, cut)
        width = min(p.available, p.k + settings.extra_candidates)
        idx, reach = self.candidates(cut, qg, tg, sorted_t, width, beyond0, kept=kept)
        left, _ = self.settle(cut, idx, [reach], beyond0, width)
        return np.union1d(todo, left)

    def level(self, todo: np.ndarray, depth: int) -> np.ndarray:
        """Equal on all columns but ``depth`` of them; every other record mismatches at least
        depth + 1 columns. Rows whose short lists were cut inside their k-th distance (a group
        with many records numerically near the row) are retried once with k +
        ``extra_candidates``, as at level 0. Returns the rows left open."""
        ordered = self.ordered
        beyond = float(np.sqrt(ordered[: depth + 1].sum())) if self.costs.size > depth else np.inf
        available = self.p.available
        kk = min(available, self.p.k + self.p.settings.grouped_extra)
        kept = _KeptTrees(self.p.settings.block_bytes)
        left, cut = self._level_pass(todo, depth, kk, beyond, kept)
        if cut.size == 0 or kk == available:
            return left
        kk = min(available, self.p.k + self.p.settings.extra_candidates)
        again, _ = self._level_pass(cut, depth, kk, beyond, kept)
        return np.union1d(np.setdiff1d(left, cut, assume_unique=True), again)

    def _level_pass(
        self, rows: np.ndarray, depth: int, kk: int, beyond: float, kept: _KeptTrees | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One pass of level ``depth`` over ``rows`` with lists of ``kk``: (rows left open, those of
        them left open only because a list was too short). ``kept``: trees kept from the first
        pass (reused) or for the retry (offered)."""
        cands, reaches = [], []
        for drop in combinations(range(self.costs.size), depth):
            qg_j, tg_j = self.groups.ids(drop=drop)
            idx, reach = self.candidates(
                rows, qg_j, tg_j, self.target_groups(drop, tg_j), kk, beyond, kept=kept, key=drop
            )
            cands.append(idx)
            reaches.append(reach)
        return self.settle(rows, np.hstack(cands), reaches, beyond, kk)

    def candidates(
        self,
        rows: np.ndarray,
        qg: np.ndarray,
        tg: np.ndarray,
        sorted_t: _TargetGroups,
        kk: int,
        beyond: float = np.inf,
        *,
        kept: _KeptTrees | None = None,
        key: tuple = (),
    ) -> tuple[np.ndarray, np.ndarray]:
        """For query ``rows``: the kk nearest targets (by numeric distance) among targets of the
        same group (ids ``qg`` of every query row, ``tg`` of every target, ``sorted_t`` the
        targets sorted by ``tg``), and how far the list
        reaches: no target of the row's group left out of it is nearer (numerically) than that.
        Records of other groups are at least ``gap`` away and come last; -1 marks an empty slot.

        ``beyond``: the distance past which the caller settles nothing with this tree (every
        record outside the groups searched is at least that far). The tree search stops there
        (``distance_upper_bound`` slightly above it): a row with fewer than kk group records
        within it gets the ones found and reach ``beyond`` — every record it did not see is
        farther. And only targets of groups some query row belongs to go into the tree (at level
        1 often a small part of them; the others can be no row's candidate). ``kept``: a tree of
        the same ids (under ``key``) holding every queried group is queried instead of building
        one (its other groups' records are at least ``gap`` away: a list that reaches them has
        seen all of the row's group); a tree built here is offered to it."""
        exclude_self, gap = self.p.exclude_self, self.gap
        # rows whose group holds no target (but themselves) have nothing to find here: their list
        # is empty (-1) and reaches everywhere — about half the rows of a Texas-like search, and a
        # tree query costs as much for them as for the others
        at, count = sorted_t.count(qg[rows])
        live = np.flatnonzero(count - (1 if exclude_self else 0) > 0)
        out_idx = np.full((rows.size, kk), -1, dtype=np.int64)
        out_reach = np.full(rows.size, np.inf)
        if live.size == 0:
            return out_idx, out_reach
        rows = rows[live]
        groups = np.unique(at[live])
        hit = None if kept is None else kept.get(key, groups)
        if hit is None:
            # targets of the groups queried (the tree's positions map back through `members`)
            members = sorted_t.members(groups)
            # (from the numeric columns alone: a whole-width copy of the members is a million rows × every feature)
            tz = np.column_stack([self.tnum[members], tg[members].astype(np.float64) * gap])
            tree = kdtree(tz)
            if kept is not None:
                kept.offer(key, groups, members, tree, tz.shape[1])
        else:
            members, tree = hit
        qz = np.column_stack([self.qnum[rows], qg[rows].astype(np.float64) * gap])
        m = members.size
        search_k = min(m, kk + (1 if exclude_self else 0))
        bound = beyond * (1 + 1e-6) + 1e-12 if np.isfinite(beyond) else np.inf
        dist, pos = tree.query(qz, k=search_k, distance_upper_bound=bound, workers=workers())
        dist = dist.reshape(rows.size, search_k)
        pos = pos.reshape(rows.size, search_k)
        idx = np.where(pos < m, members[np.minimum(pos, m - 1)], -1)
        if exclude_self:
            idx, dist = drop_self(rows, idx, dist)
        out_idx[live, : idx.shape[1]] = idx[:, :kk]
        # a list cut by the bound holds every group record nearer than the bound (> beyond)
        reach = dist[:, kk - 1] if idx.shape[1] >= kk else np.full(rows.size, np.inf)
        out_reach[live] = np.where(np.isfinite(reach), reach, beyond)
        return out_idx, out_reach

    def settle(
        self, rows: np.ndarray, idx: np.ndarray, reaches: list[np.ndarray], beyond: float, kk: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`settle_rows` in blocks of rows whose candidate arrays (sorted lists, distances,
        pair copies: ~``SETTLE_BYTES_PER_PAIR`` bytes per candidate) fit ``block_bytes`` — level 1
        of a million-row self-search holds ~60 candidates a row. Each row is decided on its own
        row of ``idx``, so the blocking changes no bit."""
        step = max(1, self.p.settings.block_bytes // (SETTLE_BYTES_PER_PAIR * max(1, idx.shape[1])))
        if rows.size <= step:
            return self.settle_rows(rows, idx, reaches, beyond, kk)
        parts = [
            self.settle_rows(rows[s : s + step], idx[s : s + step], [r[s : s + step] for r in reaches], beyond, kk)
            for s in range(0, rows.size, step)
        ]
        return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])

    def settle_rows(
        self, rows: np.ndarray, idx: np.ndarray, reaches: list[np.ndarray], beyond: float, kk: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Decide the rows whose candidate lists ``idx`` provably hold their k nearest (module
        docstring); return the others, and among them those that failed only because a list was
        too short."""
        p = self.p
        k = p.k
        n, width = idx.shape
        # a target found by several trees counts once; -1 marks an empty slot (a group with no target)
        idx = np.sort(idx, axis=1)
        dup = idx < 0
        dup[:, 1:] |= idx[:, 1:] == idx[:, :-1]
        d64 = self.ranking_distances(rows, idx, dup)
        n_unique = (~dup).sum(axis=1)
        kth = np.sort(d64, axis=1)[:, k - 1]
        tol = REL_TOL * (1.0 + np.abs(kth))
        complete = (n_unique >= k) & (beyond > kth + 2 * tol)
        far_enough = complete.copy()
        if kk < p.available:
            for reach in reaches:
                complete &= reach > kth + 2 * tol
        sel = np.flatnonzero(complete)
        if sel.size:
            order = order_rows(d64[sel], idx[sel], k, dup[sel])
            chosen = np.take_along_axis(idx[sel], order, axis=1)
            self.out_i[rows[sel]] = chosen
            # the reported distances: float64 from the full coordinates, as on every other path
            # (k > 1: the ranking's own, computed from the full coordinates for the k nearest)
            self.out_d[rows[sel]] = (
                np.take_along_axis(d64[sel], order, axis=1)
                if k > 1
                else distances_of_pairs(p.q, p.t, np.repeat(rows[sel], k), chosen.ravel(), p.settings).reshape(
                    sel.size, k
                )
            )
        return rows[~complete], rows[far_enough & ~complete]
