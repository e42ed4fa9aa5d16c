"""What the encoding is fitted on, from per-partition summaries merged exactly.

Each worker summarises its partition (per numeric column: count, mean, sum of squared
deviations, min, max of the non-null values; per categorical column: its distinct count and the
rows that repeat a value of the partition) and lists its levels. The summaries merge into the
whole data's statistics (Chan, Golub & LeVeque's pairwise update: exact in real arithmetic, a
few ulps from a one-pass NumPy mean/std), so every worker standardises and codes its records as
the whole-frame encoding of :func:`privgate.spaces.mixed_space` would (:class:`SpaceFit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..schema import NUMERIC, Schema, normalise_frame
from ..spaces import NULL_LEVEL, SpaceFit, fitted_std
from .partitions import Partition, read_partition

__all__ = ["merge_fit", "merge_moments", "partition_levels", "summarise_partition"]


def summarise_partition(part: Partition, kinds: Mapping[str, str]) -> dict:
    """One partition's summary: ``rows``; ``moments`` {numeric column: [n, mean, m2, min, max]}
    of its non-null normalised values; ``distinct`` {categorical column: distinct non-null
    values}; ``repeats`` {categorical column: non-null rows that repeat a value of the
    partition}. Counts and moments only, never a value."""
    frame = normalise_frame(read_partition(part, list(kinds)), Schema(dict(kinds)))
    moments, distinct, repeats = {}, {}, {}
    for col, kind in kinds.items():
        s = frame.get_column(col)
        if kind == NUMERIC:
            v = s.to_numpy().astype(np.float64, copy=False)
            v = v[~np.isnan(v)]
            moments[col] = (
                [float(v.size), float(v.mean()), float(((v - v.mean()) ** 2).sum()), float(v.min()), float(v.max())]
                if v.size
                else [0.0, 0.0, 0.0, np.inf, -np.inf]
            )
        else:
            present = s.drop_nulls()
            distinct[col] = int(present.n_unique())
            repeats[col] = int(present.len() - distinct[col])
    return {"rows": part.rows, "moments": moments, "distinct": distinct, "repeats": repeats}


def partition_levels(part: Partition, kinds: Mapping[str, str], columns: Sequence[str]) -> dict[str, list[str]]:
    """The levels (null as :data:`privgate.spaces.NULL_LEVEL`) of ``columns`` in one partition."""
    if not columns:
        return {}
    frame = normalise_frame(read_partition(part, list(columns)), Schema({c: kinds[c] for c in columns}))
    return {c: frame.get_column(c).fill_null(NULL_LEVEL).unique().to_list() for c in columns}


def merge_moments(parts: Sequence[Sequence[float]]) -> tuple[float, float, float, float]:
    """(mean, population std, min, max) of the union of partitions given as [n, mean, m2, min, max]."""
    n, mean, m2, lo, hi = 0.0, 0.0, 0.0, np.inf, -np.inf
    for nb, mb, m2b, lob, hib in parts:
        if nb == 0:
            continue
        total = n + nb
        delta = mb - mean
        mean = mean + delta * nb / total
        m2 = m2 + m2b + delta * delta * n * nb / total
        n, lo, hi = total, min(lo, lob), max(hi, hib)
    if n == 0:
        return 0.0, 0.0, lo, hi
    return mean, float(np.sqrt(m2 / n)), lo, hi


def merge_fit(real_summaries: Sequence[dict], levels: Sequence[Mapping[str, list[str]]], schema: Schema) -> SpaceFit:
    """The encoding's fit: per numeric column the real (mean, std) merged over the real
    partitions' summaries (std 0 for a constant column, :func:`privgate.spaces.fitted_std`), per
    categorical column the sorted union of the levels of every partition of every role."""
    stats = {}
    for col in schema.numeric:
        mean, std, lo, hi = merge_moments([s["moments"][col] for s in real_summaries])
        stats[col] = (mean, fitted_std(std, lo, hi) if np.isfinite(lo) else 0.0)
    union: dict[str, set[str]] = {c: set() for c in schema.categorical}
    for found in levels:
        for col, lv in found.items():
            if col in union:
                union[col].update(lv)
    return SpaceFit(stats=stats, levels={c: sorted(v) for c, v in union.items()})
