"""Saving and loading suites without GX's silent drop.

GX 1.24 builds an ``ExpectationSuite`` by skipping (and only logging) every expectation whose
configuration it cannot turn into an Expectation — e.g. a privgate expectation whose module
was not imported, or whose kwargs no longer validate. For a privacy gate that is a silent
pass. The functions here raise :class:`~privgate.errors.ConfigError` instead, naming the
expectation types that would have been dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from privgate.errors import ConfigError

from . import core as _core  # noqa: F401 - registers the privgate expectations with GX


def _build_strict(suite_dict: dict[str, Any], *, source: str):
    import great_expectations as gx
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )

    stored = list(suite_dict.get("expectations") or [])
    problems = []
    for i, exp in enumerate(stored):
        try:
            ExpectationConfiguration(**exp).to_domain_obj()
        except Exception as exc:  # noqa: BLE001 - reported below with the type name
            problems.append(f"#{i} {exp.get('type')!r}: {type(exc).__name__}: {exc}")
    if problems:
        raise ConfigError(
            f"suite {suite_dict.get('name')!r} from {source}: {len(problems)} expectation(s) "
            "cannot be loaded (was `import privgate.gx` done first?): " + "; ".join(problems)
        )
    suite = gx.ExpectationSuite(
        name=suite_dict.get("name"),
        expectations=stored,
        suite_parameters=suite_dict.get("suite_parameters"),
        meta=suite_dict.get("meta"),
        notes=suite_dict.get("notes"),
        id=suite_dict.get("id"),
    )
    if len(suite.expectations) != len(stored):  # pragma: no cover - checked above
        raise ConfigError(
            f"suite {suite_dict.get('name')!r} from {source}: GX dropped "
            f"{len(stored) - len(suite.expectations)} expectation(s)"
        )
    return suite


def save_suite_json(suite: Any, path: str | Path) -> Path:
    """Write a suite's JSON (``suite.to_json_dict()``) to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(suite.to_json_dict(), indent=2, sort_keys=True))
    return path


def load_suite_json(path: str | Path):
    """Read a suite saved with :func:`save_suite_json` (or by a GX file context); every
    expectation must load, otherwise :class:`ConfigError`."""
    path = Path(path)
    from ..config_files import parse_json

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read suite JSON {path}: {type(exc).__name__}") from None
    data = parse_json(text, what=f"suite JSON {path}")  # a key set twice is refused
    return _build_strict(data, source=str(path))


def get_suite(context: Any, name: str):
    """``context.suites.get(name)`` that fails instead of silently dropping expectations."""
    suite = context.suites.get(name)
    try:
        store = context.suites._store  # GX keeps the raw dicts here (semi-internal)
        raw = store.get(key=store.get_key(name=name, id=None))
    except Exception as exc:  # noqa: BLE001 - cannot compare: fail closed, not open
        # returning GX's suite unchecked could hand back one silently missing expectations
        raise ConfigError(
            f"suite {name!r}: cannot check that GX loaded every stored expectation "
            f"({type(exc).__name__} reading the suite store); save it with save_suite_json and "
            "load it with load_suite_json instead"
        ) from None
    stored = raw.get("expectations") or []
    if len(stored) != len(suite.expectations):
        loaded_types = [e.expectation_type for e in suite.expectations]
        missing = list(stored_types := [e.get("type") for e in stored])
        for t in loaded_types:
            if t in missing:
                missing.remove(t)
        raise ConfigError(
            f"suite {name!r}: GX dropped {len(stored) - len(suite.expectations)} of "
            f"{len(stored_types)} expectations while loading ({missing}); import the module "
            "that defines them (`import privgate.gx`) and check their kwargs"
        )
    return suite
