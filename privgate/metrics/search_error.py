"""Intervals widened for the approximate neighbour search's own error.

docs/performance.md, "Exact searches and the neighbour search settings" (in full: benchmarks/LOG.md,
"Folding the search error into intervals"): a search that is not exact
reports the share of rows whose nearest neighbour may be wrong
(``share_rows_possibly_wrong``); a metric's interval moves out by the most those rows can move
its value.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..results import MetricResult
from ..stats.metric_intervals import clip_unit, map_interval


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
    top = np.partition(v, v.size - m)[v.size - m :] if m < v.size else v
    return float(top.sum())


def _note_search_error(res: MetricResult, bound: float, down: float, up: float, how: str) -> MetricResult:
    res.details["search_error"] = {"share_rows_possibly_wrong": bound, "lower_by": down, "upper_by": up, "how": how}
    method = res.details.get("ci_method", "")
    res.details["ci_method"] = method + (
        f"; widened for the approximate neighbour search ({how}: −{down:.4g} / +{up:.4g})"
    )
    return res


def widen_share_for_search(
    res: MetricResult, *, weights: np.ndarray | None = None, influence: float = 1.0
) -> MetricResult:
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
        how = f"±{shift:.4g}, the share of records whose neighbour may be wrong" + (
            f" × {influence:.4g} (one record's largest effect)" if influence != 1.0 else ""
        )
    else:
        w = np.asarray(weights, dtype=np.float64)
        shift = _top_share(w, bound) / float(w.sum()) if w.sum() > 0 else bound
        how = f"±{shift:.4g}, the weight share of the {bound:.4g} heaviest records whose neighbour may be wrong"
    lo, hi = res.ci
    new = (max(0.0, lo - shift), min(1.0, hi + shift))
    res.ci = new
    return _note_search_error(res, bound, lo - new[0], new[1] - hi, how)


def widen_distance_mean_for_search(
    res: MetricResult, distances: np.ndarray, transform: Callable[[float], float], inverse: Callable[[float], float]
) -> MetricResult:
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
    res.ci = clip_unit(new)
    return _note_search_error(
        res, bound, lo - res.ci[0], res.ci[1] - hi, f"one-sided: the mean distance may be lower by up to {delta:.4g}"
    )


def widen_excess_for_search(
    ci: tuple[float, float] | None, res: MetricResult, base: MetricResult
) -> tuple[float, float] | None:
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
