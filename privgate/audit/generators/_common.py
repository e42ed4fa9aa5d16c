"""What every generator adapter shares: the public domain, the training frame a library sees, and
the release converted back to the training columns' types.

A differentially private generator may only read the *private* data through its noisy
mechanisms; the domain (each categorical column's levels, each numeric column's bounds) must be
public. An adapter given a ``domain`` therefore

* clips numeric values to the column's public bounds (a clipped record is a record of the public
  domain, so the library's guarantee holds for it), and
* leaves out the records holding a categorical level the public domain does not list (with
  add/remove neighbours, training without such a record is a neighbouring data set: what the
  library releases does not depend on it at all).

Given no domain, an adapter reads it from the training data — every level seen, the observed
minimum and maximum — which is what Annamalai, Ganev and De Cristofaro ("What do you want from
theory alone? Experimenting with Tight Auditing of Differentially Private Synthetic Data
Generation", USENIX Security 2024) found in DP generator implementations: the domain then
discloses rare levels and extreme values of the private records, and no ε holds.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import polars as pl

from ...errors import ParameterError, UnsupportedDtypeError
from ...io import load_frame

NUMERIC = "numeric"
CATEGORICAL = "categorical"
BOOLEAN_LEVELS = ("false", "true")


@dataclass(frozen=True)
class ColumnDomain:
    """One column's domain: numeric bounds ``(low, high)`` or the categorical ``levels`` (as
    strings, the form the libraries see), and the training dtype to give the release back."""

    name: str
    kind: str
    dtype: pl.DataType
    low: float | None = None
    high: float | None = None
    levels: tuple[str, ...] = ()

    @property
    def integer(self) -> bool:
        return self.dtype.is_integer()

    @property
    def boolean(self) -> bool:
        return isinstance(self.dtype, pl.Boolean)


def check_seed(seed: Any) -> int:
    """``seed`` as a non-negative int below 2**32 (what NumPy's legacy seeding takes)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**32:
        raise ParameterError(f"seed must be an integer in [0, 2**32); got a {type(seed).__name__}")
    return int(seed)


def check_rows(n_rows: Any) -> int:
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or int(n_rows) < 1:
        raise ParameterError("n_rows must be a positive integer")
    return int(n_rows)


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a positive finite number") from None
    if not np.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a positive finite number; got {value!r}")
    return value


def _column_kind(name: str, dtype: pl.DataType) -> str:
    if isinstance(dtype, pl.Boolean) or isinstance(dtype, (pl.String, pl.Categorical, pl.Enum)):
        return CATEGORICAL
    if dtype.is_numeric() and not isinstance(dtype, pl.Decimal):
        return NUMERIC
    raise UnsupportedDtypeError(
        f"generator adapters take numeric, string, categorical and boolean columns; column "
        f"{name!r} has dtype {dtype.base_type()}"
    )


def _as_text(frame: pl.DataFrame, name: str) -> pl.Series:
    col = frame.get_column(name)
    if isinstance(col.dtype, pl.Boolean):
        return col.cast(pl.String).str.to_lowercase()
    return col.cast(pl.String)


def _public_levels(name: str, spec: Any, boolean: bool) -> tuple[str, ...]:
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, set, frozenset, np.ndarray, pl.Series)):
        raise ParameterError(f"domain[{name!r}]: a categorical column's domain is a list of its levels")
    levels = []
    for level in spec:
        if boolean:
            if not isinstance(level, (bool, np.bool_)):
                raise ParameterError(f"domain[{name!r}]: a boolean column's levels are True/False")
            levels.append("true" if level else "false")
        else:
            if not isinstance(level, str):
                raise ParameterError(f"domain[{name!r}]: a text column's levels are strings")
            levels.append(level)
    if not levels:
        raise ParameterError(f"domain[{name!r}] lists no level")
    if len(set(levels)) != len(levels):
        raise ParameterError(f"domain[{name!r}] lists a level twice")
    return tuple(sorted(levels))


def _public_bounds(name: str, spec: Any) -> tuple[float, float]:
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, np.ndarray)) or len(spec) != 2:
        raise ParameterError(f"domain[{name!r}]: a numeric column's domain is a pair (low, high)")
    try:
        low, high = float(spec[0]), float(spec[1])
    except (TypeError, ValueError):
        raise ParameterError(f"domain[{name!r}]: the bounds must be numbers") from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ParameterError(f"domain[{name!r}]: the bounds must be finite with low < high")
    return low, high


