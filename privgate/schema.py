"""Column kinds and input validation (docs/inputs.md).

Every column is ``numeric`` (integer, float, date/datetime/duration as epoch seconds) or
``categorical`` (string, categorical, enum, boolean). A user schema always wins; inference
reports what it decided in :attr:`Schema.inferred`.

Which dtypes may meet in one column across the real, synthetic and holdout frames is defined
once, here: :func:`dtype_family` names a dtype's family and :data:`COMPATIBLE_FAMILIES` lists the
pairs of different families that compare (docs/inputs.md shows the table). Anything else is
refused before any work — a Boolean column against "1"/"0" strings would otherwise compare as
"true" vs "1" and an exact copy would go unseen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import polars as pl

from .errors import (
    AllNullColumnError,
    CodebookMismatchError,
    EmptyInputError,
    IncompatibleDtypeError,
    NonFiniteValueError,
    ParameterError,
    SchemaMismatchError,
    UnsupportedDtypeError,
)

NUMERIC = "numeric"
CATEGORICAL = "categorical"
KINDS = (NUMERIC, CATEGORICAL)


def dtype_name(dtype: pl.DataType) -> str:
    """A dtype as it may appear in messages, fingerprints and reports. ``str(pl.Enum(...))``
    lists every category label — level labels of the real data, rare ones included — so an Enum
    is named with its category count only (a nested dtype holding an Enum by its outer type)."""
    if isinstance(dtype, pl.Enum):
        return f"Enum({dtype.categories.len()} categories)"
    text = str(dtype)
    return str(dtype.base_type()) if "Enum(" in text else text


def dtype_kind(dtype: pl.DataType) -> str | None:
    """The kind a Polars dtype maps to, or None when privgate cannot use it (an all-null column
    is categorical here and rejected later with a clearer error)."""
    family = dtype_family(dtype)
    return None if family is None else _FAMILY_KIND[family]


# dtype families: what a column holds, finer than its kind
NUMBER, DECIMAL, BOOLEAN, STRING, CATEGORY, DATETIME, DURATION, TIME, NULL = (
    "number",
    "decimal",
    "boolean",
    "string",
    "categorical",
    "datetime",
    "duration",
    "time",
    "null",
)
FAMILIES = (NUMBER, DECIMAL, BOOLEAN, STRING, CATEGORY, DATETIME, DURATION, TIME)
# pairs of different families whose values compare (same family always does; NULL — an all-null
# column — meets anything): integers/floats with decimals as numbers, strings with
# categoricals/enums as text. Everything else is refused.
COMPATIBLE_FAMILIES: frozenset[frozenset[str]] = frozenset(
    {
        frozenset({NUMBER, DECIMAL}),
        frozenset({STRING, CATEGORY}),
    }
)
_FAMILY_KIND = {
    NUMBER: NUMERIC,
    DECIMAL: NUMERIC,
    DATETIME: NUMERIC,
    DURATION: NUMERIC,
    TIME: NUMERIC,
    BOOLEAN: CATEGORICAL,
    STRING: CATEGORICAL,
    CATEGORY: CATEGORICAL,
    NULL: CATEGORICAL,
}
# families a column declared numeric may have (a user schema cannot make text numeric)
_DECLARABLE_NUMERIC = {NUMBER, DECIMAL, DATETIME, DURATION, TIME, NULL}


def dtype_family(dtype: pl.DataType) -> str | None:
    """The family of a Polars dtype (see :data:`FAMILIES`), or None when privgate cannot use it."""
    if isinstance(dtype, pl.Decimal):
        return DECIMAL
    if isinstance(dtype, pl.Boolean):
        return BOOLEAN
    if dtype.is_numeric():
        return NUMBER
    if isinstance(dtype, (pl.Date, pl.Datetime)):
        return DATETIME
    if isinstance(dtype, pl.Duration):
        return DURATION
    if isinstance(dtype, pl.Time):
        return TIME
    if isinstance(dtype, pl.String):
        return STRING
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return CATEGORY
    if isinstance(dtype, pl.Null):
        return NULL
    return None


def families_compatible(a: str, b: str) -> bool:
    """Whether a column of family ``a`` in one frame compares with family ``b`` in another."""
    return a == b or NULL in (a, b) or frozenset({a, b}) in COMPATIBLE_FAMILIES


def _time_zone(dtype: pl.DataType) -> str | None:
    return getattr(dtype, "time_zone", None) if isinstance(dtype, pl.Datetime) else None


def check_compatible_dtypes(
    col: str, frames: Mapping[str, pl.DataFrame], schemas: Mapping[str, Mapping[str, pl.DataType]] | None = None
) -> None:
    """Refuse a column whose dtypes in the frames do not compare (see :data:`COMPATIBLE_FAMILIES`),
    naming the column, every frame's dtype and what was expected. ``schemas``: the frames'
    schemas as dicts, when the caller checks many columns (Polars builds ``frame.schema`` anew on
    every access: per column, that would be quadratic in the width)."""
    schemas = schemas or {role: dict(f.schema) for role, f in frames.items()}
    fams = {role: dtype_family(schemas[role][col]) for role in frames}
    roles = list(fams)
    if len(set(fams.values())) == 1 and fams[roles[0]] != DATETIME:
        return  # one family everywhere: nothing to compare (the common case, checked cheaply)
    desc = ", ".join(f"{r}: {dtype_name(schemas[r][col])}" for r in roles)
    for i, a in enumerate(roles):
        for b in roles[i + 1 :]:
            fa, fb = fams[a], fams[b]
            if not families_compatible(fa, fb):
                raise IncompatibleDtypeError(
                    f"column {col!r} has incompatible dtypes ({desc}): a {fa} column in {a} cannot be "
                    f"compared with a {fb} column in {b} (values would never match); expected the "
                    f"same kind of column in every frame — cast {b} to {dtype_name(schemas[a][col])}"
                )
            if fa == fb == DATETIME:
                za, zb = _time_zone(schemas[a][col]), _time_zone(schemas[b][col])
                if (za is None) != (zb is None):
                    raise IncompatibleDtypeError(
                        f"column {col!r} has incompatible dtypes ({desc}): a datetime with a time zone "
                        f"cannot be compared with one without (expected both time-zone aware or both "
                        f"naive)"
                    )


# numbers larger than this in magnitude are refused: squared distances and sums of them would
# overflow float64 (1e308) and turn into inf or NaN inside a metric
MAX_MAGNITUDE = 1e100


def check_finite(col: str, frames: Mapping[str, pl.DataFrame]) -> None:
    """Refuse ±inf in a numeric column: distances and ranges would be infinite or NaN. NaN is
    read as missing; infinity has no such reading, so the input is refused, naming the column,
    the frame and how many cells (never which values). Numbers above ``MAX_MAGNITUDE`` in
    magnitude are refused likewise (their squares overflow)."""
    for role, frame in frames.items():
        s = frame.get_column(col)
        if s.dtype.is_float():
            n = int(s.is_infinite().sum())
            if n:
                raise NonFiniteValueError(
                    f"column {col!r} of {role} has {n} infinite value(s) (+inf or -inf); expected "
                    "finite numbers: replace them with null (missing) or a finite value"
                )
        if s.dtype.is_numeric() and not s.dtype.is_integer():
            _refuse_huge(col, role, int(s.cast(pl.Float64, strict=False).to_frame("v").select(_huge("v")).item()))


def _huge(col: str) -> pl.Expr:
    """How many values of ``col`` are above ``MAX_MAGNITUDE`` in magnitude (NaN, which Polars
    orders above every number, is not)."""
    x = pl.col(col).cast(pl.Float64, strict=False)
    return ((x.abs() > MAX_MAGNITUDE) & x.is_not_nan()).sum()


def _refuse_huge(col: str, role: str, n: int) -> None:
    if n:
        raise NonFiniteValueError(
            f"column {col!r} of {role} has {n} value(s) larger than {MAX_MAGNITUDE:g} in magnitude; distances "
            "over them would overflow: rescale the column (e.g. to other units or a logarithm) or replace "
            "those values with null"
        )


def _all_missing(s: pl.Series) -> bool:
    """Whether a column holds no value: only nulls, or (floats) only nulls and NaN."""
    missing = s.null_count() + (int(s.is_nan().sum()) if s.dtype.is_float() else 0)
    return missing == len(s)


_ALL_NULL = "has only nulls (NaN counts as null)"


def check_values_lazily(frames: Mapping[str, pl.LazyFrame], schema: "Schema", heights: Mapping[str, int]) -> None:
    """The value checks of :func:`infer_schema` (``check_finite``, an all-null real column) on
    frames not loaded: one streamed aggregation per frame, the same errors in the same order."""
    roles = list(frames)
    infinite: dict[str, dict[str, int]] = {}
    for role, lf in frames.items():
        dtypes = lf.collect_schema()
        exprs = [pl.col(c).is_infinite().sum().alias(c) for c in schema.numeric if dtypes[c].is_float()]
        exprs += [
            _huge(c).alias(f"\x00huge{c}")
            for c in schema.numeric
            if dtypes[c].is_numeric() and not dtypes[c].is_integer()
        ]
        infinite[role] = lf.select(exprs).collect(engine="streaming").row(0, named=True) if exprs else {}
    for col in schema.numeric if schema is not None else ():
        for role in roles:
            n = int(infinite[role].get(col, 0) or 0)
            if n:
                raise NonFiniteValueError(
                    f"column {col!r} of {role} has {n} infinite value(s) (+inf or -inf); expected "
                    "finite numbers: replace them with null (missing) or a finite value"
                )
            _refuse_huge(col, role, int(infinite[role].get(f"\x00huge{col}", 0) or 0))
    real = frames[roles[0]]
    rdtypes = real.collect_schema()
    nulls = (
        real.select(
            [
                (pl.col(c).is_null() | pl.col(c).is_nan()).sum().alias(c)
                if rdtypes[c].is_float()
                else pl.col(c).null_count().alias(c)
                for c in rdtypes.names()
            ]
        )
        .collect(engine="streaming")
        .row(0, named=True)
    )
    for col in schema.columns:
        if nulls[col] == heights[roles[0]]:
            raise AllNullColumnError(
                f"column {col!r} of {roles[0]} {_ALL_NULL} ({heights[roles[0]]} rows); drop it or fill it"
            )


@dataclass(frozen=True)
class Schema:
    """Decided kind of every column, in the real frame's column order."""

    kinds: dict[str, str]
    inferred: dict[str, bool] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return list(self.kinds)

    @property
    def numeric(self) -> list[str]:
        return [c for c, k in self.kinds.items() if k == NUMERIC]

    @property
    def categorical(self) -> list[str]:
        return [c for c, k in self.kinds.items() if k == CATEGORICAL]

    def kind(self, column: str) -> str:
        return self.kinds[column]

    def as_dict(self) -> dict[str, str]:
        return dict(self.kinds)

    def subset(self, columns: list[str]) -> "Schema":
        return Schema({c: self.kinds[c] for c in columns}, {c: self.inferred.get(c, True) for c in columns})


