"""What the commands that list the history (``privgate history``, ``privgate audits``) share:
finding the database without creating one, and a frame printed as CSV or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

_SQLITE = "sqlite:///"


def existing_history_url(history: str | None, command: str) -> str | None:
    """The history URL of ``--history``, or None — after telling stderr — when it names a SQLite
    file that is not there (a listing reads the history; it never creates an empty one)."""
    from ..history import resolve_url

    url = resolve_url(history)
    if url.startswith(_SQLITE) and not Path(url[len(_SQLITE) :]).exists():
        print(f"privgate {command}: no history database at {url[len(_SQLITE) :]}", file=sys.stderr)
        return None
    return url


def print_records(frame: pl.DataFrame, fmt: str) -> None:
    """Print every column of ``frame`` as CSV (``fmt="csv"``) or as a JSON list of records."""
    if fmt == "csv":
        sys.stdout.write(frame.write_csv())
    else:
        print(json.dumps(frame.to_dicts(), indent=2, allow_nan=False, default=str))
