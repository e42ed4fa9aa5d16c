"""Seeded bootstrap over records (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993):
percentile intervals of a statistic of per-record values.

Resampling never re-runs a neighbour search: the statistic is recomputed from per-record values
that the searches already produced (a record's distance, its flag), which is what makes an
interval for every metric affordable.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

DEFAULT_BOOT = 1000
_CHUNK = 64


def bootstrap_weights(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) resampling counts: row b says how often each record is drawn in replicate b
    (multinomial(n, 1/n)). Deterministic for a seed."""
    if n <= 0:
        raise ValueError(f"a bootstrap needs at least one record; got n={n}")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)


def _percentile(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        raise ValueError("every bootstrap replicate of the statistic was undefined")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [a, 1.0 - a])
    return (float(lo), float(hi))


def bootstrap_mean_ci(values: np.ndarray, seed: int = 0, *, n_boot: int = DEFAULT_BOOT,
                      level: float = 0.95, paired: np.ndarray | None = None) -> tuple[float, float]:
    """Percentile interval of mean(values) (or of mean(values − paired) when ``paired`` is given:
    the same records resampled for both, e.g. a release and its holdout baseline scored on the
    same real records). Vectorised: replicates come from a count matrix, in chunks."""
    x = np.asarray(values, dtype=np.float64)
    if paired is not None:
        p = np.asarray(paired, dtype=np.float64)
        if p.shape != x.shape:
            raise ValueError(f"paired values must have the shape of values: {p.shape} vs {x.shape}")
        x = x - p
    n = x.size
    if n == 0:
        raise ValueError("a bootstrap needs at least one record; got none")
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    probs = np.full(n, 1.0 / n)
    for s in range(0, n_boot, _CHUNK):
        b = min(_CHUNK, n_boot - s)
        w = rng.multinomial(n, probs, size=b).astype(np.float64)
        reps[s:s + b] = w @ x / n
    return _percentile(reps, level)


def bootstrap_ci(statistic: Callable[[np.ndarray], float], n: int, seed: int = 0, *,
                 n_boot: int = DEFAULT_BOOT, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of any statistic of n records. ``statistic(idx)`` receives the
    resampled record positions (an int array of length n, drawn with replacement) and returns a
    float; it should be vectorised over the records (a median, a ratio of medians, ...)."""
    if n <= 0:
        raise ValueError(f"a bootstrap needs at least one record; got n={n}")
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    for b in range(n_boot):
        reps[b] = float(statistic(rng.integers(0, n, size=n)))
    return _percentile(reps, level)
