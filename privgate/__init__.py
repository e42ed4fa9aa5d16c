"""privgate: the privacy gate between a synthetic-data generator and the world.

Quick start::

    import privgate
    report = privgate.evaluate(real, synthetic, sensitive=["income"])
    report.results["common_rows"].value      # risk in [0, 1]; 1 = no privacy

One metric alone: ``privgate.metrics.<name>(real, synthetic, **params)``; every metric:
``privgate.list_metrics()``.
"""

from __future__ import annotations

# isort: off
from . import threads  # noqa: E402,F401  (first: sets the OpenMP wait policy before any runtime loads)
from . import errors  # noqa: E402,F401

# isort: on
from ._lazy import lazy_attributes  # noqa: E402
from ._version import __version__  # noqa: E402,F401
from .errors import PrivgateError  # noqa: E402

# The rest is imported on first use, so that `import privgate` stays light: a command that stops
# on a gate-file typo, or the Dagster and GX adapters' definitions, load no engine.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "evaluate": ("evaluation", "evaluate"),
        "EvaluationContext": ("context", "EvaluationContext"),
        "Report": ("report", "Report"),
        "MetricResult": ("results", "MetricResult"),
        "get_metric": ("catalogue", "get_metric"),
        "list_metrics": ("catalogue", "list_metrics"),
        "metric_names": ("catalogue", "metric_names"),
        "baselines": ("baselines", None),
        "metrics": ("metrics", None),
    },
)

__all__ = [
    "evaluate",
    "EvaluationContext",
    "Report",
    "MetricResult",
    "PrivgateError",
    "list_metrics",
    "metric_names",
    "get_metric",
    "baselines",
    "errors",
    "__version__",
]
