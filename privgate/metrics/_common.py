"""Small pieces shared by metric modules, and the one place a metric attaches its interval.

Interval rules (every metric goes through these helpers, so the rule is stated once):

* a share of records (a 0/1 flag per record, value = the share of 1s) → :func:`set_share_ci`:
  :func:`privgate.stats.share_interval` (Wilson; Clopper–Pearson when fewer than 10 records are on
  either side);
* a mean of per-record values → :func:`set_mean_ci`: percentile bootstrap over those records
  (:func:`privgate.stats.bootstrap_mean_ci`, ``BOOT`` replicates, seeded by the context's seed),
  then mapped through the metric's monotone transform when value is not the mean itself;
* anything else → :func:`set_bootstrap_ci` (a batched statistic of resampled records) or an
  explicit :func:`set_no_ci` with the reason.

The per-record values are what the neighbour searches already produced: no search is repeated.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

import numpy as np

from .. import stats
from ..results import MetricResult
from ..ties import close

# the metric modules' short name for MetricResult.from_context
result = MetricResult.from_context

BOOT = stats.bootstrap.DEFAULT_BOOT
_INTERVALS: ContextVar[bool] = ContextVar("privgate_intervals", default=True)
OFF = "none: intervals switched off (privgate.metrics._common.without_intervals)"


@contextmanager
def without_intervals() -> Iterator[None]:
    """Compute metrics without intervals inside this block (``ci`` None, method saying so) —
    for measuring what the intervals cost (benchmarks/coverage.py), not for gating."""
    token = _INTERVALS.set(False)
    try:
        yield
    finally:
        _INTERVALS.reset(token)


def intervals_on() -> bool:
    return _INTERVALS.get()


def map_interval(ci: tuple[float, float], fn: Callable[[float], float]) -> tuple[float, float]:
    """The interval of fn(θ) from an interval of θ, for a monotone fn (increasing or decreasing):
    map both endpoints and order them."""
    a, b = float(fn(ci[0])), float(fn(ci[1]))
    return (min(a, b), max(a, b))


def set_share_ci(res: MetricResult, flags: np.ndarray, note: str = "") -> MetricResult:
    """Interval of a value that is the share of 1s in ``flags`` (one per record)."""
    flags = np.asarray(flags, dtype=np.float64)
    return set_count_ci(res, float(flags.sum()), flags.size, note=note)


def set_count_ci(res: MetricResult, k: float, n: float, *, transform: Callable[[float], float] | None = None,
                 transform_text: str = "", note: str = "") -> MetricResult:
    """Interval of a value that is the share k/n of records (or a monotone ``transform`` of it)."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    if n <= 0:
        return res.set_ci(None, "none: no records")
    ci, method = stats.share_interval(k, n)
    if transform is not None:
        ci = map_interval(ci, transform)
        method += f", mapped through {transform_text}"
    res.set_ci(ci, method + (f"; {note}" if note else ""))
    return _mark_mean_of_per_record(res, transform is None)


def set_mean_ci(res: MetricResult, ctx, values: np.ndarray, *, what: str = "real records",
                transform: Callable[[float], float] | None = None, transform_text: str = "",
                weights: np.ndarray | None = None, note: str = "") -> MetricResult:
    """Interval of a value that is the mean of ``values`` (weighted by ``weights`` held fixed),
    or a monotone ``transform`` of it: a percentile bootstrap over the records, seeded by
    ``ctx.seed``."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return res.set_ci(None, "none: no records")
    ci = stats.bootstrap_mean_ci(values, ctx.seed, n_boot=BOOT, weights=weights)
    kind = "weighted mean" if weights is not None else "mean"
    method = f"percentile bootstrap ({BOOT} replicates, seed {ctx.seed}) of the {kind} over {values.size} {what}"
    if transform is not None:
        ci = map_interval(ci, transform)
        method += f", mapped through {transform_text}"
    res.set_ci(_clip(ci), method + (f"; {note}" if note else ""))
    return _mark_mean_of_per_record(res, transform is None and weights is None)


def _mark_mean_of_per_record(res: MetricResult, plain_mean: bool) -> MetricResult:
    """Record whether the interval treats ``value`` as the plain mean of independent per-record
    values that are ``res.per_record`` — then a difference of two such values (release minus
    holdout baseline, on the same real records) can be bootstrapped record by record."""
    res.details["ci_per_record_mean"] = bool(
        plain_mean and res.per_record is not None and np.asarray(res.per_record).size > 0
        and abs(float(np.mean(res.per_record)) - res.value) <= 1e-9)
    return res


def per_record_mean(res: MetricResult) -> bool:
    """True when ``res``'s interval treated its value as the mean of ``res.per_record``."""
    return bool(res.details.get("ci_per_record_mean"))


def set_bootstrap_ci(res: MetricResult, ctx, statistic: Callable[[np.ndarray], np.ndarray], n: int, *,
                     what: str, note: str = "") -> MetricResult:
    """Interval of any statistic of n records: ``statistic(idx)`` takes a (b, n) block of
    resampled positions and returns b values of the metric's value."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    ci = stats.bootstrap_ci(statistic, n, ctx.seed, n_boot=BOOT, batched=True)
    method = f"percentile bootstrap ({BOOT} replicates, seed {ctx.seed}) over {n} {what}"
    return res.set_ci(_clip(ci), method + (f"; {note}" if note else ""))


def set_no_ci(res: MetricResult, why: str) -> MetricResult:
    return res.set_ci(None, f"none: {why}")


def _clip(ci: tuple[float, float]) -> tuple[float, float]:
    return (min(1.0, max(0.0, ci[0])), min(1.0, max(0.0, ci[1])))


def minmax_normalise(d: np.ndarray) -> tuple[np.ndarray, bool]:
    """Min–max normalise distances over their own range; all equal (within tolerance) → zeros
    (METRICS.md §3 rule 3). Returns (normalised, degenerate)."""
    lo, hi = float(d.min()), float(d.max())
    if bool(close(lo, hi)):
        return np.zeros_like(d), True
    return (d - lo) / (hi - lo), False


def quantile_summary(x: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {}
    q = np.quantile(x, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {"min": float(q[0]), "p10": float(q[1]), "median": float(q[2]), "p90": float(q[3]),
            "max": float(q[4]), "mean": float(x.mean())}
