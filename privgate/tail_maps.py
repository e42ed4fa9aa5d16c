"""Maps for the minority of a release's records whose values lie far beyond the real range: a
disguise applied to a few percent of the records (copies of real records scaled ×1000, say, mixed
into an honest release) that no whole-column map explains, because the honest majority keeps the
column on the real scale.

A numeric column off the reference's scale only in its tails (``privgate.numeric_maps``) is
either such a disguise or an honest generator that samples a published domain wider than the
training records' range. The records that hold a value beyond one real range outside the range
in such a column (the *far records*) tell them apart:

1. **Anchors of the far records alone** (at most ``MAP_ANCHOR_ROWS``, evenly strided; the maps
   are applied to all of them). A far record's anchor is its nearest reference record (the
   project's neighbour engine, ``ctx.search``) in a rank view, searched three ways:
   * every column: a numeric column on the real scale at the value's mid-rank among the
     reference values (a copy's is its source's exactly), an off column at its rank among the far
     records (any increasing map of the minority keeps it; copies rank among themselves as their
     sources do in the reference, up to a small sample's noise), a categorical cell at its level's
     share in the whole frame (a relabelling keeps it); a column whose anchored ranks run against
     the reference's is flipped and the records anchored again, as for whole columns;
   * the numerics on the real scale alone (where a copy meets its source exactly, and the shares
     of a near-uniform column, standardised, are noise);
   * once some columns are mapped, those at the reference rank of their mapped values with the
     numerics on the scale, for the other columns' maps.
2. **Affine maps those anchors support**, per numeric column, by the whole-column rule
   (``numeric_maps.affine_map_of``: at least ``MIN_MAP_SUPPORT`` pairs sent exactly onto each
   other, ``MAP_SHARE`` of them, far more than the identity, three distinct values joined on both
   sides, and the far records' marginal brought nearer the reference's). Copies put their
   correctly anchored pairs on one line; honest far records (a wide published domain) put none
   there, and get no map.
3. The far records' values are mapped and snapped to the nearest reference value (an exact copy
   is an exact copy again); a column still off the scale in its tails is then left out of the
   view (``privgate.label_free.view_schema``).

What it cannot see: a minority disguise that stays inside the real range (a shift of a few
percent of the records), and fewer than ``MIN_MAP_SUPPORT`` correctly anchored far records (a
disguise of a handful of records). Nothing here reports a value: descriptions carry counts and
column positions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import polars as pl

from . import seeds
from .level_classes import level_shares
from .numeric_maps import (
    MAP_ANCHOR_ROWS,
    MIN_MAP_SUPPORT,
    RANK_AGAINST,
    NumericMap,
    _finite,
    _marginal_gap,
    _rank_correlation,
    _ranks,
    _snap,
    _standardised,
    _tolerance,
    affine_map_of,
    counted_mid_ranks,
    scale_bounds,
)
from .schema import Schema


@dataclass(frozen=True)
class TailMaps:
    """The far records (release row positions) and, per numeric column, the affine map that brings
    their values back to the reference's scale."""

    rows: np.ndarray
    maps: dict[str, NumericMap]

    def describe(self, schema: Schema) -> dict:
        """Counts and column positions: how many far records, which columns were mapped for them."""
        order = list(schema.columns)
        return {
            "far_records": int(self.rows.size),
            "mapped_columns": [order.index(c) for c in self.maps],
            "supporting_anchors": {str(order.index(c)): m.support for c, m in self.maps.items()},
        }

    def apply(self, release: pl.DataFrame, reference: pl.DataFrame) -> pl.DataFrame:
        """``release`` with the far records' mapped columns on the reference's scale (snapped to the
        nearest reference value within the tie tolerance; nulls stay null)."""
        out = []
        for c, m in self.maps.items():
            v = release.get_column(c).cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
            ref = np.sort(_finite(reference.get_column(c)))
            v[self.rows] = np.where(
                np.isnan(v[self.rows]), np.nan, _snap(m.a * v[self.rows] + m.b, ref, _tolerance(ref))
            )
            out.append(pl.Series(c, v).fill_nan(None))
        return release.with_columns(out) if out else release


