"""The grouped (delete-a-group) jackknife: the variance of a statistic whose per-record values
are not independent — a record that is a query of a nearest-neighbour search is also a
reference point of other records' searches, a synthetic record is a cell count of a lookup
table every real record reads — from G recomputations, each on the sample without one group.

Records are split at random into G groups of (nearly) equal size d = n/G; θ₍g₎ is the statistic
recomputed without group g. The variance estimate is

    v = (G − 1)/G · Σ_g (θ₍g₎ − θ̄)²,   θ̄ = mean of the θ₍g₎,

the delete-d jackknife (Shao & Wu, "A general theory for jackknife variance estimation", Ann.
Statist. 1989) restricted to one random partition (the "delete-a-group" jackknife of Kott,
"The delete-a-group jackknife", J. Official Statistics 2001), with G − 1 degrees of freedom.
Deleting d ≥ √n records per group makes it consistent for medians and other non-smooth
statistics, where the delete-1 jackknife is not (Shao & Wu 1989): hence G ≤ √n.

Independent sources of variation (the real records, the synthetic records, the holdout
sample) each get their own partition and jackknife; their variances add and the degrees of
freedom combine by Welch–Satterthwaite (Satterthwaite, Biometrics Bulletin 1946). The interval
is estimate ± t_df·√v (:func:`t_interval`). For a share of records, :func:`effective_share_interval`
turns the variance into an effective sample size (Korn & Graubard, "Confidence intervals for
proportions with small expected number of positive counts estimated from survey data", Survey
Methodology 1998) and keeps the Wilson / Clopper–Pearson rule of :func:`.share_interval`, which
behaves near 0 and 1 where a t interval does not.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from .._lazy import lazy_module
from .proportions import share_interval, z_value

_st = lazy_module("scipy.stats")  # imported on first use (import time)

MAX_GROUPS = 50
# fewer groups than this and the variance estimate (G − 1 degrees of freedom) is too rough to use
MIN_GROUPS = 5


def default_groups(n: int) -> int:
    """G = min(50, ⌊√n⌋): groups of at least √n records (consistent for medians), at most 50
    recomputations. Below ``MIN_GROUPS`` (n < 25) callers use another interval."""
    return int(min(MAX_GROUPS, math.isqrt(max(int(n), 0))))


def group_labels(n: int, seed: int | Sequence[int], groups: int | None = None) -> np.ndarray:
    """A random partition of n records into G groups of sizes differing by at most one: label
    (0..G−1) per record, from a seeded permutation. Deterministic for a seed."""
    g = default_groups(n) if groups is None else int(groups)
    if g < 2 or g > n:
        raise ValueError(f"a grouped jackknife needs 2 ≤ groups ≤ n; got {g} groups for n={n}")
    labels = np.empty(n, dtype=np.int64)
    labels[np.random.default_rng(seed).permutation(n)] = np.arange(n) % g
    return labels


def jackknife_variance(replicates: np.ndarray) -> tuple[float, int]:
    """(variance, degrees of freedom) from the delete-a-group replicates θ₍g₎:
    (G − 1)/G · Σ (θ₍g₎ − θ̄)², with G − 1 degrees of freedom."""
    r = np.asarray(replicates, dtype=np.float64).reshape(-1)
    g = r.size
    if g < 2:
        raise ValueError(f"a jackknife variance needs at least 2 group replicates; got {g}")
    if not np.all(np.isfinite(r)):
        raise ValueError("a jackknife replicate of the statistic is not finite")
    return float((g - 1) / g * np.sum((r - r.mean()) ** 2)), g - 1


def leave_group_out_means(
    values: np.ndarray, labels: np.ndarray, groups: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """θ₍g₎ for a (weighted) mean: Σ_{i∉g} wᵢxᵢ / Σ_{i∉g} wᵢ for every group g, as (G,) — one
    pass with bincount, no loop over groups. ``values`` may be (n,) or (R, n) for R statistics
    at once (returns (R, G))."""
    x = np.asarray(values, dtype=np.float64)
    w = np.ones(x.shape[-1]) if weights is None else np.asarray(weights, dtype=np.float64)
    lab = np.asarray(labels)
    if x.shape[-1] != lab.size or w.size != lab.size:
        raise ValueError(
            f"values, weights and labels must have one entry per record: {x.shape[-1]}, {w.size}, {lab.size}"
        )
    wg = np.bincount(lab, weights=w, minlength=groups)
    rows = np.atleast_2d(x)
    num = np.stack([np.bincount(lab, weights=w * row, minlength=groups) for row in rows])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (num.sum(axis=1, keepdims=True) - num) / (w.sum() - wg)
    return out[0] if x.ndim == 1 else out


def group_deleted_means(values: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """θ₍g₎ for a (weighted) mean whose per-record values change when a group is deleted:
    ``values`` is (G, n), row g holding every record's value recomputed without group g (e.g.
    its nearest neighbour among the records left); θ₍g₎ = Σ_{i∉g} wᵢ·values[g, i] / Σ_{i∉g} wᵢ.
    Entries of deleted records (label g in row g) are ignored, whatever they hold."""
    v = np.asarray(values, dtype=np.float64)
    lab = np.asarray(labels)
    if v.ndim != 2 or v.shape[1] != lab.size:
        raise ValueError(
            f"values must be (groups, records) with one column per label; got {v.shape} for {lab.size} labels"
        )
    keep = lab[None, :] != np.arange(v.shape[0])[:, None]
    w = np.ones(lab.size) if weights is None else np.asarray(weights, dtype=np.float64)
    wk = keep * w[None, :]
    return (np.where(keep, v, 0.0) * wk).sum(axis=1) / wk.sum(axis=1)


def combine_variances(parts: Sequence[tuple[float, int]]) -> tuple[float, float]:
    """Sum of independent variance estimates with Welch–Satterthwaite degrees of freedom
    (Σv)² / Σ(v²/df); a source with variance 0 adds nothing. All 0 → (0, ∞)."""
    total = float(sum(v for v, _ in parts))
    denom = sum(v * v / df for v, df in parts if v > 0)
    return total, (total * total / denom if denom > 0 else math.inf)


def t_quantile(df: float, level: float = 0.95) -> float:
    """Two-sided Student-t quantile (the normal one for infinite df)."""
    return z_value(level) if not math.isfinite(df) else float(_st.t.ppf(1.0 - (1.0 - level) / 2.0, df))


def t_interval(
    estimate: float, variance: float, df: float, level: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """estimate ± t_df·√variance, clipped to ``bounds``."""
    if not variance >= 0:
        raise ValueError(f"variance must be ≥ 0; got {variance!r}")
    half = t_quantile(df, level) * math.sqrt(variance)
    return (max(bounds[0], estimate - half), min(bounds[1], estimate + half))


def jackknife_interval(
    estimate: float, sources: Mapping[str, np.ndarray], level: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[tuple[float, float], float, float]:
    """(interval, variance, df) of ``estimate`` from independent sources of variation, each given
    by its delete-a-group replicates: variances added, Satterthwaite df, t interval."""
    if not sources:
        raise ValueError("a jackknife interval needs at least one source of replicates")
    var, df = combine_variances([jackknife_variance(r) for r in sources.values()])
    return t_interval(estimate, var, df, level, bounds), var, df


def effective_share_interval(
    k: float, n: float, variance: float, df: float, level: float = 0.95
) -> tuple[tuple[float, float], str, float]:
    """Interval of the share p = k/n whose variance ``variance`` (with ``df`` degrees of freedom)
    exceeds the binomial p(1 − p)/n because the records are not independent: Korn & Graubard's
    effective sample size n* = min(n, p(1 − p)/v · (z/t_df)²), then :func:`.share_interval` of
    p·n* out of n* (Wilson, or Clopper–Pearson near 0 and 1). v = 0 or p ∈ {0, 1} keeps n.
    Returns (interval, method, n*)."""
    p = k / n
    n_eff = float(n)
    if variance > 0 and 0.0 < p < 1.0:
        ratio = (z_value(level) / t_quantile(df, level)) ** 2
        n_eff = min(float(n), p * (1.0 - p) / variance * ratio)
    ci, method = share_interval(p * n_eff, n_eff, level)
    return ci, method, n_eff


def counts_without_groups(ids: np.ndarray, labels: np.ndarray, cells: int) -> np.ndarray:
    """(G, cells): each cell's count of records once group g of them is deleted — the count
    tables a group-deleted statistic reads (a lookup table built from the deleted sample), from
    one bincount. ``ids``: per record its cell in [0, cells); ids ≥ ``cells`` (records in no
    cell of interest) are dropped."""
    ids = np.asarray(ids, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    if ids.size != lab.size:
        raise ValueError(f"ids and labels must have one entry per record: {ids.size}, {lab.size}")
    groups = int(lab.max()) + 1
    in_group = np.bincount(lab * (cells + 1) + np.minimum(ids, cells), minlength=groups * (cells + 1)).reshape(
        groups, cells + 1
    )[:, :cells]
    return in_group.sum(axis=0)[None, :] - in_group
