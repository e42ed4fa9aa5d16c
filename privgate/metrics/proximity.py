"""Proximity score (TTPR/TSPR): are synthetic records closer to the training records than
other real records from the same population are? (Clearbox AI's privacy score;
docs/metrics.md, ``proximity_score``.)

The real data is split in two random halves R1, R2. For r in R1, with d₁(r) the distance to its
nearest other record of R1:

* TTPR(r) = d(r, R2) / d₁(r) — the "ideal" ratio of a fresh sample of the population;
* TSPR(r) = d(r, S) / d₁(r) — the same with the release S.

t = the α-quantile of TTPR; score = 100·min(1, share(TTPR < t) / share(TSPR < t)), 100 when no
TSPR is below t. Before comparing, S and R2 are size-matched (the larger subsampled without
replacement to the smaller's size; 10 seeded repetitions, mean score), otherwise a larger release
looks riskier by size alone. Distances are Euclidean in the mixed space fitted on all real
records; nearest neighbours come from the exact engine through the context (``ctx.search``; the
real → synthetic search from the context's shared cache).

Orientation: raw = score (0..100, 100 = no significant risk); value = 1 − score/100. A copy does
*not* reach 1: with S = R size-matched to R2, about half of R1 is in the subsample (TSPR = 0)
and share(TSPR < t) ≈ ½ + ½α, so the score is ≈ 100·α/(½ + ½α) ≈ 18 and the value ≈ 0.82.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import seeds
from ..errors import ParameterError
from ..neighbours import MatrixSearch, Neighbours, search_matrices
from ..neighbours.settings import resolve as resolve_settings
from ..registry import QuerySizes, register_metric
from ..results import MetricResult
from ..spaces import EncodedSpace
from ..stats.metric_intervals import result, set_bootstrap_ci
from ..ties import REL_TOL, lt
from .limits import MAX_REPETITIONS, check_work_bound
from .summaries import quantile_summary

PAPER = "Privacy score (TTPR/TSPR), Clearbox AI's synthetic-data privacy score"


def proximity_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num/den with 0/0 → 1 and x/0 → ∞."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.empty_like(num)
    zero = den == 0.0
    out[~zero] = num[~zero] / den[~zero]
    out[zero & (num == 0.0)] = 1.0
    out[zero & (num != 0.0)] = np.inf
    return out


# candidate lists for the nearest record of each size-matched subsample (nearest_in_subset): every
# scored record gets the SUBSET_FIRST_CANDIDATES nearest of the whole set, only the records whose
# short list holds no record of some subsample (with 10 half-size subsamples, 1 − (1 − 2⁻⁷)¹⁰ ≈ 7.5 %
# of them) also the SUBSET_CANDIDATES nearest. An exact k-list costs more the larger k (the
# grouped search must prove k neighbours inside groups of equal categories, so it settles fewer
# rows and the rest go to the flat screen): 25,000 scored × 100,000 Texas-like records, k = 16 for
# every row took 8.8 CPU-s, k = 7 then k = 16 for the 7.5 % 5.7 + 0.8 (k = 5, 6, 8 measured no
# cheaper); the same lists are read, so every distance is the same
SUBSET_CANDIDATES = 16
SUBSET_FIRST_CANDIDATES = 7
# a search of fewer query rows than this skips the grouped search (see proximity_score's searches again)
GROUPED_FROM_ROWS = 1_000
# R1 records scored by default: above it a seeded sample, so the candidate searches grow linearly
# (its exact cost, n/2 × (n + m) pairs, grew as n^1.6 at 25k–100k); at most 50,000 real records
# are scored whole
MAX_SCORED_ROWS = 25_000


def nearest_in_subset(
    query: np.ndarray,
    target: np.ndarray,
    pick: np.ndarray,
    candidates: Neighbours,
    search: MatrixSearch = search_matrices,
) -> np.ndarray:
    """Distance from each query row to its nearest row among ``target[pick]``, given the exact
    sorted k nearest ``candidates`` of every query row in the whole ``target``: the first
    candidate inside the subset is the subset's nearest (every row outside the k candidates is at
    least as far as the k-th); rows with no candidate in the subset are searched again exactly on
    the subset (by ``search``). Equals ``knn(query, target[pick], 1).dist[:, 0]`` — up to ties
    within the tolerance (privgate.ties) that are not at the whole target's nearest distance: a
    k-list orders those by exact distance, a search of the subset snaps them to its own nearest
    and takes the lowest index, so the two distances may differ within the tolerance."""
    inside = np.zeros(target.shape[0], dtype=bool)
    inside[pick] = True
    hit = inside[candidates.idx]
    found = hit.any(axis=1)
    first = hit.argmax(axis=1)
    out = candidates.dist[np.arange(query.shape[0]), first]
    rest = np.flatnonzero(~found)
    if rest.size:
        out[rest] = search(query[rest], target[pick], 1).dist[:, 0]
    return out


def subset_candidates(
    query: np.ndarray,
    target: np.ndarray,
    picks: list[np.ndarray],
    search: MatrixSearch = search_matrices,
    first: int = SUBSET_FIRST_CANDIDATES,
    wide: int = SUBSET_CANDIDATES,
    wide_search: MatrixSearch | None = None,
) -> Neighbours:
    """Exact sorted candidate lists for :func:`nearest_in_subset` of every subset ``target[pick]``
    of ``picks``: the ``first`` nearest target rows of every query row, and the ``wide`` nearest
    of the rows whose ``first`` hold no row of some subset (searched for those rows only). A short
    list is padded to ``wide`` columns by repeating its last candidate: that adds no candidate, so
    the padded list is read as the short one — and a row with a short list has a candidate inside
    every subset of ``picks`` among its first ones. ``wide_search``: the search of the long lists
    (default ``search``)."""
    m = target.shape[0]
    first, wide = min(first, m), min(max(first, wide), m)
    short = search(query, target, first)
    if wide == first:
        return short
    missing = np.zeros(query.shape[0], dtype=bool)
    inside = np.zeros(m, dtype=bool)
    for pick in picks:
        inside[:] = False
        inside[pick] = True
        missing |= ~inside[short.idx].any(axis=1)
    pad = wide - first
    idx = np.concatenate([short.idx, np.repeat(short.idx[:, -1:], pad, axis=1)], axis=1)
    dist = np.concatenate([short.dist, np.repeat(short.dist[:, -1:], pad, axis=1)], axis=1)
    rows = np.flatnonzero(missing)
    if rows.size:
        long = (wide_search or search)(query, target, wide, rows=rows)
        idx[rows], dist[rows] = long.idx, long.dist
    return Neighbours(dist, idx, short.search)


def nearest_in_part(lists: Neighbours, rows: np.ndarray, part_pos: np.ndarray, fallback) -> tuple[np.ndarray, int]:
    """Distance from each record ``rows[i]`` of a set to its nearest record of a part of the same
    set, read from the exact sorted k nearest *other* records of every record (``lists``, ties →
    lowest index) — the value an exact search of the query against the part alone returns
    (``knn``: ties within the tolerance of the minimum go to the lowest position in the part,
    and the distance of the chosen record is returned). ``part_pos``: each record's position in
    the part (−1 outside). A row is decided by its list when it holds a record of the part and its
    k-th distance lies beyond the tolerance band of the part's nearest listed distance (then no
    unlisted record can be nearer or tied); the other rows get ``fallback(positions in rows)``.
    Returns (distances, rows searched again)."""
    d, i = lists.dist[rows], lists.idx[rows]
    pos = part_pos[i]
    inside = pos >= 0
    near = np.where(inside, d, np.inf).min(axis=1)
    last = d[:, -1]
    with np.errstate(invalid="ignore"):
        decided = inside.any(axis=1) & (last - near > REL_TOL * (1.0 + np.maximum(np.abs(last), np.abs(near))))
        band = inside & (d - near[:, None] <= REL_TOL * (1.0 + np.maximum(np.abs(d), np.abs(near)[:, None])))
    first = np.where(band, pos, np.iinfo(np.int64).max).argmin(axis=1)
    out = d[np.arange(rows.size), first]
    rest = np.flatnonzero(~decided)
    if rest.size:
        out[rest] = fallback(rest)
    return out, int(rest.size)


def proximity_from_ratios(ttpr: np.ndarray, tspr: np.ndarray, alpha: float) -> tuple[float, dict]:
    """The score (0..100) from the two ratio distributions of the same R1 records."""
    score, t, share_tt, share_ts = _score_rows(ttpr[None, :], tspr[None, :], alpha)
    return float(score[0]), {
        "threshold": float(t[0]),
        "share_ttpr_below": float(share_tt[0]),
        "share_tspr_below": float(share_ts[0]),
    }


def _score_rows(
    ttpr: np.ndarray, tspr: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of (b, h) blocks of ratios: (score, threshold t, share(TTPR < t), share(TSPR < t))."""
    t, share_tt = _threshold_rows(ttpr, alpha)
    share_ts = lt(tspr, t[:, None]).mean(axis=1)
    return _score_from_shares(share_tt, share_ts), t, share_tt, share_ts


