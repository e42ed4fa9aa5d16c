"""Small pieces shared by metric modules."""

from __future__ import annotations


import numpy as np

from ..results import MetricResult
from ..ties import close


# the metric modules' short name for MetricResult.from_context
result = MetricResult.from_context


def minmax_normalise(d: np.ndarray) -> tuple[np.ndarray, bool]:
    """Min–max normalise distances over their own range; all equal (within tolerance) → zeros
    (METRICS.md §3 rule 3). Returns (normalised, degenerate)."""
    lo, hi = float(d.min()), float(d.max())
    if bool(close(lo, hi)):
        return np.zeros_like(d), True
    return (d - lo) / (hi - lo), False


def quantile_summary(x: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {}
    q = np.quantile(x, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {"min": float(q[0]), "p10": float(q[1]), "median": float(q[2]), "p90": float(q[3]),
            "max": float(q[4]), "mean": float(x.mean())}


def sigmoid(x: float) -> float:
    if x == np.inf:
        return 1.0
    return float(1.0 / (1.0 + np.exp(-x)))
