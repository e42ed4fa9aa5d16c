"""Keeping a native library's panic off the terminal.

A Rust library (Polars) that panics prints the panic's message to the process's standard error
itself, before Python sees a ``PanicException``; that message can embed a Python traceback and the
values being processed. :func:`native_stderr_guard` routes what native code writes to file
descriptor 2 through a filter for the duration of a command: ordinary lines pass through
unchanged, and from the first line of a panic (``thread '…' panicked at``) on, native output is
withheld and replaced by one line saying so. Python's own ``sys.stderr`` keeps writing to the
terminal directly. ``RUST_BACKTRACE`` is set to ``0`` for the run (no backtrace is printed, so
none is withheld either).

Used by the ``privgate gate``, ``evaluate`` and ``estimate`` commands; a library caller keeps its
own standard error (the exception itself is caught and reported by type: ``run_gate``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from typing import Iterator

PANIC_LINE = re.compile(rb"^thread '.*' panicked at ")
WITHHELD = (
    "privgate: a native library panicked; its message is withheld (it may quote data values); the run fails closed\n"
)


@contextlib.contextmanager
def native_stderr_guard() -> Iterator[None]:
    """Filter native writes to file descriptor 2 while the block runs (module docstring). Does
    nothing when descriptor 2 cannot be duplicated."""
    try:
        saved = os.dup(2)
        read_end, write_end = os.pipe()
    except OSError:
        yield
        return
    rebound = _rebind_python_stderr(saved)
    os.environ.setdefault("RUST_BACKTRACE", "0")
    os.dup2(write_end, 2)
    os.close(write_end)
    reader = threading.Thread(target=_forward, args=(read_end, saved), name="privgate-native-stderr", daemon=True)
    reader.start()
    try:
        yield
    finally:
        try:
            if rebound is not None:
                rebound.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)  # the pipe's last write end closes: the reader sees the end
        reader.join(5.0)
        if rebound is not None:
            sys.stderr = rebound.original  # type: ignore[attr-defined]
            rebound.close()
        if not reader.is_alive():
            os.close(saved)  # else the reader still writes to it: left to the process's end


class _Rebound:
    """``sys.stderr`` writing to a duplicate of the original descriptor 2 (Python's messages
    bypass the native filter)."""

    def __init__(self, original, fd: int) -> None:
        self.original = original
        self._file = os.fdopen(
            os.dup(fd),
            "w",
            encoding=getattr(original, "encoding", None) or "utf-8",
            errors="backslashreplace",
            buffering=1,
        )

    def write(self, text: str) -> int:
        return self._file.write(text)

    def flush(self) -> None:
        self._file.flush()

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self._file.close()

    def isatty(self) -> bool:
        return self._file.isatty()

    def __getattr__(self, name: str):
        return getattr(self._file, name)


def _rebind_python_stderr(saved: int) -> "_Rebound | None":
    """Point ``sys.stderr`` at the original descriptor when it writes to descriptor 2 (a test's
    captured stream is left alone)."""
    try:
        if sys.stderr is None or sys.stderr.fileno() != 2:
            return None
    except (AttributeError, OSError, ValueError):
        return None
    sys.stderr.flush()
    rebound = _Rebound(sys.stderr, saved)
    sys.stderr = rebound  # type: ignore[assignment]
    return rebound


def _forward(read_end: int, out: int) -> None:
    """Copy lines from ``read_end`` to ``out`` until the first panic line; then withhold the rest
    and write :data:`WITHHELD` once."""
    withheld = False
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as source:
        while True:
            try:
                chunk = source.read(65536)
            except OSError:
                break
            if not chunk:
                break
            if withheld:
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if PANIC_LINE.match(line):
                    withheld = True
                    _write(out, WITHHELD.encode())
                    break
                _write(out, line + b"\n")
        if pending and not withheld and not PANIC_LINE.match(pending):
            _write(out, pending)


def _write(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    except OSError:
        pass
