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


def scan_frame(data: Any, *, role: str = "input") -> pl.LazyFrame | None:
    """A lazy scan of ``data`` when it is a path to a Parquet or Arrow IPC file (read by column
    and streamed, so a metric that needs a few columns or a group-by never holds the whole file),
    else None (load it with :func:`load_frame`). The file is opened and its schema read here, so
    a missing or unreadable file fails now with :func:`load_frame`'s message. CSV files and
    in-memory inputs are not scanned: CSV parsing is validated as a whole by ``load_frame``."""
    if not isinstance(data, (str, Path)):
        return None
    path = Path(data)
    kind = SUFFIXES.get(path.suffix.lower())
    if kind not in ("parquet", "ipc") or not path.is_file():
        return None  # load_frame gives the specific error (missing, folder, suffix, CSV)
    try:
        lf = pl.scan_parquet(path) if kind == "parquet" else pl.scan_ipc(path)
        lf.collect_schema()
    except Exception as exc:  # noqa: BLE001 - parser errors carry file content; keep only the type
        raise _read_error(path, role, kind, exc) from None
    return lf


def collect_scan(lf: pl.LazyFrame, role: str) -> pl.DataFrame:
    """Collect a scan made by :func:`scan_frame` (streaming engine), naming ``role`` when the
    file cannot be read to the end."""
    try:
        return lf.collect(engine="streaming")
    except Exception as exc:  # noqa: BLE001 - keep only the type (the text may quote content)
        raise InputLoadError(f"{role}: cannot read the input to the end: {type(exc).__name__} "
                             "(details withheld: they may quote the file's content)") from None


def _from_arrow(table: pa.Table, role: str) -> pl.DataFrame:
    try:
        out = pl.from_arrow(table)
    except Exception as exc:  # noqa: BLE001 - conversion errors can quote values: type only
        raise InputLoadError(f"{role}: cannot convert Arrow table: {type(exc).__name__}") from None
    if isinstance(out, pl.Series):  # pragma: no cover - single column edge
        out = out.to_frame()
    return out


def input_kind(path: Path, role: str) -> str:
    """The kind of input file ``path`` is ("parquet", "csv", "arrow"); InputLoadError naming
    ``role`` for a missing file, a folder or an unknown suffix."""
    if not path.exists():
        raise InputLoadError(f"{role}: file not found: {path}")
    if path.is_dir():
        raise InputLoadError(f"{role}: {path} is a folder; expected a .parquet, .csv or .arrow file")
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputLoadError(
            f"{role}: unsupported file suffix {path.suffix!r} for {path}; expected one of "
            f"{', '.join(sorted(SUFFIXES))}"
        )
    return kind


def _read_path(path: Path, role: str) -> pl.DataFrame:
    kind = input_kind(path, role)
    try:
        if kind == "parquet":
            return pl.read_parquet(path)
        if kind == "ipc":
            return pl.read_ipc(path)
        _check_csv_header(path, role)
        return pl.read_csv(path, infer_schema_length=10000, null_values=[""], try_parse_dates=False)
    except InputLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - parser errors carry file content; keep only the type
        raise _read_error(path, role, kind, exc) from None


_KIND_NAMES = {"parquet": "Parquet", "ipc": "Arrow IPC (Feather)", "csv": "CSV"}


def _read_error(path: Path, role: str, kind: str, exc: Exception) -> InputLoadError:
    """A message naming the file and what is wrong with it, never its content: a CSV that is not
    UTF-8 says so (with the byte offset of the first invalid sequence); a Parquet or Arrow file
    that cannot be parsed is called not readable."""
    if kind == "csv":
        offset = _first_invalid_utf8(path)
        if offset is not None:
            return InputLoadError(
                f"{role}: {path} is not UTF-8 encoded text (first invalid byte at offset {offset}); "
                "privgate reads CSV files as UTF-8: re-save the file as UTF-8 (for example "
                "`iconv -f latin1 -t utf-8`) or convert it to Parquet")
        return InputLoadError(f"{role}: cannot read csv file {path}: {type(exc).__name__} "
                              "(details withheld: they may quote the file's content)")
    return InputLoadError(
        f"{role}: cannot read {path}: it is not a readable {_KIND_NAMES[kind]} file ({type(exc).__name__}); "
        f"expected a complete {_KIND_NAMES[kind]} file for the suffix {path.suffix!r}")


