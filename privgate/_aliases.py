"""Old import names that keep working for one release: ``dagster_defs`` → ``privgate.dagster``
and ``expectations`` → ``privgate.gx``.

:func:`alias_package` makes ``old.sub`` resolve to the *same module object* as ``new.sub`` (one
module, not a copy: Dagster definitions, resources and GX expectation classes exist once, so
GX does not register its expectations twice and ``isinstance`` keeps working). The shim
packages call it after emitting their :class:`DeprecationWarning`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any


def deprecation(old: str, new: str, extra: str) -> None:
    """Warn (once per process, at the importer's line) that ``old`` is now ``new``."""
    warnings.warn(
        f"the top-level package {old!r} is deprecated and will be removed in the next privgate "
        f"release; import {new!r} instead (installed with pip install 'privgate[{extra}]')",
        DeprecationWarning, stacklevel=3)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:  # already executed under its new name
        return None

    def get_code(self, fullname: str) -> Any:  # lets `python -m old.sub` run new.sub
        spec = importlib.util.find_spec(self.target)
        return spec.loader.get_code(self.target) if spec and spec.loader else None


class _AliasFinder(importlib.abc.MetaPathFinder):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(self.old + "."):
            return None
        new_name = self.new + fullname[len(self.old):]
        if importlib.util.find_spec(new_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new_name))


def alias_package(old: str, new: str) -> None:
    """Make every ``old.<sub>`` import return ``new.<sub>`` (idempotent)."""
    if not any(isinstance(f, _AliasFinder) and f.old == old for f in sys.meta_path):
        # first: an older installation (or an editable one) of the old package must not win
        sys.meta_path.insert(0, _AliasFinder(old, new))