def check_not_empty(frame: pl.DataFrame, role: str) -> None:
    if frame.width == 0:
        raise EmptyInputError(f"{role}: the frame has no columns")
    if frame.height == 0:
        raise EmptyInputError(f"{role}: the frame has 0 rows; at least 1 is needed")


def check_same_columns(frames: Mapping[str, pl.DataFrame]) -> None:
    """All frames must have the same column names (order irrelevant, duplicates rejected)."""
    items = list(frames.items())
    ref_role, ref = items[0]
    ref_cols = set(ref.columns)
    released = next((frames[r] for r in ("synthetic", "release") if r in frames), None)
    for role, frame in items[1:]:
        # without a release among the frames, every name may be shown (none is compared with one)
        release = set(released.columns) if released is not None else set(ref.columns) | set(frame.columns)
        cols = set(frame.columns)
        if cols != ref_cols:
            parts = []
            for where, f, only in ((ref_role, ref, ref_cols - cols), (role, frame, cols - ref_cols)):
                if only:
                    parts.append(f"only in {where}: {_column_names(f, only, release)}")
            raise SchemaMismatchError(f"{ref_role} and {role} have different columns ({'; '.join(parts)})")


def _column_names(frame: pl.DataFrame, names: set[str], release: set[str]) -> str:
    """Columns named only when they are columns of the release; a column of the real data (or
    holdout) alone is given by its position (a file without a header row makes a record its
    column names)."""
    shown = sorted(n for n in names if n in release)
    hidden = [i + 1 for i, c in enumerate(frame.columns) if c in names and c not in release]
    parts = [repr(shown)] if shown else []
    if hidden:
        more = f" and {len(hidden) - 10} more" if len(hidden) > 10 else ""
        parts.append(
            f"{len(hidden)} column(s) not in the release, at position(s) "
            f"{', '.join(map(str, hidden[:10]))}{more} (counted from 1)"
        )
    return "; ".join(parts)