def far_rows(release: pl.DataFrame, reference: pl.DataFrame, columns: tuple[str, ...] | list[str]) -> np.ndarray:
    """The release rows holding, in any of ``columns``, a value more than one real range (or four
    real standard deviations) outside the real range (``numeric_maps.scale_bounds``)."""
    far = np.zeros(release.height, dtype=bool)
    for c in columns:
        ref = _finite(reference.get_column(c))
        if ref.size == 0:
            continue
        far |= far_flags(release.get_column(c), scale_bounds(float(ref.min()), float(ref.max()), float(ref.std())))
    return np.flatnonzero(far)


def far_flags(values: pl.Series, bounds: tuple[float, float, float, float]) -> np.ndarray:
    """Per value, whether it lies outside the far bounds (the first two of ``bounds``,
    :func:`privgate.numeric_maps.scale_bounds`); a null is not far."""
    lo_w, hi_w = bounds[0], bounds[1]
    v = values.cast(pl.Float64).to_numpy()
    with np.errstate(invalid="ignore"):
        return (v < lo_w) | (v > hi_w)


class FarSource(Protocol):
    """What learning the far records' maps reads of the whole release and reference: the local
    frames (:class:`_LocalFrames`) or a sharded evaluation's partitions
    (``privgate.sharded.far_records``). Every answer is a small array: about the far records
    anchored (at most ``MAP_ANCHOR_ROWS``), never a column of either side."""

    def far_rows(self, columns: tuple[str, ...]) -> np.ndarray:
        """Release positions of the far records of ``columns`` (:func:`far_rows`)."""
        ...

    def release_rows(self, rows: np.ndarray) -> pl.DataFrame:
        """The (mapped) release's records at positions ``rows``: every column of the schema."""
        ...

    def reference_rows(self, positions: np.ndarray, columns: list[str]) -> pl.DataFrame:
        """The reference's ``columns`` at ``positions`` (any order, repeats)."""
        ...

    def reference_ranks(self, c: str, values: np.ndarray) -> np.ndarray:
        """Each value's mid-rank among the reference's values of ``c`` over the reference's size
        (:func:`_reference_ranks`; NaN, a null: 0.5)."""
        ...

    def snapped(self, c: str, x: np.ndarray) -> np.ndarray:
        """``x`` snapped to the nearest finite reference value of ``c`` within its tolerance
        (``numeric_maps._snap``)."""
        ...

    def release_shares(self, rows: np.ndarray, at: pl.DataFrame, columns: list[str]) -> np.ndarray:
        """Per record ``at`` (the release's at ``rows``), each of ``columns``' level share in the
        whole release: (rows, columns)."""
        ...

    def nearest(self, q: np.ndarray, schema: Schema, name: str) -> np.ndarray:
        """The reference position nearest each row of ``q`` (unstandardised: ``schema``'s numerics
        as reference ranks, then its categoricals' shares) in the reference's view of ``schema``
        (its rows' whole-column ranks and shares), both standardised on the reference."""
        ...

    def tolerance(self, c: str) -> float:
        """Column ``c``'s snap tolerance (``numeric_maps._tolerance`` of its finite reference values)."""
        ...

    def nearer(self, c: str, values: np.ndarray) -> Callable[[float, float], bool]:
        """Whether a·v + b brings ``values`` nearer the reference's marginal of ``c`` than ``values``
        themselves (``numeric_maps._marginal_gap``)."""
        ...


