"""The mirrored-count test: a count A on one side of a symmetric split against its mirror B.

Under the null the G = k_T + k_H equally sized, exchangeable sets each win a record with the same
expectation, so with k_T sets on side A and k_H on side B, E[A] = (k_T/k_H)·E[B]: A is tested
against Bin(A + B, p₀ = k_T/(k_T + k_H)) (fractional half-counts rounded half up), the share
estimate is (A − p₀/(1 − p₀)·B)/m in a release of m records, and its one-sided bounds are
n·(π − p₀)/((1 − p₀)·m), π the one-sided Clopper–Pearson bound of A/n, n = A + B. Used by the
``memorisation`` metric, whose docstring gives the argument; K tails scanned at once are paid
for by Bonferroni (lower bounds at α/(2K)).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .proportions import clopper_pearson
from .testing import binomial_test


def half_up(x: float) -> int:
    """x rounded half up (a fractional half-count to a whole count)."""
    return int(math.floor(x + 0.5))


def mirrored_share(a: float, b: float, m: int, *, scale: float = 1.0, p0: float = 0.5) -> float:
    """The share of m records on side A beyond the mirrored chance count: scale·(A − p0/(1 − p0)·B)/m."""
    return scale * (a - p0 / (1.0 - p0) * b) / m


def mirrored_tail_test(
    a: float, b: float, m: int, k_tails: int, alpha: float = 0.05, scale: float = 1.0, p0: float = 0.5
) -> dict[str, float]:
    """One tail's binomial test and share bounds from its side-A (a) and side-B (b) counts in a
    release of m records: the one-sided p-value of A against Bin(A + B, p0), the share
    (:func:`mirrored_share`), its lower bound at one-sided level alpha/(2·k_tails) and upper
    bound at alpha/2; shares are multiplied by ``scale``."""
    k, n = half_up(a), half_up(a + b)
    k = min(k, n)
    if n == 0:
        return {"p": 1.0, "share": 0.0, "lower": 0.0, "upper": 0.0}
    p = binomial_test(k, n, p0, "greater")
    lo = clopper_pearson(k, n, 1.0 - alpha / k_tails)[0]  # one-sided at alpha / (2K)
    hi = clopper_pearson(k, n, 1.0 - alpha)[1]  # one-sided at alpha / 2
    to_share = scale * n / ((1.0 - p0) * m)
    return {
        "p": p,
        "share": mirrored_share(a, b, m, scale=scale, p0=p0),
        "lower": to_share * (lo - p0),
        "upper": to_share * (hi - p0),
    }


def tail_quantiles(alpha: float, k_tails: int) -> tuple[float, float]:
    """The standard normal quantiles of the scan's one-sided levels: (lower bounds at
    alpha/(2·k_tails), upper bound at alpha/2)."""
    return NormalDist().inv_cdf(1.0 - alpha / (2 * k_tails)), NormalDist().inv_cdf(1.0 - alpha / 2)


def sampled_share_halfwidth(contributions: np.ndarray, z: float, scale: float = 1.0) -> float:
    """z × the standard error of a share scale·Σ d_i / m estimated on a simple random sample of
    m records with per-record ``contributions`` d_i (0 for a record outside the tail): the
    record-sampling error that the binomial bounds, conditional on the tail's A + B, leave out
    (0 for fewer than two records)."""
    m = contributions.size
    return float(z * scale * contributions.std(ddof=1) / math.sqrt(m)) if m > 1 else 0.0
