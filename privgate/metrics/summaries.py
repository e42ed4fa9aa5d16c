"""Summaries of per-record distances that metrics publish or normalise by."""

from __future__ import annotations

import numpy as np

from ..ties import close


def minmax_normalise(d: np.ndarray) -> tuple[np.ndarray, bool]:
    """Min–max normalise distances over their own range; all equal (within tolerance) → zeros
    (close_values, distant_values, nsnd). Returns (normalised, degenerate)."""
    lo, hi = float(d.min()), float(d.max())
    if bool(close(lo, hi)):
        return np.zeros_like(d), True
    return (d - lo) / (hi - lo), False


def quantile_summary(x: np.ndarray) -> dict[str, float]:
    """min, p10, median, p90, max and mean of the finite values of ``x`` (empty when none)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {}
    q = np.quantile(x, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {
        "min": float(q[0]),
        "p10": float(q[1]),
        "median": float(q[2]),
        "p90": float(q[3]),
        "max": float(q[4]),
        "mean": float(x.mean()),
    }
