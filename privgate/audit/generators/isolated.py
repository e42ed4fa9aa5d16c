"""A generator adapter run in another Python environment, one subprocess a call.

Some generator libraries pin a stack that cannot live beside privgate's (dpmm 0.1.9 pins
NumPy 1.26.4, pandas 2.1.0 and scikit-learn 1.5.0 exactly, while privgate's pyarrow 26 needs
NumPy 2): they are not extras of privgate. Install such a library in an environment of its own
(docs/audit-generators.md, *Libraries in an environment of their own*) and audit it with
:class:`IsolatedGenerator`: each call writes the training frame as an Arrow IPC file, runs the
adapter in that environment's Python (``python -m privgate.audit.generators.isolated``, the
calling privgate's source first on its path, so both sides run the same adapter code), and reads
the release back. Numbers and strings cross as Arrow columns; nothing else is shared.

The adapter is built here too (checking its parameters, giving ``claimed_epsilon``, ``delta``
and ``deterministic_by_seed``) without importing its library. A failure in the other
environment is a :class:`~privgate.errors.AuditError` naming the exception's type only (a
library's message may quote training records), or privgate's own message, which never does.
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from ...errors import AuditError, ParameterError, PrivgateError
from . import load_adapter

# the last line of the runner's stderr when the adapter failed
FAILED = "privgate-isolated-failed: "
# privgate's source folder: first on the other environment's path
SOURCE = str(Path(__file__).resolve().parents[3])


class IsolatedGenerator:
    """``generate(training, n_rows, seed)`` running the adapter ``adapter`` (a name of
    :data:`privgate.audit.generators.ADAPTERS`) with ``options`` under the Python interpreter
    ``python`` of another environment. ``timeout``: seconds a call may take (None: no limit)."""

    def __init__(
        self, python: str | os.PathLike, adapter: str, *, timeout: float | None = None, **options: Any
    ) -> None:
        self.python = str(Path(python).expanduser())
        if not Path(self.python).is_file():
            raise ParameterError(
                f"python: no interpreter at {self.python}; create the environment first (docs/audit-generators.md)"
            )
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ParameterError(f"timeout must be a positive number of seconds; got {timeout!r}")
        self.adapter = adapter
        self.options = dict(options)
        self.timeout = timeout
        self.local = load_adapter(adapter)(**self.options)  # checks the options; imports no library

    def __repr__(self) -> str:
        return f"IsolatedGenerator({self.local!r} under {self.python})"

    def __getattr__(self, name: str) -> Any:
        # claimed_epsilon, delta, deterministic_by_seed… as the adapter says
        if name in ("local", "__setstate__") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.local, name)

    def __call__(self, training: Any, n_rows: int, seed: int) -> pl.DataFrame:
        from ...io import load_frame

        frame = load_frame(training, role="training")
        with tempfile.TemporaryDirectory(prefix="privgate-isolated-") as tmp:
            folder = Path(tmp)
            frame.write_ipc(folder / "training.arrow", compression="uncompressed")
            with open(folder / "call.pkl", "wb") as f:
                pickle.dump(
                    {"adapter": self.adapter, "options": self.options, "n_rows": int(n_rows), "seed": int(seed)},
                    f,
                    protocol=4,
                )
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([SOURCE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            try:
                done = subprocess.run(
                    [self.python, "-m", "privgate.audit.generators.isolated", str(folder)],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout,
                )
            except subprocess.TimeoutExpired:
                raise AuditError(
                    f"the {self.adapter} adapter under {self.python} took more than {self.timeout:g} s"
                ) from None
            if done.returncode != 0:
                lines = [ln for ln in done.stderr.splitlines() if ln.startswith(FAILED)]
                why = lines[-1][len(FAILED) :] if lines else f"the process exited with code {done.returncode}"
                raise AuditError(f"the {self.adapter} adapter under {self.python} failed: {why}")
            return _read(folder / "release.arrow")


def _read(path: Path) -> pl.DataFrame:
    """An Arrow IPC file read whole into memory (its folder is deleted next)."""
    return pl.read_ipc(io.BytesIO(path.read_bytes()))


def _serve(folder: Path) -> None:
    """In the other environment: read the call, run the adapter, write the release."""
    with open(folder / "call.pkl", "rb") as f:
        call = pickle.load(f)
    training = _read(folder / "training.arrow")
    generate = load_adapter(call["adapter"])(**call["options"])
    release = generate(training, call["n_rows"], call["seed"])
    if not isinstance(release, pl.DataFrame):
        from ...io import load_frame

        release = load_frame(release, role="release")
    release.write_ipc(folder / "release.arrow", compression="uncompressed")


if __name__ == "__main__":
    try:
        _serve(Path(sys.argv[1]))
    except BaseException as exc:  # noqa: BLE001 - the type only: a library's message may quote records
        why = f"{type(exc).__name__}: {exc}" if isinstance(exc, PrivgateError) else type(exc).__name__
        print(FAILED + why.replace("\n", " "), file=sys.stderr)
        sys.exit(1)
