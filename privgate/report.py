"""The Report an evaluation returns: ordered metric results, errors, and their serialisations."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from .results import MetricResult, _jsonable


@dataclass
class Report:
    """Results of one evaluation. ``results`` maps metric name → MetricResult (in the order the
    metrics ran); ``errors`` maps metric name → error message for metrics that could not be
    computed (filled when ``evaluate(..., on_error="record")``)."""

    results: dict[str, MetricResult]
    errors: dict[str, str] = field(default_factory=dict)
    schema: dict[str, str] = field(default_factory=dict)
    n_real: int = 0
    n_synthetic: int = 0
    n_holdout: int | None = None
    seed: int = 0
    seconds: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> MetricResult:
        return self.results[name]

    def values(self) -> dict[str, float]:
        return {n: r.value for n, r in self.results.items()}

    def to_dict(self, include_per_record: bool = False) -> dict[str, Any]:
        from ._version import __version__

        return {
            "privgate_version": __version__,
            "n_real": self.n_real,
            "n_synthetic": self.n_synthetic,
            "n_holdout": self.n_holdout,
            "seed": self.seed,
            "seconds": self.seconds,
            "schema": dict(self.schema),
            "params": _jsonable(self.params),
            "results": {n: r.to_dict(include_per_record) for n, r in self.results.items()},
            "errors": dict(self.errors),
        }

    def to_json(self, path: str | Path | None = None, *, indent: int = 2) -> str:
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], per_record: Mapping[str, np.ndarray] | None = None) -> "Report":
        """The report :meth:`to_dict` described; ``per_record`` maps metric → its per-record
        array (``to_dict`` only summarises them). See :meth:`MetricResult.from_dict`."""
        per_record = per_record or {}
        return cls(
            results={n: MetricResult.from_dict(r, per_record.get(n)) for n, r in (data.get("results") or {}).items()},
            errors=dict(data.get("errors") or {}),
            schema=dict(data.get("schema") or {}),
            n_real=int(data.get("n_real") or 0),
            n_synthetic=int(data.get("n_synthetic") or 0),
            n_holdout=data.get("n_holdout"),
            seed=int(data.get("seed") or 0),
            seconds=float(data.get("seconds") or 0.0),
            params=dict(data.get("params") or {}),
        )

    def to_polars(self) -> pl.DataFrame:
        """One row per metric: name, family, value, raw, baseline, excess, seconds, error."""
        from .catalogue import get_metric

        rows = []
        for name, r in self.results.items():
            rows.append(
                {
                    "metric": name,
                    "family": get_metric(name).family,
                    "value": r.value,
                    "raw": r.raw,
                    "baseline": r.baseline,
                    "excess": r.excess,
                    "seconds": r.seconds,
                    "error": None,
                }
            )
        for name, msg in self.errors.items():
            if name in self.results:
                continue
            try:
                fam = get_metric(name.split(" ")[0]).family
            except Exception:  # noqa: BLE001
                fam = None
            rows.append(
                {
                    "metric": name,
                    "family": fam,
                    "value": None,
                    "raw": None,
                    "baseline": None,
                    "excess": None,
                    "seconds": None,
                    "error": msg,
                }
            )
        schema = {
            "metric": pl.String,
            "family": pl.String,
            "value": pl.Float64,
            "raw": pl.Float64,
            "baseline": pl.Float64,
            "excess": pl.Float64,
            "seconds": pl.Float64,
            "error": pl.String,
        }
        return pl.DataFrame(rows, schema=schema)


#: the evaluation settings every part of a merged report must share
_SHARED_PARAMS = ("keys", "sensitive", "baseline", "inputs_sha256")


def merge_reports(parts: Sequence[Report], order: Sequence[str] | None = None) -> Report:
    """One report from reports of disjoint metric subsets of one evaluation (e.g. one per metric
    family, computed in separate processes): results and errors together, ordered as ``order``
    (metric names; the rest after, in part order). ``seconds`` is the sum of the parts' (compute
    time, not wall time).

    The parts must describe the same evaluation -- row counts, seed, decided schema, keys,
    sensitive columns, baseline setting and, when recorded, the input digests
    (``params["inputs_sha256"]``) -- and no metric may appear in two parts; otherwise
    :class:`~privgate.errors.ParameterError` says which part differs in what.
    """
    from .errors import ParameterError

    if not parts:
        raise ParameterError("merge_reports: no reports given")
    first = parts[0]
    shape = ("n_real", "n_synthetic", "n_holdout", "seed", "schema")
    seen: dict[str, int] = {}
    for i, part in enumerate(parts):
        for attr in shape:
            if getattr(part, attr) != getattr(first, attr):
                raise ParameterError(
                    f"merge_reports: report {i} differs from report 0 in {attr} "
                    "(the parts do not describe one evaluation)"
                )
        for key in _SHARED_PARAMS:
            if part.params.get(key) != first.params.get(key):
                raise ParameterError(
                    f"merge_reports: report {i} differs from report 0 in "
                    f"params[{key!r}] (the parts do not describe one evaluation)"
                )
        for name in (*part.results, *part.errors):
            if seen.setdefault(name, i) != i:
                raise ParameterError(f"merge_reports: metric {name!r} is in reports {seen[name]} and {i}")
    names = [n for p in parts for n in (*(p.params.get("metrics") or ()), *p.results, *p.errors)]
    rank = {n: i for i, n in enumerate(order or [])}
    names = sorted(dict.fromkeys(names), key=lambda n: rank.get(n, len(rank)))
    results = {n: r for p in parts for n, r in p.results.items()}
    errors = {n: e for p in parts for n, e in p.errors.items()}
    params = {k: first.params[k] for k in first.params if k not in ("metrics", "metric_params")}
    params["metrics"] = names
    params["metric_params"] = {k: v for p in parts for k, v in (p.params.get("metric_params") or {}).items()}
    return Report(
        results={n: results[n] for n in names if n in results},
        errors={n: errors[n] for n in names if n in errors},
        schema=dict(first.schema),
        n_real=first.n_real,
        n_synthetic=first.n_synthetic,
        n_holdout=first.n_holdout,
        seed=first.seed,
        seconds=float(sum(p.seconds for p in parts)),
        params=params,
    )
