"""The label-free view of a release: its records compared with the reference's up to the
invertible changes of their columns that the records themselves show — category levels up to
the correspondence between them, numeric columns up to a monotone map — for the whole release
and, for a disguised minority, record by record.

A copy of the training data whose category labels were permuted within a column, renamed, split
into several labels or merged, or whose numeric columns were scaled, shifted, negated,
standardised or put through a log, is still a copy: only the names of the levels and the units
changed, and every metric that compares labels and values as they are takes the copy for new
people. This module learns, in order (deterministic for a seed):

0. **Numeric maps** (``privgate.numeric_maps``): per numeric column, the affine or monotone map
   back to the reference's scale that anchored records support. A column whose bulk is still off
   the real scale after it is refused by name (``ForeignScaleError``: a gate blocks, exit 3); one
   off only in its tails (values far beyond the real range) is left out of the view, whose other
   columns still hold a copy as a copy. A release on the real scale keeps every value.
1. **Anchors in label-invariant views** (on the mapped release). Records are encoded without
   their labels: numeric columns as they are, and each categorical cell as the share of its
   level in its own frame (a renaming or a permutation of the levels keeps every level's share,
   so a copied record has the same coordinates as its source). Coordinates are standardised on
   the reference. The categorical columns are dealt into at most ``MAX_GROUPS`` groups; a group
   is learnt from anchors searched in a view WITHOUT its own columns (numerics and the other
   groups' shares), and every column also from the numerics alone; per column the view whose
   anchors agree best on its levels is used. A seeded sample of at most ``ANCHOR_ROWS`` release
   records is searched against every reference record (the project's neighbour engine,
   ``EvaluationContext.search``): each one's nearest reference record is its anchor.
2. **Level graph and classes** (``privgate.level_classes``). Per categorical column, the anchored
   pairs give a contingency table of (release level, reference level); each level is joined to
   the level of the other side holding the majority of its anchored records far beyond that
   level's base share (release → reference catches renamings and splits, reference → release
   merges), and the connected components are the classes both frames are recoded to. A level
   joined to nothing keeps its own label (so an unchanged rare level still meets its namesake).
3. **Records disguised one by one** (``privgate.disguised_records``): release records whose
   numerics equal one reference record's exactly and whose levels a correspondence learnt from
   such pairs alone explains — beyond what the same pairs with shuffled anchors explain — are
   held in the view as the reference records they copy: a disguise applied to 1 % of the
   records counts like 1 % of plain copies.

The correspondence is the **identity** when no numeric column is mapped, every class holds at
most one level of each side under the same label, and no record was found disguised; a release
that kept the reference's labels and scale gets the identity and the label-free metrics then
report the plain metrics' results unchanged (no second test).

What it cannot see: a relabelled column of more levels than the anchored records can cover
(``MIN_SUPPORT`` anchored records per level: a postcode, a diagnosis code) keeps its labels; a
column whose levels were relabelled AND whose records can be told apart by
nothing else (all-categorical data in which every column was split at random: shares change,
anchors are lost) keeps its labels; a copy whose every column was perturbed beyond the
holdout's own distances is not a copy; and a disguise of a minority of the records whose values
stay inside the real ranges and whose numerics were changed too (a shift of a few percent of the
records) is matched neither by a whole-column map nor record by record (docs/validity.md).

Nothing here reports a level or a value: the description carries column positions and counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from . import seeds
from .disguised_records import DisguisedRecords, find_disguised_records, put_sources
from .level_classes import KEEP_PREFIX, MIN_SUPPORT, level_classes, level_shares
from .numeric_maps import NumericMap, apply_numeric_maps, check_scales, learn_numeric_maps
from .schema import Schema
from .tail_maps import TailMaps, learn_tail_maps
from .ties import REL_TOL

ANCHOR_ROWS = 2000  # release records anchored (a seeded sample above this)
MAX_GROUPS = 4  # categorical columns are learnt in at most this many groups (one search each)


@dataclass(frozen=True)
class Correspondence:
    """Per categorical column: release level → code and reference level → code; per numeric
    column the map back to the reference's scale (``privgate.numeric_maps``); the release records
    found to be disguised copies one by one (``privgate.disguised_records``); and a description of
    what was learnt (positions and counts only)."""

    release_codes: dict[str, dict[str, str]]
    reference_codes: dict[str, dict[str, str]]
    remapped: tuple[str, ...]  # columns whose correspondence is not the identity
    columns: dict[str, dict] = field(default_factory=dict)
    anchored: int = 0
    numeric_maps: dict[str, NumericMap] = field(default_factory=dict)
    records: DisguisedRecords | None = None
    left_out: tuple[str, ...] = ()  # numeric columns off the real scale in their tails: not compared
    tail_maps: TailMaps | None = None  # the far records' own maps (privgate.tail_maps)

    @property
    def identity(self) -> bool:
        return (
            not self.remapped
            and not self.numeric_maps
            and self.records is None
            and not self.left_out
            and self.tail_maps is None
        )

    def describe(self, schema: Schema) -> dict:
        """What a report shows: how many columns were recoded (by position in the schema), per
        recoded column the numbers of levels and classes, per mapped numeric column the map's
        kind and support, and how many records were found disguised one by one."""
        order = list(schema.columns)
        return {
            "identity": self.identity,
            "anchored_release_records": self.anchored,
            "recoded_columns": [order.index(c) for c in self.remapped],
            "recoded": {str(order.index(c)): self.columns[c] for c in self.remapped},
            "mapped_numeric_columns": [order.index(c) for c in self.numeric_maps],
            "numeric_maps": {str(order.index(c)): m.describe() for c, m in self.numeric_maps.items()},
            "disguised_records": None if self.records is None else self.records.describe(),
            "left_out_columns": [order.index(c) for c in self.left_out],
            "far_records": None if self.tail_maps is None else self.tail_maps.describe(schema),
        }

    def unchanged_rows(self, frames: dict[str, pl.DataFrame], query: str, target: str) -> np.ndarray | None:
        """Per record of the ``query`` frame, whether its distance to every record of the
        ``target`` frame is the same in the view as in the frames as they are (a mixed space,
        where a categorical mismatch costs the same whatever the levels): true when the view only
        recodes categories (no numeric map, no record replaced) and, in every recoded column, the
        record's level is equal in the view to exactly the target levels it was equal to before
        (itself). ``frames``: the frames as they are, by role (the release's levels recoded by
        the release codes, the others' by the reference codes). None when the view changes
        numbers or records (then every distance may differ)."""
        if self.numeric_maps or self.records is not None or self.left_out or self.tail_maps is not None:
            return None
        codes = {r: self.release_codes if r == "synthetic" else self.reference_codes for r in (query, target)}
        keep = np.ones(frames[query].height, dtype=bool)
        for col in self.remapped:  # a loop over columns; the levels below, never the records
            changed = _changed_levels(
                frames[query][col].drop_nulls().unique().to_list(),
                frames[target][col].drop_nulls().unique().to_list(),
                codes[query].get(col, {}),
                codes[target].get(col, {}),
            )
            if changed:
                keep &= ~frames[query][col].is_in(changed).fill_null(False).to_numpy()
        return keep

    def release_view(self, release: pl.DataFrame, reference: pl.DataFrame) -> pl.DataFrame:
        """``release`` in the view: numerics mapped to the reference's scale, levels recoded, and
        each record found disguised replaced by the (recoded) reference record it copies
        (``reference``: the frame the correspondence was learnt against)."""
        out = apply_numeric_maps(release, reference, self.numeric_maps)
        if self.tail_maps is not None:
            out = self.tail_maps.apply(out, reference)
        out = recode(out, self.release_codes)
        if self.records is None:
            return out
        sources = recode(reference[self.records.sources], self.reference_codes)
        return put_sources(out, sources, self.records.rows)


def anchor_matrices(release: pl.DataFrame, reference: pl.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """The label-invariant encodings of the release and the reference (float64, standardised on
    the reference — a column whose deviation is below its mean's rounding is not scaled; a null
    numeric is the reference mean)."""
    num, cat = list(schema.numeric), list(schema.categorical)
    parts_s, parts_r = [], []
    if num:
        parts_s.append(release.select(num))
        parts_r.append(reference.select(num))
    if cat:
        parts_s.append(level_shares(release, cat))
        parts_r.append(level_shares(reference, cat))
    s = pl.concat(parts_s, how="horizontal").to_numpy().astype(np.float64)
    r = pl.concat(parts_r, how="horizontal").to_numpy().astype(np.float64)
    mean = np.nanmean(r, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    sd = np.nanstd(r, axis=0)
    # a constant column's deviation is 0 or a rounding residue of its mean (0.1 × 2000 gives
    # 1.4e-17): either is no spread, and dividing by a residue would part its nulls from its values
    sd = np.where(np.isfinite(sd) & (sd > REL_TOL * (1.0 + np.abs(mean))), sd, 1.0)
    s = np.where(np.isnan(s), mean, s)
    r = np.where(np.isnan(r), mean, r)
    return (s - mean) / sd, (r - mean) / sd


def _views(schema: Schema) -> list[tuple[str, Schema, list[str]]]:
    """The label-invariant views anchors are searched in, each with the categorical columns it
    may teach: the categorical columns are dealt into at most ``MAX_GROUPS`` groups (by position)
    and a group is learnt from the numerics and the other groups' shares — never from its own
    columns, whose shares a relabelling changes (a split) and whose purity they would fake — and
    every column also from the numerics alone (a copy whose every column was relabelled)."""
    cat, num = list(schema.categorical), list(schema.numeric)
    n_groups = min(MAX_GROUPS, len(cat))
    views = []
    for g in range(n_groups):
        taught = cat[g::n_groups]
        used = [c for c in schema.columns if c not in taught]
        if used:
            views.append((f"without group {g}", schema.subset(used), taught))
    if num and n_groups > 1:
        views.append(("numerics", schema.subset(num), cat))
    return views


def learn(ctx, release: pl.DataFrame, reference: pl.DataFrame, *, name: str) -> Correspondence:
    """The correspondence between ``release`` and ``reference`` (both normalised frames of
    ``ctx.schema``): numeric maps to the reference's scale, then the categorical levels' classes
    from anchors found by ``ctx.search`` (reported as ``name``), then the records disguised one by
    one; a numeric column off the reference's scale only in its tails is left out of the view
    (``left_out``: every step after the maps learns without it). Raises
    :class:`privgate.numeric_maps.ForeignScaleError` for a numeric column whose bulk no learnt map
    brings to the reference's scale."""
    schema: Schema = ctx.schema
    cat = list(schema.categorical)
    rows = _anchor_rows(ctx, release)
    maps = learn_numeric_maps(ctx, release, reference, rows, name=name)
    release = apply_numeric_maps(release, reference, maps)
    left_out = check_scales(release, reference, schema, maps)
    tails = learn_tail_maps(ctx, release, reference, left_out, name=name) if left_out else None
    if tails is not None:  # the far records' own maps applied, the columns checked again
        release = tails.apply(release, reference)
        left_out = check_scales(release, reference, schema, maps)
    if left_out:
        schema = view_schema(schema, left_out, reference)
    if not cat:
        return Correspondence(
            {}, {}, (), anchored=int(rows.size), numeric_maps=maps, left_out=left_out, tail_maps=tails
        )
    sample = release[rows] if rows.size < release.height else release
    levels = {
        c: (
            release.get_column(c).drop_nulls().unique().to_list(),
            reference.get_column(c).drop_nulls().unique().to_list(),
        )
        for c in cat
    }
    # a column of more levels than the anchored records can cover keeps its labels, and its
    # shares — estimated from a handful of records per level, different in every sample — are
    # noise that would pull honest records onto wrong anchors: it is left out of the views
    kept = {c for c in cat if max(map(len, levels[c])) * MIN_SUPPORT > rows.size}
    anchored = schema.subset([c for c in schema.columns if c not in kept]) if kept else schema
    tables = _anchor_tables(ctx, sample, reference, anchored, cat, name=name)
    rel_codes, ref_codes, remapped, described = _column_classes(cat, tables, levels, kept)
    # the record-by-record search reads the classes' codes; with the identity everywhere, the
    # labels themselves carry the same equalities (and nothing is recoded twice)
    records = (
        find_disguised_records(release, reference, schema, seed=ctx.seed)
        if not remapped
        else find_disguised_records(recode(release, rel_codes), recode(reference, ref_codes), schema, seed=ctx.seed)
    )
    return Correspondence(
        rel_codes, ref_codes, tuple(remapped), described, int(rows.size), maps, records, left_out, tails
    )


def view_schema(schema: Schema, left_out: tuple[str, ...], reference: pl.DataFrame) -> Schema:
    """``schema`` without the numeric columns ``left_out`` of the view (off the real scale in their
    tails, ``privgate.numeric_maps.check_scales``). Leaving a column out only removes differences,
    so a copy stays a copy on the others — as long as the others tell the real records apart: when
    fewer than ``IDENTIFYING_SHARE`` of the ``reference`` records are unique on the remaining
    columns (a copy and a chance match look alike there), or none remain, the first left-out
    column is refused by name as a column whose bulk is off is."""
    kept = [c for c in schema.columns if c not in left_out]
    unique = int(reference.group_by(kept).len().filter(pl.col("len") == 1).height) if kept and reference.height else 0
    return counted_view_schema(schema, left_out, unique, reference.height)


def counted_view_schema(schema: Schema, left_out: tuple[str, ...], unique: int, height: int) -> Schema:
    """:func:`view_schema` from counts: ``unique`` of the ``height`` reference records are unique on
    the columns of ``schema`` not ``left_out`` (0 when none remain) — what a sharded evaluation
    counts by hash buckets."""
    from .disguised_records import IDENTIFYING_SHARE
    from .numeric_maps import ForeignScaleError

    kept = [c for c in schema.columns if c not in left_out]
    if unique < IDENTIFYING_SHARE * max(height, 1):
        raise ForeignScaleError(
            f"column {left_out[0]!r} of synthetic is not on the real data's scale: {len(left_out)} numeric column(s) "
            "hold values far beyond the real range that no invertible map learnt from the records explains, and "
            f"without them only {unique} of the {height} real records are told apart by the other "
            f"{len(kept)} column(s), so a copy would look like a chance match. The release is not scored: put the "
            "columns back on the real data's scale and gate it again",
            column=left_out[0],
        )
    return schema.subset(kept)


def _anchor_rows(ctx, release: pl.DataFrame) -> np.ndarray:
    """The release rows anchored: all of them, or a seeded sample of ``ANCHOR_ROWS`` in order."""
    rows = np.arange(release.height)
    if release.height > ANCHOR_ROWS:
        rows = np.sort(seeds.rng(ctx.seed, "label_free.anchors").choice(release.height, ANCHOR_ROWS, replace=False))
    return rows


def _anchor_tables(
    ctx, sample: pl.DataFrame, reference: pl.DataFrame, anchored: Schema, cat: list[str], *, name: str
) -> dict[str, list[pl.DataFrame]]:
    """Per categorical column, one (release level, reference level) count table per view that teaches it."""
    tables: dict[str, list[pl.DataFrame]] = {c: [] for c in cat}
    # every column encoded once (shares and standardisation are per column); a view takes its
    # columns, in the same order as anchor_matrices would put them
    views = _views(anchored) if anchored.columns else []
    if views:
        q_all, t_all = anchor_matrices(sample, reference, anchored)
    position = {c: i for i, c in enumerate([*anchored.numeric, *anchored.categorical])}
    for label, view, taught in views:
        cols = [position[c] for c in (*view.numeric, *view.categorical)]
        q = np.ascontiguousarray(q_all[:, cols], dtype=np.float32)
        t = np.ascontiguousarray(t_all[:, cols], dtype=np.float32)
        anchor = ctx.search(q, t, 1, name=f"{name}, {label}").idx[:, 0]
        for c in taught:
            tables[c].append(
                pl.DataFrame({"s": sample.get_column(c), "r": reference.get_column(c).gather(anchor)})
                .group_by("s", "r")
                .len()
            )
    return tables


def _column_classes(
    cat: list[str],
    tables: dict[str, list[pl.DataFrame]],
    levels: dict[str, tuple[list, list]],
    kept: set[str],
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]], list[str], dict[str, dict]]:
    """Per categorical column its level classes: release codes, reference codes, recoded columns, descriptions."""
    rel_codes, ref_codes, remapped, described = {}, {}, [], {}
    for c in cat:
        # the anchors that explain this column best: the largest share of anchored records in
        # their level's most frequent cell (no view holds the column itself)
        table = max(tables[c], key=lambda tb: _purity(tb, "s", "r"), default=None)
        rel_levels, ref_levels = levels[c]
        if c in kept:
            # fewer anchored records than MIN_SUPPORT per level (a postcode, a diagnosis code):
            # the anchors cannot cover the column, and chance majorities among thousands of rare
            # levels would pass for edges — it keeps its labels
            table = None
        rc, fc, col = level_classes(
            table
            if table is not None
            else pl.DataFrame({"s": [], "r": [], "len": []}, schema={"s": pl.String, "r": pl.String, "len": pl.UInt32}),
            "s",
            "r",
            rel_levels,
            ref_levels,
            per_column=True,
        )
        rel_codes[c], ref_codes[c] = rc, fc
        described[c] = col
        if not col["identity"]:
            remapped.append(c)
    return rel_codes, ref_codes, remapped, described


