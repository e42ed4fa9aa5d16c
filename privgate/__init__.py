"""privgate: the privacy gate between a synthetic-data generator and the world.

Quick start::

    import privgate
    report = privgate.evaluate(real, synthetic, sensitive=["income"])
    report.results["common_rows"].value      # risk in [0, 1]; 1 = no privacy

One metric alone: ``privgate.metrics.<name>(real, synthetic, **params)``; every metric:
``privgate.list_metrics()``.
"""

from __future__ import annotations

from . import threads  # noqa: E402,F401  (first: sets the OpenMP wait policy before any runtime loads)
from . import baselines, errors  # noqa: E402,F401
from ._version import __version__  # noqa: E402,F401
from .context import EvaluationContext  # noqa: E402
from .errors import PrivgateError  # noqa: E402
from .evaluate import evaluate  # noqa: E402
from .registry import get_metric, list_metrics, metric_names  # noqa: E402
from .report import Report  # noqa: E402
from .results import MetricResult  # noqa: E402


def __getattr__(name: str):
    # `privgate.metrics` is imported lazily so `import privgate` stays light
    if name == "metrics":
        import importlib

        return importlib.import_module(".metrics", __name__)
    raise AttributeError(name)


__all__ = ["evaluate", "EvaluationContext", "Report", "MetricResult", "PrivgateError",
           "list_metrics", "metric_names", "get_metric", "baselines", "errors", "__version__"]