def infer_schema(
    frames: Mapping[str, pl.DataFrame],
    user_schema: Mapping[str, str] | None = None,
    *,
    check_values: bool = True,
) -> Schema:
    """Decide each column's kind and validate dtypes across frames.

    ``frames`` maps a role ("real", "synthetic", "holdout") to its frame; the first is the real
    data and fixes the column order. ``user_schema`` maps column → "numeric" | "categorical" and
    overrides inference (a string column declared numeric must hold numbers). ``check_values``
    False skips the checks that read values (infinite numbers, an all-null real column): the
    caller runs :func:`check_values_lazily` on frames it has not loaded.
    """
    user_schema = dict(user_schema or {})
    roles = list(frames)
    real = frames[roles[0]]
    _check_user_schema(user_schema, real)
    kinds: dict[str, str] = {}
    inferred: dict[str, bool] = {}
    schemas = {role: dict(f.schema) for role, f in frames.items()}
    for col in real.columns:
        per_role = _column_families(col, frames, schemas)
        check_compatible_dtypes(col, frames, schemas)
        if col in user_schema:
            kinds[col] = user_schema[col]
            inferred[col] = False
            if user_schema[col] == NUMERIC:
                _check_declared_numeric(col, per_role, schemas)
        else:
            kinds[col] = _FAMILY_KIND[next(iter(per_role.values()))] if per_role else CATEGORICAL
            inferred[col] = True
        if kinds[col] == NUMERIC and check_values:
            check_finite(col, frames)
    if check_values:
        _check_no_all_null_column(real, roles[0])
    return Schema(kinds, inferred)


