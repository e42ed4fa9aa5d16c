"""Small pieces shared by metric modules, and the one place a metric attaches its interval.

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
  from the k = ``JACKKNIFE_K`` lists the engine already returned (:func:`nearest_outside_groups`).
  :func:`keep_jackknife` stores the replicates of every source of variation (real records,
  synthetic records) so that the holdout excess can combine them (``evaluate.attach_baseline``).

The per-record values are what the neighbour searches already produced: no search is repeated
(the jackknife re-searches only the few rows whose ``JACKKNIFE_K`` nearest neighbours all lie in
a deleted group).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

import numpy as np

from .. import stats
from ..errors import ParameterError
from ..neighbours import Neighbours, knn, knn_rows
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
    """Record whether ``value`` is the plain mean of ``res.per_record`` and its interval is that of
    a mean or share of those values — then a difference of two such values (release minus
    holdout baseline, on the same real records) is bootstrapped record by record. (For
    authenticity and identifiability the per-record flags also depend on the other real records;
    the paired bootstrap of the excess ignores that, and covered 0 in 96–98 % of honest releases
    in benchmarks/coverage.py.)"""
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


# ------------------------------------------------------------------ grouped jackknife
# neighbours a search returns when a jackknife will delete groups of its target records: the
# nearest target outside a deleted group is among the first JACKKNIFE_K unless all of them are in
# that group (probability about 1/G^JACKKNIFE_K per row; those rows are searched again)
JACKKNIFE_K = 3
# neighbours of the second, batched search for the rows whose JACKKNIFE_K were all deleted
REFILL_K = 16
# one seed stream per partitioned set, so the real and synthetic partitions are independent
_STREAMS = {"real": 0x4A4B0001, "synthetic": 0x4A4B0002}


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
    return stats.group_labels(n, [ctx.seed, _STREAMS[role]], g)


def search_k(labels: np.ndarray | None) -> int:
    """How many neighbours to ask the engine for: ``JACKKNIFE_K`` when a jackknife will delete
    groups of the search's targets, else 1."""
    return 1 if labels is None else JACKKNIFE_K


