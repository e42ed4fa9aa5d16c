"""The partitions of a sharded input: which files and Parquet row groups hold a role's records,
where each starts in the role's row order, and reading one of them.

A role's input is a Parquet file, a folder of Parquet files (its ``*.parquet`` files in sorted
name order, subfolders included), a glob pattern or a list of files. Its records are those of
the files in that order, each file's row groups in order: partition ``i`` is one row group and
holds the records ``start .. start + rows`` of the role. Only the files' footers are read to list
them (on a worker: the paths must be reachable there, not here); reading a partition reads its
row group alone. Errors name the file and row group — and the worker, whose paths they are —
never a value.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputLoadError

__all__ = ["Partition", "list_files", "list_partitions", "read_partition", "stack_starts"]


@dataclass(frozen=True)
class Partition:
    """One row group of one file of a role: its file, row group number, first record's position
    in the role, record count and first record's position in its file."""

    role: str
    path: str
    row_group: int
    start: int
    rows: int
    offset: int = 0

    @property
    def stop(self) -> int:
        return self.start + self.rows

    def name(self) -> str:
        """How errors name it: file name and row group (no directory: it may say whose data)."""
        return f"{self.role} partition {Path(self.path).name}#row-group-{self.row_group}"


def _where() -> str:
    """Where a path was looked up: " on worker <address>" inside a Dask worker (a path one worker
    cannot reach another may), else " here"."""
    try:
        from distributed import get_worker

        return f" on worker {get_worker().address}"
    except Exception:  # noqa: BLE001 - not on a worker, or no distributed
        return " here"


def list_files(source: Any, role: str) -> list[str]:
    """The files of ``role``'s input, in record order: a Parquet file, a folder (its ``*.parquet``
    files, sorted by relative path), a glob pattern (sorted) or a list of those."""
    if isinstance(source, (list, tuple)):
        out: list[str] = []
        for item in source:
            out.extend(list_files(item, role))
        return out
    if not isinstance(source, (str, Path)):
        raise InputLoadError(
            f"{role}: a sharded input is a Parquet file, a folder of them, a glob or a list of "
            f"files; got a {type(source).__name__}"
        )
    text = str(source)
    path = Path(text)
    if path.is_dir():
        files = sorted(path.rglob("*.parquet"), key=lambda p: p.relative_to(path).as_posix())
        if not files:
            raise InputLoadError(f"{role}: the folder {path.name!r} holds no .parquet file{_where()}")
        return [str(f) for f in files]
    if any(ch in text for ch in "*?["):
        files = sorted(glob.glob(text, recursive=True))
        if not files:
            raise InputLoadError(f"{role}: no file matches the pattern {Path(text).name!r}{_where()}")
        return files
    if not path.is_file():
        raise InputLoadError(f"{role}: no such file {path.name!r}{_where()}")
    return [text]


def list_partitions(source: Any, role: str) -> tuple[list[Partition], pl.DataFrame]:
    """(partitions in record order, an empty frame with the columns and dtypes) of ``role``'s
    input, from the files' footers. Files whose columns differ are refused naming the file."""
    import pyarrow.parquet as pq

    parts: list[Partition] = []
    shape: pl.DataFrame | None = None
    start = 0
    for f in list_files(source, role):
        try:
            meta = pq.ParquetFile(f)
            schema = pl.DataFrame(schema=pl.from_arrow(meta.schema_arrow.empty_table()).schema)
        except Exception as exc:  # noqa: BLE001 - parser errors may quote content: type only
            raise InputLoadError(
                f"{role}: cannot read the Parquet footer of {Path(f).name!r}{_where()} ({type(exc).__name__})"
            ) from None
        if shape is None:
            shape = schema
        elif schema.schema != shape.schema:
            raise InputLoadError(
                f"{role}: the file {Path(f).name!r} has other columns or dtypes than the first file of this input"
            )
        md = meta.metadata
        offset = 0
        for g in range(md.num_row_groups):
            n = int(md.row_group(g).num_rows)
            if n:
                parts.append(Partition(role, f, g, start, n, offset))
                start += n
                offset += n
    if shape is None or not parts:
        raise InputLoadError(f"{role}: the input holds no record")
    return parts, shape


def read_partition(part: Partition, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """The records of one partition (only ``columns`` when given), read by Polars straight into
    its own buffers (a slice of the file's scan: only that row group is read; through Arrow the
    peak was twice as high)."""
    try:
        scan = pl.scan_parquet(part.path)
        if columns:
            scan = scan.select(list(columns))
        frame = scan.slice(part.offset, part.rows).collect()
    except Exception as exc:  # noqa: BLE001 - the text may quote content: type only
        raise InputLoadError(f"cannot read {part.name()}{_where()} ({type(exc).__name__})") from None
    if not isinstance(frame, pl.DataFrame) or frame.height != part.rows:
        raise InputLoadError(f"{part.name()} changed since it was listed: {part.rows} records expected{_where()}")
    return frame


def stack_starts(parts: Sequence[Partition]) -> list[int]:
    """Each partition's first record position, and the role's record count last."""
    return [p.start for p in parts] + [parts[-1].stop if parts else 0]
