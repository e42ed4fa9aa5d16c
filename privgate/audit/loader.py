"""A generator named ``module:name`` (``privgate audit --generator``): :class:`GeneratorRef`, a
picklable reference that imports the module only when first called — in the audit's worker
process, under the audit's deadline, so a module that exits, hangs or crashes while importing
ends a worker and never the audit's own process — and :func:`load_generator`, the import.

Messages name the ``--generator`` text the user gave, never an exception's message (the user's
code may quote training records in it): the exception's type alone."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError


@dataclass
class GeneratorRef:
    """``generate(training, n_rows, seed)`` named by ``spec`` (``module:name``) and optional JSON
    keyword arguments; resolved by :func:`load_generator` on first call (or :meth:`resolve`)."""

    spec: str
    args_json: str | None = None
    #: the folder the module is imported from first (the audit's current directory)
    folder: str = field(default_factory=os.getcwd)

    def __post_init__(self) -> None:
        check_spec(self.spec)
        parse_args(self.args_json)
        self._loaded: Any = None

    def resolve(self) -> Any:
        if self._loaded is None:
            self._loaded = load_generator(self.spec, self.args_json, folder=self.folder)
        return self._loaded

    def __call__(self, training: Any, n_rows: int, seed: int) -> Any:
        return self.resolve()(training, n_rows, seed)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "args_json": self.args_json, "folder": self.folder}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._loaded = None


def check_spec(spec: str) -> tuple[str, str]:
    """(module, attribute path) of ``module:name``; ParameterError otherwise."""
    module_name, sep, attr = str(spec).partition(":")
    if not sep or not module_name or not attr:
        raise ParameterError(f"--generator must be module:name, got {spec!r}")
    return module_name, attr


def parse_args(args_json: str | None) -> dict[str, Any] | None:
    """The ``--generator-args`` JSON object, or None."""
    if args_json is None:
        return None
    try:
        kwargs = json.loads(args_json)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"--generator-args is not valid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(kwargs, dict):
        raise ParameterError(
            f"--generator-args must be a JSON object of keyword arguments, got {type(kwargs).__name__}"
        )
    return kwargs


def load_generator(spec: str, args_json: str | None = None, *, folder: str | None = None) -> Any:
    """``module:name`` → the generate callable: a function or callable instance as is; a class
    instantiated with the ``args_json`` keyword arguments; a function given ``args_json`` is a
    factory called with them. The module is imported with ``folder`` (default: the current
    directory) on the path. Any failure of the user's code is a ParameterError naming the
    ``--generator`` text and the exception's type."""
    module_name, attr = check_spec(spec)
    kwargs = parse_args(args_json)
    where = folder or os.getcwd()
    if where not in sys.path and "" not in sys.path:
        sys.path.insert(0, where)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (missing == module_name or module_name.startswith(missing + ".")):
            raise ParameterError(f"--generator: cannot import module {module_name!r}") from None
        raise ParameterError(f"--generator: importing module {module_name!r} failed: ModuleNotFoundError") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        raise ParameterError(f"--generator: importing module {module_name!r} failed: {type(exc).__name__}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ParameterError(f"--generator: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or kwargs is not None:
        if not callable(obj):
            raise ParameterError(f"--generator-args given but {spec} is not a class or factory")
        try:
            obj = obj(**(kwargs or {}))
        except TypeError:
            raise ParameterError(f"--generator: {spec} does not take these --generator-args: TypeError") from None
        except Exception as exc:  # noqa: BLE001 - the user's constructor or factory failed
            raise ParameterError(
                f"--generator: {spec} with these --generator-args failed: {type(exc).__name__}"
            ) from None
    if not callable(obj):
        method = getattr(obj, "generate", None)
        if not callable(method):
            raise ParameterError(f"--generator: {spec} is not callable (and has no generate method)")
        obj = method
    return obj