def _threshold_rows(ttpr: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a (b, h) block of TTPRs: (threshold t = linear α-quantile, share(TTPR < t))."""
    t = _quantile_rows(ttpr, alpha)
    return t, lt(ttpr, t[:, None]).mean(axis=1)


def _quantile_rows(ttpr: np.ndarray, alpha: float) -> np.ndarray:
    """Per row of a (b, h) block of TTPRs: the threshold t = linear α-quantile."""
    with np.errstate(invalid="ignore"):
        t = np.quantile(ttpr, alpha, axis=1, method="linear")
    return np.where(np.isnan(t), np.inf, t)  # interpolation between two infinite ratios


class _RankedRatios:
    """One set of ratios (≥ 0, possibly ∞) sorted once, for the share of a resample below
    thresholds: ``lt(ratios[idx], t[:, None]).mean(axis=1)`` by integer comparisons. For ratios
    ≥ 0, lt(v, t) holds for every value below one for which it holds (v < t by more than the
    tolerance of t, which does not depend on v), so the values below t are the first c of the sorted
    ratios — c found by a binary search with lt itself — and a ratio is below t exactly when the
    sorted position of its first copy is below c: the same booleans, so the same shares."""

    def __init__(self, ratios: np.ndarray) -> None:
        self.sorted = np.sort(ratios)
        self.rank = np.searchsorted(self.sorted, ratios, side="left").astype(np.int32)

    def count_below(self, t: np.ndarray) -> np.ndarray:
        """Per threshold: how many of the ratios are below it (tolerant, privgate.ties.lt)."""
        n = self.sorted.size
        lo, hi = np.zeros(t.size, dtype=np.int64), np.full(t.size, n, dtype=np.int64)
        while (open_rows := lo < hi).any():
            mid = (lo + hi) // 2
            below = lt(self.sorted[np.minimum(mid, n - 1)], t)
            lo = np.where(open_rows & below, mid + 1, lo)
            hi = np.where(open_rows & ~below, mid, hi)
        return lo

    def share_below(self, idx: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Per row of a (b, h) block of resampled positions: share(ratios[idx] < t[row])."""
        below = self.rank[idx] < self.count_below(t)[:, None]
        return np.count_nonzero(below, axis=1) / idx.shape[1]


def _score_from_shares(share_tt: np.ndarray, share_ts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            share_ts == 0.0, 100.0, 100.0 * np.minimum(1.0, share_tt / np.where(share_ts == 0.0, 1.0, share_ts))
        )


def _bootstrap_values(ratios: list[tuple[np.ndarray, np.ndarray]], alpha: float):
    """The batched bootstrap statistic of the value: 1 − (mean score over the repetitions)/100 for
    a (b, h) block of resampled R1 positions. Repetitions that share one TTPR array (the release
    is the subsampled side: R2 is whole in every repetition) share its resampled threshold, which
    is computed once per block instead of once per repetition — the same numbers, a tenth of the
    quantiles."""
    ranked = {id(x): _RankedRatios(x) for pair in ratios for x in pair}

    def statistic(idx: np.ndarray) -> np.ndarray:
        thresholds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        scores = []
        for tt, ts in ratios:
            if id(tt) not in thresholds:
                t = _quantile_rows(tt[idx], alpha)
                thresholds[id(tt)] = t, ranked[id(tt)].share_below(idx, t)
            t, share_tt = thresholds[id(tt)]
            scores.append(_score_from_shares(share_tt, ranked[id(ts)].share_below(idx, t)))
        return 1.0 - np.mean(scores, axis=0) / 100.0

    return statistic


def scored_share(sizes: QuerySizes) -> float:
    """The share of the real records proximity_score scores (the memory guard's
    ``memory_share``): at most ``MAX_SCORED_ROWS`` of the half it scores."""
    return min(1.0, MAX_SCORED_ROWS / max(sizes.n_real / 2, 1))


@register_metric(
    family="re-identification",
    attack="synthetic records closer to training records than fresh real records would be",
    reference=PAPER,
    orientation="value = 1 − score/100, score = 100·min(1, share(TTPR < t)/share(TSPR < t)); "
    "a copy scores about 0.82, not 1",
    spaces=("mixed",),
    memory_cost=4.0,
    memory_share=scored_share,
)
def proximity_score(
    ctx, *, alpha: float = 0.1, repetitions: int = 10, seed: int | None = None, max_rows: int | None = MAX_SCORED_ROWS
) -> MetricResult:
    """Proximity (privacy) score: TTPR = d(r, R2)/d(r, nearest other in R1) and TSPR = d(r, S)/d(r,
    nearest other in R1) for r in R1, the halves R1 (first ⌊n/2⌋ of a permutation seeded by
    ``seed``, default the context's) and R2; S and R2 size-matched by subsampling the larger
    without replacement (``repetitions`` seeded draws, mean score; one draw when the sizes are
    equal); t = linear α-quantile of TTPR; score = 100·min(1, share(TTPR < t)/share(TSPR < t)),
    100 when no TSPR is below t; ratios 0/0 → 1, x/0 → ∞; comparisons with t tolerant (privgate.ties).

    ``max_rows``: the R1 records whose ratios are computed — all of them when R1 has at most this
    many, else a seeded simple random sample of this many (the first ``max_rows`` of R1's seeded
    order); None: all. Every distance is still to the whole R1, R2 and release, so the search
    costs ``max_rows`` × (n + m) pairs instead of n/2 × (n + m): linear in the sizes. The sample's
    error is in the interval (the bootstrap resamples the scored records; the finite-population
    correction is ignored, which only widens it) and ``details["sampled"]`` says so.

    Orientation: risk (value = 1 − score/100); raw = score (100 = no significant risk).
    By definition a copy scores below 1 (≈ 0.82): see the module docstring.
    """
    seed = _checked_options(alpha, repetitions, seed if seed is not None else ctx.seed, max_rows)
    ctx.require_rows("real", 4, "proximity_score (two halves of at least 2 records)")
    hv = _Halves.of(ctx, seed, max_rows)
    size = min(hv.r2.shape[0], hv.m)
    if hv.r2.shape[0] == hv.m:
        subsampled, reps = None, 1
    else:
        subsampled, reps = ("real_half" if hv.r2.shape[0] > hv.m else "synthetic"), repetitions
    lists = _real_lists(ctx, hv)
    d_own, full_tt, searched_again = _half_distances(ctx, hv, lists, subsampled)
    # d(r, S) for r in R1 is part of the real → synthetic search the distance metrics share
    full_ts = None if subsampled == "synthetic" else proximity_ratio(_to_release(ctx, hv), d_own)
    if subsampled:
        d_subs = _subsample_distances(ctx, hv, subsampled, size, reps)
        if subsampled == "real_half":
            ratios = [(proximity_ratio(d_sub, d_own), full_ts) for d_sub in d_subs]
        else:
            ratios = [(full_tt, proximity_ratio(d_sub, d_own)) for d_sub in d_subs]
    else:
        ratios = [(full_tt, full_ts)]
    scored = [proximity_from_ratios(ttpr, tspr, alpha) for ttpr, tspr in ratios]
    scores, per_rep = [score for score, _ in scored], [info for _, info in scored]
    ttpr, tspr = ratios[-1]
    details = {
        "matched_size": int(size),
        "subsampled": subsampled,
        "halves_from_real_search": lists is not None,
        "rows_searched_again": searched_again,
        "score_per_repetition": scores,
        "per_repetition": per_rep,
        "ttpr": quantile_summary(ttpr),
        "tspr": quantile_summary(tspr),
    }
    return _proximity_result(
        ctx,
        hv,
        scores,
        details=details,
        ratios=ratios,
        params={"alpha": alpha, "repetitions": reps, "seed": int(seed), "max_rows": max_rows},
    )


def _subsample_distances(ctx, hv: "_Halves", subsampled: str, size: int, reps: int) -> list[np.ndarray]:
    """Per repetition, each scored record's distance to its nearest record of a seeded subsample
    of ``size`` records of the larger side (``subsampled``: R2, ``"real_half"``, or the release)."""
    big = hv.r2 if subsampled == "real_half" else hv.syn
    # the seeded subsamples, drawn in order before any is resolved (the same draws as one by one)
    picks = [np.sort(hv.rng.choice(big.shape[0], size, replace=False)) for _ in range(reps)]
    named = f"proximity_score mixed first half→{subsampled}"
    candidates = subset_candidates(
        hv.q1,
        big,
        picks,
        _named(ctx, f"{named} candidates"),
        SUBSET_FIRST_CANDIDATES,
        SUBSET_CANDIDATES,
        _named(ctx, f"{named} long candidates"),
    )
    # a subsample's search again (the rows none of whose candidates it holds: with half-size
    # subsamples a handful) goes straight to the blocked search below GROUPED_FROM_ROWS rows: the
    # grouped search would first compute the whole subsample's category codes (100,000 Texas-like
    # rows: ~0.06 CPU-s a subsample, for 1 or 2 rows); every path gives the same answers
    again = _named(ctx, f"{named} subsample", GROUPED_FROM_ROWS)
    # a few seeded subsamples, each resolved with vectorised look-ups
    return [nearest_in_subset(hv.q1, big, pick, candidates, again) for pick in picks]


def _checked_options(alpha: float, repetitions: int, seed: int, max_rows: int | None) -> int:
    """proximity_score's options checked; returns the seed."""
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"proximity_score alpha must be in (0, 1); got {alpha!r}")
    if isinstance(repetitions, bool) or not isinstance(repetitions, (int, np.integer)) or repetitions < 1:
        raise ParameterError(f"proximity_score repetitions must be an integer ≥ 1; got {repetitions!r}")
    check_work_bound("proximity_score", "repetitions", repetitions, MAX_REPETITIONS)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ParameterError(f"proximity_score seed must be an integer; got {seed!r}")
    if max_rows is not None and (
        isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 2
    ):
        raise ParameterError(f"proximity_score max_rows must be an integer ≥ 2 or None; got {max_rows!r}")
    return seed


