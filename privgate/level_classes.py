"""Level classes: which release levels stand for which reference levels, learnt from a table of
anchored (release level, reference level) pairs — the step the label-free view
(``privgate.label_free``) and its record-by-record search (``privgate.disguised_records``) share.

Each level with at least ``MIN_SUPPORT`` anchored records is joined to the level of the other
side that holds the majority (more than ``MAJORITY``) of its anchored records, when that count is
also far beyond the joined level's base share of all anchors (one-sided binomial p < ``EDGE_P``;
the label-free view asks it of the column, Bonferroni over the levels tested) —
release → reference catches renamings and splits, reference → release catches merges; a release
column collapsed to one level joins every reference level (``COLLAPSED``, ``SPREAD``). The
connected components of that graph are the classes; a level joined to nothing keeps its label
behind ``KEEP_PREFIX``. Nothing here reports a level: descriptions carry counts.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from .stats import binomial_upper_p, bonferroni

MIN_SUPPORT = 3  # anchored records a level needs before it is joined to another
MAJORITY = 0.5  # share of a level's anchored records that the joined level must hold
EDGE_P = 1e-3  # and its count beyond that level's base share of the anchors (one-sided binomial)
COLLAPSED = 0.99  # a release column this concentrated on one level ...
SPREAD = 0.1  # ... where the reference's top level holds at most 90 %: all levels merged
CODE_PREFIX = "\x00lf:"  # class codes: never a label a frame can hold after normalisation
KEEP_PREFIX = "\x00lv:"  # a level joined to nothing keeps its label behind this prefix


def level_shares(frame: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """Each categorical cell as the share of its level (null counts as a level) in ``frame``: a
    relabelling of the levels keeps it."""
    n = max(frame.height, 1)
    return frame.select([(pl.len().over(c) / n).cast(pl.Float64).alias(c) for c in cols])


def _majority_edges(
    table: pl.DataFrame,
    by: str,
    other: str,
    min_support: int = MIN_SUPPORT,
    edge_p: float = EDGE_P,
    per_column: bool = False,
) -> pl.DataFrame:
    """For each level of ``by`` with at least MIN_SUPPORT anchored records, the level of ``other``
    holding more than MAJORITY of them, when its count is also far beyond what that level's share
    of all anchored records gives (one-sided binomial p < ``EDGE_P``): an association a release
    that kept the labels shows only towards the same label. ``per_column``: ``edge_p`` bounds the
    chance of a false edge anywhere in the column (Bonferroni over the levels tested), not per
    level — a column of many rare levels, each with a few anchors, otherwise joins one of them
    to another by chance."""
    t = (
        table.drop_nulls([by, other])
        .with_columns(
            pl.col("len").sum().over(by).alias("total"),
            (pl.col("len").sum().over(other) / pl.col("len").sum()).alias("base"),
        )
        .filter((pl.col("total") >= min_support) & (pl.col("len") > MAJORITY * pl.col("total")))
    )
    if t.height == 0:
        return t.select(by, other)
    p = binomial_upper_p(t["len"].to_numpy(), t["total"].to_numpy(), t["base"].to_numpy())
    return t.filter(pl.Series((bonferroni(p) if per_column else p) < edge_p)).select(by, other)


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


def _joined_components(edges: pl.DataFrame, rel_levels: list, ref_levels: list) -> dict[int, list[tuple[str, str]]]:
    """Union–find over both sides' levels: each component's root and its ("s"|"r", level) members."""
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
    return members


def level_classes(
    table: pl.DataFrame,
    s: str,
    r: str,
    rel_levels: list,
    ref_levels: list,
    *,
    min_support: int = MIN_SUPPORT,
    edge_p: float = EDGE_P,
    per_column: bool = False,
) -> tuple[dict[str, str], dict[str, str], dict]:
    """Union–find over the levels of both sides joined by majority edges (``min_support`` and
    ``edge_p`` as ``MIN_SUPPORT`` and ``EDGE_P``; ``per_column`` as :func:`_majority_edges`): the
    codes of each side's levels and a description (counts only)."""
    edges = pl.concat(
        [
            _majority_edges(table, s, r, min_support, edge_p, per_column),
            _majority_edges(table, r, s, min_support, edge_p, per_column).select(s, r),
            _collapsed_edges(table, s, r),
        ]
    ).unique()
    members = _joined_components(edges, rel_levels, ref_levels)
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
        identity = all(
            rel_codes[v].startswith(KEEP_PREFIX) == ref_codes[v].startswith(KEEP_PREFIX)
            for v in set(rel_codes) & set(ref_codes)
        )
    return (
        rel_codes,
        ref_codes,
        {
            "identity": identity,
            "release_levels": len(rel_levels),
            "reference_levels": len(ref_levels),
            "classes": n_joined,
            "levels_unjoined": sum(len(g) == 1 for g in members.values()),
        },
    )
