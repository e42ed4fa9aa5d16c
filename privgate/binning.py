"""Quantile bins of the real data, shared by identifiability and the
statistical family.

edges = unique(quantiles of the real non-null values at 0, 0.1, ..., 1, linear interpolation);
bins [e_k, e_{k+1}) with the last closed; values outside the range go to the first / last bin;
null is its own bin (code = number of bins).
"""

from __future__ import annotations

import numpy as np
import polars as pl

N_QUANTILE_BINS = 10


def quantile_edges(real_values: np.ndarray, n_bins: int = N_QUANTILE_BINS) -> np.ndarray:
    """Unique linear-interpolation quantile edges of the non-NaN ``real_values``."""
    vals = np.asarray(real_values, dtype=np.float64)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return np.empty(0)
    qs = np.quantile(vals, np.linspace(0.0, 1.0, n_bins + 1), method="linear")
    return np.unique(qs)


def assign_bins(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin codes 0..B-1 for ``values`` given ``edges`` (B = max(len(edges) - 1, 1)); NaN → B."""
    vals = np.asarray(values, dtype=np.float64)
    n_bins = max(len(edges) - 1, 1)
    if len(edges) <= 1:
        codes = np.zeros(vals.shape, dtype=np.int64)
    else:
        # interior edges decide: [e_k, e_{k+1}) ; last bin closed; outside → first/last bin
        codes = np.searchsorted(edges[1:-1], vals, side="right").astype(np.int64)
    codes[np.isnan(vals)] = n_bins
    return codes


def binned_codes(
    real: pl.Series, other: pl.Series, n_bins: int = N_QUANTILE_BINS
) -> tuple[np.ndarray, np.ndarray, int]:
    """Bin a numeric column of real and another frame with the real edges.

    Returns (real_codes, other_codes, n_levels) where n_levels counts the null bin.
    """
    r = real.cast(pl.Float64).to_numpy().astype(np.float64, copy=False)
    o = other.cast(pl.Float64).to_numpy().astype(np.float64, copy=False)
    edges = quantile_edges(r, n_bins)
    n = max(len(edges) - 1, 1)
    return assign_bins(r, edges), assign_bins(o, edges), n + 1
