"""Identity, attribute and CAP measures from the cell tables, all in percent.

Raab, Nowok & Dibben, "Practical privacy metrics for synthetic data" (synthpop's disclosure
vignette, Appendix 1/2), as synthpop 1.9-2 codes them. Orientation: higher = more disclosure.

Identity (after exclusions; d_.q, s_.q are re-summed from the excluded tables):
``UiO = 100·#{q: d_.q = 1}/Nd``; ``UiS = 100·#{q: s_.q = 1}/Ns`` (over Ns, as coded);
``UiOiS = 100·#{q: d_.q = 1, q in the synthetic data before exclusions}/Nd``;
``repU = 100·#{q: d_.q = 1, s_.q = 1}/Nd``.

Attribute: ``Dorig = 100·Σdid/Nd``, ``Dsyn = 100·Σdis/Ns``, ``iS``, ``DiS``, ``DiSCO``, ``DiSDiO``
= 100·Σ(table)/Nd; ``max_denom`` = the largest DiSCO cell (an original count d_tq),
``mean_denom`` = mean of the non-zero DiSCO cells (NaN if none).

CAP: ``baseCAPd = 100·Σ_t (d_t./Nd)²`` (row totals before exclusions); ``CAPd = 100·Σ pd·d/Nd``;
``CAPs = 100·Σ ps·s/Ns``; ``DCAP = 100·Σ ps·d/Nd`` (proportions from the excluded tables);
``TCAP = 100·ΣDiSCO/TCAP_denom`` with ``TCAP_denom = Σ_q d_.q [s_.q > 0]`` — it can exceed 100
with ``exclude_ov_denom_lim`` (numerator and denominator are trimmed by different rules).
No scaled CAPs are computed (synthpop computes none).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from .prepare import ORDER_COL, SYN_COL

IDENT_COLS = ("UiO", "UiS", "UiOiS", "repU")
ATTRIB_COLS = ("Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO", "max_denom", "mean_denom")
CAP_COLS = ("baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP")


def compute_measures(
    cells: pl.DataFrame, key_cols: list[str], n_orig: int, n_syn: list[int]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[int]]:
    """(ident, attrib, allcaps, TCAP_denom) — one row per synthetic set, in set order."""
    ns = pl.DataFrame(
        {SYN_COL: pl.Series(range(1, len(n_syn) + 1), dtype=pl.Int32), "__ns": pl.Series(n_syn, dtype=pl.Float64)}
    )
    nd = float(n_orig)
    per_key = _key_totals(cells, key_cols)
    ident = _identity_counts(per_key, ns)
    sums = _cell_sums(cells, per_key, key_cols, ns)
    nsv = ident["__ns"].to_numpy()
    tcap_denom = ident["tcap_denom"].to_numpy().astype(np.int64)
    return (
        _identity_measures(ident, nd, nsv),
        _attribute_measures(sums, nd, nsv),
        _cap_measures(sums, _base_capd(cells, nd), tcap_denom, nd, nsv),
        [int(x) for x in tcap_denom],
    )


def _key_totals(cells: pl.DataFrame, key_cols: list[str]) -> pl.DataFrame:
    """Per set and key: d_.q, s_.q (after exclusions) and s_.q before exclusions."""
    return cells.group_by([SYN_COL, *key_cols]).agg(
        pl.col("d").sum().alias("dq"),
        pl.col("s").sum().alias("sq"),
        pl.col("s_pre").sum().alias("sq_pre"),
    )


def _identity_counts(per_key: pl.DataFrame, ns: pl.DataFrame) -> pl.DataFrame:
    """Per set (every set, in order, with its size ``__ns``): the unique-key counts behind the
    identity measures and TCAP's denominator."""
    uo = pl.col("dq") == 1
    return (
        per_key.group_by(SYN_COL)
        .agg(
            uo.sum().alias("n_uio"),
            (pl.col("sq") == 1).sum().alias("n_uis"),
            (uo & (pl.col("sq_pre") > 0)).sum().alias("n_uiois"),
            (uo & (pl.col("sq") == 1)).sum().alias("n_repu"),
            pl.when(pl.col("sq") > 0).then(pl.col("dq")).otherwise(0).sum().alias("tcap_denom"),
        )
        .join(ns, on=SYN_COL, how="right")
        .fill_null(0)
        .sort(SYN_COL)
    )


