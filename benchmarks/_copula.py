"""A small Gaussian copula over mixed columns, in NumPy: the validity benchmark's honest generator.

Fitted on the training records only. Numerics: normal scores of their mid-ranks; on sampling,
the inverse of the training values' interpolated empirical CDF (integers rounded), so values lie
between training values instead of repeating them. Categoricals (null a level): levels ordered by
frequency, a record's latent score is the normal quantile of the middle of its level's cumulative
probability interval; on sampling, the level whose interval holds Φ(z). A numeric null is a
separate Bernoulli draw at the training null rate. Deterministic for a seed.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import stats

NULL = "\x00<null>"


def _numeric(frame: pl.DataFrame, col: str) -> bool:
    return frame[col].dtype.is_numeric()


def fit_sample(train: pl.DataFrame, n: int, seed: int) -> pl.DataFrame:
    """Fit a Gaussian copula on ``train`` and draw ``n`` records."""
    rng = np.random.default_rng(seed)
    m = train.height
    scores, decoders = [], []
    for col in train.columns:
        s = train[col]
        if _numeric(train, col):
            v = s.cast(pl.Float64).to_numpy()
            ok = ~np.isnan(v)
            ranks = stats.rankdata(np.where(ok, v, np.nanmedian(v)))
            scores.append(stats.norm.ppf(ranks / (m + 1)))
            decoders.append(("num", np.sort(v[ok]), float((~ok).mean()), s.dtype.is_integer(), s.dtype))
        else:
            vals = s.fill_null(NULL).to_numpy().astype(str)
            levels, counts = np.unique(vals, return_counts=True)
            order = np.argsort(-counts, kind="stable")
            levels, p = levels[order], counts[order] / m
            cum = np.concatenate([[0.0], np.cumsum(p)])
            mid = stats.norm.ppf(np.clip((cum[:-1] + cum[1:]) / 2, 1e-9, 1 - 1e-9))
            pos = {lv: i for i, lv in enumerate(levels)}
            scores.append(mid[np.array([pos[x] for x in vals])])
            decoders.append(("cat", levels, cum, None, s.dtype))
    z = np.column_stack(scores)
    corr = np.corrcoef(z, rowvar=False)
    corr = np.nan_to_num(corr, nan=0.0)
    np.fill_diagonal(corr, 1.0)
    w, v = np.linalg.eigh(corr)
    corr = (v * np.clip(w, 1e-6, None)) @ v.T
    draws = rng.multivariate_normal(np.zeros(len(scores)), corr, size=n, method="cholesky")
    u = stats.norm.cdf(draws)
    cols = []
    for j, col in enumerate(train.columns):
        kind, a, b, integer, dtype = decoders[j]
        if kind == "num":
            x = np.interp(u[:, j] * (a.size - 1), np.arange(a.size), a)
            if integer:
                x = np.round(x)
            x[rng.random(n) < b] = np.nan
            out = pl.Series(col, x).fill_nan(None)
            cols.append(out.cast(dtype, strict=False))
        else:
            idx = np.clip(np.searchsorted(b, u[:, j], side="right") - 1, 0, a.size - 1)
            vals = a[idx]
            out = pl.Series(col, vals).replace(NULL, None)
            cols.append(out.cast(dtype, strict=False))
    return pl.DataFrame(cols)
