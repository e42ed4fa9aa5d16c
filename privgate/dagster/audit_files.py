"""The files the steps of a generator audit (:mod:`privgate.dagster.audit`) leave for each other
in the run's work folder: the prepared audit (``prepared.pkl``, ``started.json``) and each
chunk's run outcomes (``runs/<mapping key>.json``: the targets' features, numbers only).
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from privgate.audit import PreparedAudit

PREPARED_FILE = "prepared.pkl"
STARTED_FILE = "started.json"
RUNS_DIR = "runs"
OUTCOMES_FORMAT = 1


def chunks(n_runs: int, size: int) -> list[tuple[int, int]]:
    """[first, end) run numbers of each chunk of at most ``size`` runs."""
    return [(i, min(i + size, n_runs)) for i in range(0, n_runs, size)]


def chunk_of(mapping_key: str) -> tuple[int, int]:
    """The (first, last) run numbers of a chunk's mapping key ``runs_<first>_<last>``."""
    _, first, last = mapping_key.split("_")
    return int(first), int(last)


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` atomically (a reader sees the whole file or none)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
    os.replace(tmp, path)


def write_prepared(folder: Path, prepared: "PreparedAudit", started: float) -> None:
    """The plan step's prepared audit and its start time, for the run and analyse steps."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / STARTED_FILE, json.dumps({"started": started}))
    atomic_write(folder / PREPARED_FILE, pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL))


def read_prepared(folder: Path) -> "tuple[PreparedAudit, float | None]":
    """The prepared audit and the start time the plan step wrote."""
    from privgate.errors import AuditError

    path = folder / PREPARED_FILE
    if not path.exists():
        raise AuditError(
            f"the audit's plan is not in {path} (did the plan step run? is the work_dir shared by every step?)"
        )
    prepared = pickle.loads(path.read_bytes())
    try:
        started = json.loads((folder / STARTED_FILE).read_text(encoding="utf-8"))["started"]
    except (OSError, ValueError, KeyError):
        started = None
    return prepared, started


def write_outcomes(folder: Path, key: str, outcomes: Sequence[Any]) -> Path:
    """One chunk's run outcomes as JSON (the targets' features: numbers only)."""
    out = folder / RUNS_DIR
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{key}.json"
    atomic_write(
        path, json.dumps({"format": OUTCOMES_FORMAT, "outcomes": [o.to_dict() for o in outcomes]}, allow_nan=True)
    )
    return path


def read_outcomes(folder: Path) -> list[Any]:
    """Every chunk's outcomes in run order (analyse_runs names the runs that are missing)."""
    from privgate.audit import RunOutcome

    found = []
    for path in sorted((folder / RUNS_DIR).glob("*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        found.extend(RunOutcome.from_dict(d) for d in payload["outcomes"])
    return sorted(found, key=lambda o: o.run)


__all__ = ["atomic_write", "chunk_of", "chunks", "read_outcomes", "read_prepared", "write_outcomes", "write_prepared"]
