"""Column kinds and input validation (METRICS.md §1 "Column types", §3 rule 14).

Every column is ``numeric`` (integer, float, date/datetime/duration as epoch seconds) or
``categorical`` (string, categorical, enum, boolean). A user schema always wins; inference
reports what it decided in :attr:`Schema.inferred`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import polars as pl

from .errors import (
    AllNullColumnError,
    EmptyInputError,
    IncompatibleDtypeError,
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
    """The kind a Polars dtype maps to, or None when privgate cannot use it."""
    if dtype.is_numeric():
        return NUMERIC
    if isinstance(dtype, (pl.Date, pl.Datetime, pl.Duration, pl.Time)):
        return NUMERIC
    if isinstance(dtype, (pl.String, pl.Categorical, pl.Enum, pl.Boolean)):
        return CATEGORICAL
    if isinstance(dtype, pl.Null):
        return CATEGORICAL  # an all-null column is rejected later with a clearer error
    return None


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
    for role, frame in items[1:]:
        cols = set(frame.columns)
        if cols != ref_cols:
            only_ref = sorted(ref_cols - cols)
            only_other = sorted(cols - ref_cols)
            parts = []
            if only_ref:
                parts.append(f"only in {ref_role}: {only_ref}")
            if only_other:
                parts.append(f"only in {role}: {only_other}")
            raise SchemaMismatchError(
                f"{ref_role} and {role} have different columns ({'; '.join(parts)})"
            )


def infer_schema(
    frames: Mapping[str, pl.DataFrame], user_schema: Mapping[str, str] | None = None
) -> Schema:
    """Decide each column's kind and validate dtypes across frames.

    ``frames`` maps a role ("real", "synthetic", "holdout") to its frame; the first is the real
    data and fixes the column order. ``user_schema`` maps column → "numeric" | "categorical" and
    overrides inference (a string column declared numeric must hold numbers).
    """
    user_schema = dict(user_schema or {})
    roles = list(frames)
    real = frames[roles[0]]
    unknown = sorted(set(user_schema) - set(real.columns))
    if unknown:
        raise ParameterError(f"schema names columns not in the data: {unknown}")
    bad_kinds = {c: k for c, k in user_schema.items() if k not in KINDS}
    if bad_kinds:
        raise ParameterError(f"schema kinds must be 'numeric' or 'categorical'; got {bad_kinds}")

    kinds: dict[str, str] = {}
    inferred: dict[str, bool] = {}
    for col in real.columns:
        per_role: dict[str, str] = {}
        for role, frame in frames.items():
            dtype = frame.schema[col]
            kind = dtype_kind(dtype)
            if kind is None:
                raise UnsupportedDtypeError(
                    f"column {col!r} in {role} has unsupported dtype {dtype_name(dtype)}; privgate compares "
                    "numeric (int, float, date, datetime) and categorical (string, categorical, "
                    "enum, boolean) columns only"
                )
            if not isinstance(dtype, pl.Null):
                per_role[role] = kind
        if col in user_schema:
            kinds[col] = user_schema[col]
            inferred[col] = False
            if user_schema[col] == NUMERIC:
                for role, kind in per_role.items():
                    if kind != NUMERIC:
                        dt = dtype_name(frames[role].schema[col])
                        raise IncompatibleDtypeError(
                            f"column {col!r} is declared numeric but is {dt} in {role}"
                        )
            continue
        distinct = set(per_role.values())
        if len(distinct) > 1:
            desc = ", ".join(f"{r}: {dtype_name(frames[r].schema[col])}" for r in frames)
            raise IncompatibleDtypeError(
                f"column {col!r} has incompatible dtypes ({desc}); numeric and text columns cannot "
                "be compared — cast one side or pass schema={...}"
            )
        kinds[col] = distinct.pop() if distinct else CATEGORICAL
        inferred[col] = True

    for col in real.columns:
        if real[col].null_count() == real.height:
            raise AllNullColumnError(
                f"column {col!r} of {roles[0]} has only nulls ({real.height} rows); drop it or fill it"
            )
    return Schema(kinds, inferred)


def normalise_frame(frame: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Reorder columns to the schema's order and cast to canonical dtypes: numerics → Float64
    (dates/datetimes as epoch seconds, UTC), categoricals → String (booleans as "true"/"false")."""
    exprs = []
    for col, kind in schema.kinds.items():
        dtype = frame.schema[col]
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
                    e = pl.when(e == e.round(0)).then(e.cast(pl.Int64, strict=False).cast(pl.String)).otherwise(e.cast(pl.String))
            else:
                e = e.cast(pl.String)
        exprs.append(e.alias(col))
    return frame.select(exprs)
