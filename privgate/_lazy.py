"""Modules imported on first use, so ``import privgate`` stays light.

SciPy's ``stats`` and ``special`` take about half a second to import; privgate's interval and
test formulas need them only when a metric is computed. ``lazy_module("scipy.stats")`` stands in
for the module and imports it on the first attribute read (then Python's module cache makes
every later read a dictionary lookup).
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """A stand-in for the module ``name``, imported on first attribute access."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> Any:
    """The module ``name``, imported when one of its attributes is first read."""
    return LazyModule(name)
