"""Identity, attribute and CAP measures from the cell tables (notes §4), all in percent.

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

from .prepare import SYN_COL, TARGET_COL

IDENT_COLS = ("UiO", "UiS", "UiOiS", "repU")
ATTRIB_COLS = ("Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO", "max_denom", "mean_denom")
CAP_COLS = ("baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP")


def compute_measures(cells: pl.DataFrame, key_cols: list[str], n_orig: int, n_syn: list[int]
                     ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[int]]:
    """(ident, attrib, allcaps, TCAP_denom) — one row per synthetic set, in set order."""
    m = len(n_syn)
    ns = pl.DataFrame({SYN_COL: pl.Series(range(1, m + 1), dtype=pl.Int32),
                       "__ns": pl.Series(n_syn, dtype=pl.Float64)})
    nd = float(n_orig)
    per_key = cells.group_by([SYN_COL, *key_cols]).agg(
        pl.col("d").sum().alias("dq"), pl.col("s").sum().alias("sq"),
        pl.col("s_pre").sum().alias("sq_pre"),
    )
    uo = pl.col("dq") == 1
    ident = (
        per_key.group_by(SYN_COL).agg(
            uo.sum().alias("n_uio"), (pl.col("sq") == 1).sum().alias("n_uis"),
            (uo & (pl.col("sq_pre") > 0)).sum().alias("n_uiois"),
            (uo & (pl.col("sq") == 1)).sum().alias("n_repu"),
            pl.when(pl.col("sq") > 0).then(pl.col("dq")).otherwise(0).sum().alias("tcap_denom"),
        )
        .join(ns, on=SYN_COL, how="right")
        .fill_null(0)
        .sort(SYN_COL)
    )
    # the float sums below (CAPs, mean_denom) run in one fixed order of the cells: a hash join's
    # or group-by's row order varies from run to run, and with it the last bits of a float sum
    with_q = cells.join(per_key.select(SYN_COL, *key_cols, "dq", "sq"), on=[SYN_COL, *key_cols],
                        how="left").sort([SYN_COL, *key_cols, TARGET_COL], nulls_last=True)
    d, s, dq, sq = pl.col("d"), pl.col("s"), pl.col("dq"), pl.col("sq")
    ps = pl.when(sq > 0).then(s / sq).otherwise(0.0)
    pd_ = pl.when(dq > 0).then(d / dq).otherwise(0.0)
    sums = with_q.group_by(SYN_COL).agg(
        *[pl.col(c).sum().alias(c) for c in ("did", "dis", "iS", "DiS", "DiSCO", "DiSDiO")],
        pl.col("DiSCO").max().alias("max_denom"),
        pl.col("DiSCO").filter(pl.col("DiSCO") > 0).mean().alias("mean_denom"),
        (pd_ * d).sum().alias("capd"), (ps * s).sum().alias("caps"),
        (ps * d).sum().alias("dcap"),
    )
    sums = sums.join(ns, on=SYN_COL, how="right").sort(SYN_COL)
    # baseCAPd from the original's row totals before exclusions (the same for every set)
    first = cells.filter(pl.col(SYN_COL) == 1)
    row_tot = first.group_by(TARGET_COL).agg(pl.col("d_pre").sum()).sort(TARGET_COL, nulls_last=True
                                                                           ).get_column("d_pre").to_numpy()
    base_capd = 100.0 * float(np.sum((row_tot / nd) ** 2))

    nsv = ident["__ns"].to_numpy()
    ident_df = pl.DataFrame({
        "UiO": 100.0 * ident["n_uio"].to_numpy() / nd,
        "UiS": 100.0 * ident["n_uis"].to_numpy() / nsv,
        "UiOiS": 100.0 * ident["n_uiois"].to_numpy() / nd,
        "repU": 100.0 * ident["n_repu"].to_numpy() / nd,
    })
    col = lambda name: sums[name].fill_null(0).cast(pl.Float64).to_numpy()  # noqa: E731
    mean_denom = sums["mean_denom"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
    attrib_df = pl.DataFrame({
        "Dorig": 100.0 * col("did") / nd,
        "Dsyn": 100.0 * col("dis") / nsv,
        "iS": 100.0 * col("iS") / nd,
        "DiS": 100.0 * col("DiS") / nd,
        "DiSCO": 100.0 * col("DiSCO") / nd,
        "DiSDiO": 100.0 * col("DiSDiO") / nd,
        "max_denom": col("max_denom"),
        "mean_denom": mean_denom,
    })
    tcap_denom = ident["tcap_denom"].to_numpy().astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        tcap = 100.0 * col("DiSCO") / tcap_denom.astype(np.float64)
    caps_df = pl.DataFrame({
        "baseCAPd": np.full(m, base_capd),
        "CAPd": 100.0 * col("capd") / nd,
        "CAPs": 100.0 * col("caps") / nsv,
        "DCAP": 100.0 * col("dcap") / nd,
        "TCAP": tcap,
    })
    return ident_df, attrib_df, caps_df, [int(x) for x in tcap_denom]
