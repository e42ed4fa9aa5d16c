"""The scale-free part of the label-free view: each numeric release column brought back to the
reference's scale by the invertible map the records themselves show, or refused when it is on a
scale no real data could have and no map explains it.

A copy of the training data whose numeric columns were scaled (×1000), shifted (+7), negated,
standardised and never de-standardised, or put through a non-linear monotone map (log, a power)
keeps every record — only the units changed — yet every metric that measures distances on the
values sees records far from all real data, and calls the copy *more* private than an honest
release. This module learns, per numeric column, a map from release values to reference values
(the training records, pooled with the holdout when there is one — a symmetric function of the
two sets, as memorisation's null needs):

1. **Anchors in a scale- and label-free view.** Every record is encoded by the per-side rank of
   each numeric value (its mid-rank in its own frame over that frame's size: any increasing map
   leaves it unchanged) and the share of each categorical level in its own frame (a relabelling
   keeps it). A column whose anchored ranks run against the reference's (rank correlation below
   ``RANK_AGAINST``) is taken as decreasing, its ranks flipped and the records anchored again; a
   column off the reference's scale (step 3) is judged from anchors searched in the view without
   it, whose own ranks would line any release up with the reference.
   At most ``MAP_ANCHOR_ROWS`` records of the view's seeded sample (every k-th) are searched
   against every reference record (the project's neighbour engine, ``ctx.search``): a map needs
   tens of supporting pairs, not thousands, and each anchor costs a pass over the reference.
2. **Maps the anchors support.** Per column, the anchored (release value, reference value) pairs
   vote: every affine map through two anchored pairs (a seeded draw of ``AFFINE_DRAWS``) is
   supported by the pairs it sends onto each other within the tie tolerance, and the best one is
   refitted on its supporters; on a column of few values it must join at least three of them (a
   line passes through any two). Among the pairs on which it and the identity disagree, it is taken
   (scale, shift, sign, standardisation) when it is supported by at least ``MIN_MAP_SUPPORT``
   pairs and ``MAP_SHARE`` of them and by far more than the identity (``IDENTITY_MARGIN``), and
   when it brings the release marginal nearer the reference's than the identity leaves it (a
   lattice of values, such as integers, gives a shift by one step the support of poorly anchored
   pairs, never a nearer marginal): a copy puts
   every correctly anchored pair on one line, an honest release puts none beyond chance. When
   no affine map is supported but the column is suspect (off the reference's scale, step 3, or
   far from its marginal), a monotone
   map — the reference quantile at each release value's rank — is taken when, among the pairs
   anchored in the view without that column (its own ranks would line any release up), at least
   ``MIN_MAP_SUPPORT`` and ``MAP_SHARE`` have per-side ranks within ``RANK_TOL`` (a copy under
   log or a power: its correctly anchored pairs; chance gives about 2·``RANK_TOL``); affine images
   are snapped to the nearest reference value within the tie tolerance of the column's scale.
3. **No silent pass on a foreign scale.** A release column, after its map, is *off* the
   reference's scale when at least ``FOREIGN_MIN`` values (and ``FOREIGN_SHARE`` of them) lie
   more than one real range outside the real range, or when at least ``OUTSIDE_SHARE`` of its
   values lie outside the real range widened by ``MARGIN``, or when its standard deviation is
   ``SPREAD_FACTOR`` times the real one's or less than its ``1/SPREAD_FACTOR`` (a log compresses
   a wide column into a corner of its range) — a scale test, not a shape test: a uniform, noisy
   or DP release inside the real range is on the scale however unlike its marginal is. A column is
   *searched* for a monotone map (step 2) more widely: also when its marginal is at least
   ``SUSPECT_KS`` from the reference's (two-sample Kolmogorov–Smirnov), as a log inside the range
   leaves it. Distances on an off column would make its records look far from every real one, so
   it never enters the view as it is:

   * a column whose **bulk** is off (most values outside the real range, or its spread
     compressed into a corner: :attr:`ScaleCheck.bulk_off`) — what a unit change does to a whole
     column, and no honest generator — is refused by name (:class:`ForeignScaleError`), which a
     gate reports as a block, never a pass;
   * a column off only in its **tails** (values far beyond the real range, a spread those values
     inflate) is **left out of the view** (:func:`check_scales`). Both a disguise of a minority of
     the records (×1000 on 1 % of them) and an honest generator that samples a published domain
     wider than the training records' range (a DP release of heavy-tailed charges) do that; the
     view without the column still holds a copied record as a copy on its other columns, which
     only removing a column's differences can make nearer to its source, never farther.

A release on the reference's scale gets the identity on every column, and the label-free view is
then exactly what it was without this step. What it cannot see: a map applied to a minority of
the records that leaves their values inside the real range (a shift of a few percent of the
records), which no whole-column map and no range explains, and a column whose disguise also
destroyed the ranks (values permuted between records) — that is no invertible map of a column.

Nothing here reports a value: descriptions carry column positions, counts and map kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from . import seeds
from ._lazy import lazy_module
from .errors import InputError
from .level_classes import level_shares
from .schema import Schema
from .ties import REL_TOL

MAP_ANCHOR_ROWS = 500  # release records anchored for the maps (evenly from the view's seeded sample)
MIN_MAP_SUPPORT = 10  # anchored pairs a map needs before it replaces the identity ...
MAP_SHARE = 0.2  # ... and this share of the anchored pairs ...
IDENTITY_MARGIN = 3.0  # ... and this many times the identity's support (plus MIN_MAP_SUPPORT)
AFFINE_DRAWS = 256  # affine maps drawn through two anchored pairs each (seeded)
RANK_TOL = 0.02  # a monotone map's supporting pair: per-side ranks this close (chance: about 4 %)
RANK_AGAINST = -0.3  # anchored rank correlation below this: the column runs against the reference
FOREIGN_MIN = 3  # values beyond one real range outside the real range before a column is foreign
FOREIGN_SHARE = 0.001  # ... and this share of the column's values
OUTSIDE_SHARE = 0.5  # a column with this share of its values outside the real range is off its scale ...
MARGIN = 0.1  # ... the range widened by this share of its width on each side
SPREAD_FACTOR = 100.0  # a column whose standard deviation is this many times the real one's (or 1/it) is off
SUSPECT_KS = 0.5  # a marginal this far (Kolmogorov–Smirnov) from the reference's is searched for a map
KS_SAMPLE = 50_000  # values per side the suspect test's distance is computed on (evenly strided)
SNAP_TOL = 1e-7  # an affine image within this × (1 + the column's scale) of a reference value is it


_stats = lazy_module("scipy.stats")  # imported on first use (import time)


class ForeignScaleError(InputError):
    """A release column is on a scale no real data could have, and no invertible map learnt from
    the records explains it (``column``: its name)."""

    def __init__(self, message: str, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


@dataclass(frozen=True)
class NumericMap:
    """Release value → reference value for one column: ``kind`` "affine" (a·v + b) or
    "monotone" (the reference quantile at the release value's rank, ``decreasing`` flipped)."""

    kind: str
    a: float = 1.0
    b: float = 0.0
    decreasing: bool = False
    support: int = 0
    anchored: int = 0

    def describe(self) -> dict:
        """Kind, direction and support (counts): never a value or a coefficient."""
        return {
            "kind": self.kind,
            "decreasing": bool(self.decreasing or self.a < 0),
            "supporting_anchors": self.support,
            "anchored": self.anchored,
        }


@dataclass(frozen=True)
class ScaleCheck:
    """Why a column is off the reference's scale: values far beyond the real range, or most
    values outside it."""

    beyond_range: int
    outside_share: float
    spread_ratio: float = 1.0

    @property
    def off(self) -> bool:
        return (
            self.beyond_range > 0
            or self.outside_share >= OUTSIDE_SHARE
            or not 1.0 / SPREAD_FACTOR <= self.spread_ratio <= SPREAD_FACTOR
        )

    @property
    def bulk_off(self) -> bool:
        """The column's bulk is off the real scale: most values outside the real range, or the
        spread compressed into a corner of it (a log) — what a unit change does to a whole column
        and no honest generator does. Far tails alone (values beyond the real range, a spread
        inflated by them) are not the bulk: a generator that samples a published domain wider
        than the training records' range puts some values there."""
        return self.outside_share >= OUTSIDE_SHARE or self.spread_ratio < 1.0 / SPREAD_FACTOR


def _finite(s: pl.Series) -> np.ndarray:
    v = s.cast(pl.Float64).to_numpy()
    return v[np.isfinite(v)]


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov–Smirnov distance: the largest gap between the two empirical
    distribution functions (0 for the same marginal, 1 for disjoint ones)."""
    if a.size == 0 or b.size == 0:
        return 0.0
    # SciPy's statistic, as the kolmogorov_smirnov metric computes it (the asymptotic method
    # skips the exact p-value, which the statistic does not depend on)
    return float(_stats.ks_2samp(a, b, method="asymp").statistic)


def suspect(release: np.ndarray, reference: np.ndarray) -> bool:
    """A column worth a search for a monotone map: its bulk off the reference's scale, or a
    marginal at least ``SUSPECT_KS`` from the reference's (a log squeezes a column inside its
    range; so does nothing an honest generator does, but a poor one may — the records decide). A
    column off only in its tails is not: a whole-column map would bend the honest majority's
    values to explain a minority's (``privgate.tail_maps`` maps those records alone)."""
    if scale_check(release, reference).bulk_off:
        return True
    # an evenly strided subsample of each side: the distance to ±0.01, far inside the threshold's
    # margin, at a fraction of the sorts of millions of values
    return (
        ks_distance(release[:: max(1, release.size // KS_SAMPLE)], reference[:: max(1, reference.size // KS_SAMPLE)])
        >= SUSPECT_KS
    )


def scale_check(release: np.ndarray, reference: np.ndarray) -> ScaleCheck:
    """How far the finite ``release`` values are from the ``reference`` values' scale: the number
    of values beyond one real range (or four real standard deviations, the wider) outside the
    real range, when there are at least ``FOREIGN_MIN`` and ``FOREIGN_SHARE`` of them (else 0),
    the share of values outside the real range widened by ``MARGIN`` of it on each side, and the
    ratio of the two standard deviations — a scale, not a shape: a uniform or noisy release
    inside the real range is on it."""
    if release.size == 0 or reference.size == 0:
        return ScaleCheck(0, 0.0)
    lo_w, hi_w, lo_p, hi_p = scale_bounds(float(reference.min()), float(reference.max()), float(reference.std()))
    beyond = int(np.count_nonzero((release < lo_w) | (release > hi_w)))
    outside = int(np.count_nonzero((release < lo_p) | (release > hi_p)))
    sd_s = settled_std(float(release.std()), float(np.abs(release).max()))
    sd_r = settled_std(float(reference.std()), float(np.abs(reference).max()))
    return scale_result(int(release.size), beyond, outside, sd_s, sd_r)


def settled_std(sd: float, magnitude: float) -> float:
    """A standard deviation, 0 when it is below the rounding of values of this ``magnitude``: a
    constant column's computed deviation is 0 or a few ulps of its value depending on how its
    mean was summed (0.1 × 1500 gives 0, × 2000 gives 1.4e-17), and the ratio of two such
    rounding residues would put one constant column off the other's scale."""
    return 0.0 if sd <= REL_TOL * (1.0 + magnitude) else sd


def scale_bounds(lo: float, hi: float, sd_r: float) -> tuple[float, float, float, float]:
    """The bounds :func:`scale_check` counts release values outside of, from the reference's
    minimum, maximum and standard deviation: (lower, upper) one real range (or four standard
    deviations) beyond the real range, and (lower, upper) of the range widened by ``MARGIN``."""
    width = max(hi - lo, 4.0 * sd_r, REL_TOL * (1.0 + abs(lo) + abs(hi)))
    pad = MARGIN * max(hi - lo, REL_TOL * (1.0 + abs(lo) + abs(hi)))
    return lo - width, hi + width, lo - pad, hi + pad


def scale_result(n: int, beyond: int, outside: int, sd_s: float, sd_r: float) -> ScaleCheck:
    """The :class:`ScaleCheck` of ``n`` release values of which ``beyond`` lie outside the far
    bounds and ``outside`` outside the widened range (:func:`scale_bounds`), with the two
    standard deviations (each 0 below its values' rounding, :func:`settled_std`)."""
    if beyond < max(FOREIGN_MIN, FOREIGN_SHARE * n):
        beyond = 0
    ratio = 1.0 if sd_s == sd_r else (sd_s / sd_r if sd_r > 0 else np.inf)
    return ScaleCheck(beyond, float(outside) / n, ratio)


def _ranks(s: pl.Series) -> np.ndarray:
    """Mid-rank of each value over the frame's size, in (0, 1); a null is 0.5."""
    n = max(s.len(), 1)
    r = s.rank("average").cast(pl.Float64).to_numpy()
    return np.where(np.isnan(r), 0.5, (r - 0.5) / n)


def counted_mid_ranks(below: np.ndarray, equal: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """:func:`_ranks` from counts: the mid-rank over a frame's size ``n`` of values with ``below``
    values of that frame under them and ``equal`` equal to them (a null, NaN in ``values``: 0.5)
    — what ``_ranks`` gives a value of the frame itself, for a value from elsewhere."""
    r = below + (equal + 1) / 2.0
    return np.where(np.isnan(values), 0.5, (r - 0.5) / max(n, 1))


def _view(frame: pl.DataFrame, schema: Schema, flip: set[str]) -> np.ndarray:
    """Per-side ranks (flipped for the columns of ``flip``: the release's decreasing ones) of the
    numerics and shares of the categoricals."""
    parts = []
    for c in schema.numeric:
        r = _ranks(frame.get_column(c))
        parts.append((1.0 - r) if c in flip else r)
    out = np.column_stack(parts) if parts else np.empty((frame.height, 0))
    if schema.categorical:
        out = np.hstack([out, level_shares(frame, list(schema.categorical)).to_numpy()])
    return out


def _standardised(q: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, sd = t.mean(axis=0), t.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (
        np.ascontiguousarray((q - mean) / sd, dtype=np.float32),
        np.ascontiguousarray((t - mean) / sd, dtype=np.float32),
    )


def _anchor_pairs(
    ctx, release: pl.DataFrame, reference: pl.DataFrame, schema: Schema, rows: np.ndarray, flip: set[str], name: str
) -> np.ndarray:
    """The reference row nearest each sampled release row in the scale- and label-free view."""
    q, t = _standardised(_view(release, schema, flip)[rows], _view(reference, schema, set()))
    return ctx.search(q, t, 1, name=name).idx[:, 0]


def _tolerance(ref: np.ndarray) -> float:
    return SNAP_TOL * (1.0 + float(np.abs(ref).max()) if ref.size else 1.0)


def _affine(s: np.ndarray, r: np.ndarray, tol: float, rng: np.random.Generator) -> tuple[float, float, int]:
    """The affine map a·s + b through two anchored pairs that sends the most pairs onto each
    other within ``tol`` (seeded draws), refitted on its supporters: (a, b, support)."""
    m = s.size
    if m < 2:
        return 1.0, 0.0, 0
    i, k = rng.integers(0, m, AFFINE_DRAWS), rng.integers(0, m, AFFINE_DRAWS)
    ok = (s[i] != s[k]) & (r[i] != r[k])
    i, k = i[ok], k[ok]
    if i.size == 0:
        return 1.0, 0.0, 0
    a = (r[i] - r[k]) / (s[i] - s[k])
    b = r[i] - a * s[i]
    support = (np.abs(a[:, None] * s[None, :] + b[:, None] - r[None, :]) <= tol).sum(axis=1)
    best = int(np.argmax(support))
    a0, b0, n0 = float(a[best]), float(b[best]), int(support[best])
    on = np.abs(a0 * s + b0 - r) <= tol
    if on.sum() >= 2 and np.ptp(s[on]) > 0:  # least squares on the supporters: the rounding of two pairs averaged out
        a1, b1 = np.polyfit(s[on], r[on], 1)
        n1 = int((np.abs(a1 * s + b1 - r) <= tol).sum())
        if n1 >= n0:
            return float(a1), float(b1), n1
    return a0, b0, n0


def _marginal_gap(release: np.ndarray, reference: np.ndarray) -> float:
    """The mean absolute difference of the two marginals' percentiles (a 1-Wasserstein distance)."""
    if release.size == 0 or reference.size == 0:
        return 0.0
    p = np.linspace(0.005, 0.995, 100)
    return float(np.abs(np.quantile(release, p) - np.quantile(reference, p)).mean())


def _rank_correlation(s: np.ndarray, r: np.ndarray) -> float:
    if s.size < 3:
        return 0.0
    rs = pl.Series(s).rank("average").to_numpy()
    rr = pl.Series(r).rank("average").to_numpy()
    if rs.std() == 0 or rr.std() == 0:
        return 0.0
    return float(np.corrcoef(rs, rr)[0, 1])


def _column_pairs(
    release: pl.DataFrame, reference: pl.DataFrame, c: str, rows: np.ndarray, anchor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The finite (release value, anchored reference value) pairs of column ``c``."""
    s = release.get_column(c).cast(pl.Float64).to_numpy()[rows]
    r = reference.get_column(c).cast(pl.Float64).to_numpy()[anchor]
    ok = np.isfinite(s) & np.isfinite(r)
    return s[ok], r[ok]


def learn_numeric_maps(
    ctx, release: pl.DataFrame, reference: pl.DataFrame, rows: np.ndarray, *, name: str
) -> dict[str, NumericMap]:
    """Per numeric column of ``ctx.schema`` whose release values are not the reference's as they
    are, the map that brings them back (both frames normalised; ``rows``: the sampled release
    rows of the label-free view; every ``len(rows) / MAP_ANCHOR_ROWS``-th of them is anchored).
    Columns absent from the result keep their values."""
    schema: Schema = ctx.schema
    num = list(schema.numeric)
    if not num:
        return {}
    rows = rows[:: max(1, -(-rows.size // MAP_ANCHOR_ROWS))]
    values = {c: (_finite(release.get_column(c)), _finite(reference.get_column(c))) for c in num}
    off = [c for c in num if suspect(*values[c])]
    flip = _off_scale_flips(ctx, release, reference, rows, off, name)
    flip, anchor = _anchors_with_directions(ctx, release, reference, rows, flip, name)
    rng = seeds.rng(ctx.seed, "label_free.maps")
    maps: dict[str, NumericMap] = {}
    for c in num:
        s, r = _column_pairs(release, reference, c, rows, anchor)
        found = _affine_map(s, r, values[c], rng)
        others = [o for o in schema.columns if o != c]
        if found is None and c in off and others:
            found = _monotone_map(ctx, release, reference, rows, c, flip, name)
        if found is not None:
            maps[c] = found
    return maps


def _off_scale_flips(
    ctx, release: pl.DataFrame, reference: pl.DataFrame, rows: np.ndarray, off: list[str], name: str
) -> set[str]:
    """The off-scale columns whose values run against the reference's, judged from anchors that
    never saw an off-scale column (their own ranks would line any release up, and an unflipped
    decreasing one misleads): the on-scale columns', else each column's others'."""
    schema: Schema = ctx.schema
    on_scale = [c for c in schema.columns if c not in off]
    flip: set[str] = set()
    if off and on_scale:
        anchor = _anchor_pairs(
            ctx, release, reference, schema.subset(on_scale), rows, set(), f"{name}, on-scale columns"
        )
        flip = {c for c in off if _rank_correlation(*_column_pairs(release, reference, c, rows, anchor)) < RANK_AGAINST}
    elif off:
        for c in off:
            others = [o for o in schema.columns if o != c]
            if others:
                anchor = _anchor_pairs(
                    ctx, release, reference, schema.subset(others), rows, set(), f"{name}, without a column"
                )
                if _rank_correlation(*_column_pairs(release, reference, c, rows, anchor)) < RANK_AGAINST:
                    flip.add(c)
    return flip


def _anchors_with_directions(
    ctx, release: pl.DataFrame, reference: pl.DataFrame, rows: np.ndarray, flip: set[str], name: str
) -> tuple[set[str], np.ndarray]:
    """The anchors of every column with the ``flip`` columns' ranks flipped, and the flipped columns:
    those plus any other numeric column whose anchored pairs run against the reference (then
    anchored again)."""
    schema: Schema = ctx.schema
    anchor = _anchor_pairs(ctx, release, reference, schema, rows, flip, f"{name}, ranks and shares")
    against = {
        c
        for c in schema.numeric
        if c not in flip and _rank_correlation(*_column_pairs(release, reference, c, rows, anchor)) < RANK_AGAINST
    }
    if against:  # anchored again with those columns' ranks flipped: their pairs were anchored against them
        flip = flip | against
        anchor = _anchor_pairs(ctx, release, reference, schema, rows, flip, f"{name}, ranks and shares, flipped")
    return flip, anchor


def _affine_map(
    s: np.ndarray, r: np.ndarray, values: tuple[np.ndarray, np.ndarray], rng: np.random.Generator
) -> NumericMap | None:
    """The affine map of a column's anchored pairs (``s``, ``r``) when the pairs on which it and
    the identity disagree support it and it brings the marginal nearer; ``values``: the column's
    (release, reference) finite values."""
    return affine_map_of(
        s,
        r,
        _tolerance(values[1]),
        int(np.unique(values[0]).size),
        lambda a, b: _marginal_gap(a * values[0] + b, values[1]) < _marginal_gap(*values),
        rng,
    )


def affine_map_of(
    s: np.ndarray, r: np.ndarray, tol: float, distinct: int, nearer, rng: np.random.Generator
) -> NumericMap | None:
    """:func:`_affine_map` from what it reads of the whole column: the tie tolerance ``tol``, the
    release's distinct finite values ``distinct`` (only min(3, it) matters) and ``nearer(a, b)``:
    whether a·v + b brings the release marginal nearer the reference's than the identity
    (called only when the anchored pairs support the map)."""
    a, b, _ = _affine(s, r, tol, rng)
    # the two maps compared where they disagree (a copy's zeros stay zeros under ×1000:
    # those pairs support both and decide nothing)
    differ = np.abs(a * s + b - s) > tol
    on = differ & (np.abs(a * s + b - r) <= tol)
    support = int(on.sum())
    # a line passes through any two points: on a column of few values it must join at
    # least three of them (or all the column has) to be evidence of a map — on both sides: an
    # invertible map sends distinct values to distinct values, while a slope near 0 collapses
    # every release value onto one reference value (a zero-inflated column's 0) and "supports"
    # itself with every pair anchored there, and with a few chance pairs elsewhere; so it must
    # also be supported by MIN_MAP_SUPPORT pairs beyond its most common reference value
    _, at_value = np.unique(r[on], return_counts=True)
    beyond_mode = support - int(at_value.max()) if at_value.size else 0
    if min(np.unique(s[on]).size, at_value.size) < min(3, distinct) or beyond_mode < MIN_MAP_SUPPORT:
        support = 0
    identity = int((differ & (np.abs(s - r) <= tol)).sum())
    if (
        support >= max(MIN_MAP_SUPPORT, MAP_SHARE * int(differ.sum()))
        and support >= IDENTITY_MARGIN * identity + MIN_MAP_SUPPORT
        and nearer(a, b)
    ):
        return NumericMap("affine", a, b, support=support, anchored=int(s.size))
    return None


def _monotone_map(
    ctx, release: pl.DataFrame, reference: pl.DataFrame, rows: np.ndarray, c: str, flip: set[str], name: str
) -> NumericMap | None:
    """Column ``c``'s monotone map when enough pairs anchored without it (the others' directions
    known) have per-side ranks within ``RANK_TOL``."""
    others = [o for o in ctx.schema.columns if o != c]
    alone = _anchor_pairs(
        ctx, release, reference, ctx.schema.subset(others), rows, flip - {c}, f"{name}, without a column"
    )
    u_s = _ranks(release.get_column(c))[rows]
    u_s = 1.0 - u_s if c in flip else u_s
    u_r = _ranks(reference.get_column(c))[alone]
    known = (
        release.get_column(c).is_not_null().to_numpy()[rows] & reference.get_column(c).is_not_null().to_numpy()[alone]
    )
    support = int((known & (np.abs(u_s - u_r) <= RANK_TOL)).sum())
    if support >= max(MIN_MAP_SUPPORT, MAP_SHARE * int(known.sum())):
        return NumericMap("monotone", decreasing=c in flip, support=support, anchored=int(known.sum()))
    return None


def _snap(v: np.ndarray, ref_sorted: np.ndarray, tol: float) -> np.ndarray:
    """Each value replaced by the nearest reference value when within ``tol`` of it."""
    if ref_sorted.size == 0:
        return v
    at = np.clip(np.searchsorted(ref_sorted, v), 1, max(ref_sorted.size - 1, 1))
    lo, hi = ref_sorted[at - 1], ref_sorted[np.minimum(at, ref_sorted.size - 1)]
    near = np.where(np.abs(v - lo) <= np.abs(hi - v), lo, hi)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(near - v) <= tol, near, v)


def apply_numeric_maps(release: pl.DataFrame, reference: pl.DataFrame, maps: dict[str, NumericMap]) -> pl.DataFrame:
    """``release`` with each mapped column on the reference's scale (nulls stay null)."""
    if not maps:
        return release
    out = []
    for c, m in maps.items():
        v = release.get_column(c).cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
        ref = np.sort(_finite(reference.get_column(c)))
        if m.kind == "affine":
            mapped = _snap(m.a * v + m.b, ref, _tolerance(ref))
        else:
            u = _ranks(release.get_column(c))
            u = 1.0 - u if m.decreasing else u
            mapped = ref[np.clip((u * ref.size).astype(np.int64), 0, ref.size - 1)] if ref.size else v
        out.append(pl.Series(c, np.where(np.isnan(v), np.nan, mapped)).fill_nan(None))
    return release.with_columns(out)


def check_scales(
    release: pl.DataFrame,
    reference: pl.DataFrame,
    schema: Schema,
    maps: dict[str, NumericMap],
    *,
    role: str = "synthetic",
) -> tuple[str, ...]:
    """The numeric columns left out of the label-free view: those still off the reference's
    scale once their learnt maps (if any) are applied, but only in their tails
    (:attr:`ScaleCheck.bulk_off` false). Refuses, naming the first, a column whose bulk is off the
    scale. ``release`` is the mapped release."""
    left_out = []
    for c in schema.numeric:
        chk = scale_check(_finite(release.get_column(c)), _finite(reference.get_column(c)))
        if chk.bulk_off:
            raise foreign_scale_error(c, chk, release.height, maps, role)
        if chk.off:
            left_out.append(c)
    return tuple(left_out)


def foreign_scale_error(
    c: str, chk: ScaleCheck, height: int, maps: dict[str, NumericMap], role: str = "synthetic"
) -> ForeignScaleError:
    """The refusal of column ``c`` of ``role`` (``height`` records) whose :class:`ScaleCheck` is off
    the reference's scale once its learnt map (in ``maps``, if any) is applied: counts only."""
    how = []
    if chk.beyond_range:
        how.append(f"{chk.beyond_range} of its {height} values lie more than one real range outside the real range")
    if chk.outside_share >= OUTSIDE_SHARE:
        how.append(f"{chk.outside_share:.0%} of its values lie outside the real range")
    if not 1.0 / SPREAD_FACTOR <= chk.spread_ratio <= SPREAD_FACTOR:
        how.append(f"its standard deviation is {chk.spread_ratio:.3g} times the real one's")
    learnt = f" (a {maps[c].kind} map was learnt from the records and applied)" if c in maps else ""
    return ForeignScaleError(
        f"column {c!r} of {role} is not on the real data's scale: {' and '.join(how)}, and no invertible map "
        f"learnt from the records explains it{learnt}. Distances to the real records would make every record "
        "look far from every real one, so the release is not scored: put the column back on the real data's "
        "scale (undo the generator's transform) and gate it again",
        column=c,
    )
