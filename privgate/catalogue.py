"""Every metric privgate can run, looked up by name: privgate's own metrics, imported on first
use from :data:`BUILTIN_METRIC_MODULES` (each registers its metrics with
:mod:`privgate.registry` when imported), and any third-party metric registered with
:func:`privgate.registry.register_metric` (CONTRIBUTING.md).

This module sits above the metric modules (it imports them by name); the registry sits below
them, so no metric module imports a module that imports it back.
"""

from __future__ import annotations

import importlib
from typing import Any

from .registry import MetricSpec, registered, registered_specs

# The modules that register privgate's own metrics, in registration order (the order of
# metric_names() and of an evaluation's default metrics).
BUILTIN_METRIC_MODULES = (
    "privgate.metrics.distance",
    "privgate.metrics.reconstruction",
    "privgate.metrics.classifier",
    "privgate.metrics.statistical",
    "privgate.metrics.proximity",
    "privgate.metrics.memorisation",
    "privgate.metrics.label_free",
    "privgate.disclosure.metrics",
    "privgate.attacks.inference",
    "privgate.attacks.linkability",
    "privgate.attacks.singling_out",
)
_loaded = False


def load_builtin_metrics() -> None:
    """Import every module of :data:`BUILTIN_METRIC_MODULES` (each registers its metrics when
    imported) once."""
    global _loaded
    if _loaded:
        return
    for module in BUILTIN_METRIC_MODULES:
        importlib.import_module(module)
    _loaded = True


def get_metric(name: str) -> MetricSpec:
    """The registry entry for ``name``; raises :class:`~privgate.errors.UnknownMetricError`
    listing known names."""
    load_builtin_metrics()
    return registered(name)


def metric_names(family: str | None = None) -> list[str]:
    """Registered metric names (registration order), optionally of one family."""
    load_builtin_metrics()
    return [s.name for s in registered_specs() if family is None or s.family == family]


def list_metrics() -> list[dict[str, Any]]:
    """Every registered metric with family, attack, needs, orientation and reference."""
    load_builtin_metrics()
    return [s.describe() for s in registered_specs()]
