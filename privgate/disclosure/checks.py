"""synthpop's 1-way and 2-way checks on the DiSCO table.

* check_1way: the target level with the most DiSCO records (ties → first level in code-point
  order); flagged when its DiSCO count > ``thresh_1way[0]`` **and** its share of all DiSCO
  records > ``thresh_1way[1]`` %.
* check_2way: DiSCO cells with count > ``thresh_2way[0]`` give, for every key, a (target level,
  key level) pair with ``npairs`` = the summed DiSCO counts; pairs are stacked key by key (data
  order, pair strings in code-point order — their position is the row label ``row``), ordered by
  decreasing npairs (stable), and reported when the share of the original records with that key
  level that also have that target level (before exclusions) > ``thresh_2way[1]`` %.

Pairs are tracked as (target level, key, key level) rather than re-parsed from the
``"t|level"`` string, so a level containing ``|`` does not break the check (it breaks
synthpop's).
"""

from __future__ import annotations

import polars as pl

from .prepare import ORDER_COL, SYN_COL, TARGET_COL

ONEWAY_COLS = ("Level", "All", "PctLevelAll", "totalDisclosive", "nLevelDis", "PctLevelDis")
TWOWAY_COLS = ("row", "target_key_levs", "npairs", "key", "key_target_total", "key_total", "PctTargetKeyLevel")


def check_1way(
    cells: pl.DataFrame, target: str, target_levels: pl.Series, m: int, thresh: tuple[float, float]
) -> tuple[list[pl.DataFrame | None], str]:
    """Per synthetic set the flagged-level frame (or None) and synthpop's ``check1`` message
    (that of the last flagged set; "" if none). ``target_levels``: every level in code-point
    order, the cells' ``ORDER_COL`` numbering them."""
    levels = pl.DataFrame(
        {TARGET_COL: target_levels.cast(pl.String), ORDER_COL: pl.Series(range(len(target_levels)), dtype=pl.UInt32)}
    )
    per_level = cells.group_by([SYN_COL, ORDER_COL]).agg(
        pl.col("d").sum().alias("all"), pl.col("DiSCO").sum().alias("dis")
    )
    out: list[pl.DataFrame | None] = []
    message = ""
    for j in range(1, m + 1):
        tab = (
            levels.join(per_level.filter(pl.col(SYN_COL) == j).drop(SYN_COL), on=ORDER_COL, how="left")
            .fill_null(0)
            .sort(ORDER_COL)
        )
        total_dis = int(tab["dis"].sum())
        total_all = int(tab["all"].sum())
        top = tab.sort("dis", descending=True, maintain_order=True).row(0, named=True)
        n_level = int(top["dis"])
        pct_dis = 100.0 * n_level / total_dis if total_dis else float("nan")
        if total_dis and n_level > thresh[0] and pct_dis > thresh[1]:
            level = top[TARGET_COL]
            out.append(
                pl.DataFrame(
                    {
                        "Level": [level],
                        "All": [total_all],
                        "PctLevelAll": [100.0 * int(top["all"]) / total_all],
                        "totalDisclosive": [total_dis],
                        "nLevelDis": [n_level],
                        "PctLevelDis": [pct_dis],
                    }
                )
            )
            message = f"Check  {target}  level  {level}"
        else:
            out.append(None)
    return out, message


def check_2way(
    cells: pl.DataFrame,
    orig_records: pl.DataFrame,
    keys: list[str],
    key_cols: list[str],
    m: int,
    thresh: tuple[float, float],
) -> tuple[list[pl.DataFrame | None], str]:
    """Per synthetic set the reported pairs (or None) and ``check2`` ("<n> pairs need checks"
    of the last set with pairs; "" if none)."""
    big = cells.filter(pl.col("DiSCO") > thresh[0])
    if big.height == 0:
        return [None] * m, ""
    stacked = []
    for i, (key, kc) in enumerate(zip(keys, key_cols)):
        totals = orig_records.group_by(kc).agg(pl.len().cast(pl.Int64).alias("key_total"))
        tt = orig_records.group_by([TARGET_COL, kc]).agg(pl.len().cast(pl.Int64).alias("key_target_total"))
        pairs = (
            big.group_by([SYN_COL, TARGET_COL, kc])
            .agg(pl.col("DiSCO").sum().alias("npairs"))
            .with_columns(pl.concat_str([pl.col(TARGET_COL), pl.lit("|"), pl.col(kc)]).alias("target_key_levs"))
            .join(totals, on=kc, how="left")
            .join(tt, on=[TARGET_COL, kc], how="left")
            .with_columns(pl.lit(key).alias("key"), pl.lit(i).alias("__key_pos"))
            .select(
                SYN_COL,
                "__key_pos",
                "target_key_levs",
                "npairs",
                "key",
                pl.col("key_target_total").fill_null(0),
                pl.col("key_total").fill_null(0),
            )
        )
        stacked.append(pairs)
    allp = pl.concat(stacked).sort([SYN_COL, "__key_pos", "target_key_levs"])
    allp = allp.with_columns(pl.int_range(1, pl.len() + 1).over(SYN_COL).cast(pl.Int64).alias("row"))
    allp = allp.with_columns((100.0 * pl.col("key_target_total") / pl.col("key_total")).alias("PctTargetKeyLevel"))
    out: list[pl.DataFrame | None] = []
    message = ""
    for j in range(1, m + 1):
        sel = (
            allp.filter(pl.col(SYN_COL) == j)
            .sort("row")
            .sort("npairs", descending=True, maintain_order=True)
            .filter(pl.col("PctTargetKeyLevel") > thresh[1])
            .select(list(TWOWAY_COLS))
        )
        if sel.height:
            out.append(sel)
            message = f"{sel.height} pairs need checks"
        else:
            out.append(None)
    return out, message
