"""Intervals for a share of records: k successes out of n.

- Wilson score interval (E. B. Wilson, "Probable inference, the law of succession, and
  statistical inference", JASA 1927): good coverage for moderate n, never outside [0, 1].
- Clopper–Pearson exact interval (Clopper & Pearson, Biometrika 1934): guaranteed coverage
  ≥ level, conservative; the right choice for shares near 0 (e.g. 0 copies in 5,000 records).
- ``wilson_rate``: the Wilson centre and half-width, as anonymeter reports an attack's success
  rate (Giomi et al., "A Unified Framework for Quantifying Privacy Risk in Synthetic Data",
  PoPETs 2023).
"""

from __future__ import annotations

import math

from .._lazy import lazy_module

_st = lazy_module("scipy.stats")  # imported on first use (import time)


def _check(k: float, n: float, level: float) -> None:
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    if n <= 0:
        raise ValueError(f"an interval for a share needs n > 0 records; got n={n!r}")
    if k < 0 or k > n:
        raise ValueError(f"successes must be within [0, n={n}]; got {k!r}")


def z_value(level: float = 0.95) -> float:
    """The two-sided standard normal quantile for ``level`` (1.959964 for 0.95)."""
    return float(_st.norm.ppf(1.0 - (1.0 - level) / 2.0))


def wilson(k: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the share k/n (k may be fractional, e.g. ties counted half)."""
    _check(k, n, level)
    z = z_value(level)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def clopper_pearson(k: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson (exact, beta-quantile) interval of the share k/n; k is rounded to an
    integer count."""
    _check(k, n, level)
    k = int(round(k))
    n = int(round(n))
    a = (1.0 - level) / 2.0
    lo = 0.0 if k == 0 else float(_st.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1.0 - a, k + 1, n - k))
    return (lo, hi)


def wilson_rate(k: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """(rate, error): the Wilson interval's centre and half-width — anonymeter's
    ``probability_of_success``, which reports the centre rather than k/n."""
    _check(k, n, level)
    z = z_value(level)
    z2 = z * z
    denom = n + z2
    rate = (k + 0.5 * z2) / denom
    error = (z / denom) * math.sqrt(k * (n - k) / n + 0.25 * z2)
    return (float(rate), float(error))


# below this many successes or failures the Wilson interval's coverage dips under its level
# (Brown, Cai & DasGupta, "Interval estimation for a binomial proportion", Stat. Sci. 2001):
# use the exact interval there
SMALL_COUNT = 10


def share_interval(k: float, n: float, level: float = 0.95) -> tuple[tuple[float, float], str]:
    """The interval privgate uses for a share of records k/n, with its method in words: Wilson,
    or Clopper–Pearson when fewer than ``SMALL_COUNT`` (10) records are on either side (including
    0 of n and n of n), where Wilson under-covers. One rule for every share metric."""
    _check(k, n, level)
    if min(k, n - k) < SMALL_COUNT:
        return clopper_pearson(k, n, level), f"Clopper–Pearson exact interval of {round(k)}/{round(n)} records"
    return wilson(k, n, level), f"Wilson score interval of {k:g}/{n:g} records"
