"""The (target level × composite key) tables of synthpop's ``disclosure()``, held
as one long Polars frame of the non-empty cells per synthetic set.

Columns of the cell frame (one row per synthesis × target level × key with an original or
synthetic record):

* ``d_pre`` / ``s_pre``: original / synthetic counts d_tq, s_tq before exclusions;
  ``pd_pre`` / ``ps_pre`` the proportions within the key (0 when the key is absent);
* ``d`` / ``s``: the counts after exclusions (tab_ktd, tab_kts);
* ``did, dis, iS, DiS, DiSCO, DiSDiO``: the six flag tables after exclusions. Which cells are
  disclosive is decided on the tables *before* exclusions (as synthpop does):
  did = d where pd = 1; dis = s where ps = 1; iS = d where s_.q > 0; DiS = d of every level of a
  key where some level has ps = 1; DiSCO = d where s_.q > 0 and ps = 1; DiSDiO = DiSCO where
  also pd = 1.

Exclusions zero cells of all eight tables in synthpop's order — excluded target levels,
missing target (only when the original target has a missing value), missing key levels
(``usekeys_na``), the (key, key level, target level) triples, then cells over ``denom_lim``
(each table by its own counts) — and the amounts removed at each step are recorded
(``Nexclusions``).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..errors import ParameterError
from .labels import MISSING
from .options import DisclosureOptions
from .prepare import ORDER_COL, SYN_COL, TARGET_COL, LabelledColumn, PreparedKeys, TargetOrder, key_col

TABLES = ("d", "s", "did", "dis", "iS", "DiS", "DiSCO", "DiSDiO")
TABLE_ROWS = ("original", "synthetic", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO")
STEPS = ("excluded target", "missing target", "missing in  keys", "set to exclude", "over denom_lim")


@dataclass
class CellTables:
    cells: pl.DataFrame  # see module docstring
    key_cols: list[str]
    orig_records: pl.DataFrame  # __target + key columns of the original (processed)
    exclusions: pl.DataFrame  # synthesis, table, 5 step columns, remaining
    orig_has_missing_target: bool


def build_cells(
    pk: PreparedKeys,
    target: LabelledColumn,
    order: TargetOrder,
    opts: DisclosureOptions,
    usekeys_data_order: list[bool],
    m: int,
) -> CellTables:
    """Cell counts, disclosive flags and exclusions for all m synthetic sets at once. Cells are
    counted by the target level's position in ``order`` (integers group faster than labels) and
    carry both the position (``ORDER_COL``) and the label."""
    kc = [key_col(i) for i in range(len(pk.keys))]
    orig = pk.orig.with_columns(target.orig.alias(TARGET_COL), order.orig)
    syn = pk.syn.with_columns(order.syn)
    d_cells = orig.group_by([ORDER_COL, *kc]).agg(pl.len().cast(pl.Int64).alias("d"))
    s_cells = syn.group_by([SYN_COL, ORDER_COL, *kc]).agg(pl.len().cast(pl.Int64).alias("s"))
    synth = pl.DataFrame({SYN_COL: pl.Series(range(1, m + 1), dtype=pl.Int32)})
    cells = (
        d_cells.join(synth, how="cross")
        .join(s_cells, on=[SYN_COL, ORDER_COL, *kc], how="full", coalesce=True)
        .with_columns(pl.col("d").fill_null(0), pl.col("s").fill_null(0))
    )
    cells = cells.with_columns(order.levels.gather(cells[ORDER_COL]).alias(TARGET_COL))
    q = [SYN_COL, *kc]
    cells = cells.with_columns(
        pl.col("d").sum().over(q).alias("d_q_pre"),
        pl.col("s").sum().over(q).alias("s_q_pre"),
        pl.col("s").max().over(q).alias("s_max_pre"),
    )
    d, s, dq, sq = pl.col("d"), pl.col("s"), pl.col("d_q_pre"), pl.col("s_q_pre")
    zero = pl.lit(0, dtype=pl.Int64)
    in_s = sq > 0
    s_single = in_s & (s == sq)
    cells = cells.with_columns(
        pl.when(dq > 0).then(d / dq).otherwise(0.0).alias("pd_pre"),
        pl.when(in_s).then(s / sq).otherwise(0.0).alias("ps_pre"),
        pl.when((dq > 0) & (d == dq)).then(d).otherwise(zero).alias("did"),
        pl.when(s_single).then(s).otherwise(zero).alias("dis"),
        pl.when(in_s).then(d).otherwise(zero).alias("iS"),
        pl.when(in_s & (pl.col("s_max_pre") == sq)).then(d).otherwise(zero).alias("DiS"),
        pl.when(s_single).then(d).otherwise(zero).alias("DiSCO"),
        pl.when(s_single & (dq > 0) & (d == dq)).then(d).otherwise(zero).alias("DiSDiO"),
    ).rename({"d": "d_pre", "s": "s_pre"})
    cells = cells.with_columns(pl.col("d_pre").alias("d"), pl.col("s_pre").alias("s"))

    orig_missing_target = bool((target.orig == MISSING).any())
    _check_exclusion_levels(opts, pk, target, kc)
    masks = _exclusion_masks(opts, pk, kc, usekeys_data_order, orig_missing_target)
    cells, exclusions = _apply_exclusions(cells, masks, opts)
    return CellTables(cells, kc, orig, exclusions, orig_missing_target)


def _check_exclusion_levels(opts: DisclosureOptions, pk: PreparedKeys, target: LabelledColumn, kc: list[str]) -> None:
    """Every excluded key level / target level must exist (synthpop stops otherwise)."""
    if not opts.exclude_keys:
        return
    t_levels = set(target.orig.unique().to_list()) | set(target.syn.unique().to_list()) | set(target.declared_levels)
    for key, klev, tlev in zip(opts.exclude_keys, opts.exclude_keylevs, opts.exclude_targetlevs):
        i = pk.keys.index(key)
        levels = set(pk.orig[kc[i]].unique().to_list()) | set(pk.syn[kc[i]].unique().to_list())
        if klev not in levels:
            raise ParameterError(f"exclude_keylevs: {klev!r} is not a level of key {key!r} ({len(levels)} levels)")
        if tlev not in t_levels:
            raise ParameterError(
                f"exclude_targetlevs: {tlev!r} is not a level of target {opts.target!r} ({len(t_levels)} levels)"
            )


def _is_false(expr: pl.Expr) -> bool:
    return expr.meta.eq(pl.lit(False))


def _exclusion_masks(
    opts: DisclosureOptions, pk: PreparedKeys, kc: list[str], usekeys_data_order: list[bool], orig_missing_target: bool
) -> list[pl.Expr]:
    t = pl.col(TARGET_COL)
    false = pl.lit(False)
    m1 = t.is_in(list(opts.not_targetlev)) if opts.not_targetlev else false
    m2 = (t == MISSING) if (not opts.usetarget_na and orig_missing_target) else false
    m3 = false
    for i, use in enumerate(usekeys_data_order):
        if not use:
            m3 = m3 | (pl.col(kc[i]) == MISSING)
    m4 = false
    for key, klev, tlev in zip(opts.exclude_keys, opts.exclude_keylevs, opts.exclude_targetlevs):
        i = pk.keys.index(key)
        m4 = m4 | ((t == tlev) & (pl.col(kc[i]) == klev))
    return [m1, m2, m3, m4]


def _no_exclusions(cells: pl.DataFrame) -> pl.DataFrame:
    """The Nexclusions table when no exclusion is active: all steps 0."""
    sums = cells.group_by(SYN_COL).agg([pl.col(tab).sum().alias(tab) for tab in TABLES]).sort(SYN_COL)
    zero = pl.lit(0, dtype=pl.Int64)
    frames = [
        sums.select(
            pl.col(SYN_COL).alias("synthesis"),
            pl.lit(row).alias("table"),
            *[zero.alias(step) for step in STEPS],
            pl.col(tab).alias("remaining"),
        )
        for tab, row in zip(TABLES, TABLE_ROWS)
    ]
    return pl.concat(frames).sort("synthesis", maintain_order=True)


def _apply_exclusions(
    cells: pl.DataFrame, masks: list[pl.Expr], opts: DisclosureOptions
) -> tuple[pl.DataFrame, pl.DataFrame]:
    m1, m2, m3, m4 = masks
    if not opts.exclude_ov_denom_lim and all(_is_false(mask) for mask in masks):
        return cells, _no_exclusions(cells)
    cells = cells.with_columns(
        m1.alias("__x1"),
        (m2 & ~m1).alias("__x2"),
        (m3 & ~m1 & ~m2).alias("__x3"),
        (m4 & ~m1 & ~m2 & ~m3).alias("__x4"),
    ).with_columns((pl.col("__x1") | pl.col("__x2") | pl.col("__x3") | pl.col("__x4")).alias("__xa"))
    zero = pl.lit(0, dtype=pl.Int64)
    step_exprs = []
    final_exprs = []
    for tab in TABLES:
        v = pl.col(tab)
        kept = pl.when(pl.col("__xa")).then(zero).otherwise(v)
        for step in range(1, 5):
            step_exprs.append(pl.when(pl.col(f"__x{step}")).then(v).otherwise(zero).alias(f"__{tab}_x{step}"))
        if opts.exclude_ov_denom_lim:
            over = kept > opts.denom_lim
            step_exprs.append(pl.when(over).then(kept).otherwise(zero).alias(f"__{tab}_x5"))
            final_exprs.append(pl.when(over).then(zero).otherwise(kept).alias(tab))
        else:
            step_exprs.append(zero.alias(f"__{tab}_x5"))
            final_exprs.append(kept.alias(tab))
    cells = cells.with_columns(step_exprs).with_columns(final_exprs)
    sums = (
        cells.group_by(SYN_COL)
        .agg(
            [pl.col(f"__{tab}_x{k}").sum() for tab in TABLES for k in range(1, 6)]
            + [pl.col(tab).sum().alias(f"__{tab}_rem") for tab in TABLES]
        )
        .sort(SYN_COL)
    )
    frames = []
    for tab, row in zip(TABLES, TABLE_ROWS):
        frames.append(
            sums.select(
                pl.col(SYN_COL).alias("synthesis"),
                pl.lit(row).alias("table"),
                *[pl.col(f"__{tab}_x{k}").alias(STEPS[k - 1]) for k in range(1, 6)],
                pl.col(f"__{tab}_rem").alias("remaining"),
            )
        )
    exclusions = pl.concat(frames).sort("synthesis", maintain_order=True)
    cells = cells.drop(
        [c for c in cells.columns if c.startswith("__x") or (c.startswith("__") and "_x" in c and c != SYN_COL)]
    )
    return cells, exclusions
