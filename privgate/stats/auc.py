"""The ROC AUC with DeLong's variance (DeLong, DeLong & Clarke-Pearson, "Comparing the areas
under two or more correlated receiver operating characteristic curves: a nonparametric
approach", Biometrics 1988), computed from mid-ranks (Sun & Xu, IEEE Signal Process. Lett. 2014)
— no loop over pairs of records."""

from __future__ import annotations

import math

import numpy as np

from .._lazy import lazy_module
from .proportions import z_value

_st = lazy_module("scipy.stats")  # imported on first use (import time)


def delong_auc(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """(AUC, variance): the Mann–Whitney AUC of ``scores`` for positives (label 1) against
    negatives (label 0), ties counted half, and DeLong's variance S10/m + S01/n from the
    structural components (per positive: the share of negatives it outranks; per negative: the
    share of positives that outrank it). The variance is NaN with fewer than 2 positives or
    negatives (a sample variance needs two values)."""
    y = np.asarray(labels).astype(bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.shape != s.shape:
        raise ValueError(f"labels and scores must have the same shape: {y.shape} vs {s.shape}")
    pos, neg = s[y], s[~y]
    m, n = pos.size, neg.size
    if m < 1 or n < 1:
        raise ValueError(f"an AUC needs at least one positive and one negative; got {m} and {n}")
    all_ranks = _st.rankdata(np.concatenate([pos, neg]))
    v10 = (all_ranks[:m] - _st.rankdata(pos)) / n          # per positive
    v01 = 1.0 - (all_ranks[m:] - _st.rankdata(neg)) / m    # per negative
    auc = float(v10.mean())
    var = float(v10.var(ddof=1) / m + v01.var(ddof=1) / n) if min(m, n) >= 2 else float("nan")
    return auc, var


def normal_interval(estimate: float, variance: float, level: float = 0.95,
                    bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """estimate ± z·√variance, clipped to ``bounds`` (a Wald interval)."""
    if not variance >= 0:
        raise ValueError(f"variance must be ≥ 0; got {variance!r}")
    half = z_value(level) * math.sqrt(variance)
    return (max(bounds[0], estimate - half), min(bounds[1], estimate + half))
