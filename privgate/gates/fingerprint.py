"""Fingerprints of gate inputs: schema, row count and a content hash — never the data.

The content hash is sha256 over Polars' per-row hashes (``DataFrame.hash_rows`` with two fixed
seeds) of the frame with its columns in sorted name order, prefixed by the column names and
dtypes. It identifies "the same data in the same row order" between runs made with the same
Polars version (recorded alongside); it cannot be inverted into records. A one-way hash of a
whole table does not reveal any record's values.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import polars as pl

from ..schema import dtype_name

HASH_ALGORITHM = "sha256(schema, polars.hash_rows(seed=0), polars.hash_rows(seed=1); columns sorted)"


def frame_fingerprint(frame: pl.DataFrame, *, source: Any = None) -> dict[str, Any]:
    """Schema (column → dtype), row and column counts, and the content hash of ``frame``."""
    cols = sorted(frame.columns)
    ordered = frame.select(cols) if cols else frame
    schema = dict(frame.schema)  # once: Polars builds frame.schema anew on every access
    h = hashlib.sha256()
    for c in cols:
        h.update(f"{c}\x1f{schema[c]}\x1e".encode("utf-8"))
    if frame.height and frame.width:
        for seed in (0, 1):  # two independent 64-bit row hashes
            h.update(ordered.hash_rows(seed=seed).to_numpy().tobytes())
    out: dict[str, Any] = {
        "rows": int(frame.height),
        "columns": int(frame.width),
        "schema": {c: dtype_name(schema[c]) for c in frame.columns},
        "content_sha256": h.hexdigest(),
    }
    if isinstance(source, (str, Path)):
        out["source"] = Path(source).name
    return out


def scan_fingerprint(scan: pl.LazyFrame, *, source: Any = None, batch_rows: int = 262_144) -> dict[str, Any]:
    """:func:`frame_fingerprint` of a file scan, read ``batch_rows`` rows at a time so the file
    is never whole in memory: the same digest (row hashes depend on the row alone; the seed-1
    hashes, 8 bytes a row, are kept until the seed-0 ones are in)."""
    schema = scan.collect_schema()
    cols = sorted(schema.names())
    h = hashlib.sha256()
    for c in cols:
        h.update(f"{c}\x1f{schema[c]}\x1e".encode("utf-8"))
    rows = int(scan.select(pl.len()).collect().item())
    second = []
    if rows and cols:
        ordered = scan.select(cols)
        for start in range(0, rows, batch_rows):
            part = ordered.slice(start, batch_rows).collect()
            h.update(part.hash_rows(seed=0).to_numpy().tobytes())
            second.append(part.hash_rows(seed=1).to_numpy().tobytes())
        for block in second:
            h.update(block)
    out: dict[str, Any] = {
        "rows": rows,
        "columns": len(schema),
        "schema": {c: dtype_name(schema[c]) for c in schema.names()},
        "content_sha256": h.hexdigest(),
    }
    if isinstance(source, (str, Path)):
        out["source"] = Path(source).name
    return out


def inputs_fingerprint(
    frames: dict[str, pl.DataFrame | pl.LazyFrame | None], sources: dict[str, Any]
) -> dict[str, Any]:
    """Fingerprint of every given input role plus the hash algorithm and Polars version (a
    LazyFrame — a file scan — is fingerprinted in batches, with the same digest)."""
    fp: dict[str, Any] = {"hash_algorithm": HASH_ALGORITHM, "polars_version": pl.__version__}
    for role, frame in frames.items():
        if isinstance(frame, pl.LazyFrame):
            fp[role] = scan_fingerprint(frame, source=sources.get(role))
        elif frame is not None:
            fp[role] = frame_fingerprint(frame, source=sources.get(role))
    release = frames.get("synthetic")
    if release is None and sources.get("synthetic") is None:
        return fp  # no release in this fingerprint: nothing to compare the names with
    names = set(release.collect_schema().names()) if release is not None else set()
    for role in ("real", "holdout"):
        if role in fp and isinstance(fp[role].get("schema"), dict):
            fp[role]["schema"] = _release_names_only(fp[role]["schema"], names)
    return fp


def _release_names_only(schema: dict[str, str], release: set[str]) -> dict[str, str]:
    """A real input's column → dtype map with the columns that are not columns of the release
    given by position (``"(column 3)"``): the history stores it, and the names of a file without
    a header row are a record. The content digest still covers the real names."""
    return {(c if c in release else f"(column {i + 1})"): d for i, (c, d) in enumerate(schema.items())}
