"""Loading inputs: Polars, pyarrow, pandas or a file path → one eager Polars DataFrame."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

import polars as pl
import pyarrow as pa

from .errors import InputLoadError

FrameLike = Union[pl.DataFrame, pl.LazyFrame, pa.Table, "pandas.DataFrame", str, Path]  # noqa: F821

SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc"}


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
                "types or holds Python objects; cast it to one dtype)"
            ) from None
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
    _refuse_empty_file(path, role)
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
        raise InputLoadError(
            f"{role}: cannot read the input to the end: {type(exc).__name__} "
            "(details withheld: they may quote the file's content)"
        ) from None


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
            f"{role}: unsupported file suffix {path.suffix!r} for {path}; expected one of {', '.join(sorted(SUFFIXES))}"
        )
    _refuse_empty_file(path, role)
    return kind


def _refuse_empty_file(path: Path, role: str) -> None:
    """An empty file (0 bytes) is called empty, not unreadable."""
    if path.stat().st_size == 0:
        raise InputLoadError(f"{role}: {path} is empty (0 bytes); expected a file with a header and records")


def header_is_names(data: Any) -> bool:
    """Whether the column names of input ``data`` are certainly names: True for a Parquet or
    Arrow file and for a frame or table in memory (their format keeps a schema apart from the
    records), False for a CSV file, whose header is its first line — a file without a header row
    would make a record its column names (so a column of the real data alone is then given by its
    position, never by its name)."""
    return not (isinstance(data, (str, Path)) and SUFFIXES.get(Path(data).suffix.lower()) == "csv")


def input_columns(data: Any) -> list[str] | None:
    """The column names of input ``data`` read cheaply — a frame's, a Parquet / Arrow file's
    schema, a CSV's first line — or None when they cannot be read (loading the input then says
    why)."""
    try:
        if isinstance(data, (pl.DataFrame, pl.LazyFrame)):
            return list(data.collect_schema().names())
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return [str(c) for c in data.schema.names]
        if isinstance(data, (str, Path)):
            path = Path(data)
            kind = SUFFIXES.get(path.suffix.lower())
            if not path.is_file() or path.stat().st_size == 0 or kind is None:
                return None
            if kind == "parquet":
                return list(pl.scan_parquet(path).collect_schema().names())
            if kind == "ipc":
                return list(pl.scan_ipc(path).collect_schema().names())
            return list(pl.read_csv(path, n_rows=0, infer_schema=False).columns)
        if type(data).__module__.startswith("pandas") and type(data).__name__ == "DataFrame":
            return [str(c) for c in data.columns]
    except Exception:  # noqa: BLE001 - the loader reports the input's problem
        return None
    return None


def column_difference(
    columns: dict[str, list[str]], names_certain: dict[str, bool], *, release: str = "synthetic"
) -> str | None:
    """Why the inputs' columns differ (``columns``: role → column names; the first role is the
    reference), or None when every role has the reference's columns. A column of the
    ``release`` is named; a column only in another input is named when that input's header is
    certainly names (``names_certain``, :func:`header_is_names`), else given by its position,
    counted from 1."""
    roles = list(columns)
    ref = roles[0]
    released = set(columns.get(release, ()))
    for role in roles[1:]:
        a, b = set(columns[ref]), set(columns[role])
        if a == b:
            continue
        parts = [
            f"only in {where}: {_named_or_placed(columns[where], only, released, names_certain[where])}"
            for where, only in ((ref, a - b), (role, b - a))
            if only
        ]
        return f"{ref} and {role} have different columns ({'; '.join(parts)})"
    return None


def _named_or_placed(order: list[str], only: set[str], released: set[str], certain: bool, limit: int = 10) -> str:
    """``only``'s columns by name (a release column, or any column of an input whose names are
    certain), the others by position counted from 1."""
    named = [c for c in order if c in only and (certain or c in released)]
    placed = [i + 1 for i, c in enumerate(order) if c in only and not (certain or c in released)]
    parts = (
        [", ".join(map(repr, named[:limit])) + (f" and {len(named) - limit} more" if len(named) > limit else "")]
        if named
        else []
    )
    if placed:
        parts.append(
            f"{len(placed)} column(s) not in the release at position(s) {_positions(placed, limit)} "
            "(counted from 1; not named: a CSV's first line may be a record)"
        )
    return "; ".join(parts)


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
                "`iconv -f latin1 -t utf-8`) or convert it to Parquet"
            )
        return InputLoadError(
            f"{role}: cannot read csv file {path}: {type(exc).__name__} "
            "(details withheld: they may quote the file's content)"
        )
    return InputLoadError(
        f"{role}: cannot read {path}: it is not a readable {_KIND_NAMES[kind]} file ({type(exc).__name__}); "
        f"expected a complete {_KIND_NAMES[kind]} file for the suffix {path.suffix!r}"
    )


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
# ... fewer on a wide file, so that about this many cells are compared (never fewer than
# HEADER_CHECK_MIN_ROWS rows)
HEADER_CHECK_CELLS = 400_000
HEADER_CHECK_MIN_ROWS = 50


def _check_csv_header(path: Path, role: str) -> None:
    """Refuse a CSV header that repeats a column name (Polars would rename the second
    ``age_duplicated_0`` and gate it as a column of its own), and a first line that is a record
    rather than a header (:func:`_refuse_record_header`): its cells would become column names and
    reach every output."""
    width = pl.read_csv(path, has_header=False, n_rows=1, infer_schema=False).width
    rows = max(HEADER_CHECK_MIN_ROWS, min(HEADER_CHECK_ROWS, HEADER_CHECK_CELLS // max(width, 1)))
    head = pl.read_csv(path, has_header=False, n_rows=rows + 1, infer_schema=False)
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
            "expected every column name once — rename or drop the repeated column(s)"
        )
    _refuse_record_header(head, path, role)


def _refuse_record_header(head: pl.DataFrame, path: Path, role: str) -> None:
    """Refuse a CSV whose first line cannot be confirmed as a header: a header row names
    columns, and a file without one would turn its first record into column names that reach
    every output. Each column's first cell is compared with the cells below it (the first
    ``HEADER_CHECK_ROWS``) and counts as a **value** or a **name**:

    - a column of numbers (≥ 90 % of its cells): a number is a value, anything else a name;
    - a cell equal to one of the column's cells is a value;
    - a column whose values recur (levels: at most half of its cells distinct, and at most 50
      levels or each seen 10 times on average): a cell that is none of them is a name;
    - any other column of strings (names, e-mails, identifiers): a cell of the same shape as one
      of them (letters, digits, spaces and punctuation in the same order, :func:`_shape`), or
      made of the same kinds of character as 5 % of them (hexadecimal identifiers: letters and
      digits), or holding every mark 80 % of them hold (:func:`_marks`: "@" and "." for e-mails,
      " " for full names), and of a length within half their shortest and twice their longest,
      is a value; else a name.

    The first line is a header only when more columns say name than value. A file of one line
    cannot show a header apart from a record (nothing to compare with) and is refused. The
    message gives column positions, never the cells."""
    if head.width == 0:
        return
    if head.height == 1:
        raise InputLoadError(
            f"{role}: {path} has a single line, which cannot be told apart from a record without a header "
            "(there are no rows below it to compare with); a CSV input needs a header row and records — "
            "or convert the file to Parquet"
        )
    if head.height == 0:
        return
    values, names = _header_evidence(head)
    if len(names) > len(values):
        return
    why = (
        f"the first cell of column(s) {_positions(values)} is like the values below it"
        if values
        else "no cell of it reads as a column name"
    )
    if names:
        why += f"; only column(s) {_positions(names)} look named"
    raise InputLoadError(
        f"{role}: the first line of {path} looks like a record, not a header ({why}); privgate reads the "
        "first line of a CSV file as the column names — add a header row naming the columns, or convert "
        "the file to Parquet"
    )


_NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"


def _shape(e: pl.Expr) -> pl.Expr:
    """A text's shape: each run of upper-case letters becomes ``A``, of other letters ``a``, of
    digits ``9``, of white space one space; punctuation is kept ("John Smith" → "Aa Aa",
    "j.doe@mail.com" → "a.a@a.a", "first_name" → "a_a")."""
    return (
        e.str.replace_all(r"\p{Lu}+", "A")
        .str.replace_all(r"[\p{L}--\p{Lu}]+", "a")
        .str.replace_all(r"\p{Nd}+", "9")
        .str.replace_all(r"\s+", " ")
    )


# the share of a column's values holding a mark for that mark to count as the column's (a first
# cell holding every such mark reads as a value)
MOST_VALUES = 0.8


def _char_set(e: pl.Expr) -> pl.Expr:
    """The distinct characters of a text, sorted (of a shape: its kinds of character)."""
    return e.str.split("").list.unique().list.sort().list.join("")


def _marks(e: pl.Expr) -> pl.Expr:
    """The set of marks a text uses: its characters other than letters and digits, each once,
    sorted ("j.doe@mail.com" → ".@", "John Smith" → " ", "first_name" → "_")."""
    return _char_set(e.str.replace_all(r"[\p{L}\p{N}]+", "").str.replace_all(r"\s", " "))


def _header_evidence(head: pl.DataFrame) -> tuple[list[int], list[int]]:
    """(positions of the columns whose first cell reads as a value, positions of those whose
    first cell reads as a name), 1-based (:func:`_refuse_record_header`). One long table and
    group-bys, no loop over cells; the shapes are computed only for the string columns whose
    first cell the cheaper tests leave undecided."""
    cols = head.columns
    long = (
        head.rename({c: str(j) for j, c in enumerate(cols)})
        .with_row_index("__row")
        .unpivot(index="__row", variable_name="__col", value_name="v")
    )
    first = long.filter(pl.col("__row") == 0).select("__col", pl.col("v").alias("f"))
    body = long.filter(pl.col("__row") > 0).drop_nulls("v").join(first.drop_nulls("f"), on="__col")
    stats = body.group_by("__col").agg(
        pl.len().alias("n"),
        pl.col("v").n_unique().alias("distinct"),
        pl.col("v").str.contains(_NUMBER).mean().alias("numeric"),
        (pl.col("v") == pl.col("f")).any().alias("equal"),
    )
    by_col = {r["__col"]: r for r in stats.iter_rows(named=True)}
    values, names, open_ = [], [], []
    for j, f in zip(first["__col"], first["f"]):
        r = by_col.get(j)
        pos = int(j) + 1
        if f is None or not f.strip():
            continue  # an empty first cell says nothing either way
        if r is None:  # nothing below it: a name over an empty column
            names.append(pos)
        elif r["numeric"] >= 0.9:
            (values if _is_number(f) else names).append(pos)
        elif r["equal"]:
            values.append(pos)
        elif 2 * r["distinct"] <= r["n"] and (r["distinct"] <= 50 or 10 * r["distinct"] <= r["n"]):
            names.append(pos)  # none of the levels that recur below it
        else:
            open_.append(j)
    for j, like in _string_likeness(body.filter(pl.col("__col").is_in(open_))).items():
        (values if like else names).append(int(j) + 1)
    return sorted(values), sorted(names)


def _string_likeness(body: pl.DataFrame) -> dict[str, bool]:
    """Per column of ``body`` (long: ``__col``, value ``v``, first cell ``f``): whether the first
    cell reads as one of the values (:func:`_refuse_record_header`, last case)."""
    if body.is_empty():
        return {}
    body = body.with_columns(
        _shape(pl.col("v")).alias("sv"),
        _shape(pl.col("f")).alias("sf"),
        _marks(pl.col("v")).alias("mv"),
        _marks(pl.col("f")).alias("mf"),
        pl.col("v").str.len_chars().alias("lv"),
        pl.col("f").str.len_chars().alias("lf"),
    )
    stats = body.group_by("__col").agg(
        pl.len().alias("n"),
        (pl.col("sv") == pl.col("sf")).any().alias("same_shape"),
        (_char_set(pl.col("sv")) == _char_set(pl.col("sf"))).mean().alias("same_classes"),
        pl.col("mf").first().alias("cell_marks"),
        ((2 * pl.col("lf") >= pl.col("lv").min()) & (pl.col("lf") <= 2 * pl.col("lv").max()))
        .first()
        .alias("in_length"),
    )
    # the marks most of a column's values hold ("@" and "." of e-mails, " " of full names)
    common = (
        body.select("__col", pl.col("mv").str.split("").alias("m"))
        .explode("m")
        .filter(pl.col("m").is_not_null() & (pl.col("m") != ""))
        .group_by("__col", "m")
        .len()
        .join(stats.select("__col", "n"), on="__col")
        .filter(pl.col("len") >= MOST_VALUES * pl.col("n"))
    )
    majority: dict[str, set[str]] = {}
    for j, m in common.select("__col", "m").iter_rows():
        majority.setdefault(j, set()).add(m)
    out = {}
    for r in stats.iter_rows(named=True):
        marks = majority.get(r["__col"], set())
        like = r["same_shape"] or r["same_classes"] >= 0.05 or (bool(marks) and marks <= set(r["cell_marks"] or ""))
        out[r["__col"]] = bool(like and r["in_length"])
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity")


def _positions(ps: list[int], limit: int = 5) -> str:
    text = ", ".join(str(p) for p in ps[:limit])
    return text + (f" and {len(ps) - limit} more" if len(ps) > limit else "")