def _cell_sums(cells: pl.DataFrame, per_key: pl.DataFrame, key_cols: list[str], ns: pl.DataFrame) -> pl.DataFrame:
    """Per set, in order: the attribute tables' sums, the DiSCO cells' largest and mean, and the
    CAP numerators."""
    # the float sums below (CAPs, mean_denom) run in one fixed order of the cells: a hash join's
    # or group-by's row order varies from run to run, and with it the last bits of a float sum
    # (set, key) in that order numbered on the few keys, so the cells sort by integers; the set
    # leads the sort although the number implies it: a set column flagged sorted takes the
    # group-by below down the path whose float sums the tests pin (other paths differ in the last bits)
    keys = (
        per_key.select(SYN_COL, *key_cols, "dq", "sq")
        .sort([SYN_COL, *key_cols], nulls_last=True)
        .with_row_index("__kord")
    )
    with_q = cells.join(keys, on=[SYN_COL, *key_cols], how="left").sort([SYN_COL, "__kord", ORDER_COL])
    d, s, dq, sq = pl.col("d"), pl.col("s"), pl.col("dq"), pl.col("sq")
    ps = pl.when(sq > 0).then(s / sq).otherwise(0.0)
    pd_ = pl.when(dq > 0).then(d / dq).otherwise(0.0)
    sums = with_q.group_by(SYN_COL).agg(
        *[pl.col(c).sum().alias(c) for c in ("did", "dis", "iS", "DiS", "DiSCO", "DiSDiO")],
        pl.col("DiSCO").max().alias("max_denom"),
        pl.col("DiSCO").filter(pl.col("DiSCO") > 0).mean().alias("mean_denom"),
        (pd_ * d).sum().alias("capd"),
        (ps * s).sum().alias("caps"),
        (ps * d).sum().alias("dcap"),
    )
    return sums.join(ns, on=SYN_COL, how="right").sort(SYN_COL)


def _base_capd(cells: pl.DataFrame, nd: float) -> float:
    """baseCAPd from the original's row totals before exclusions (the same for every set)."""
    first = cells.filter(pl.col(SYN_COL) == 1)
    row_tot = first.group_by(ORDER_COL).agg(pl.col("d_pre").sum()).sort(ORDER_COL).get_column("d_pre").to_numpy()
    return 100.0 * float(np.sum((row_tot / nd) ** 2))


def _identity_measures(ident: pl.DataFrame, nd: float, nsv: np.ndarray) -> pl.DataFrame:
    """UiO, UiS, UiOiS and repU per set."""
    return pl.DataFrame(
        {
            "UiO": 100.0 * ident["n_uio"].to_numpy() / nd,
            "UiS": 100.0 * ident["n_uis"].to_numpy() / nsv,
            "UiOiS": 100.0 * ident["n_uiois"].to_numpy() / nd,
            "repU": 100.0 * ident["n_repu"].to_numpy() / nd,
        }
    )


def _sum_of(sums: pl.DataFrame, name: str) -> np.ndarray:
    """A per-set sum as floats, 0 for a set without cells."""
    return sums[name].fill_null(0).cast(pl.Float64).to_numpy()


def _attribute_measures(sums: pl.DataFrame, nd: float, nsv: np.ndarray) -> pl.DataFrame:
    """Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO, max_denom and mean_denom per set."""
    return pl.DataFrame(
        {
            "Dorig": 100.0 * _sum_of(sums, "did") / nd,
            "Dsyn": 100.0 * _sum_of(sums, "dis") / nsv,
            "iS": 100.0 * _sum_of(sums, "iS") / nd,
            "DiS": 100.0 * _sum_of(sums, "DiS") / nd,
            "DiSCO": 100.0 * _sum_of(sums, "DiSCO") / nd,
            "DiSDiO": 100.0 * _sum_of(sums, "DiSDiO") / nd,
            "max_denom": _sum_of(sums, "max_denom"),
            "mean_denom": sums["mean_denom"].cast(pl.Float64).fill_null(float("nan")).to_numpy(),
        }
    )


def _cap_measures(
    sums: pl.DataFrame, base_capd: float, tcap_denom: np.ndarray, nd: float, nsv: np.ndarray
) -> pl.DataFrame:
    """baseCAPd, CAPd, CAPs, DCAP and TCAP per set."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tcap = 100.0 * _sum_of(sums, "DiSCO") / tcap_denom.astype(np.float64)
    return pl.DataFrame(
        {
            "baseCAPd": np.full(len(nsv), base_capd),
            "CAPd": 100.0 * _sum_of(sums, "capd") / nd,
            "CAPs": 100.0 * _sum_of(sums, "caps") / nsv,
            "DCAP": 100.0 * _sum_of(sums, "dcap") / nd,
            "TCAP": tcap,
        }
    )