def nearest_outside_groups(nb: Neighbours, labels: np.ndarray, query: np.ndarray, target: np.ndarray, *,
                           same: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per deleted group g and query row, the nearest target row whose label is not g: (G, n)
    distances and target indices. Read from the search's sorted neighbour lists (ties already by
    lowest index). Rows whose listed neighbours all lie in some group are searched once more,
    all together, for ``REFILL_K`` neighbours (one search, whatever the number of groups); a
    (row, group) pair still without a neighbour outside the group is searched exactly among the
    targets left (``knn``, same tie rule). ``same``: query and target are one set (a real → real
    search): a query in group g is itself deleted, its entry in row g is NaN / −1.
    The loops run over the G ≤ 50 groups, not over records."""
    labels = np.asarray(labels)
    groups = int(labels.max()) + 1
    n = nb.idx.shape[0]
    rows = np.arange(n)
    dist = np.empty((groups, n))
    idx = np.empty((groups, n), dtype=np.int64)
    miss_rows, miss_groups = [], []
    lab_nb = labels[nb.idx]
    for g in range(groups):
        ok = lab_nb != g
        first = ok.argmax(axis=1)
        dist[g], idx[g] = nb.dist[rows, first], nb.idx[rows, first]
        redo = ~ok[rows, first]
        if same:
            own = labels == g
            dist[g, own], idx[g, own] = np.nan, -1
            redo &= ~own
        todo = np.flatnonzero(redo)
        miss_rows.append(todo)
        miss_groups.append(np.full(todo.size, g))
    mr, mg = np.concatenate(miss_rows), np.concatenate(miss_groups)
    if mr.size:
        need = np.unique(mr)
        available = target.shape[0] - (1 if same else 0)
        k = min(available, REFILL_K)
        more = knn_rows(target, need, k) if same else knn(query[need], target, k)
        pos = np.searchsorted(need, mr)
        ok = labels[more.idx[pos]] != mg[:, None]
        first = ok.argmax(axis=1)
        found = ok[np.arange(mr.size), first]
        dist[mg[found], mr[found]] = more.dist[pos[found], first[found]]
        idx[mg[found], mr[found]] = more.idx[pos[found], first[found]]
        for g in np.unique(mg[~found]):  # every one of the REFILL_K nearest is in group g: rare
            todo = mr[~found & (mg == g)]
            keep = np.flatnonzero(labels != g)
            kk = 2 if same else 1
            if keep.size < kk:
                raise ValueError(f"a jackknife group leaves {keep.size} target rows; at least {kk} are needed")
            got = knn(query[todo], target[keep], kk)
            cand = keep[got.idx]
            col = (cand[:, 0] == todo).astype(np.int64) if same else np.zeros(todo.size, dtype=np.int64)
            dist[g, todo] = got.dist[np.arange(todo.size), col]
            idx[g, todo] = cand[np.arange(todo.size), col]
    return dist, idx


def keep_jackknife(res: MetricResult, **sources: np.ndarray) -> MetricResult:
    """Store the delete-a-group replicates of ``value`` per source of variation ("real",
    "synthetic") on the result (not published: aggregates of the statistic, kept for
    ``evaluate.attach_baseline``, which combines a release's and its baseline's)."""
    res._jackknife = {k: np.asarray(v, dtype=np.float64) for k, v in sources.items()}
    return res


def jackknife_sources(res: MetricResult) -> dict[str, np.ndarray]:
    return dict(getattr(res, "_jackknife", None) or {})


def _jackknife_text(sources: dict[str, np.ndarray], what: dict[str, str]) -> str:
    parts = [f"{r.size} groups of the {what[k]}" for k, r in sources.items()]
    return "grouped jackknife (" + " + ".join(parts) + " deleted in turn)"


def set_jackknife_ci(res: MetricResult, ctx, sources: dict[str, np.ndarray], *, what: dict[str, str],
                     note: str = "") -> MetricResult:
    """Interval of ``value`` from delete-a-group replicates per independent source of variation
    (:func:`privgate.stats.jackknife_interval`: variances added, Satterthwaite degrees of
    freedom, value ± t·√v clipped to [0, 1]); ``what`` names each source's records."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    keep_jackknife(res, **sources)
    ci, _, df = stats.jackknife_interval(res.value, sources)
    method = (f"{_jackknife_text(sources, what)}, seed {ctx.seed}: value ± t({df:.0f} df)·jackknife standard error")
    return res.set_ci(ci, method + (f"; {note}" if note else ""))


def set_jackknife_share_ci(res: MetricResult, ctx, flags: np.ndarray, replicates: np.ndarray, *, what: str,
                           note: str = "") -> MetricResult:
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
    method = (f"{method.split(' of ')[0]} at the effective sample size {n_eff:.0f} of {flags.size} {what} "
              f"(Korn–Graubard; variance from a {_jackknife_text({'real': replicates}, {'real': what})}, "
              f"seed {ctx.seed}, {df} df)")
    res.set_ci(ci, method + (f"; {note}" if note else ""))
    return _mark_mean_of_per_record(res, True)


def set_no_ci(res: MetricResult, why: str) -> MetricResult:
    return res.set_ci(None, f"none: {why}")


def _clip(ci: tuple[float, float]) -> tuple[float, float]:
    return (min(1.0, max(0.0, ci[0])), min(1.0, max(0.0, ci[1])))


def minmax_normalise(d: np.ndarray) -> tuple[np.ndarray, bool]:
    """Min–max normalise distances over their own range; all equal (within tolerance) → zeros
    (close_values, distant_values, nsnd). Returns (normalised, degenerate)."""
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


# ------------------------------------------------ sampled real records, neighbour-search error
# (docs/performance.md "Sampling real records" and "Folding the search error into intervals")

SAMPLED_NOTE = ("per-record terms of a seeded simple random sample of {n} of {of} real records (seed {seed}), "
                "each searched against every target record: the interval contains the sampling error "
                "(finite-population correction ignored, which only widens it)")


