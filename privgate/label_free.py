"""The label-free view of a release: its categorical columns compared with the reference's up to
the correspondence between their levels that the records themselves show.

A copy of the training data whose category labels were permuted within a column, renamed, split
into several labels or merged is still a copy: only the names of the levels changed, and every
metric that compares labels takes each renamed level for another one. This module learns, per
categorical column, which release levels stand for which reference levels and recodes both frames
to the classes of that correspondence, so the metrics of ``privgate.metrics.label_free`` can
compare records whatever their labels say.

How the correspondence is learnt (deterministic for a seed):

1. **Anchors in label-invariant views.** Records are encoded without their labels: numeric
   columns as they are, and each categorical cell as the share of its level in its own frame
   (a renaming or a permutation of the levels keeps every level's share, so a copied record has the
   same coordinates as its source). Coordinates are standardised on the reference. The categorical
   columns are dealt into at most ``MAX_GROUPS`` groups; a group is learnt from anchors searched
   in a view WITHOUT its own columns (numerics and the other groups' shares), and every column
   also from the numerics alone; per column the view whose anchors agree best on its levels is
   used. A seeded sample of at most ``ANCHOR_ROWS`` release records is searched against every
   reference record (the project's neighbour engine, ``EvaluationContext.search``): each one's
   nearest reference record is its anchor.
2. **Level graph.** Per categorical column, the anchored pairs give a contingency table of
   (release level, reference level). Each level with at least ``MIN_SUPPORT`` anchored records is
   joined to the level of the other side that holds the majority (more than ``MAJORITY``) of its
   anchored records, when that count is also far beyond the joined level's base share of all
   anchors (one-sided binomial p < ``EDGE_P``) — release → reference catches renamings and
   splits, reference → release catches merges. A release that kept the labels shows such an
   association only towards the same label.
3. **Classes.** The connected components of that graph are the joint classes; both frames are
   recoded to class codes. A level joined to nothing keeps its own label (so an unchanged rare
   level still meets its namesake).

The correspondence is the **identity** on a column when every class holds at most one level of
each side, under the same label; a release that kept the reference's labels gets the identity
and the label-free metrics then report the plain metrics' results unchanged (no second test).

What it cannot see: a column whose levels were relabelled AND whose records can be told apart by
nothing else (all-categorical data in which every column was split at random: shares change,
anchors are lost) keeps its labels, and a copy whose every column was perturbed beyond the
holdout's own distances is not a copy (docs/validity.md).

Nothing here reports a level or a value: the description carries column positions and counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from . import seeds
from .schema import Schema
from .stats import binomial_upper_p

ANCHOR_ROWS = 2000      # release records anchored (a seeded sample above this)
MIN_SUPPORT = 3         # anchored records a level needs before it is joined to another
MAJORITY = 0.5          # share of a level's anchored records that the joined level must hold
EDGE_P = 1e-3           # and its count beyond that level's base share of the anchors (one-sided binomial)
COLLAPSED = 0.99        # a release column this concentrated on one level ...
SPREAD = 0.1            # ... where the reference's top level holds at most 90 %: all levels merged
MAX_GROUPS = 4          # categorical columns are learnt in at most this many groups (one search each)
CODE_PREFIX = "\x00lf:"  # class codes: never a label a frame can hold after normalisation
KEEP_PREFIX = "\x00lv:"  # a level joined to nothing keeps its label behind this prefix


@dataclass(frozen=True)
class Correspondence:
    """Per categorical column: release level → code and reference level → code, and a
    description of what was learnt (positions and counts only)."""

    release_codes: dict[str, dict[str, str]]
    reference_codes: dict[str, dict[str, str]]
    remapped: tuple[str, ...]                  # columns whose correspondence is not the identity
    columns: dict[str, dict] = field(default_factory=dict)
    anchored: int = 0

    @property
    def identity(self) -> bool:
        return not self.remapped

    def describe(self, schema: Schema) -> dict:
        """What a report shows: how many columns were recoded (by position in the schema), and per
        recoded column the numbers of levels and classes."""
        order = list(schema.columns)
        return {
            "identity": self.identity,
            "anchored_release_records": self.anchored,
            "recoded_columns": [order.index(c) for c in self.remapped],
            "recoded": {str(order.index(c)): self.columns[c] for c in self.remapped},
        }


def _shares(frame: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """Each categorical cell as the share of its level (null counts as a level) in ``frame``."""
    n = max(frame.height, 1)
    return frame.select([(pl.len().over(c) / n).cast(pl.Float64).alias(c) for c in cols])


def anchor_matrices(release: pl.DataFrame, reference: pl.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """The label-invariant encodings of the release and the reference (float64, standardised on
    the reference; a null numeric is the reference mean)."""
    num, cat = list(schema.numeric), list(schema.categorical)
    parts_s, parts_r = [], []
    if num:
        parts_s.append(release.select(num))
        parts_r.append(reference.select(num))
    if cat:
        parts_s.append(_shares(release, cat))
        parts_r.append(_shares(reference, cat))
    s = pl.concat(parts_s, how="horizontal").to_numpy().astype(np.float64)
    r = pl.concat(parts_r, how="horizontal").to_numpy().astype(np.float64)
    mean = np.nanmean(r, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    sd = np.nanstd(r, axis=0)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
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
    """The correspondence between ``release``'s and ``reference``'s categorical levels (both
    normalised frames of ``ctx.schema``), from anchors found by ``ctx.search`` (reported as
    ``name``)."""
    schema: Schema = ctx.schema
    cat = list(schema.categorical)
    if not cat:
        return Correspondence({}, {}, ())
    rows = np.arange(release.height)
    if release.height > ANCHOR_ROWS:
        rows = np.sort(seeds.rng(ctx.seed, "label_free.anchors").choice(release.height, ANCHOR_ROWS, replace=False))
    sample = release[rows] if rows.size < release.height else release
    tables: dict[str, list[pl.DataFrame]] = {c: [] for c in cat}
    # every column encoded once (shares and standardisation are per column); a view takes its
    # columns, in the same order as anchor_matrices would put them
    q_all, t_all = anchor_matrices(sample, reference, schema)
    position = {c: i for i, c in enumerate([*schema.numeric, *schema.categorical])}
    for label, view, taught in _views(schema):
        cols = [position[c] for c in (*view.numeric, *view.categorical)]
        q = np.ascontiguousarray(q_all[:, cols], dtype=np.float32)
        t = np.ascontiguousarray(t_all[:, cols], dtype=np.float32)
        anchor = ctx.search(q, t, 1, name=f"{name}, {label}").idx[:, 0]
        for c in taught:
            tables[c].append(pl.DataFrame({"s": sample.get_column(c), "r": reference.get_column(c).gather(anchor)})
                             .group_by("s", "r").len())
    rel_codes, ref_codes, remapped, described = {}, {}, [], {}
    for c in cat:
        # the anchors that explain this column best: the largest share of anchored records in
        # their level's most frequent cell (no view holds the column itself)
        table = max(tables[c], key=lambda tb: _purity(tb, "s", "r"), default=None)
        rc, fc, col = _classes(table if table is not None else pl.DataFrame(
                                   {"s": [], "r": [], "len": []}, schema={"s": pl.String, "r": pl.String, "len": pl.UInt32}),
                               "s", "r",
                               release.get_column(c).drop_nulls().unique().to_list(),
                               reference.get_column(c).drop_nulls().unique().to_list())
        rel_codes[c], ref_codes[c] = rc, fc
        described[c] = col
        if not col["identity"]:
            remapped.append(c)
    return Correspondence(rel_codes, ref_codes, tuple(remapped), described, int(rows.size))


def _purity(table: pl.DataFrame, s: str, r: str) -> float:
    """Share of the anchored records that sit in their release level's most frequent cell."""
    total = int(table["len"].sum())
    return float(table.group_by(s).agg(pl.col("len").max())["len"].sum()) / total if total else 0.0


