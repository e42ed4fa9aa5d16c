"""Names privgate derives from user-given ones (metric names, dataset names, release ids) for
systems with stricter rules: one place, so every adapter derives the same name.

* :func:`identifier` — ASCII letters, digits and ``_`` only: Dagster check, op and pool names
  (``^[A-Za-z0-9_]+$``) and the GX check names built from the same gate configuration.
* :func:`path_component` — one file-name component: ASCII letters, digits, ``.``, ``_`` and
  ``-``, no leading dot (so never ``.`` or ``..``, never a hidden file).

Every other character becomes ``_``, non-ASCII letters included (``str.isalnum`` accepts ``é``
and ``名``, which Dagster's name rule rejects), so the two adapters can never disagree.
"""

from __future__ import annotations

import re

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
_NOT_PATH = re.compile(r"[^A-Za-z0-9._-]")


def identifier(name: object, fallback: str = "_") -> str:
    """``name`` with every character outside ``[A-Za-z0-9_]`` replaced by ``_``; ``fallback``
    when the result would be empty."""
    return _NOT_IDENTIFIER.sub("_", str(name)) or fallback


def path_component(name: object, fallback: str = "_") -> str:
    """``name`` as one safe path component: characters outside ``[A-Za-z0-9._-]`` become ``_``
    and leading dots are dropped; ``fallback`` when nothing is left."""
    return _NOT_PATH.sub("_", str(name)).lstrip(".") or fallback
