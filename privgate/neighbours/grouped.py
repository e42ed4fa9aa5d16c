"""Exact k nearest neighbours among records of equal or nearly equal categorical values, in a
mixed space (:mod:`privgate.spaces`: a mismatch in categorical column c adds a fixed c_c to the
squared distance).

Level 0: a k-d tree over the numeric coordinates plus one far-apart group coordinate (one group
per combination of categories) returns each query's k + 2 nearest records of its own group (rows
cut inside a run of near-equal distances are retried with k + 16). Level 1, for rows level 0
left open: one such tree per categorical column c, grouping records equal on every column but c.
A row is settled when (i) every tree's candidate list reaches past the k-th nearest distance
found (no unseen record of those groups can be nearer or tied: its numeric distance alone is at
least the list's last), and (ii) every record outside the groups searched is provably farther:
level 0 — it mismatches at least one column, d² ≥ min c_c; level 1 — at least two, d² ≥ the two
smallest c_c summed. Distances are recomputed in float64 from the full coordinates and ties
broken by the lowest index, as on every other path. The rows left open go to the general search.
"""

from __future__ import annotations

import numpy as np

from ..ties import REL_TOL
from .backends import workers
from .decide import distances_of_pairs, drop_self, order_rows
from .exact import one_block
from .ivf_lists import nonzero_2d
from .memo import SearchMemo
from .problem import Problem


def category_codes(x: np.ndarray, slices: list[tuple[int, int]], chunk_bytes: int
                   ) -> tuple[np.ndarray, float] | None:
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
        block = x[start:start + step, cols]
        nonzero = (block != 0).astype(np.float64)
        if (nonzero @ member != 1.0).any():
            return None
        codes[start:start + step] = nonzero @ position
        top = block @ member
        first = top[:1] if first is None else first
        if (top != first).any() or (top <= 0).any():
            return None
    return codes, 0.0


def refine_group_ids(ids: np.ndarray | None, codes: np.ndarray) -> np.ndarray:
    """Dense group numbers of the rows after one more integer code column: ``ids`` (the numbers so
    far, None before the first column) refined by ``codes``. Folding columns in one at a time
    numbers the distinct rows in lexicographic order — the inverse of ``np.unique(columns,
    axis=0)`` — without holding all columns, and renumbering after each column keeps the
    (number, code) pairs from overflowing."""
    codes = np.asarray(codes).astype(np.int64, copy=False)
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(codes.min())
    pairs = codes - low if ids is None else ids * (int(codes.max()) - low + 1) + (codes - low)
    return np.unique(pairs, return_inverse=True)[1].ravel().astype(np.int64, copy=False)


