"""Seeded bootstrap over records (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993):
percentile intervals of a statistic of per-record values.

Resampling never re-runs a neighbour search: the statistic is recomputed from per-record values
that the searches already produced (a record's distance, its flag), which is what makes an
interval for every metric affordable. Replicates are drawn as blocks of resampled record
positions (a (b, n) integer matrix per block, at most a few million cells held at once), and
the statistic is evaluated on a whole block at a time — no Python loop over records, and a loop
over replicates only where a caller's statistic cannot take a block.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np

DEFAULT_BOOT = 1000
_CHUNK = 64
# resampled positions held at once per block (int64): 4M cells = 32 MB
_BLOCK_CELLS = 4_000_000
#: A mean over more than this many records whose values take at most ``COUNTS_MAX_LEVELS``
#: distinct values (a share's 0/1 flags, a paired difference of two flags: −1, 0, 1) is
#: bootstrapped by drawing, per replicate, how many resampled records carry each value — a
#: multinomial of n draws over the values' shares, the same distribution as the mean of n
#: resampled records, in time independent of n (at a million records the resampled positions
#: took 4–8 CPU-s per interval). Smaller inputs keep the positions, so their intervals are as before.
COUNTS_ABOVE = 100_000
COUNTS_MAX_LEVELS = 256


def bootstrap_weights(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) resampling counts: row b says how often each record is drawn in replicate b
    (multinomial(n, 1/n)). Deterministic for a seed."""
    _check_n(n)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)


def _check_n(n: int) -> None:
    if n <= 0:
        raise ValueError(f"a bootstrap needs at least one record; got n={n}")


def resample_blocks(rng: np.random.Generator, n: int, n_boot: int, size: int | None = None) -> Iterator[np.ndarray]:
    """Blocks of resampled record positions: (b, size) arrays of indices into n records drawn
    with replacement (size defaults to n), n_boot rows in all."""
    _check_n(n)
    size = n if size is None else int(size)
    rows = max(1, min(_CHUNK, _BLOCK_CELLS // max(size, 1)))
    for s in range(0, n_boot, rows):
        yield rng.integers(0, n, size=(min(rows, n_boot - s), size))


def percentile_interval(reps: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates (undefined replicates dropped)."""
    reps = np.asarray(reps, dtype=np.float64)
    reps = reps[~np.isnan(reps)]
    if reps.size == 0:
        raise ValueError("every bootstrap replicate of the statistic was undefined")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [a, 1.0 - a])
    return (float(lo), float(hi))


def bootstrap_mean_ci(
    values: np.ndarray,
    seed: int = 0,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = 0.95,
    paired: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile interval of mean(values) (or of mean(values − paired) when ``paired`` is given:
    the same records resampled for both, e.g. a release and its holdout baseline scored on the
    same real records). With ``weights`` (one per record, held fixed) the statistic is the
    weighted mean Σ wᵢxᵢ / Σ wᵢ over the resampled records. Vectorised over blocks of
    replicates."""
    x = np.asarray(values, dtype=np.float64)
    if paired is not None:
        p = np.asarray(paired, dtype=np.float64)
        if p.shape != x.shape:
            raise ValueError(f"paired values must have the shape of values: {p.shape} vs {x.shape}")
        x = x - p
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != x.shape:
            raise ValueError(f"weights must have the shape of values: {w.shape} vs {x.shape}")
    n = x.size
    rng = np.random.default_rng(seed)
    if weights is None and n > COUNTS_ABOVE:
        levels, counts = np.unique(x, return_counts=True)
        if levels.size <= COUNTS_MAX_LEVELS and np.isfinite(levels).all():
            draws = rng.multinomial(n, counts / n, size=n_boot)
            return percentile_interval(draws @ levels / n, level)
    reps = []
    for idx in resample_blocks(rng, n, n_boot):
        if weights is None:
            reps.append(x[idx].mean(axis=1))
        else:
            ws = w[idx].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps.append((w * x)[idx].sum(axis=1) / ws)
    return percentile_interval(np.concatenate(reps), level)


def bootstrap_means_ci(
    samples: Sequence[np.ndarray],
    coefficients: Sequence[float],
    seed: int = 0,
    *,
    sizes: Sequence[int] | None = None,
    n_boot: int = DEFAULT_BOOT,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of Σ_g c_g·mean(sample_g), each sample resampled independently
    (a stratified bootstrap: e.g. per-record values of the real records and of the synthetic
    records, which are two samples). ``sizes`` sets how many values each replicate draws from
    each sample (default: its length), e.g. the records of one repetition when a sample pools
    several repetitions of the same records."""
    if len(samples) != len(coefficients):
        raise ValueError(f"one coefficient per sample: {len(samples)} samples, {len(coefficients)} coefficients")
    sizes = [np.asarray(s).size for s in samples] if sizes is None else list(sizes)
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for x, c, size in zip(samples, coefficients, sizes):
        x = np.asarray(x, dtype=np.float64)
        parts = [x[idx].mean(axis=1) for idx in resample_blocks(rng, x.size, n_boot, size)]
        total += float(c) * np.concatenate(parts)
    return percentile_interval(total, level)


def bootstrap_ci(
    statistic: Callable[[np.ndarray], float | np.ndarray],
    n: int,
    seed: int = 0,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = 0.95,
    batched: bool = False,
) -> tuple[float, float]:
    """Percentile interval of any statistic of n records. ``statistic(idx)`` receives resampled
    record positions and returns the statistic: with ``batched=False`` one replicate at a time
    (idx of length n, returns a float); with ``batched=True`` a block of replicates at once (idx
    of shape (b, n), returns b values) — use that for anything over a few thousand records (a
    median per row: ``np.median(x[idx], axis=1)``)."""
    _check_n(n)
    rng = np.random.default_rng(seed)
    reps = []
    for idx in resample_blocks(rng, n, n_boot):
        if batched:
            out = np.asarray(statistic(idx), dtype=np.float64).reshape(-1)
            if out.size != idx.shape[0]:
                raise ValueError(
                    f"a batched statistic must return one value per replicate row: "
                    f"{out.size} values for {idx.shape[0]} rows"
                )
            reps.append(out)
        else:
            reps.append(np.array([float(statistic(row)) for row in idx]))
    return percentile_interval(np.concatenate(reps), level)