@dataclass
class _Halves:
    """The seeded split of the real records into R1 and R2, and R1's scored records."""

    space: EncodedSpace
    syn: np.ndarray
    n: int
    m: int
    rng: np.random.Generator
    perm: np.ndarray
    h: int
    s: int
    r1: np.ndarray
    r2: np.ndarray

    @classmethod
    def of(cls, ctx, seed: int, max_rows: int | None) -> "_Halves":
        space = ctx.mixed()
        real, syn = space.real, space.synthetic
        n = real.shape[0]
        rng = seeds.rng(seed, "proximity.halves")
        perm = rng.permutation(n)
        h = n // 2
        # the scored records: R1's first s (R1 is a seeded random half, so they are a seeded simple
        # random sample of it); every distance is still to the whole R1, R2 and release
        s = h if max_rows is None else min(h, int(max_rows))
        return cls(space, syn, n, syn.shape[0], rng, perm, h, s, real[perm[:h]], real[perm[h:]])

    @property
    def scored(self) -> np.ndarray:
        return self.perm[: self.s]

    @property
    def q1(self) -> np.ndarray:
        return self.r1[: self.s]

    def part_positions(self, half: int) -> np.ndarray:
        """Each real record's position in half ``half`` (0: R1, 1: R2), −1 outside it."""
        halves = np.empty(self.n, dtype=np.int64)
        halves[self.perm[: self.h]], halves[self.perm[self.h :]] = 0, 1
        position = np.empty(self.n, dtype=np.int64)
        position[self.perm[: self.h]], position[self.perm[self.h :]] = np.arange(self.h), np.arange(self.n - self.h)
        return np.where(halves == half, position, -1)


