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


def lazy_attributes(package: str, names: dict[str, tuple[str, str | None]]):
    """``__getattr__`` and ``__dir__`` for ``package`` that import each of ``names`` on first read:
    ``names[name] = (submodule, attribute)``, the attribute ``None`` for the submodule itself."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = names[name]
        found = importlib.import_module(f".{module}", package)
        value = found if attr is None else getattr(found, attr)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(names))

    return __getattr__, __dir__