def _majority_edges(table: pl.DataFrame, by: str, other: str) -> pl.DataFrame:
    """For each level of ``by`` with at least MIN_SUPPORT anchored records, the level of ``other``
    holding more than MAJORITY of them, when its count is also far beyond what that level's share
    of all anchored records gives (one-sided binomial p < ``EDGE_P``): an association a release
    that kept the labels shows only towards the same label."""
    t = (table.drop_nulls([by, other])
         .with_columns(pl.col("len").sum().over(by).alias("total"),
                       (pl.col("len").sum().over(other) / pl.col("len").sum()).alias("base"))
         .filter((pl.col("total") >= MIN_SUPPORT) & (pl.col("len") > MAJORITY * pl.col("total"))))
    if t.height == 0:
        return t.select(by, other)
    p = binomial_upper_p(t["len"].to_numpy(), t["total"].to_numpy(), t["base"].to_numpy())
    return t.filter(pl.Series(p < EDGE_P)).select(by, other)


def _collapsed_edges(table: pl.DataFrame, s: str, r: str) -> pl.DataFrame:
    """A release column collapsed to one level (at least ``COLLAPSED`` of its anchored records)
    where the reference's is not (its top level at most ``1 − SPREAD``): every merge at once, which
    no test against base shares can show — the one release level joined to every reference level
    with ``MIN_SUPPORT`` anchors."""
    t = table.drop_nulls([s, r])
    total = int(t["len"].sum())
    if total < MIN_SUPPORT:
        return t.select(s, r).clear()
    rel = t.group_by(s).agg(pl.col("len").sum()).sort("len", descending=True)
    ref = t.group_by(r).agg(pl.col("len").sum())
    if rel["len"][0] < COLLAPSED * total or ref["len"].max() > (1 - SPREAD) * total:
        return t.select(s, r).clear()
    top = rel[s][0]
    return ref.filter(pl.col("len") >= MIN_SUPPORT).select(pl.lit(top, dtype=t.schema[s]).alias(s), r)