def _named(ctx, name: str, grouped_from: int = 0) -> MatrixSearch:
    """The context's search of rows of the mixed space (settled inside categorical groups first
    when it has at least ``grouped_from`` query rows), reported as ``name``."""
    slices = ctx.mixed().categorical_slices
    coded = ctx.mixed().coded_columns  # always given: the coded coordinates are compared as equal or not

    def search(
        query: np.ndarray, target: np.ndarray, k: int = 1, *, exclude_self: bool = False, rows: np.ndarray | None = None
    ) -> Neighbours:
        n = query.shape[0] if rows is None else len(rows)
        return ctx.search(
            query,
            target,
            k,
            name=name,
            exclude_self=exclude_self,
            rows=rows,
            categorical_slices=slices if n >= grouped_from else None,
            coded_columns=coded,
        )

    return search


def _real_lists(ctx, hv: "_Halves") -> tuple[Neighbours, np.ndarray] | None:
    """The exact real → real k-lists (k = the jackknife's) of the scored records and each scored
    record's row in them, or None when there are too few records or the lists are not exact.
    Every R1 record scored: the whole search the distance metrics share. A sample scored: the
    scored rows' lists only (sliced from the whole search when it is cached), and none when that
    search would be screened and is not made yet — its rows would be searched again on the half
    anyway (a whole exact search another metric made is read: in a full evaluation at 100,000
    rows only the rows its 2-lists leave undecided are searched on the halves)."""
    settings = resolve_settings(None)
    k = settings.jackknife_k
    if hv.n <= k:
        return None
    if hv.s == hv.h:
        lists, rows = ctx.neighbours("mixed", "real", "real", k), hv.scored
    elif (
        ctx.exact
        or hv.s * hv.n <= settings.exact_below_pairs
        or ctx.has_neighbours("mixed", "real", "real", k, exact=True)
    ):
        lists, rows = ctx.neighbours("mixed", "real", "real", k, rows=hv.scored), np.arange(hv.s)
    else:
        return None
    return (lists, rows) if lists.exact else None


