"""The ROC AUC with DeLong's variance (DeLong, DeLong & Clarke-Pearson, "Comparing the areas
under two or more correlated receiver operating characteristic curves: a nonparametric
approach", Biometrics 1988), computed from mid-ranks (Sun & Xu, IEEE Signal Process. Lett. 2014)
— no loop over pairs of records — and a distribution-free interval valid at every sample size
(Hoeffding's inequality for two-sample U-statistics), for where DeLong's normal interval is not:
with a handful of scores a perfect separation has variance 0 and DeLong's interval is [1, 1]."""

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
    v10 = (all_ranks[:m] - _st.rankdata(pos)) / n  # per positive
    v01 = 1.0 - (all_ranks[m:] - _st.rankdata(neg)) / m  # per negative
    auc = float(v10.mean())
    var = float(v10.var(ddof=1) / m + v01.var(ddof=1) / n) if min(m, n) >= 2 else float("nan")
    return auc, var


def normal_interval(
    estimate: float, variance: float, level: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """estimate ± z·√variance, clipped to ``bounds`` (a Wald interval)."""
    if not variance >= 0:
        raise ValueError(f"variance must be ≥ 0; got {variance!r}")
    half = z_value(level) * math.sqrt(variance)
    return (max(bounds[0], estimate - half), min(bounds[1], estimate + half))


def hoeffding_auc_interval(
    auc: float, positives: int, negatives: int, level: float = 0.95, *, one_sided: bool = False
) -> tuple[float, float]:
    """A confidence interval for the AUC that holds at every sample size, whatever the score
    distributions: the Mann–Whitney AUC is a two-sample U-statistic with a kernel in [0, 1], so
    P(AUC − E AUC ≥ t) ≤ exp(−2·k·t²) with k = min(positives, negatives) (Hoeffding, "Probability
    inequalities for sums of bounded random variables", JASA 1963, §5), and the same below.
    Two-sided: each side at (1 − level)/2; ``one_sided``: the lower end at 1 − level and the
    upper end 1."""
    if min(positives, negatives) < 1:
        raise ValueError(f"an AUC needs at least one positive and one negative; got {positives} and {negatives}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    alpha = (1.0 - level) if one_sided else (1.0 - level) / 2.0
    half = math.sqrt(math.log(1.0 / alpha) / (2.0 * min(positives, negatives)))
    return max(0.0, auc - half), 1.0 if one_sided else min(1.0, auc + half)
