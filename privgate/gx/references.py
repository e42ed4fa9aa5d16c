"""Where the expectations find the real (reference) data.

A GX batch is the synthetic release; the real records the generator was trained on are named
by a string that a saved suite can store:

* ``"registry:<name>"`` — a frame registered in this process with :func:`register_real`
  (fast, not portable: a suite saved with it only works where the same name is registered);
* anything else — a file path (Parquet, or any format :func:`privgate.io.load_frame` reads);
  ``~`` and ``$VARIABLES`` are expanded, so a saved suite can say
  ``"$PRIVGATE_DATA/real.parquet"``.

Files are read once per (path, size, modification time) and kept in a small cache. This module
does not import Great Expectations.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import polars as pl

from privgate.errors import InputLoadError
from privgate.io import load_frame

REGISTRY_PREFIX = "registry:"
_FILE_CACHE_SIZE = 4

_registry: dict[str, tuple[pl.DataFrame, int]] = {}
_versions = itertools.count(1)  # a new version per registration: cache keys never collide
_file_cache: "OrderedDict[tuple[str, int, int], pl.DataFrame]" = OrderedDict()
_lock = threading.Lock()


def register_real(name: str, data: Any) -> str:
    """Register ``data`` (Polars / pandas / Arrow / path) under ``name`` for this process.

    Returns the reference string to pass as an expectation's ``real`` (``"registry:<name>"``).
    Registering the same name again replaces the frame.
    """
    if not isinstance(name, str) or not name.strip() or ":" in name:
        raise InputLoadError(f"real-data registry: invalid name {name!r} (non-empty, no ':')")
    frame = load_frame(data, role=f"real data {name!r}")
    with _lock:
        _registry[name] = (frame, next(_versions))
    return REGISTRY_PREFIX + name


def unregister_real(name: str) -> None:
    """Remove ``name`` from the in-process registry (no error when absent)."""
    with _lock:
        _registry.pop(name, None)


def registered_names() -> list[str]:
    """Names currently in the in-process registry."""
    with _lock:
        return sorted(_registry)


def describe_reference(ref: Any) -> str:
    """A short human label of a reference string (for Data Docs and metadata)."""
    if isinstance(ref, dict) and "$PARAMETER" in ref:
        return f"the real data at $PARAMETER {ref['$PARAMETER']}"
    ref = str(ref)
    if ref.startswith(REGISTRY_PREFIX):
        return f"in-process real data {ref[len(REGISTRY_PREFIX) :]!r}"
    return f"real data at {ref}"


def resolve_reference(ref: str, *, role: str = "real") -> tuple[pl.DataFrame, str]:
    """Load the frame a reference string names.

    Returns ``(frame, cache_key)``; the key identifies the content version (registry name and
    registration number, or resolved path + size + mtime) so callers can cache work done on it.
    Raises :class:`~privgate.errors.InputLoadError` naming the reference when it cannot be found.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise InputLoadError(f"{role}: empty reference; give a Parquet path or 'registry:<name>'")
    if ref.startswith(REGISTRY_PREFIX):
        name = ref[len(REGISTRY_PREFIX) :]
        with _lock:
            entry = _registry.get(name)
            known = sorted(_registry)
        if entry is None:
            raise InputLoadError(
                f"{role}: no real data registered as {name!r} in this process "
                f"(registered: {', '.join(known) or 'none'}); call "
                "privgate.gx.register_real(name, frame) before validating"
            )
        frame, version = entry
        return frame, f"registry:{name}:v{version}"
    path = Path(os.path.expandvars(os.path.expanduser(ref)))
    try:
        stat = path.stat()
    except OSError:
        raise InputLoadError(f"{role}: file not found: {path}") from None
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        cached = _file_cache.get(key)
        if cached is not None:
            _file_cache.move_to_end(key)
            return cached, f"file:{key}"
    frame = load_frame(path, role=role)
    with _lock:
        _file_cache[key] = frame
        while len(_file_cache) > _FILE_CACHE_SIZE:
            _file_cache.popitem(last=False)
    return frame, f"file:{key}"


def clear_cache() -> None:
    """Forget every cached file (the registry is kept)."""
    with _lock:
        _file_cache.clear()
