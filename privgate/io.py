"""Loading inputs: Polars, pyarrow, pandas or a file path → one eager Polars DataFrame."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

import polars as pl
import pyarrow as pa

from .errors import InputLoadError

FrameLike = Union[pl.DataFrame, pl.LazyFrame, pa.Table, "pandas.DataFrame", str, Path]  # noqa: F821

SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".arrow": "ipc",
            ".feather": "ipc", ".ipc": "ipc"}


def load_frame(data: Any, *, role: str = "input") -> pl.DataFrame:
    """Return ``data`` as an eager Polars DataFrame.

    Accepts a Polars DataFrame or LazyFrame, a pyarrow Table or RecordBatch, a pandas DataFrame,
    or a path (str / Path) to ``.parquet``, ``.csv`` or ``.arrow`` / ``.feather`` (Arrow IPC).
    ``role`` ("real", "synthetic", "holdout", ...) names the input in error messages.
    """
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, pa.Table):
        return _from_arrow(data, role)
    if isinstance(data, pa.RecordBatch):
        return _from_arrow(pa.Table.from_batches([data]), role)
    if isinstance(data, (str, Path)):
        return _read_path(Path(data), role)
    if type(data).__module__.startswith("pandas") and type(data).__name__ == "DataFrame":
        try:
            return pl.from_pandas(data)
        except Exception as exc:  # noqa: BLE001 - conversion errors quote cell values: type only
            raise InputLoadError(
                f"{role}: cannot convert pandas DataFrame: {type(exc).__name__} (a column mixes "
                "types or holds Python objects; cast it to one dtype)") from None
    raise InputLoadError(
        f"{role}: unsupported input type {type(data).__name__}; expected a Polars DataFrame or "
        "LazyFrame, a pyarrow Table, a pandas DataFrame, or a path to .parquet/.csv/.arrow/.feather"
    )


def _from_arrow(table: pa.Table, role: str) -> pl.DataFrame:
    try:
        out = pl.from_arrow(table)
    except Exception as exc:  # noqa: BLE001 - conversion errors can quote values: type only
        raise InputLoadError(f"{role}: cannot convert Arrow table: {type(exc).__name__}") from None
    if isinstance(out, pl.Series):  # pragma: no cover - single column edge
        out = out.to_frame()
    return out


def _read_path(path: Path, role: str) -> pl.DataFrame:
    if not path.exists():
        raise InputLoadError(f"{role}: file not found: {path}")
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputLoadError(
            f"{role}: unsupported file suffix {path.suffix!r} for {path}; expected one of "
            f"{', '.join(sorted(SUFFIXES))}"
        )
    try:
        if kind == "parquet":
            return pl.read_parquet(path)
        if kind == "ipc":
            return pl.read_ipc(path)
        return pl.read_csv(path, infer_schema_length=10000, null_values=[""], try_parse_dates=False)
    except Exception as exc:  # noqa: BLE001 - parser errors carry file content; keep only the type
        raise InputLoadError(
            f"{role}: cannot read {kind} file {path}: {type(exc).__name__}"
        ) from None
