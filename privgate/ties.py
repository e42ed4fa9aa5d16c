"""Tolerant comparisons of distances.

Every comparison that decides a metric is made on float64 distances, with values within
1e-9·(1 + max) treated as equal.
"""

from __future__ import annotations

import numpy as np

REL_TOL = 1e-9


def tolerance(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """The absolute tolerance 1e-9·(1 + max(|a|, |b|)) under which a and b count as equal."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m = np.maximum(np.abs(a), np.abs(b))
    m = np.where(np.isfinite(m), m, 0.0)
    return REL_TOL * (1.0 + m)


def close(a, b) -> np.ndarray:
    """a == b within the tolerance (inf == inf)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):
        return both_inf | (np.abs(a - b) <= tolerance(a, b))


def lt(a, b) -> np.ndarray:
    """a < b strictly, i.e. smaller and not equal within the tolerance."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a < b) & ~close(a, b)


def le(a, b) -> np.ndarray:
    """a ≤ b, with values equal within the tolerance counting as equal."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a <= b) | close(a, b)


def gt(a, b) -> np.ndarray:
    return lt(b, a)


def ge(a, b) -> np.ndarray:
    return le(b, a)