def _first_invalid_utf8(path: Path, chunk: int = 1 << 20) -> int | None:
    """Byte offset of the first invalid UTF-8 sequence of ``path`` (None when it decodes)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as err:
                return offset + max(0, err.start - len(decoder.getstate()[0]))
            if not block:
                return None
            offset += len(block)


# rows read below the header to confirm that it names columns rather than holding a record
HEADER_CHECK_ROWS = 2000


def _check_csv_header(path: Path, role: str) -> None:
    """Refuse a CSV header that repeats a column name (Polars would rename the second
    ``age_duplicated_0`` and gate it as a column of its own), and a first line that is a record
    rather than a header (:func:`_refuse_record_header`): its cells would become column names and
    reach every output."""
    head = pl.read_csv(path, has_header=False, n_rows=HEADER_CHECK_ROWS + 1, infer_schema=False)
    header = head.head(1)
    names = [str(v) for v in header.row(0)] if header.height else []
    first: dict[str, int] = {}
    repeated = []  # (position, position of the first column with that name), 1-based
    for i, n in enumerate(names, 1):
        if n in first:
            repeated.append((i, first[n]))
        else:
            first[n] = i
    if repeated:
        # positions, not names: in a file without a header the first line is a real record
        where = ", ".join(f"column {i} repeats the name of column {j}" for i, j in repeated)
        raise InputLoadError(
            f"{role}: the header of {path} repeats a column name ({where}); "
            "expected every column name once — rename or drop the repeated column(s)")
    _refuse_record_header(head, path, role)


def _refuse_record_header(head: pl.DataFrame, path: Path, role: str) -> None:
    """Refuse a CSV whose first line cannot be confirmed as a header: in more than half of the
    columns the first line's cell is a number while the cells below are numbers (≥ 90 % of the
    first ``HEADER_CHECK_ROWS``), or it equals a cell below it in that column. A header names
    columns; a line like the records under it is a record, and a file without a header row would
    otherwise turn its first record into column names. The message gives column positions,
    never the cells."""
    if head.height < 2 or head.width == 0:
        return
    body = head.slice(1)
    cols = head.columns
    first = head.row(0)
    number = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
    stats = body.select(
        [pl.col(c).str.contains(number).mean().alias(f"n{j}") for j, c in enumerate(cols)]
        + [pl.col(c).is_in([first[j]] if first[j] is not None else []).any().alias(f"e{j}")
           for j, c in enumerate(cols)]).row(0)
    k = len(cols)
    numeric = [j + 1 for j in range(k) if first[j] is not None and _is_number(first[j])
               and (stats[j] or 0.0) >= 0.9]
    equal = [j + 1 for j in range(k) if stats[k + j]]
    if 2 * len(set(numeric) | set(equal)) > k:  # most columns: one coincidence ("c" over a, b, c) is not enough
        why = []
        if numeric:
            why.append(f"the name of column(s) {_positions(numeric)} is a number like the values below it")
        if equal:
            why.append(f"the name of column(s) {_positions(equal)} is also one of that column's values")
        raise InputLoadError(
            f"{role}: the first line of {path} looks like a record, not a header ({'; '.join(why)}); "
            "privgate reads the first line of a CSV file as the column names — add a header row naming "
            "the columns, or convert the file to Parquet")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity")


def _positions(ps: list[int], limit: int = 5) -> str:
    text = ", ".join(str(p) for p in ps[:limit])
    return text + (f" and {len(ps) - limit} more" if len(ps) > limit else "")
