"""The Report an evaluation returns: ordered metric results, errors, and their serialisations."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        from . import __version__

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

    def to_polars(self) -> pl.DataFrame:
        """One row per metric: name, family, value, raw, baseline, excess, seconds, error."""
        from .registry import get_metric

        rows = []
        for name, r in self.results.items():
            rows.append({"metric": name, "family": get_metric(name).family, "value": r.value,
                         "raw": r.raw, "baseline": r.baseline, "excess": r.excess,
                         "seconds": r.seconds, "error": None})
        for name, msg in self.errors.items():
            if name in self.results:
                continue
            try:
                fam = get_metric(name.split(" ")[0]).family
            except Exception:  # noqa: BLE001
                fam = None
            rows.append({"metric": name, "family": fam, "value": None, "raw": None, "baseline": None,
                         "excess": None, "seconds": None, "error": msg})
        schema = {"metric": pl.String, "family": pl.String, "value": pl.Float64, "raw": pl.Float64,
                  "baseline": pl.Float64, "excess": pl.Float64, "seconds": pl.Float64, "error": pl.String}
        return pl.DataFrame(rows, schema=schema)
