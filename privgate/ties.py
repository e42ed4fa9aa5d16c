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


def _beyond_tolerance(b: np.ndarray, side: float) -> np.ndarray:
    """b moved by twice the largest tolerance it can have with a value on ``side`` (−1 below, +1
    above): a value beyond it is on that side of b and not equal to it within the tolerance
    (twice, so rounding cannot matter). Infinite and NaN b stay as they are."""
    with np.errstate(invalid="ignore", over="ignore"):
        moved = b + side * (2.0 * REL_TOL) * (1.0 + np.abs(b))
    return np.where(np.isfinite(b), moved, b)


def lt(a, b) -> np.ndarray:
    """a < b strictly, i.e. smaller and not equal within the tolerance.

    The same answer as ``(a < b) & ~close(a, b)`` element for element, computed in three passes:
    values below b by more than twice the tolerance are decided by one comparison, and only the
    few within that band are compared with the tolerance itself."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cut = _beyond_tolerance(b, -1.0)
    out = a < cut
    unsure = (a >= cut) & (a < b)
    if unsure.any():
        aa, bb = np.broadcast_arrays(a, b)
        out = np.array(np.broadcast_to(out, unsure.shape))
        out[unsure] = ~close(aa[unsure], bb[unsure])
    return out


def le(a, b) -> np.ndarray:
    """a ≤ b, with values equal within the tolerance counting as equal.

    The same answer as ``(a <= b) | close(a, b)`` element for element: only values above b by at
    most twice the tolerance are compared with the tolerance itself (see :func:`lt`)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cut = _beyond_tolerance(b, 1.0)
    out = a <= b
    unsure = (a > b) & (a <= cut)
    if unsure.any():
        aa, bb = np.broadcast_arrays(a, b)
        out = np.array(np.broadcast_to(out, unsure.shape))
        out[unsure] = close(aa[unsure], bb[unsure])
    return out


def gt(a, b) -> np.ndarray:
    return lt(b, a)


def ge(a, b) -> np.ndarray:
    return le(b, a)