def _check_user_schema(user_schema: Mapping[str, str], real: pl.DataFrame) -> None:
    """A user schema names columns of the data, each with a known kind."""
    unknown = sorted(set(user_schema) - set(real.columns))
    if unknown:
        raise ParameterError(f"schema names columns not in the data: {unknown}")
    bad_kinds = {c: k for c, k in user_schema.items() if k not in KINDS}
    if bad_kinds:
        raise ParameterError(f"schema kinds must be 'numeric' or 'categorical'; got {bad_kinds}")


def _column_families(
    col: str, frames: Mapping[str, pl.DataFrame], schemas: Mapping[str, Mapping[str, pl.DataType]]
) -> dict[str, str]:
    """Role → dtype family of column ``col``, for the roles where it is not all-null by dtype;
    an unsupported dtype in any role is refused."""
    per_role: dict[str, str] = {}
    for role in frames:
        dtype = schemas[role][col]
        family = dtype_family(dtype)
        if family is None:
            raise UnsupportedDtypeError(
                f"column {col!r} in {role} has unsupported dtype {dtype_name(dtype)}; privgate compares "
                "numeric (int, float, decimal, date, datetime, duration, time) and categorical "
                "(string, categorical, enum, boolean) columns only"
            )
        if family != NULL:
            per_role[role] = family
    return per_role


def _check_declared_numeric(
    col: str, per_role: Mapping[str, str], schemas: Mapping[str, Mapping[str, pl.DataType]]
) -> None:
    """A column declared numeric must be a number, decimal or temporal column in every role."""
    for role, family in per_role.items():
        if family not in _DECLARABLE_NUMERIC:
            dt = dtype_name(schemas[role][col])
            raise IncompatibleDtypeError(
                f"column {col!r} is declared numeric but is {dt} in {role}; expected a "
                "number, decimal or temporal column"
            )


def _check_no_all_null_column(real: pl.DataFrame, role: str) -> None:
    """Every column of the real data holds at least one value."""
    for col in real.columns:
        if _all_missing(real.get_column(col)):
            raise AllNullColumnError(f"column {col!r} of {role} {_ALL_NULL} ({real.height} rows); drop it or fill it")