def _classes(table: pl.DataFrame, s: str, r: str, rel_levels: list, ref_levels: list
             ) -> tuple[dict[str, str], dict[str, str], dict]:
    """Union–find over the levels of both sides joined by majority edges: the codes of each side's
    levels and a description (counts only)."""
    edges = pl.concat([_majority_edges(table, s, r), _majority_edges(table, r, s).select(s, r),
                       _collapsed_edges(table, s, r)]).unique()
    nodes = [("s", v) for v in rel_levels] + [("r", v) for v in ref_levels]
    index = {node: i for i, node in enumerate(nodes)}
    parent = np.arange(len(nodes))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges.iter_rows():  # one edge per joined level: at most the number of levels
        ia, ib = index.get(("s", a)), index.get(("r", b))
        if ia is None or ib is None:
            continue
        ra, rb = find(ia), find(ib)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[tuple[str, str]]] = {}
    for node, i in index.items():
        members.setdefault(find(i), []).append(node)
    rel_codes, ref_codes = {}, {}
    identity = True
    n_joined = 0
    for root, group in members.items():
        if len(group) == 1:  # joined to nothing: keeps its label
            side, v = group[0]
            (rel_codes if side == "s" else ref_codes)[v] = KEEP_PREFIX + v
            continue
        n_joined += 1
        rel = [v for side, v in group if side == "s"]
        ref = [v for side, v in group if side == "r"]
        if not (len(rel) == 1 and len(ref) == 1 and rel[0] == ref[0]):
            identity = False
        code = f"{CODE_PREFIX}{root}"
        for v in rel:
            rel_codes[v] = code
        for v in ref:
            ref_codes[v] = code
    if identity:
        # a level joined to nothing on one side may share a label with a joined level on the other:
        # it would keep its label while its namesake gets a class code — not the identity
        identity = all(rel_codes[v].startswith(KEEP_PREFIX) == ref_codes[v].startswith(KEEP_PREFIX)
                       for v in set(rel_codes) & set(ref_codes))
    return rel_codes, ref_codes, {
        "identity": identity, "release_levels": len(rel_levels), "reference_levels": len(ref_levels),
        "classes": n_joined, "levels_unjoined": sum(len(g) == 1 for g in members.values()),
    }


def recode(frame: pl.DataFrame, codes: dict[str, dict[str, str]]) -> pl.DataFrame:
    """``frame`` with each categorical column's levels replaced by their codes (a level the codes
    do not list keeps its label behind ``KEEP_PREFIX``; nulls stay null)."""
    if not codes:
        return frame
    return frame.with_columns([
        pl.col(c).replace_strict(list(m), list(m.values()), default=pl.lit(KEEP_PREFIX) + pl.col(c),
                                 return_dtype=pl.String)
        for c, m in codes.items()])
