"""The flat screen pruned by categorical bounds: the targets of a mixed space sorted by their
categories into tiles, and per query row only the tiles that could hold one of its k nearest.

Every record of a tile that lacks the query's level of a categorical column mismatches the query
in that column, so its squared distance is at least that column's mismatch cost (s_q² + s_t², the
one-hot values of the two records). Summed over the columns whose level the tile lacks, this is a
lower bound of the squared distance of every record of the tile. One GEMM of the query's level
indicators with the tiles' cost-weighted absences gives it for every (row, tile).

Per row, the tile where the row's categories would sort first gives k candidates, hence an
upper bound of its exact k-th squared distance (with the float32 error bound of
:mod:`.prepared`); a tile whose lower bound exceeds it cannot hold one of the k nearest and is
not compared. The others are compared tile by tile, each tile against the rows that keep it,
and every row keeps its ``kk`` best candidates by (float32 value, index) among the compared
targets whose float32 lower bound does not exceed that upper bound — the others cannot be among
its k nearest either. The caller settles a row with the smaller of that bound and the k-th upper
bound of its final candidates, and only when its smallest pruned bound lies beyond it
(:func:`.screened.knn_flat`), so the decided answers are those of the full screen
(:mod:`.flat`).

Sorting the targets by category (columns in :func:`sort_priority`'s order) keeps a tile's levels
few: on a Texas-like 100,000 × 100,000 search in identifiability's entropy-weighted space, a row
left open by the grouped search keeps 3–4 % of the tiles; in the mixed space, whose mismatch costs
are equal, 14–25 %.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .backends import workers
from .flat import _merged
from .grouped import category_codes
from .memo import SearchMemo

if TYPE_CHECKING:
    from .prepared import PreparedSearch

#: Targets per tile (more for large targets, so that there are at most ``MAX_TILES`` tiles): a
#: smaller tile is purer in its categories, a larger one a larger GEMM per row.
TILE_TARGETS = 128
MAX_TILES = 1024
#: The pruned screen is used for a part of rows only when at most this share of its (row, tile)
#: pairs is kept: a pair compared tile by tile costs about twice a pair of the full flat screen
#: (the rows' gathers and merges). Texas-like 100k, mixed space: ~0.3 kept, real → real k = 2
#: 10.5 → 8.3 CPU-s; proximity_score's 25k → 100k, k = 7, ~0.5 kept: the metric 16.7 → 13.2.
MAX_KEPT_SHARE = 0.5
#: Relative margin taken off the float32 lower bounds (sums of at most a few hundred costs:
#: their rounding is ~1e-7 relative).
BOUND_MARGIN = 1e-5
#: Bytes of (row, tile) bounds held at once: rows go through the tiles in chunks of this size.
BOUND_BYTES = 64 * 2**20
#: With more than one thread, each takes a share of the rows of at least this many.
MIN_WORKER_ROWS = 1024


class TargetTiles:
    """The targets of one matrix sorted by their category codes into tiles (kept in the search
    memo for every search of that matrix): ``members`` (target positions, tile after tile,
    ascending inside a tile), ``bounds`` (the tiles' start and end in ``members``), ``present``
    (tiles × levels of every column: whether some target of the tile has that level),
    ``offsets`` (each column's first level position), ``priority`` (the columns in sort order)."""

    def __init__(self, codes: np.ndarray, widths: np.ndarray, costs: np.ndarray) -> None:
        m, c = codes.shape
        self.offsets = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
        self.levels = int(widths.sum())
        self.priority = sort_priority(codes, widths, costs)
        order = np.lexsort([codes[:, j] for j in self.priority[::-1]])
        n_tiles = max(1, min(MAX_TILES, m // TILE_TARGETS))
        self.bounds = (np.arange(n_tiles + 1) * m) // n_tiles
        tile_of = np.repeat(np.arange(n_tiles), np.diff(self.bounds))
        members = order.copy()
        for j in range(n_tiles):  # ascending positions inside a tile: ties go to the lower index
            members[self.bounds[j] : self.bounds[j + 1]].sort()
        self.members = members
        self.present = np.zeros((n_tiles, self.levels), dtype=bool)
        for j in range(c):
            self.present[tile_of, self.offsets[j] + codes[order, j]] = True
        self.keys = self._prefix_keys(codes[order], widths)
        self.n_tiles = n_tiles
        self.smallest = int(np.diff(self.bounds).min())

    def _prefix_keys(self, codes: np.ndarray, widths: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(the key columns, the targets' keys in sort order — non-decreasing): the leading
        columns' codes as one mixed-radix int64 per target (as many columns as fit); None when
        not even the first fits."""
        leading, total = [], 1
        for j in self.priority:
            if total * int(widths[j]) >= 2**62:
                break
            leading.append(j)
            total *= int(widths[j])
        if not leading:
            return None
        cols = np.array(leading)
        radix = np.array([int(widths[j]) for j in cols], dtype=np.int64)
        weights = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
        self.key_columns, self.key_weights = cols, weights
        return cols, codes[:, cols].astype(np.int64) @ weights

    def home_tiles(self, qcodes: np.ndarray) -> np.ndarray:
        """Per query row, the tile where its categories sort (its leading columns' key)."""
        if self.keys is None:
            return np.zeros(qcodes.shape[0], dtype=np.int64)
        qk = qcodes[:, self.key_columns].astype(np.int64) @ self.key_weights
        at = np.minimum(np.searchsorted(self.keys[1], qk), self.members.size - 1)
        return np.searchsorted(self.bounds, at, side="right") - 1


def sort_priority(codes: np.ndarray, widths: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """The categorical columns in the order the targets are sorted by: descending expected
    mismatch cost per bit of entropy, (cost × probability that two targets differ) / entropy.

    A tile of T of m targets stays pure (one level) in the leading columns whose levels' joint
    entropy is below about log₂(m / T) bits, and every pure column adds its cost to the bound of
    the tiles that lack a query's level. So a column is worth its place in the sort by how much
    bound it buys per bit of purity it uses: a two-level column bounds as often per bit as a
    many-level one bounds in all. Against the order by expected cost alone, the share of
    (row, tile) pairs kept fell from 0.39 to 0.25 (synthetic → synthetic) and from 0.35 to 0.22
    (real → real) on a Texas-like 100,000 × 100,000 mixed space (benchmarks/LOG.md). A column
    with one level among the targets is pure in every tile, wherever it sorts (efficiency 0)."""
    m, c = codes.shape
    efficiency = np.zeros(c)
    for j in range(c):
        p = np.bincount(codes[:, j], minlength=int(widths[j])) / m
        p = p[p > 0]
        entropy = float(-(p * np.log2(p)).sum())
        if entropy > 0:
            efficiency[j] = (1.0 - float((p**2).sum())) * float(costs[j]) / entropy
    return np.argsort(-efficiency, kind="stable")


def tiles_for(ex: "PreparedSearch") -> tuple[TargetTiles, np.ndarray, np.ndarray] | None:
    """(the target tiles, every query row's category codes, the level costs: per level position,
    the squared distance a mismatch in its column adds) of the prepared search ``ex``, or None
    when it has no categorical columns, its slices are not one-hot, or the tiles would be too
    small for its lists."""
    if not hasattr(ex, "_category_tiles"):
        ex._category_tiles = _tiles_for(ex)
    return ex._category_tiles


def _tiles_for(ex: "PreparedSearch") -> tuple[TargetTiles, np.ndarray, np.ndarray] | None:
    slices = [(int(a), int(b)) for a, b in (ex.slices or [])]
    if not slices or ex.t.shape[0] < 2 * TILE_TARGETS:
        return None
    p = ex.problem
    tag = ("category_codes", tuple(slices))
    chunk = ex.settings.pair_chunk_bytes
    tcodes = SearchMemo.get_or_build(p.memo, ex.t, tag, lambda: category_codes(ex.t, slices, chunk))
    qcodes = (
        tcodes
        if ex.q is ex.t
        else SearchMemo.get_or_build(p.memo, ex.q, tag, lambda: category_codes(ex.q, slices, chunk))
    )
    if tcodes is None or qcodes is None:
        return None
    widths = np.array([b - a for a, b in slices], dtype=np.int64)
    s_q, s_t = _one_hot_values(ex.q, slices), _one_hot_values(ex.t, slices)
    costs = s_q**2 + s_t**2
    tiles = SearchMemo.get_or_build(
        p.memo, ex.t, ("category_tiles", tuple(slices)), lambda: TargetTiles(tcodes[0], widths, 2.0 * s_t**2)
    )
    return tiles, qcodes[0], np.repeat(costs, widths)


def _one_hot_values(x: np.ndarray, slices: list[tuple[int, int]]) -> np.ndarray:
    """The nonzero value of each one-hot slice (every row of ``x`` has the same one, as
    :func:`.grouped.category_codes` checked); 0 for an empty matrix."""
    if x.shape[0] == 0:
        return np.zeros(len(slices))
    return np.array([float(np.abs(x[0, a:b].astype(np.float64)).max()) for a, b in slices])


def pruned_candidates(
    ex: "PreparedSearch", rows: np.ndarray, kk: int, k_bound: int, tiles: tuple[TargetTiles, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(float32 d² (rows × kk), int64 target indices, per row the smallest lower bound of the
    squared distance of any target not compared — inf when every target was —, per row the
    upper bound U of its ``k_bound``-th smallest exact d² that pruned its tiles) of the ``kk``
    best by (float32 d², index) of each query row's compared targets whose float32 lower bound
    does not exceed U; the targets not compared are those of tiles whose bound exceeds U. None
    when more than ``MAX_KEPT_SHARE`` of the (row, tile) pairs are kept: then the full screen is
    cheaper. A list may hold fewer than ``kk`` targets (never fewer than ``k_bound``): its empty
    slots have index m and value inf, and every compared target not listed lies beyond U."""
    tt, qcodes, level_costs = tiles
    if tt.smallest < kk:
        return None
    absent = _absent(tt, level_costs)
    n_workers = min(max(1, workers()), rows.size // MIN_WORKER_ROWS)
    if n_workers <= 1:
        return _pruned(ex, rows, kk, k_bound, tt, qcodes, absent)
    # the rows split between threads, each GEMM single-threaded (NumPy releases the GIL); each
    # row's candidates are those of its own comparisons, whichever thread made them
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    parts = np.array_split(rows, n_workers)
    with threadpool_limits(limits=1), ThreadPoolExecutor(n_workers) as pool:
        done = list(pool.map(lambda part: _pruned(ex, part, kk, k_bound, tt, qcodes, absent), parts))
    if any(d is None for d in done):
        return None
    return tuple(np.concatenate([d[i] for d in done]) for i in range(4))


def _pruned(
    ex: "PreparedSearch",
    rows: np.ndarray,
    kk: int,
    k_bound: int,
    tt: TargetTiles,
    qcodes: np.ndarray,
    absent: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`pruned_candidates` of ``rows`` in one thread."""
    q2, best_v, best_i, keep, bound, upper = _first_pass(ex, rows, kk, k_bound, tt, qcodes, absent)
    if keep.sum() > MAX_KEPT_SHARE * keep.size:
        return None
    # a target whose float32 value exceeds the row's cap lies beyond U: it is not listed
    cap = _value_cap(ex, rows, upper)
    beyond = best_v > cap[:, None]
    best_v[beyond], best_i[beyond] = np.inf, ex.t32.shape[0]
    by_tile = np.ascontiguousarray(keep.T)
    del keep, beyond
    for j in np.flatnonzero(by_tile.any(axis=1)):  # tile by tile, against the rows that keep it
        _compare(ex, q2, np.flatnonzero(by_tile[j]), tt, j, best_v, best_i, cap)
    return best_v + ex.qn[rows][:, None], best_i, bound, upper


def _value_cap(ex: "PreparedSearch", rows: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per row, the float32 value v = ‖t‖² − 2 q·t above which a target's float32 lower bound of
    its exact d², fl(v + ‖q‖²) − c(‖q‖² + ‖t‖²), exceeds ``upper``: ``upper`` + c(‖q‖² + max ‖t‖²)
    − ‖q‖², widened by 2⁻²⁰ of the magnitudes (the float32 rounding of v + ‖q‖² is 2⁻²⁴ of
    them) and rounded up to float32; inf where ``upper`` is."""
    qn = ex.qn[rows].astype(np.float64)
    high = upper + float(ex.c) * (qn + float(ex.tn.max()))
    cap64 = high - qn + 2.0**-20 * (np.abs(high) + qn) + 1e-30
    cap = cap64.astype(np.float32)
    return np.where(cap < cap64, np.nextafter(cap, np.float32(np.inf)), cap)


def compared_share(ex: "PreparedSearch", rows: np.ndarray, kk: int, k_bound: int, sample: int = 512) -> float:
    """The share of the targets the pruned screen would compare for query ``rows`` (measured on
    at most ``sample`` of them, evenly spaced); 1.0 when it would not be used."""
    tiles = tiles_for(ex)
    if tiles is None or tiles[0].smallest < kk or rows.size == 0:
        return 1.0
    tt, qcodes, level_costs = tiles
    some = rows[np.linspace(0, rows.size - 1, min(sample, rows.size)).astype(np.int64)]
    keep = _first_pass(ex, some, kk, k_bound, tt, qcodes, _absent(tt, level_costs))[3]
    share = (keep.sum() + some.size) / keep.size
    return 1.0 if share > MAX_KEPT_SHARE else float(share)


def _absent(tt: TargetTiles, level_costs: np.ndarray) -> np.ndarray:
    """(levels × tiles) the mismatch cost of each level in each tile that lacks it, else 0."""
    return np.where(tt.present, np.float32(0), level_costs.astype(np.float32)[None, :]).T


def _first_pass(
    ex: "PreparedSearch",
    rows: np.ndarray,
    kk: int,
    k_bound: int,
    tt: TargetTiles,
    qcodes: np.ndarray,
    absent: np.ndarray,
) -> tuple:
    """For query ``rows``: (their −2·float32 coordinates, their kk best (values, indices) in their
    home tile, the tiles still to compare — those whose bound does not exceed the row's
    k_bound-th upper bound, the home tile excepted —, the smallest bound of the tiles not
    compared, and that upper bound). The bounds are computed in chunks of rows of
    ``BOUND_BYTES``."""
    b, m = rows.size, ex.t32.shape[0]
    codes = qcodes[rows]
    q2 = ex.q32[rows] * np.float32(-2.0)
    best_v = np.full((b, kk), np.inf, dtype=np.float32)
    best_i = np.full((b, kk), m, dtype=np.int64)
    home = tt.home_tiles(codes)
    for j in np.unique(home):  # each row's home tile first: its first candidates
        sel = np.flatnonzero(home == j)
        _compare(ex, q2, sel, tt, j, best_v, best_i)
    upper = _kth_upper(ex, rows, best_v, best_i, k_bound)
    keep = np.empty((b, tt.n_tiles), dtype=bool)
    bound = np.empty(b)
    step = max(1, BOUND_BYTES // (8 * max(tt.n_tiles, tt.levels)))  # the bounds and the indicators
    for s in range(0, b, step):
        e = min(b, s + step)
        indicator = np.zeros((e - s, tt.levels), dtype=np.float32)
        indicator[np.arange(e - s)[:, None], tt.offsets[None, :] + codes[s:e]] = 1.0
        lower = (indicator @ absent).astype(np.float64)  # rows × tiles: Σ costs of the lacking levels
        lower *= 1.0 - BOUND_MARGIN
        lower[np.arange(e - s), home[s:e]] = -np.inf  # compared already
        np.less_equal(lower, upper[s:e, None], out=keep[s:e])
        lower[keep[s:e]] = np.inf
        bound[s:e] = lower.min(axis=1)
        keep[np.arange(s, e), home[s:e]] = False
    return q2, best_v, best_i, keep, bound, upper


def _compare(
    ex: "PreparedSearch",
    q2: np.ndarray,
    sel: np.ndarray,
    tt: TargetTiles,
    j: int,
    best_v: np.ndarray,
    best_i: np.ndarray,
    cap: np.ndarray | None = None,
) -> None:
    """Compare the rows ``sel`` (positions in the part) with the targets of tile ``j``; merge the
    values at or below each row's kk-th best and its ``cap`` (ties: the lower index, by the
    merge's order) into its kk best (``best_v`` / ``best_i``, updated in place). No ``cap``: the
    rows have no candidates yet (their home tile), and its kk best are taken."""
    members = tt.members[tt.bounds[j] : tt.bounds[j + 1]]
    kk = best_v.shape[1]
    # np.take: a row gather ~2× faster than fancy indexing
    v = np.take(q2, sel, axis=0) @ np.take(ex.t32, members, axis=0).T
    v += np.take(ex.tn, members)[None, :]
    if cap is None:  # the tile holds at least kk targets: its kk best by (value, index)
        order = np.argsort(v, axis=1, kind="stable")[:, :kk]  # members ascending: ties by index
        best_v[sel] = np.take_along_axis(v, order, axis=1)
        best_i[sel] = members[order]
        return
    thr = np.minimum(np.take(best_v[:, kk - 1], sel), np.take(cap, sel))
    flat = np.flatnonzero(v <= thr[:, None])
    if flat.size == 0:
        return
    cr, cc = np.divmod(flat, members.size)  # rows ascending
    starts = np.empty(cr.size, dtype=bool)
    starts[:1] = True
    np.not_equal(cr[1:], cr[:-1], out=starts[1:])
    local = np.cumsum(starts) - 1
    at = sel[cr[starts]]
    best_v[at], best_i[at] = _merged(best_v[at], best_i[at], local, members[cc], v.ravel()[flat], ex.t32.shape[0])


def _kth_upper(
    ex: "PreparedSearch", rows: np.ndarray, best_v: np.ndarray, best_i: np.ndarray, k_bound: int
) -> np.ndarray:
    """Per row, an upper bound of its ``k_bound``-th smallest exact d² from its first candidates
    (:meth:`.prepared.PreparedSearch.kth_upper`, the flat screen's own bound); inf when it has
    fewer than ``k_bound``."""
    idx = best_i[:, :k_bound]
    ok = (idx < ex.t32.shape[0]).all(axis=1)
    idx = np.where(ok[:, None], idx, 0)
    d = best_v[:, :k_bound].astype(np.float64) + ex.qn[rows].astype(np.float64)[:, None]
    return np.where(ok, ex.kth_upper(d, idx, rows, k_bound), np.inf)
