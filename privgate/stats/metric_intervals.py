"""The one place a metric attaches its interval (``ci`` and ``details["ci_method"]``), beside the
interval formulas it applies; every metric module imports its helpers from here.

Interval rules (every metric goes through these helpers, so the rule is stated once):

* a share of records (a 0/1 flag per record, value = the share of 1s) → :func:`set_share_ci`:
  :func:`privgate.stats.share_interval` (Wilson; Clopper–Pearson when fewer than 10 records are on
  either side);
* a mean of per-record values → :func:`set_mean_ci`: percentile bootstrap over those records
  (:func:`privgate.stats.bootstrap_mean_ci`, ``BOOT`` replicates, seeded by the context's seed),
  then mapped through the metric's monotone transform when value is not the mean itself;
* anything else → :func:`set_bootstrap_ci` (a batched statistic of resampled records) or an
  explicit :func:`set_no_ci` with the reason;
* a statistic whose per-record values are dependent — a record is also a reference point of
  other records' nearest-neighbour searches (real → real, synthetic → real), or a fitted piece
  depends on the whole sample — → :func:`set_jackknife_ci` / :func:`set_jackknife_share_ci`: the
  grouped jackknife of :mod:`privgate.stats.jackknife` over a seeded partition of the records
  (:func:`jackknife_labels`), with each search's nearest neighbour outside a deleted group read
  from the k = ``SearchSettings.jackknife_k`` lists the engine already returned
  (:meth:`privgate.context.EvaluationContext.nearest_outside_groups`).
  :func:`keep_jackknife` stores the replicates of every source of variation (real records,
  synthetic records) so that the holdout excess can combine them (``evaluate.attach_baseline``).

The per-record values are what the neighbour searches already produced: no search is repeated
(the jackknife re-searches only the few rows whose ``jackknife_k`` nearest neighbours all lie in
a deleted group; :mod:`privgate.neighbours.outside_groups`).
The formulas are :mod:`privgate.stats`'s; these helpers choose the rule, seed it and word the method.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

import numpy as np

from .. import seeds, stats
from ..results import MetricResult

# the metric modules' short name for MetricResult.from_context: the result these helpers attach to
result = MetricResult.from_context

BOOT = stats.bootstrap.DEFAULT_BOOT
_INTERVALS: ContextVar[bool] = ContextVar("privgate_intervals", default=True)
OFF = "none: intervals switched off (privgate.stats.metric_intervals.without_intervals)"


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
    """False inside :func:`without_intervals`."""
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


def set_count_ci(
    res: MetricResult,
    k: float,
    n: float,
    *,
    transform: Callable[[float], float] | None = None,
    transform_text: str = "",
    note: str = "",
) -> MetricResult:
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


def set_mean_ci(
    res: MetricResult,
    ctx,
    values: np.ndarray,
    *,
    what: str = "real records",
    transform: Callable[[float], float] | None = None,
    transform_text: str = "",
    weights: np.ndarray | None = None,
    note: str = "",
) -> MetricResult:
    """Interval of a value that is the mean of ``values`` (weighted by ``weights`` held fixed),
    or a monotone ``transform`` of it: a percentile bootstrap over the records, seeded by
    ``ctx.seed``."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return res.set_ci(None, "none: no records")
    ci = stats.bootstrap_mean_ci(values, seeds.derive(ctx.seed, "bootstrap"), n_boot=BOOT, weights=weights)
    kind = "weighted mean" if weights is not None else "mean"
    method = f"percentile bootstrap ({BOOT} replicates, seed {ctx.seed}) of the {kind} over {values.size} {what}"
    if transform is not None:
        ci = map_interval(ci, transform)
        method += f", mapped through {transform_text}"
    res.set_ci(clip_unit(ci), method + (f"; {note}" if note else ""))
    return _mark_mean_of_per_record(res, transform is None and weights is None)


def _mark_mean_of_per_record(res: MetricResult, plain_mean: bool) -> MetricResult:
    """Record whether ``value`` is the plain mean of ``res.per_record`` and its interval is that of
    a mean or share of those values — then a difference of two such values (release minus
    holdout baseline, on the same real records) is bootstrapped record by record. (For
    authenticity and identifiability the per-record flags also depend on the other real records;
    the paired bootstrap of the excess ignores that, and covered 0 in 96–98 % of honest releases
    in benchmarks/coverage.py.)"""
    res.details["ci_per_record_mean"] = bool(
        plain_mean
        and res.per_record is not None
        and np.asarray(res.per_record).size > 0
        and abs(float(np.mean(res.per_record)) - res.value) <= 1e-9
    )
    return res


def per_record_mean(res: MetricResult) -> bool:
    """True when ``res``'s interval treated its value as the mean of ``res.per_record``."""
    return bool(res.details.get("ci_per_record_mean"))