def _purity(table: pl.DataFrame, s: str, r: str) -> float:
    """Share of the anchored records that sit in their release level's most frequent cell."""
    total = int(table["len"].sum())
    return float(table.group_by(s).agg(pl.col("len").max())["len"].sum()) / total if total else 0.0


def _changed_levels(
    query_levels: list, target_levels: list, query_codes: dict[str, str], target_codes: dict[str, str]
) -> list:
    """The query levels whose set of equal target levels the codes change: before, the level
    itself (when a target holds it); in the view, the target levels of the same code (a level
    the codes do not list keeps its label, as :func:`recode` does)."""
    by_code: dict[str, set] = {}
    for b in target_levels:  # a loop over levels
        by_code.setdefault(target_codes.get(b, KEEP_PREFIX + b), set()).add(b)
    present = set(target_levels)
    return [
        a
        for a in query_levels
        if by_code.get(query_codes.get(a, KEEP_PREFIX + a), set()) != ({a} if a in present else set())
    ]


def recode(frame: pl.DataFrame, codes: dict[str, dict[str, str]]) -> pl.DataFrame:
    """``frame`` with each categorical column's levels replaced by their codes (a level the codes
    do not list keeps its label behind ``KEEP_PREFIX``; nulls stay null)."""
    if not codes:
        return frame
    return frame.with_columns(
        [
            pl.col(c).replace_strict(
                list(m), list(m.values()), default=pl.lit(KEEP_PREFIX) + pl.col(c), return_dtype=pl.String
            )
            for c, m in codes.items()
        ]
    )
