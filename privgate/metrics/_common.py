"""Small pieces shared by metric modules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results import MetricResult
from ..ties import close


def result(ctx, name: str, value: float, raw: float, raw_description: str, *,
           params: dict[str, Any] | None = None, details: dict[str, Any] | None = None,
           per_record: np.ndarray | None = None, per_record_description: str = "",
           per_attribute: dict[str, float] | None = None) -> MetricResult:
    """Build a MetricResult with the context's row counts and decided schema."""
    return MetricResult(
        name=name, value=float(value), raw=float(raw), raw_description=raw_description,
        params=dict(params or {}), n_real=ctx.n_real, n_synthetic=ctx.n_synthetic,
        n_holdout=ctx.n_holdout, details=dict(details or {}), per_attribute=per_attribute,
        per_record=per_record, per_record_description=per_record_description,
        schema=ctx.schema.as_dict(),
    )


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
