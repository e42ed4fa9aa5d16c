"""Writing a report file so that it is complete or absent: a temporary file beside the target,
moved into place with ``os.replace`` (atomic within one file system, POSIX ``rename(2)``).

Below every renderer (gate reports, audit reports): it imports nothing of privgate.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_temporary(path: str | os.PathLike[str], text: str) -> str:
    """Write ``text`` to a new temporary file beside ``path`` (the folder must exist), with the
    permissions a plain write would give; the caller moves it into place (``os.replace``) once
    everything else succeeded, so a report is complete or absent."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _atomic_write(path: str | os.PathLike[str], text: str) -> Path:
    """Write via a temporary file in the same folder: a report is complete or absent."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = write_temporary(p, text)
    try:
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