def _to_release(ctx, hv: "_Halves") -> np.ndarray:
    """d(r, S) of the scored records: from the real → synthetic search the distance metrics
    share when every R1 record is scored, else a search of the scored rows only (sliced from the
    whole search when it is cached) — so a sample keeps the cost linear in the release."""
    if hv.s == hv.h:
        return ctx.neighbours("mixed", "real", "synthetic", 1).dist[hv.scored, 0]
    return ctx.neighbours("mixed", "real", "synthetic", 1, rows=hv.scored).dist[:, 0]


def _half_distances(
    ctx, hv: _Halves, lists: tuple[Neighbours, np.ndarray] | None, subsampled: str | None
) -> tuple[np.ndarray, np.ndarray | None, dict]:
    """d(r, R1 \\ {r}) and TTPR = d(r, R2)/d(r, R1 \\ {r}) of the scored records (None when R2 is
    the subsampled side), from the real → real k-lists where they decide a row (the rest are
    searched on the half), else searched here; and how many rows were searched again."""
    own, other = (
        _named(ctx, "proximity_score mixed first half→first half"),
        _named(ctx, "proximity_score mixed first half→second half"),
    )
    searched_again = {}
    if lists is not None:
        d_own, searched_again["own_half"] = nearest_in_part(
            *lists, hv.part_positions(0), lambda rest: own(hv.r1, hv.r1, 1, exclude_self=True, rows=rest).dist[:, 0]
        )
    elif hv.s == hv.h:
        d_own = own(hv.r1, hv.r1, 1, exclude_self=True).dist[:, 0]
    else:
        d_own = own(hv.r1, hv.r1, 1, exclude_self=True, rows=np.arange(hv.s)).dist[:, 0]
    if subsampled == "real_half":
        return d_own, None, searched_again
    if lists is not None:
        d_r2, searched_again["other_half"] = nearest_in_part(
            *lists, hv.part_positions(1), lambda rest: other(hv.q1, hv.r2, 1, rows=rest).dist[:, 0]
        )
        return d_own, proximity_ratio(d_r2, d_own), searched_again
    return d_own, proximity_ratio(other(hv.q1, hv.r2, 1).dist[:, 0], d_own), searched_again