class _LocalFrames:
    """:class:`FarSource` of a release and a reference frame in memory."""

    def __init__(self, ctx, release: pl.DataFrame, reference: pl.DataFrame) -> None:
        self.ctx, self.release, self.reference = ctx, release, reference

    def far_rows(self, columns: tuple[str, ...]) -> np.ndarray:
        return far_rows(self.release, self.reference, columns)

    def release_rows(self, rows: np.ndarray) -> pl.DataFrame:
        return self.release[rows]

    def reference_rows(self, positions: np.ndarray, columns: list[str]) -> pl.DataFrame:
        return self.reference.select(columns)[positions]

    def reference_ranks(self, c: str, values: np.ndarray) -> np.ndarray:
        return _reference_ranks(pl.Series(c, values), self.reference.get_column(c))

    def _ref(self, c: str) -> np.ndarray:
        return np.sort(_finite(self.reference.get_column(c)))

    def snapped(self, c: str, x: np.ndarray) -> np.ndarray:
        ref = self._ref(c)
        return _snap(x, ref, _tolerance(ref))

    def release_shares(self, rows: np.ndarray, at: pl.DataFrame, columns: list[str]) -> np.ndarray:
        return level_shares(self.release, columns).to_numpy()[rows]

    def nearest(self, q: np.ndarray, schema: Schema, name: str) -> np.ndarray:
        t_parts = [_ranks(self.reference.get_column(c)) for c in schema.numeric]
        t = np.column_stack(t_parts) if t_parts else np.empty((self.reference.height, 0))
        if schema.categorical:
            t = np.hstack([t, level_shares(self.reference, list(schema.categorical)).to_numpy()])
        q, t = _standardised(q, t)
        return self.ctx.search(q, t, 1, name=name).idx[:, 0]

    def tolerance(self, c: str) -> float:
        return _tolerance(_finite(self.reference.get_column(c)))

    def nearer(self, c: str, values: np.ndarray) -> Callable[[float, float], bool]:
        ref = _finite(self.reference.get_column(c))
        return lambda a, b: _marginal_gap(a * values + b, ref) < _marginal_gap(values, ref)


def learn_tail_maps(
    ctx, release: pl.DataFrame, reference: pl.DataFrame, off: tuple[str, ...], *, name: str
) -> TailMaps | None:
    """The far records of the columns ``off`` (off the reference's scale only in their tails) and
    the affine maps their anchors support; None when there are fewer than ``MIN_MAP_SUPPORT`` far
    records or no column gets a map."""
    return learn_far_maps(_LocalFrames(ctx, release, reference), ctx.schema, off, ctx.seed, name=name)