def resolve_domain(training: pl.DataFrame, domain: Mapping[str, Any] | None) -> list[ColumnDomain]:
    """The domain of every training column, in column order.

    ``domain`` maps each column to its public levels (a list of strings, or of True/False for a
    boolean column) or public bounds (``(low, high)`` for a numeric column); it must cover every
    column, since a column left out would take its domain from the private data. ``None`` reads
    the whole domain from ``training`` (sorted levels seen, observed minimum and maximum), which
    breaks any DP guarantee of the generator (see the module docstring)."""
    if domain is not None:
        if not isinstance(domain, Mapping):
            raise ParameterError("domain must be a mapping of column → levels or (low, high)")
        missing = [c for c in training.columns if c not in domain]
        if missing:
            raise ParameterError(
                f"domain covers {len(training.columns) - len(missing)} of the {len(training.columns)} "
                f"training columns; missing: {missing!r} (a column without a public domain would "
                "take it from the private data)"
            )
        extra = [c for c in domain if c not in training.columns]
        if extra:
            raise ParameterError(f"domain names columns the training frame does not have: {extra!r}")
    out = []
    for name, dtype in training.schema.items():
        kind = _column_kind(name, dtype)
        boolean = isinstance(dtype, pl.Boolean)
        if domain is not None:
            if kind == NUMERIC:
                low, high = _public_bounds(name, domain[name])
                out.append(ColumnDomain(name, kind, dtype, low=low, high=high))
            else:
                out.append(ColumnDomain(name, kind, dtype, levels=_public_levels(name, domain[name], boolean)))
            continue
        if kind == NUMERIC:
            col = training.get_column(name).cast(pl.Float64)
            if col.is_nan().any() or not col.is_finite().fill_null(True).all():
                raise ParameterError(f"column {name!r} holds NaN or infinite values")
            if col.null_count() == col.len():
                raise ParameterError(f"column {name!r} has no non-null value to read a domain from")
            low, high = float(col.min()), float(col.max())
            if low == high:  # a constant column: the libraries need a non-empty interval
                high = low + 1.0
            out.append(ColumnDomain(name, kind, dtype, low=low, high=high))
        else:
            seen = _as_text(training, name).drop_nulls().unique().sort().to_list()
            if not seen:
                raise ParameterError(f"column {name!r} has no non-null value to read a domain from")
            out.append(ColumnDomain(name, kind, dtype, levels=tuple(seen)))
    return out


def prepare_training(
    training: Any, columns: list[ColumnDomain] | None = None, domain: Mapping[str, Any] | None = None
) -> tuple[pl.DataFrame, list[ColumnDomain]]:
    """The training frame as the libraries see it — numerics Float64 clipped to their bounds,
    categoricals (booleans included) as text — without the records holding a level outside the
    domain, and the domain it was prepared for."""
    frame = load_frame(training, role="training")
    if frame.width == 0:
        raise ParameterError("training frame has no columns")
    if columns is None:
        columns = resolve_domain(frame, domain)
    exprs = []
    keep = pl.lit(True)
    for col in columns:
        if col.kind == NUMERIC:
            exprs.append(pl.col(col.name).cast(pl.Float64).clip(col.low, col.high))
        else:
            text = pl.col(col.name).cast(pl.String)
            if col.boolean:
                text = text.str.to_lowercase()
            exprs.append(text)
            keep = keep & (text.is_null() | text.is_in(list(col.levels)))
    prepared = frame.select(exprs).filter(keep)
    return prepared, columns


def restore_types(release: Any, columns: list[ColumnDomain], n_rows: int, library: str) -> pl.DataFrame:
    """A library's release as a Polars frame with the training columns, in training order and of
    the training dtypes' kinds: integers rounded back to the integer dtype, floats Float64 (or
    the training float dtype), text String, booleans Boolean."""
    frame = load_frame(release, role=f"{library} release")
    missing = [c.name for c in columns if c.name not in frame.columns]
    if missing:
        raise ParameterError(f"the {library} release lacks training columns {missing!r}")
    if frame.height != n_rows:
        raise ParameterError(f"the {library} release has {frame.height} rows; {n_rows} were asked for")
    exprs = []
    for col in columns:
        expr = pl.col(col.name)
        if col.kind == NUMERIC:
            expr = expr.cast(pl.Float64, strict=False)
            if col.integer:
                expr = expr.round(0).cast(col.dtype, strict=False)
            else:
                expr = expr.cast(col.dtype)
        elif col.boolean:
            expr = expr.cast(pl.String).str.to_lowercase() == "true"
        else:
            expr = expr.cast(pl.String)
        exprs.append(expr.alias(col.name))
    return frame.select(exprs)


@contextmanager
def global_seed(seed: int) -> Iterator[None]:
    """Seed Python's and NumPy's global generators for a library that draws from them, and
    restore both states afterwards (the caller's own draws are unchanged by the call)."""
    py_state = random.getstate()
    np_state = np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def missing_extra(library: str, extra: str) -> ImportError:
    return ImportError(f"this generator adapter needs {library}: pip install 'privgate[{extra}]'")


class Adapter:
    """What every adapter shares: a PUBLIC ``domain`` (or None: read from the training data, which
    breaks any DP claim), and the checked inputs of a call."""

    domain: dict | None = None
    epsilon: float | None = None

    @property
    def public_domain(self) -> bool:
        """Whether the domain is public (given), i.e. whether a DP claim can hold at all."""
        return self.domain is not None

    @property
    def domain_words(self) -> str:
        return "public" if self.public_domain else "from training data"

    def inputs(self, training: Any, n_rows: Any, seed: Any) -> tuple[pl.DataFrame, list[ColumnDomain], int, int]:
        """(training frame within the domain, its column domains, n_rows, seed), each checked."""
        n_rows = check_rows(n_rows)
        seed = check_seed(seed)
        frame, columns = prepare_training(training, domain=self.domain)
        if frame.height == 0:
            raise ParameterError("no training record lies in the domain")
        return frame, columns, n_rows, seed


class DPAdapter(Adapter):
    """An adapter whose library claims ε-DP (with a public domain)."""

    @property
    def claimed_epsilon(self) -> float | None:
        return self.epsilon


def check_threads(threads: Any) -> int:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ParameterError("threads must be a positive integer")
    return threads
