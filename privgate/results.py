"""The result every metric returns.

A `MetricResult` carries the risk `value` in [0, 1] (1 = no privacy), the `raw` value of the
original definition, the parameters used, row counts, breakdowns and timing. It never carries a
value of a real record: per-record breakdowns are arrays indexed by real row position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class MetricResult:
    """Outcome of one metric on one (real, synthetic) pair.

    Attributes:
        name: registry name of the metric.
        value: risk in [0, 1]; 1 means no privacy (a copy of the real data scores 1).
        raw: the value of the original published definition, in its own orientation and scale.
        raw_description: what `raw` is, in words ("mean real→synthetic distance", ...).
        params: the parameters the metric used (after defaults were applied).
        n_real / n_synthetic / n_holdout: row counts of the inputs used.
        details: JSON-serialisable aggregates a person needs to understand the score.
        per_attribute: per-column (or per-sensitive-attribute) values, when the metric has them.
        per_record: per-real-record risk (float, 0..1 or boolean as 0/1), indexed by real row
            position; never values of the records.
        per_record_description: what one entry of `per_record` means.
        seconds: wall time of the metric computation (shared neighbour searches are charged to the
            first metric that needed them).
        schema: the decided column kinds ({column: "numeric" | "categorical"}).
        baseline / excess: the same metric on a holdout sample and value - baseline (gates).
        ci: the 95 % interval of `value` (lower, upper), when one can be computed; how it was
            computed is ``details["ci_method"]`` (or why there is none: "none: <reason>").
        baseline_ci / excess_ci: the intervals of the holdout baseline and of the excess.
        p_value: the p-value of the metric's own hypothesis test, for metrics that are tests
            (e.g. memorisation: "no more memorised than holdout records"); None otherwise.
    """

    name: str
    value: float
    raw: float
    raw_description: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    n_real: int = 0
    n_synthetic: int = 0
    n_holdout: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    per_attribute: dict[str, float] | None = None
    per_record: np.ndarray | None = None
    per_record_description: str = ""
    seconds: float = 0.0
    schema: dict[str, str] = field(default_factory=dict)
    baseline: float | None = None
    excess: float | None = None
    ci: tuple[float, float] | None = None
    baseline_ci: tuple[float, float] | None = None
    excess_ci: tuple[float, float] | None = None
    p_value: float | None = None

    def __post_init__(self) -> None:
        v = float(self.value)
        if math.isnan(v) or v < -1e-12 or v > 1 + 1e-12:
            raise ValueError(f"metric {self.name!r} produced value {v!r} outside [0, 1]")
        self.value = min(1.0, max(0.0, v))
        self.raw = float(self.raw)

    @classmethod
    def from_context(
        cls,
        ctx: Any,
        name: str,
        value: float,
        raw: float,
        raw_description: str,
        *,
        params: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
        per_record: np.ndarray | None = None,
        per_record_description: str = "",
        per_attribute: dict[str, float] | None = None,
    ) -> "MetricResult":
        """A result with the evaluation context's row counts and decided schema filled in, and —
        when the metric read neighbour searches — how they were made
        (``details["neighbour_search"]``, EvaluationContext.take_search_report)."""
        details = dict(details or {})
        take = getattr(ctx, "take_search_report", None)
        search = take() if callable(take) else None
        if search is not None:
            details.setdefault("neighbour_search", search)
        return cls(
            name=name,
            value=float(value),
            raw=float(raw),
            raw_description=raw_description,
            params=dict(params or {}),
            n_real=ctx.n_real,
            n_synthetic=ctx.n_synthetic,
            n_holdout=ctx.n_holdout,
            details=details,
            per_attribute=per_attribute,
            per_record=per_record,
            per_record_description=per_record_description,
            schema=ctx.schema.as_dict(),
        )

    def with_baseline(
        self,
        baseline: float,
        baseline_ci: tuple[float, float] | None = None,
        excess_ci: tuple[float, float] | None = None,
    ) -> "MetricResult":
        """Attach a holdout baseline value (with its interval) and the excess of this value over
        it (with the excess's interval, computed by :mod:`privgate.stats`)."""
        self.baseline = float(baseline)
        self.excess = self.value - self.baseline
        self.baseline_ci = _interval(baseline_ci)
        self.excess_ci = _interval(excess_ci)
        return self

    def set_ci(self, ci: tuple[float, float] | None, method: str) -> "MetricResult":
        """Attach the interval of ``value`` and say how it was computed (``method``), or, with
        ``ci=None``, why there is none (``method`` then starts with "none: ")."""
        self.ci = _interval(ci)
        self.details["ci_method"] = method if self.ci is not None or method.startswith("none") else f"none: {method}"
        return self

    def per_record_summary(self) -> dict[str, Any] | None:
        """Aggregates of the per-record breakdown (safe to publish: no record values)."""
        if self.per_record is None:
            return None
        arr = np.asarray(self.per_record, dtype=np.float64)
        if arr.size == 0:
            return {"count": 0}
        qs = np.quantile(arr, [0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0])
        return {
            "count": int(arr.size),
            "mean": float(arr.mean()),
            "quantiles": dict(zip(["min", "p25", "p50", "p75", "p90", "p99", "max"], [float(q) for q in qs])),
            "n_at_risk": int(np.count_nonzero(arr >= 0.5)),
        }

    def to_dict(self, include_per_record: bool = False) -> dict[str, Any]:
        """JSON-serialisable form. Per-record arrays are summarised unless asked for (row
        positions and risks only, never record values)."""
        out: dict[str, Any] = {
            "name": self.name,
            "value": self.value,
            "raw": _json_float(self.raw),
            "raw_description": self.raw_description,
            "params": _jsonable(self.params),
            "n_real": self.n_real,
            "n_synthetic": self.n_synthetic,
            "n_holdout": self.n_holdout,
            "details": _jsonable(self.details),
            "per_attribute": _jsonable(self.per_attribute),
            "per_record_summary": self.per_record_summary(),
            "per_record_description": self.per_record_description,
            "seconds": self.seconds,
            "schema": dict(self.schema),
            "baseline": self.baseline,
            "excess": self.excess,
            "ci": list(self.ci) if self.ci is not None else None,
            "ci_method": self.details.get("ci_method"),
            "baseline_ci": list(self.baseline_ci) if self.baseline_ci is not None else None,
            "excess_ci": list(self.excess_ci) if self.excess_ci is not None else None,
            "p_value": _json_float(self.p_value) if self.p_value is not None else None,
        }
        if include_per_record and self.per_record is not None:
            out["per_record"] = [float(x) for x in np.asarray(self.per_record, dtype=np.float64)]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], per_record: np.ndarray | None = None) -> "MetricResult":
        """The result :meth:`to_dict` described, with its per-record array ``per_record`` (which
        ``to_dict`` only summarises): ``from_dict(r.to_dict(), r.per_record).to_dict() ==
        r.to_dict()``. Details come back in their JSON form (lists for tuples, plain numbers
        for NumPy scalars). Used to carry results between processes (e.g. one Dagster step per
        metric family) without pickling."""
        res = cls(
            name=str(data["name"]),
            value=float(data["value"]),
            raw=_from_json_float(data.get("raw")),
            raw_description=data.get("raw_description") or "",
            params=dict(data.get("params") or {}),
            n_real=int(data.get("n_real") or 0),
            n_synthetic=int(data.get("n_synthetic") or 0),
            n_holdout=data.get("n_holdout"),
            details=dict(data.get("details") or {}),
            per_attribute=data.get("per_attribute"),
            per_record=None if per_record is None else np.asarray(per_record),
            per_record_description=data.get("per_record_description") or "",
            seconds=float(data.get("seconds") or 0.0),
            schema=dict(data.get("schema") or {}),
            p_value=None if data.get("p_value") is None else _from_json_float(data["p_value"]),
        )
        res.ci = _interval(data.get("ci"))
        if data.get("baseline") is not None:
            res.baseline = float(data["baseline"])
            res.excess = None if data.get("excess") is None else float(data["excess"])
        res.baseline_ci = _interval(data.get("baseline_ci"))
        res.excess_ci = _interval(data.get("excess_ci"))
        return res


def _from_json_float(x: Any) -> float:
    """The inverse of :func:`_json_float`: None → NaN, "inf" / "-inf" → ±inf."""
    return math.nan if x is None else float(x)


def _interval(ci: Any) -> tuple[float, float] | None:
    """A (lower, upper) pair of finite floats with lower ≤ upper, or None."""
    if ci is None:
        return None
    lo, hi = (float(ci[0]), float(ci[1]))
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi + 1e-12:
        raise ValueError(f"an interval must be two finite numbers lower ≤ upper; got {ci!r}")
    return (lo, max(lo, hi))


def _json_float(x: float) -> float | str | None:
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays and tuples into plain JSON types, recursively."""
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return _json_float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return _json_float(float(obj))
    if isinstance(obj, np.ndarray):
        return [_jsonable(x) for x in obj.tolist()]
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(x) for x in obj]
    return str(obj)