def group_ids(qc: np.ndarray, tc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One integer per distinct combination of category codes, shared by query and target rows."""
    both = np.vstack([qc, tc])
    g = np.zeros(both.shape[0], dtype=np.int64)
    for j in range(both.shape[1]):
        g = refine_group_ids(g, both[:, j])
    return g[:qc.shape[0]], g[qc.shape[0]:]


class _Groups:
    """Group ids of query and target rows for a set of categorical columns: mixed-radix numbers of
    the codes when they stay exact in float64 after scaling by the gap (then dropping a column is
    a subtraction), else dense ids from successive np.unique."""

    def __init__(self, qc: np.ndarray, tc: np.ndarray, gap: float) -> None:
        self.qc, self.tc = qc, tc
        levels = np.maximum(qc.max(axis=0, initial=0), tc.max(axis=0, initial=0)).astype(np.int64) + 1
        self.strides = np.concatenate([[1], np.cumprod(levels)[:-1]]).astype(np.int64) if levels.size else levels
        total = float(np.prod(levels.astype(np.float64))) if levels.size else 1.0
        self.radix = total * (gap + 1.0) < 2.0**52
        if self.radix:
            self.q_all, self.t_all = qc @ self.strides, tc @ self.strides

    def ids(self, drop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(query ids, target ids) grouping rows equal on every column (but ``drop``)."""
        if self.qc.shape[1] == 0:
            return np.zeros(self.qc.shape[0], dtype=np.int64), np.zeros(self.tc.shape[0], dtype=np.int64)
        if self.radix:
            if drop is None:
                return self.q_all, self.t_all
            return (self.q_all - self.qc[:, drop].astype(np.int64) * self.strides[drop],
                    self.t_all - self.tc[:, drop].astype(np.int64) * self.strides[drop])
        keep = np.arange(self.qc.shape[1]) != drop if drop is not None else slice(None)
        return group_ids(self.qc[:, keep], self.tc[:, keep])


def _slice_cost(q: np.ndarray, t: np.ndarray, a: int, b: int) -> float:
    """Squared distance a mismatch in the one-hot slice [a, b) adds (2·scale²)."""
    v = q[0, a:b] if q.shape[0] else t[0, a:b]
    return 2.0 * float(np.abs(v).max()) ** 2


def knn_grouped(p: Problem, slices: list[tuple[int, int]], out_d: np.ndarray, out_i: np.ndarray) -> np.ndarray:
    """Settle the rows of ``p`` the grouped search can (module docstring) into ``out_d`` /
    ``out_i``; return the rows still open, for the general search."""
    search = _GroupedSearch.of(p, slices, out_d, out_i)
    if search is None:
        return np.arange(p.n)
    todo = search.level0()
    if todo.size == 0 or search.costs.size == 0:
        return todo
    if one_block(todo.size, p.m, p.k, p.settings.block_bytes):
        # shape rule: level 1 builds one tree over all m targets per categorical column; when the
        # open rows fit one GEMM block (k = 1) that block costs less (1,000 × 25,000 × 90, 10
        # categorical columns: the 10 trees settled 145 of 580 rows for ~0.2 CPU-s, the block
        # does all 580 for ~0.1)
        return todo
    return search.level1(todo)


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

    def __init__(self, p: Problem, qc: np.ndarray, tc: np.ndarray, costs: np.ndarray, *,
                 slices: list[tuple[int, int]], out: tuple[np.ndarray, np.ndarray]) -> None:
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
        self.groups = _Groups(qc, tc, self.gap)

    @classmethod
    def of(cls, p: Problem, slices: list[tuple[int, int]], out_d: np.ndarray, out_i: np.ndarray
           ) -> "_GroupedSearch | None":
        """The search, or None when a slice is not one-hot (then no row is settled here)."""
        q, t = p.q, p.t
        if not slices:
            return cls(p, np.zeros((p.n, 0), dtype=np.int64), np.zeros((p.m, 0), dtype=np.int64), np.zeros(0),
                       slices=slices, out=(out_d, out_i))
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
            q, t = qi[s:s + chunk], ti[s:s + chunk]
            diff = self.qnum[q] - self.tnum[t]
            d2 = np.einsum("ij,ij->i", diff, diff)
            if self.costs.size:
                d2 += (self.qc[q] != self.tc[t]) @ self.costs
            out[s:s + chunk] = np.sqrt(d2)
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
            kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]  # inf when a row has fewer than k
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
        # a short candidate list: with numeric columns ties are rare, and a row whose list is cut
        # in a tie run is retried, then goes on to the general search
        width = min(p.available, p.k + settings.grouped_extra)
        idx, reach = self.candidates(np.arange(p.n), qg, tg, width, beyond0)
        todo, cut = self.settle(np.arange(p.n), idx, [reach], beyond0, width)
        if cut.size == 0 or width == p.available:
            return todo
        todo = np.setdiff1d(todo, cut)
        width = min(p.available, p.k + settings.extra_candidates)
        idx, reach = self.candidates(cut, qg, tg, width, beyond0)
        left, _ = self.settle(cut, idx, [reach], beyond0, width)
        return np.union1d(todo, left)

    def level1(self, todo: np.ndarray) -> np.ndarray:
        """Equal on all columns but one; every other record mismatches ≥ 2 columns. Returns the
        rows left open."""
        ordered = self.ordered
        beyond1 = float(np.sqrt(ordered[0] + ordered[1])) if self.costs.size > 1 else np.inf
        kk = min(self.p.available, self.p.k + self.p.settings.grouped_extra)
        cands, reaches = [], []
        for j in range(self.costs.size):
            qg_j, tg_j = self.groups.ids(drop=j)
            idx, reach = self.candidates(todo, qg_j, tg_j, kk, beyond1)
            cands.append(idx)
            reaches.append(reach)
        left, _ = self.settle(todo, np.hstack(cands), reaches, beyond1, kk)
        return left

    def candidates(self, rows: np.ndarray, qg: np.ndarray, tg: np.ndarray, kk: int, beyond: float = np.inf
                   ) -> tuple[np.ndarray, np.ndarray]:
        """For query ``rows``: the kk nearest targets (by numeric distance) among targets of the
        same group (ids ``qg`` of every query row, ``tg`` of every target), and how far the list
        reaches: no target of the row's group left out of it is nearer (numerically) than that.
        Records of other groups are at least ``gap`` away and come last; -1 marks an empty slot.

        ``beyond``: the distance past which the caller settles nothing with this tree (every
        record outside the groups searched is at least that far). The tree search stops there
        (``distance_upper_bound`` slightly above it): a row with fewer than kk group records
        within it gets the ones found and reach ``beyond`` — every record it did not see is
        farther. And only targets of groups some query row belongs to go into the tree (at level
        1 often a small part of them; the others can be no row's candidate)."""
        from scipy.spatial import cKDTree

        exclude_self, gap = self.p.exclude_self, self.gap
        # rows whose group holds no target (but themselves) have nothing to find here: their list
        # is empty (-1) and reaches everywhere — about half the rows of a Texas-like search, and a
        # tree query costs as much for them as for the others
        groups, members = np.unique(tg, return_counts=True)
        at = np.minimum(np.searchsorted(groups, qg[rows]), max(groups.size - 1, 0))
        others = np.where(groups[at] == qg[rows], members[at], 0) - (1 if exclude_self else 0)
        live = np.flatnonzero(others > 0)
        out_idx = np.full((rows.size, kk), -1, dtype=np.int64)
        out_reach = np.full(rows.size, np.inf)
        if live.size == 0:
            return out_idx, out_reach
        rows = rows[live]
        # targets of the groups queried (the tree's positions map back through `members`)
        members = np.flatnonzero(np.isin(tg, np.unique(qg[rows])))
        # (from the numeric columns alone: a whole-width copy of the members is a million rows × every feature)
        qz = np.column_stack([self.qnum[rows], qg[rows].astype(np.float64) * gap])
        tz = np.column_stack([self.tnum[members], tg[members].astype(np.float64) * gap])
        m = members.size
        search_k = min(m, kk + (1 if exclude_self else 0))
        bound = beyond * (1 + 1e-6) + 1e-12 if np.isfinite(beyond) else np.inf
        dist, pos = cKDTree(tz).query(qz, k=search_k, distance_upper_bound=bound, workers=workers())
        dist = dist.reshape(rows.size, search_k)
        pos = pos.reshape(rows.size, search_k)
        idx = np.where(pos < m, members[np.minimum(pos, m - 1)], -1)
        if exclude_self:
            idx, dist = drop_self(rows, idx, dist)
        out_idx[live, :idx.shape[1]] = idx[:, :kk]
        # a list cut by the bound holds every group record nearer than the bound (> beyond)
        reach = dist[:, kk - 1] if idx.shape[1] >= kk else np.full(rows.size, np.inf)
        out_reach[live] = np.where(np.isfinite(reach), reach, beyond)
        return out_idx, out_reach

    def settle(self, rows: np.ndarray, idx: np.ndarray, reaches: list[np.ndarray], beyond: float, kk: int
               ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`settle_rows` in blocks of rows whose candidate arrays (sorted lists, distances,
        pair copies: ~``SETTLE_BYTES_PER_PAIR`` bytes per candidate) fit ``block_bytes`` — level 1
        of a million-row self-search holds ~60 candidates a row. Each row is decided on its own
        row of ``idx``, so the blocking changes no bit."""
        step = max(1, self.p.settings.block_bytes // (SETTLE_BYTES_PER_PAIR * max(1, idx.shape[1])))
        if rows.size <= step:
            return self.settle_rows(rows, idx, reaches, beyond, kk)
        parts = [self.settle_rows(rows[s:s + step], idx[s:s + step], [r[s:s + step] for r in reaches], beyond, kk)
                 for s in range(0, rows.size, step)]
        return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])

    def settle_rows(self, rows: np.ndarray, idx: np.ndarray, reaches: list[np.ndarray], beyond: float, kk: int
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
            self.out_d[rows[sel]] = (np.take_along_axis(d64[sel], order, axis=1) if k > 1 else distances_of_pairs(
                p.q, p.t, np.repeat(rows[sel], k), chosen.ravel(), p.settings).reshape(sel.size, k))
        return rows[~complete], rows[far_enough & ~complete]