# a one-to-one relabelling is flagged when the release's unknown levels hold at least this share of
# its non-null cells in the column (an honest release draws its levels from the real data: ≈ 0; a
# renaming of levels holding less leaves most copied cells matching, which the metrics see)
RELABEL_MIN_SHARE = 0.5
# ... and hold at least this many cells (a frequency profile of a handful of cells matches by chance)
RELABEL_MIN_CELLS = 10


def _folded() -> pl.Expr:
    """The ``level`` column compared without case and with runs of whitespace folded."""
    return pl.col("level").str.replace_all(r"\s+", " ").str.strip_chars().str.to_lowercase()


#: categorical columns whose levels are counted from one read of the frame: one query plan per
#: column made a 10,000-column table hold 20,000 plans, each carrying the whole schema (memory
#: grew with the square of the width: 1.2 GB at 2,000 columns, killed at 10,000)
LEVEL_COUNT_BATCH = 64


def _level_counts(frame: pl.LazyFrame, cols: Sequence[str]) -> list[pl.DataFrame]:
    """Per column of ``cols``: its non-null levels (``level``) and their counts (``n``), reading
    ``LEVEL_COUNT_BATCH`` columns of ``frame`` at a time."""
    out: list[pl.DataFrame] = []
    for start in range(0, len(cols), LEVEL_COUNT_BATCH):
        batch = frame.select(cols[start : start + LEVEL_COUNT_BATCH]).collect()
        out.extend(
            batch.get_column(c).drop_nulls().value_counts(sort=False, name="n").rename({c: "level"})
            for c in batch.columns
        )
    return out