def _proximity_result(
    ctx, hv: _Halves, scores: list[float], *, details: dict, ratios: list, params: dict
) -> MetricResult:
    """The metric's result: mean score, details, and the bootstrap interval over R1's scored
    records."""
    score = float(np.mean(scores))
    s, h = hv.s, hv.h
    res = result(
        ctx,
        "proximity_score",
        1.0 - score / 100.0,
        score,
        "privacy score 0..100 (100 = synthetic records no closer to R1 than the other real half)",
        params=params,
        details={
            "n_half_1": int(h),
            "n_half_2": int(hv.n - h),
            "matched_size": details.pop("matched_size"),
            "n_scored": int(s),
            **details,
            "mean_imputed": hv.space.details.get("mean_imputed", {}),
        },
    )
    if s < h:
        res.details["sampled"] = {
            "n": int(s),
            "of": int(h),
            "seed": params["seed"],
            "method": "seeded simple random sample of the first real half's records (distances to every record)",
        }
    # the same resampled R1 records for every repetition; ratios (the searches) held fixed
    what = (
        "records of the first real half (ratios held fixed, one resample for all repetitions)"
        if s == h
        else f"sampled records of the first real half ({s} of {h}; ratios held fixed, one resample for all "
        "repetitions; finite-population correction ignored)"
    )
    return set_bootstrap_ci(res, ctx, _bootstrap_values(ratios, params["alpha"]), int(s), what=what)