def real_rows(ctx, auto: bool = True) -> np.ndarray | None:
    """The real rows a metric that is a mean of per-real-record terms computes its terms on:
    ``ctx.real_sample()`` (None: every real record — no sample, or it is ≥ the real row count).
    ``auto=False``: only an explicit sample (``sample_real`` or ``sample: N``), for metrics whose
    full computation is cheap at any size."""
    sample = getattr(ctx, "real_sample", None)
    if not callable(sample):
        return None
    return sample() if auto else sample(auto=False)


def on_rows(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``values`` (one per real record) restricted to ``rows`` (all when None)."""
    return values if rows is None else values[rows]


def synthetic_rows(ctx) -> np.ndarray | None:
    """The synthetic rows a metric that is a mean, share or median over synthetic records computes
    its terms on: ``ctx.synthetic_sample()`` (None: every synthetic record)."""
    sample = getattr(ctx, "synthetic_sample", None)
    return sample() if callable(sample) else None


SAMPLED_SYNTHETIC_NOTE = ("per-record terms of a seeded simple random sample of {n} of {of} synthetic records "
                          "(seed {seed}), each searched against every real record: the interval contains the "
                          "sampling error (finite-population correction ignored, which only widens it)")


def mark_sampled(res: MetricResult, ctx, rows: np.ndarray | None, role: str = "real") -> MetricResult:
    """Say that ``res`` was estimated on the sampled ``role`` rows ``rows`` (nothing when None):
    ``details["sampled"] = ctx.sample_description(role)`` (a metric sampled on both sides calls
    this once per side: the second side's description goes under ``details["sampled"][role]``),
    the per-record array's description names its order (real side only: ``per_record`` is per
    real record), and the interval method says the interval contains the sampling error (it
    does: the share rule or the bootstrap was computed over the sampled records' terms)."""
    if rows is None:
        return res
    desc = ctx.sample_description(role)
    if res.details.get("sampled"):
        res.details["sampled"][role] = desc
    else:
        res.details["sampled"] = desc
        res.per_record_description += (f" — one entry per sampled {role} record, in the order of the sample's "
                                       f"row positions (ctx.{role}_sample())")
    method = res.details.get("ci_method", "")
    note = (SAMPLED_NOTE if role == "real" else SAMPLED_SYNTHETIC_NOTE).format(**desc)
    if res.ci is not None and method and not method.startswith("none"):
        res.details["ci_method"] = method + "; " + note
    return res


def search_error_bound(res: MetricResult) -> float:
    """The share of per-record terms of ``res`` that a neighbour search may have got wrong: the
    sum over the searches the metric read of their ``share_rows_possibly_wrong`` (a union bound —
    a term that reads several searches is wrong only when one of them is); 0 for exact
    searches or when no search was read."""
    report = res.details.get("neighbour_search") or {}
    searches = report.get("searches") or {}
    total = sum(float(s.get("share_rows_possibly_wrong", 0.0) or 0.0) for s in searches.values())
    if not searches:
        total = float(report.get("share_rows_possibly_wrong", 0.0) or 0.0)
    return min(1.0, max(0.0, total))


def _top_share(values: np.ndarray, share: float) -> float:
    """Σ of the ⌈share·n⌉ largest ``values``: the most that many entries can carry (0 when
    share is 0)."""
    v = np.asarray(values, dtype=np.float64)
    if share <= 0 or v.size == 0:
        return 0.0
    m = min(v.size, int(np.ceil(share * v.size - 1e-12)))
    top = np.partition(v, v.size - m)[v.size - m:] if m < v.size else v
    return float(top.sum())


def _note_search_error(res: MetricResult, bound: float, down: float, up: float, how: str) -> MetricResult:
    res.details["search_error"] = {"share_rows_possibly_wrong": bound, "lower_by": down, "upper_by": up,
                                   "how": how}
    method = res.details.get("ci_method", "")
    res.details["ci_method"] = method + (f"; widened for the approximate neighbour search ({how}: "
                                         f"−{down:.4g} / +{up:.4g})")
    return res


def widen_share_for_search(res: MetricResult, *, weights: np.ndarray | None = None,
                           influence: float = 1.0) -> MetricResult:
    """Widen the interval of a value that is a share or mean of per-record terms in [0, 1] for
    the neighbour searches' own error: at most a share b (:func:`search_error_bound`) of the
    records may have a wrong neighbour, so the value is off by at most b (weighted mean: by the
    share of the total weight the ⌈b·n⌉ heaviest records carry; ``influence``: by b times that
    when one record can move the value by up to ``influence``/n). Both ends move out by that
    much, clipped to [0, 1]. Nothing changes for exact searches or without an interval."""
    bound = search_error_bound(res)
    if bound <= 0 or res.ci is None:
        return res
    if weights is None:
        shift = bound * influence
        how = (f"±{shift:.4g}, the share of records whose neighbour may be wrong"
               + (f" × {influence:.4g} (one record's largest effect)" if influence != 1.0 else ""))
    else:
        w = np.asarray(weights, dtype=np.float64)
        shift = _top_share(w, bound) / float(w.sum()) if w.sum() > 0 else bound
        how = f"±{shift:.4g}, the weight share of the {bound:.4g} heaviest records whose neighbour may be wrong"
    lo, hi = res.ci
    new = (max(0.0, lo - shift), min(1.0, hi + shift))
    res.ci = new
    return _note_search_error(res, bound, lo - new[0], new[1] - hi, how)


def widen_distance_mean_for_search(res: MetricResult, distances: np.ndarray,
                                   transform: Callable[[float], float],
                                   inverse: Callable[[float], float]) -> MetricResult:
    """One-sided widening for a value that is a decreasing ``transform`` of a mean of
    nearest-neighbour distances (``inverse`` maps a value back to the mean): an approximate
    screen only ever returns a neighbour at least as far as the true one, so the true mean lies
    between the observed mean minus the distances of the ⌈b·n⌉ farthest records (those records'
    true distances at worst 0) and the observed mean. Only the end of the interval for smaller
    distances (higher risk) moves."""
    bound = search_error_bound(res)
    if bound <= 0 or res.ci is None:
        return res
    d = np.asarray(distances, dtype=np.float64)
    delta = _top_share(d, bound) / max(1, d.size)
    ends = sorted((float(inverse(res.ci[0])), float(inverse(res.ci[1]))))
    lo, hi = res.ci
    new = map_interval((max(0.0, ends[0] - delta), ends[1]), transform)
    new = (min(lo, new[0]), max(hi, new[1]))
    res.ci = _clip(new)
    return _note_search_error(res, bound, lo - res.ci[0], res.ci[1] - hi,
                              f"one-sided: the mean distance may be lower by up to {delta:.4g}")


def widen_excess_for_search(ci: tuple[float, float] | None, res: MetricResult,
                            base: MetricResult) -> tuple[float, float] | None:
    """The interval of ``res.value − base.value`` widened by how far each side's search error may
    have moved it (``details["search_error"]`` of each): the release's value may be higher by its
    ``upper_by`` and the baseline lower by its ``lower_by``, and the other way round."""
    if ci is None:
        return None
    er = res.details.get("search_error") or {}
    eb = base.details.get("search_error") or {}
    down = float(er.get("lower_by", 0.0)) + float(eb.get("upper_by", 0.0))
    up = float(er.get("upper_by", 0.0)) + float(eb.get("lower_by", 0.0))
    return (max(-1.0, ci[0] - down), min(1.0, ci[1] + up))


# the largest repetition count a metric accepts: each repetition repeats the metric's whole work,
# and its estimate's error shrinks as 1/√repetitions (100 repetitions: a tenth of one's)
MAX_REPETITIONS = 100


def check_work_bound(metric: str, name: str, value: Any, limit: int) -> None:
    """Refuse a parameter that multiplies a metric's work above ``limit``, naming the metric,
    the parameter and the limit (an unbounded value would make the run never end)."""
    if not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value > limit:
        raise ParameterError(f"{metric} {name}={int(value)} is above the limit of {limit} "
                             f"(it multiplies the work of the metric); use at most {limit}")
