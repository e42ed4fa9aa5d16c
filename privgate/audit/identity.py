"""A generator's identity: a digest of what makes it the generator it is, recorded with every
audit and matched by a release gate's ``require_audit`` — so a passing audit of some other
function, recorded under the production generator's name and version, does not count.

- ``module:function`` (what ``privgate audit --generator`` and ``privgate gate --generator``
  take): sha256 of the named module's source file (its bytes, found without running it), the
  attribute's dotted name and the keyword arguments (``--generator-args``, canonical JSON; none
  given and ``{}`` differ).
- An adapter (:mod:`privgate.audit.generators`): its class, the library's name and installed
  version and the adapter's settings (canonical JSON).
- Any other callable given to :func:`privgate.audit.audit_generator`: a module-level function
  or class has the digest of ``module:qualname``; an instance of a class, its class's digest
  with its attributes as the arguments (plain data as it is, NumPy arrays by their bytes' sha256,
  nested objects and functions by their class or name, module source and attributes, so a
  wrapper's digest covers what it wraps; anything else: no digest).

Orientation: equal digests say the same code and settings, not that the generator is private;
the digest covers the named module's own file, not the modules it imports (state a version for
those). The digest is 64 lowercase hex characters.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
from typing import Any, Mapping

from ..errors import ParameterError
from .loader import parse_args

DIGEST_FORMAT = 1
DIGEST_LENGTH = 64


def _canonical(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _digest(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical({"format": DIGEST_FORMAT, **identity}).encode("ascii")).hexdigest()


def _file_sha256(path: str, what: str) -> str:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError as exc:
        raise ParameterError(f"{what}: cannot read the module's source file: {type(exc).__name__}") from None


def spec_digest(spec: str, args: Mapping[str, Any] | str | None = None) -> str:
    """The digest of ``module:attribute`` called with keyword arguments ``args`` (a mapping, its
    JSON text, or None). The module's source file is found as an import would find it (the
    current directory on the path) but not run."""
    module_name, sep, attr = str(spec).partition(":")
    if not sep or not module_name or not attr:
        raise ParameterError("--generator must be module:name, got a value without that form")
    kwargs = parse_args(args) if isinstance(args, str) or args is None else dict(args)
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        found = None
    origin = getattr(found, "origin", None)
    if found is None or not origin or not os.path.isfile(origin):
        raise ParameterError(
            f"--generator: cannot import module {module_name!r}: no source file of it is found "
            "(a module with a file is needed for the generator's digest)"
        )
    return _source_identity(_file_sha256(origin, "--generator"), attr, kwargs)


def _source_identity(source_sha: str, attr: str, kwargs: Mapping[str, Any] | None) -> str:
    try:
        return _digest(
            {
                "kind": "source",
                "source_sha256": source_sha,
                "attribute": attr,
                "args": None if kwargs is None else dict(kwargs),
            }
        )
    except (TypeError, ValueError):
        raise ParameterError(
            "--generator-args: the arguments are not plain JSON data (finite numbers, strings, lists, mappings)"
        ) from None


def adapter_digest(adapter: Any) -> str:
    """The digest of an adapter instance: class, library name and installed version, settings."""
    cls = type(adapter)
    library = str(getattr(adapter, "library", "") or "")
    try:
        settings = json.loads(_canonical({k: v for k, v in vars(adapter).items() if not k.startswith("_")}))
    except (TypeError, ValueError):
        raise ParameterError(f"generator adapter {cls.__name__}: its settings are not plain JSON data") from None
    return _digest(
        {
            "kind": "adapter",
            "class": f"{cls.__module__}:{cls.__qualname__}",
            "library": library,
            "library_version": _library_version(library),
            "settings": settings,
        }
    )


def _library_version(library: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    for name in (library, library.lower(), library.lower().replace(" ", "-")):
        if not name:
            continue
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return "not installed"


def callable_digest(generate: Any) -> str | None:
    """The digest of a generate callable (see the module docstring); None when it has no
    source file or its settings are not plain data (such an audit satisfies no ``require_audit``)."""
    from .generators._common import Adapter
    from .loader import GeneratorRef

    try:
        if isinstance(generate, Adapter):
            return adapter_digest(generate)
        if isinstance(generate, GeneratorRef):  # module:name, imported by the workers only
            return spec_digest(generate.spec, generate.args_json)
        target, kwargs = generate, None
        if not (inspect.isfunction(generate) or inspect.isclass(generate)):
            target = type(generate)
            kwargs = _plain(_settings(generate), 0)
        source = _source_of(target)
        if source is None:
            return None
        return _source_identity(source, target.__qualname__, kwargs)
    except (ParameterError, TypeError, ValueError, RecursionError):
        return None


def _settings(obj: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")} if hasattr(obj, "__dict__") else {}


def _source_of(target: Any) -> str | None:
    """sha256 of the source file of the module defining ``target`` (None: no file, or a
    function or class defined inside a function)."""
    if "<locals>" in getattr(target, "__qualname__", "<locals>"):
        return None
    path = getattr(inspect.getmodule(target), "__file__", None)
    if not path:  # a module loaded from a file but not registered (e.g. by an orchestrator)
        code = getattr(target, "__code__", None)
        if code is None and inspect.isclass(target):
            code = next((f.__code__ for f in vars(target).values() if inspect.isfunction(f)), None)
        path = getattr(code, "co_filename", None)
    if not path or not os.path.isfile(path):
        return None
    return _file_sha256(path, "generator")


def _plain(x: Any, depth: int) -> Any:
    """``x`` as plain JSON data for the digest: numbers, text, lists, mappings as they are;
    a NumPy array by the sha256 of its bytes; a function or an object by its class, the source
    of its module and (an object) its attributes — so a wrapper's digest covers what it wraps.
    TypeError for anything else (no digest)."""
    import numpy as np

    if depth > 8:
        raise TypeError("nested too deeply")
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if x == x and abs(x) != float("inf") else repr(x)
    if isinstance(x, np.generic):
        return _plain(x.item(), depth + 1)
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            return [_plain(v, depth + 1) for v in x.tolist()]
        return {
            "ndarray": hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest(),
            "dtype": str(x.dtype),
            "shape": list(x.shape),
        }
    if isinstance(x, (list, tuple)):
        return [_plain(v, depth + 1) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted((_plain(v, depth + 1) for v in x), key=_canonical)
    if isinstance(x, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in x.items()}
    if inspect.isfunction(x) or inspect.isclass(x):
        source = _source_of(x)
        if source is None:
            raise TypeError("a function without a source file")
        return {"function": x.__qualname__, "source_sha256": source}
    if hasattr(x, "__dict__"):
        source = _source_of(type(x))
        if source is None:
            raise TypeError("an object of a class without a source file")
        return {"class": type(x).__qualname__, "source_sha256": source, "attributes": _plain(_settings(x), depth + 1)}
    raise TypeError(f"{type(x).__name__} is not plain data")


def is_digest(x: Any) -> bool:
    """Whether ``x`` has the form of a generator digest (64 lowercase hex characters)."""
    return isinstance(x, str) and len(x) == DIGEST_LENGTH and all(c in "0123456789abcdef" for c in x)
