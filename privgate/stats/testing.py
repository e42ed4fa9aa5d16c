"""Hypothesis tests and multiple-testing corrections.

- ``binomial_test``: the exact binomial test (scipy's ``binomtest``); fractional counts (ties
  counted half to each side) are rounded to the nearest integer count, which is stated where
  a metric uses it.
- ``bonferroni`` and ``holm`` (Holm, "A simple sequentially rejective multiple test procedure",
  Scand. J. Statist. 1979): adjusted p-values, each ≤ 1.
"""

from __future__ import annotations

import numpy as np

from .._lazy import lazy_module

_st = lazy_module("scipy.stats")  # imported on first use (import time)


def binomial_test(k: float, n: int, p: float = 0.5, alternative: str = "greater") -> float:
    """Exact binomial test p-value of k successes in n trials against success probability p."""
    if n <= 0:
        raise ValueError(f"a binomial test needs n > 0 trials; got {n}")
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided'; got {alternative!r}")
    k_int = int(np.clip(round(float(k)), 0, n))
    return float(_st.binomtest(k_int, int(n), p, alternative=alternative).pvalue)


def binomial_upper_p(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Elementwise exact one-sided binomial p-values P(X ≥ k), X ~ Bin(n, p) (vectorised
    ``binomial_test(k, n, p)`` for whole integer counts)."""
    k, n, p = (np.asarray(a, dtype=np.float64) for a in (k, n, p))
    return np.asarray(_st.binom.sf(k - 1, n, p), dtype=np.float64)


def bonferroni(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Bonferroni-adjusted p-values: min(1, m·p)."""
    p = np.asarray(p_values, dtype=np.float64)
    return np.minimum(1.0, p * p.size)


def holm(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as given); the family-wise error rate is
    controlled under any dependence between the tests."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj_sorted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj_sorted
    return out