def far_anchor_rows(far: np.ndarray) -> np.ndarray:
    """The far records anchored: at most ``MAP_ANCHOR_ROWS`` of ``far`` (release positions in
    order), evenly strided."""
    return far[:: max(1, -(-far.size // MAP_ANCHOR_ROWS))]


def learn_far_maps(src: FarSource, schema: Schema, off: tuple[str, ...], seed: int, *, name: str) -> TailMaps | None:
    """:func:`learn_tail_maps` from what ``src`` reads of the release and the reference
    (``schema``: the view's; ``seed``: the evaluation's)."""
    num = list(schema.numeric)
    far = src.far_rows(tuple(off))
    if far.size < MIN_MAP_SUPPORT or not num:
        return None
    # at most MAP_ANCHOR_ROWS of them anchored (evenly strided): a map needs tens of supporting
    # pairs, and an honest generator's wide domain can put a quarter of a large release there
    rows = far_anchor_rows(far)
    at = src.release_rows(rows)
    rng = seeds.rng(seed, "label_free.tail_maps")
    flip: set[str] = set()
    anchor = _far_anchors(src, at, rows, schema, off, flip, {}, name)
    ref = src.reference_rows(anchor, num)
    against = {c for c in num if _rank_correlation(*_pairs(at, ref, c)) < RANK_AGAINST}
    if against:  # anchored again with those columns' ranks flipped: their pairs were anchored against them
        flip = against
        anchor = _far_anchors(src, at, rows, schema, off, flip, {}, name)
        ref = src.reference_rows(anchor, num)
    maps = _maps(src, at, ref, num, rng)
    on_scale = [c for c in num if c not in off]
    if on_scale:
        # anchored also on the numerics on the real scale alone: a copy meets its source exactly
        # there, where the off columns' ranks among a few far records are a small sample's and the
        # level shares of a near-uniform column are noise once standardised
        alone = _far_anchors(src, at, rows, schema.subset(on_scale), (), set(), {}, name)
        maps = _better(maps, _maps(src, at, src.reference_rows(alone, num), num, rng))
    if maps and len(maps) < len(num):
        # anchored once more on the mapped columns at their reference ranks and the numerics on the
        # scale (a copy's are its source's exactly): the other columns' maps from better anchors
        exact = schema.subset([c for c in num if c in maps or c not in off])
        anchor = _far_anchors(src, at, rows, exact, off, flip, maps, name)
        rest = [c for c in num if c not in maps]
        maps = _better(maps, _maps(src, at, src.reference_rows(anchor, num), rest, rng))
    maps = {c: maps[c] for c in num if c in maps}
    return TailMaps(far, maps) if maps else None


def _better(a: dict[str, NumericMap], b: dict[str, NumericMap]) -> dict[str, NumericMap]:
    """Per column, the map of ``a`` or ``b`` with more supporting anchors (``a``'s on a tie)."""
    out = dict(a)
    for c, m in b.items():
        if c not in out or m.support > out[c].support:
            out[c] = m
    return out


def _pairs(at: pl.DataFrame, ref: pl.DataFrame, c: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite (far record's value, anchored reference value) pairs of column ``c`` (``at``: the
    anchored far records; ``ref``: their anchors' values, row for row)."""
    s = at.get_column(c).cast(pl.Float64).to_numpy()
    r = ref.get_column(c).cast(pl.Float64).to_numpy()
    ok = np.isfinite(s) & np.isfinite(r)
    return s[ok], r[ok]


def _maps(
    src: FarSource,
    at: pl.DataFrame,
    ref: pl.DataFrame,
    columns: list[str],
    rng: np.random.Generator,
) -> dict[str, NumericMap]:
    """Per column of ``columns``, the affine map the far records' anchored pairs support (``at``: the
    anchored far records; ``ref``: their anchors' numerics)."""
    maps: dict[str, NumericMap] = {}
    for c in columns:  # a loop over columns
        s, r = _pairs(at, ref, c)
        far_values = _finite(at.get_column(c))
        found = affine_map_of(s, r, src.tolerance(c), int(np.unique(far_values).size), src.nearer(c, far_values), rng)
        if found is not None:
            maps[c] = found
    return maps


def _far_anchors(
    src: FarSource,
    at: pl.DataFrame,
    rows: np.ndarray,
    schema: Schema,
    off: tuple[str, ...],
    flip: set[str],
    mapped: dict[str, NumericMap],
    name: str,
) -> np.ndarray:
    """The reference record nearest each far record (``at``: those at release positions ``rows``):
    numerics by their reference mid-rank (a column on the real scale, or one of ``mapped`` at its
    mapped value — snapped as :meth:`TailMaps.apply` snaps it: a copy's is its source's exactly)
    or, for a column of ``off`` not yet mapped, by the far records' ranks among themselves
    (``flip``'s columns reversed); categoricals by their level's share in the whole frame."""
    q_parts = []
    for c in schema.numeric:
        if c in mapped or c not in off:
            v = at.get_column(c).cast(pl.Float64).to_numpy()
            if c in mapped:
                m = mapped[c]
                v = np.where(np.isnan(v), np.nan, src.snapped(c, m.a * v + m.b))
            q_parts.append(src.reference_ranks(c, v))
        else:
            u = _ranks(at.get_column(c))
            q_parts.append(1.0 - u if c in flip else u)
    q = np.column_stack(q_parts) if q_parts else np.empty((rows.size, 0))
    cat = list(schema.categorical)
    if cat:
        q = np.hstack([q, src.release_shares(rows, at, cat)])
    return src.nearest(q, schema, f"{name}, far records")


def _reference_ranks(values: pl.Series, reference: pl.Series) -> np.ndarray:
    """Each value's mid-rank among the ``reference`` values over the reference's size, as
    ``numeric_maps._ranks`` gives a reference value itself (a null is 0.5)."""
    ref = np.sort(reference.cast(pl.Float64).to_numpy())
    v = values.cast(pl.Float64).to_numpy()
    left, right = np.searchsorted(ref, v, "left"), np.searchsorted(ref, v, "right")
    return counted_mid_ranks(left, right - left, v, ref.size)