def check_codebooks(real: pl.LazyFrame, release: pl.LazyFrame, schema: "Schema", role: str = "synthetic") -> None:
    """Refuse a release whose categorical column uses a relabelling of the real data's
    categories — every metric would take the renamed levels for new ones, so a copy would pass.

    Flagged, naming the column only (never a level): (a) a release level absent from the real
    column that equals a real level up to case and whitespace; (b) a one-to-one renaming: the
    release's levels unknown to the real column hold ≥ ``RELABEL_MIN_SHARE`` of its cells (and at
    least ``RELABEL_MIN_CELLS``), at
    least as many real levels are absent from the release, and the sorted shares of the unknown
    levels agree within sampling error with those of as many of the most frequent absent real
    levels (a relabelled sample may miss rare ones). Identifier-like real columns (more than half
    their rows distinct) are left out of (b): a fresh identifier is not a relabelling. An honest
    release takes its levels from the real data and is not flagged. Both frames are
    normalised (categoricals as String)."""
    cols = schema.categorical
    if not cols:
        return
    counts = _level_counts(real, cols) + _level_counts(release, cols)
    k = len(cols)
    for j, col in enumerate(cols):
        r, s = counts[j], counts[k + j]
        if r.height == 0 or s.height == 0:
            continue
        new = s.filter(~pl.col("level").is_in(r.get_column("level").implode()))
        if new.height == 0:
            continue
        n_r, n_s = int(r["n"].sum()), int(s["n"].sum())
        cased = int(new.select(_folded().is_in(r.select(_folded()).to_series().implode())).to_series().sum())
        if cased:
            raise CodebookMismatchError(
                f"column {col!r} of {role}: {cased} of its categories are real categories spelled "
                "differently (case or whitespace), so no metric would match them; the release does not "
                "share the real data's codebook — write the categories exactly as in the real data"
            )
        absent = r.filter(~pl.col("level").is_in(s.get_column("level").implode()))
        share_new = float(new["n"].sum()) / n_s
        if (
            absent.height < new.height
            or share_new < RELABEL_MIN_SHARE
            or int(new["n"].sum()) < RELABEL_MIN_CELLS
            or r.height > max(2, n_r // 2)
        ):
            continue
        # a relabelled sample of the real rows may miss rare levels: the unknown levels against
        # as many of the most frequent absent ones
        p_new = np.sort(new["n"].to_numpy() / n_s)[::-1]
        p_abs = np.sort(absent["n"].to_numpy() / n_r)[::-1][: new.height]
        p = (p_new + p_abs) / 2
        tol = 0.02 + 4 * np.sqrt(p * (1 - p) * (1 / n_s + 1 / n_r))
        if np.all(np.abs(p_new - p_abs) <= tol):
            raise CodebookMismatchError(
                f"column {col!r} of {role}: {new.height} of its categories (holding {share_new:.0%} of its "
                f"values) are not in the real data, at least as many real categories are missing from it, and their "
                "frequencies match one to one — a relabelling of the real categories, under which no metric "
                "would match a copied record; the release does not share the real data's codebook — "
                "encode the categories as in the real data"
            )


def normalise_frame(frame: pl.DataFrame | pl.LazyFrame, schema: Schema) -> pl.DataFrame | pl.LazyFrame:
    """Reorder columns to the schema's order and cast to canonical dtypes: numerics → Float64
    (dates/datetimes as epoch seconds, UTC), categoricals → String (booleans as "true"/"false").
    A LazyFrame gives the same query, lazily."""
    exprs = []
    dtypes = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    for col, kind in schema.kinds.items():
        dtype = dtypes[col]
        e = pl.col(col)
        if kind == NUMERIC:
            if isinstance(dtype, pl.Datetime):
                if dtype.time_zone is not None:
                    e = e.dt.convert_time_zone("UTC")
                e = e.dt.epoch("us").cast(pl.Float64) / 1e6
            elif isinstance(dtype, pl.Date):
                e = e.cast(pl.Datetime("us")).dt.epoch("us").cast(pl.Float64) / 1e6
            elif isinstance(dtype, pl.Duration):
                e = e.dt.total_microseconds().cast(pl.Float64) / 1e6
            elif isinstance(dtype, pl.Time):
                e = e.cast(pl.Int64).cast(pl.Float64) / 1e9
            elif isinstance(dtype, (pl.String, pl.Categorical, pl.Enum)):
                e = e.cast(pl.String).cast(pl.Float64, strict=False)
            else:
                e = e.cast(pl.Float64)
            # NaN is treated as missing; + 0.0 folds -0.0 into 0.0 so exact matches compare by value
            e = pl.when(e.is_nan()).then(None).otherwise(e + 0.0)
        else:
            if isinstance(dtype, pl.Boolean):
                e = e.cast(pl.String)
            elif dtype.is_numeric():
                # a numeric column declared categorical: integers without ".0"
                if dtype.is_integer():
                    e = e.cast(pl.String)
                else:
                    e = (
                        pl.when(e == e.round(0))
                        .then(e.cast(pl.Int64, strict=False).cast(pl.String))
                        .otherwise(e.cast(pl.String))
                    )
            else:
                e = e.cast(pl.String)
        exprs.append(e.alias(col))
    return frame.select(exprs)


#: A categorical column is an identifier when its real values are distinct in at least this share
#: of the real rows (a record number, a patient id, an e-mail): one value per person, shared by no
#: other record — so it never brings two records nearer, and a release that carries one of its
#: values carries that person's identifier. Nearly all, not most: a 5-digit postcode drawn for
#: 1,500 records repeats in ~2 % of them (~37 pairs from 30,000 codes) and stays a quasi-identifier
#: compared as equal or not; an identifier with a data-entry duplicate or two is still one.
IDENTIFIER_DISTINCT_SHARE = 0.999
#: ... and the real data has at least this many rows (in a few rows, any column is distinct).
IDENTIFIER_MIN_ROWS = 100


def identifier_columns(real: pl.LazyFrame, schema: Schema, n_real: int) -> list[str]:
    """The categorical columns of ``schema`` whose real values (nulls not counted) are distinct in
    at least :data:`IDENTIFIER_DISTINCT_SHARE` of the ``n_real`` real rows (99.9 %), when there are at
    least :data:`IDENTIFIER_MIN_ROWS` (docs/inputs.md "Identifier columns"). One streamed
    aggregation; no value is returned or kept. Numeric columns are never identifiers here
    (a measurement is often distinct per record): declare an integer id categorical to have it
    treated as one."""
    cats = list(schema.categorical)
    if not cats or n_real < IDENTIFIER_MIN_ROWS:
        return []
    counts = real.select([pl.col(c).drop_nulls().n_unique() for c in cats]).collect(engine="streaming").row(0)
    return [c for c, k in zip(cats, counts) if k >= IDENTIFIER_DISTINCT_SHARE * n_real]