def set_bootstrap_ci(
    res: MetricResult, ctx, statistic: Callable[[np.ndarray], np.ndarray], n: int, *, what: str, note: str = ""
) -> MetricResult:
    """Interval of any statistic of n records: ``statistic(idx)`` takes a (b, n) block of
    resampled positions and returns b values of the metric's value."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    ci = stats.bootstrap_ci(statistic, n, seeds.derive(ctx.seed, "bootstrap"), n_boot=BOOT, batched=True)
    method = f"percentile bootstrap ({BOOT} replicates, seed {ctx.seed}) over {n} {what}"
    return res.set_ci(clip_unit(ci), method + (f"; {note}" if note else ""))


# ------------------------------------------------------------------ grouped jackknife
def jackknife_labels(ctx, role: str, n: int, *, max_groups: int | None = None) -> np.ndarray | None:
    """The seeded partition of the ``role`` records ("real" or "synthetic") into
    G = min(50, ⌊√n⌋) jackknife groups (:func:`privgate.stats.group_labels`; at most
    ``max_groups``), or None when intervals are off or n < 25 (fewer than 5 groups): then the
    metric keeps its other interval. The same context seed, n and G give the same partition, so a
    release and its holdout baseline, scored on the same real records, delete the same groups."""
    if not intervals_on():
        return None
    g = stats.default_groups(n)
    if g < stats.jackknife.MIN_GROUPS:
        return None
    if max_groups is not None:
        g = min(g, int(max_groups))
    return stats.group_labels(n, seeds.derive(ctx.seed, f"jackknife.{role}"), g)


def keep_jackknife(res: MetricResult, **sources: np.ndarray) -> MetricResult:
    """Store the delete-a-group replicates of ``value`` per source of variation ("real",
    "synthetic") on the result (not published: aggregates of the statistic, kept for
    ``evaluate.attach_baseline``, which combines a release's and its baseline's)."""
    res._jackknife = {k: np.asarray(v, dtype=np.float64) for k, v in sources.items()}
    return res


def jackknife_sources(res: MetricResult) -> dict[str, np.ndarray]:
    """The replicates :func:`keep_jackknife` stored (empty when none)."""
    return dict(getattr(res, "_jackknife", None) or {})


def _jackknife_text(sources: dict[str, np.ndarray], what: dict[str, str]) -> str:
    parts = [f"{r.size} groups of the {what[k]}" for k, r in sources.items()]
    return "grouped jackknife (" + " + ".join(parts) + " deleted in turn)"


def set_jackknife_ci(
    res: MetricResult, ctx, sources: dict[str, np.ndarray], *, what: dict[str, str], note: str = ""
) -> MetricResult:
    """Interval of ``value`` from delete-a-group replicates per independent source of variation
    (:func:`privgate.stats.jackknife_interval`: variances added, Satterthwaite degrees of
    freedom, value ± t·√v clipped to [0, 1]); ``what`` names each source's records."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    keep_jackknife(res, **sources)
    ci, _, df = stats.jackknife_interval(res.value, sources)
    method = f"{_jackknife_text(sources, what)}, seed {ctx.seed}: value ± t({df:.0f} df)·jackknife standard error"
    return res.set_ci(ci, method + (f"; {note}" if note else ""))


def set_jackknife_share_ci(
    res: MetricResult, ctx, flags: np.ndarray, replicates: np.ndarray, *, what: str, note: str = ""
) -> MetricResult:
    """Interval of a share of records (``flags``, one per record) whose flags are dependent: the
    grouped jackknife's variance (``replicates``: the share recomputed without each group) as an
    effective sample size n* ≤ n (Korn & Graubard), then the share rule (Wilson /
    Clopper–Pearson) at n*."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    flags = np.asarray(flags, dtype=np.float64)
    keep_jackknife(res, real=replicates)
    var, df = stats.jackknife_variance(replicates)
    ci, method, n_eff = stats.effective_share_interval(float(flags.sum()), flags.size, var, df)
    method = (
        f"{method.split(' of ')[0]} at the effective sample size {n_eff:.0f} of {flags.size} {what} "
        f"(Korn–Graubard; variance from a {_jackknife_text({'real': replicates}, {'real': what})}, "
        f"seed {ctx.seed}, {df} df)"
    )
    res.set_ci(ci, method + (f"; {note}" if note else ""))
    return _mark_mean_of_per_record(res, True)


def set_no_ci(res: MetricResult, why: str) -> MetricResult:
    """No interval, saying why (``"none: <why>"``)."""
    return res.set_ci(None, f"none: {why}")


def clip_unit(ci: tuple[float, float]) -> tuple[float, float]:
    """An interval clipped to [0, 1]."""
    return (min(1.0, max(0.0, ci[0])), min(1.0, max(0.0, ci[1])))
