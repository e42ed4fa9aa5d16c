"""Which records a generator audit targets: the most vulnerable real records and canaries.

- **Outliers** (Meeus, Guépin, Creţu, de Montjoye, "Achilles' Heels: Vulnerable Record
  Identification in Synthetic Data Publication", ESORICS 2023): the records of ``real`` whose
  mean distance to their 5 nearest other records of the population is largest, in privgate's
  mixed space (the one neighbour engine). Generators memorise and leak such records first.
- **Canaries** built to expose the implementation faults that published audits found
  (Annamalai, Ganev, De Cristofaro, "What do you want from theory alone? Experimenting with
  Tight Auditing of Differentially Private Synthetic Data Generation", USENIX Security 2024):
  ``canary_range`` puts every plain numeric column beyond every observed value (a generator that
  takes its bounds from the private data shows values there only when the canary was trained on);
  ``canary_level`` gives every string column a level never seen in the population (a generator
  that takes its domain from the private data can emit that level only when the canary was in).
  Every other column of a canary holds the population's most frequent value.
- A frame of the user's own targets (kind ``user``).

Targets never leave the audit as values: results name them by id, kind and row position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ..errors import InputError, ParameterError
from ..io import load_frame
from ..neighbours import knn, knn_rows
from ..schema import NUMERIC, Schema, check_same_columns, normalise_frame
from ..spaces import mixed_space
from .seeds import rng

#: neighbours averaged for the outlier score (Meeus et al. use the 5 closest records)
OUTLIER_NEIGHBOURS = 5
#: above this many real records, outlier scores are computed for a seeded sample of candidates
OUTLIER_CANDIDATES = 20_000
#: the canary's numeric value: max + RANGE_FACTOR · (max − min) + 1
RANGE_FACTOR = 3.0
CANARY_LEVEL = "privgate-canary-{j}"
DEFAULT_TARGETS = 10
KINDS = ("outlier", "canary_range", "canary_level", "user")


@dataclass
class Targets:
    """The audit's targets: ``frame`` in the population's own dtypes (what the generator is
    trained on), one row per target, with its kind, its row position in ``real`` (outliers) and
    its outlier score (mean distance to its nearest population records)."""

    frame: pl.DataFrame
    kinds: list[str]
    source_rows: list[int | None]
    scores: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        return self.frame.height

    @property
    def ids(self) -> list[str]:
        return [f"t{i}" for i in range(len(self))]

    def subset(self, keep: list[int]) -> "Targets":
        return Targets(self.frame[keep], [self.kinds[i] for i in keep], [self.source_rows[i] for i in keep],
                       [self.scores[i] for i in keep])

    def describe(self) -> list[dict[str, Any]]:
        """Id, kind, row position and score of each target: no values."""
        return [{"target": t, "kind": k, "real_row": r, "outlier_score": s}
                for t, k, r, s in zip(self.ids, self.kinds, self.source_rows, self.scores)]


def select_targets(real: pl.DataFrame, pool: pl.DataFrame, schema: Schema, targets: Any = "auto", *,
                   n_targets: int = DEFAULT_TARGETS, canaries: bool = True, pool_is_real: bool = True,
                   seed: int = 0) -> Targets:
    """The targets of an audit. ``targets="auto"``: ``n_targets`` in all — the canaries (at most
    one of each kind the columns allow, when ``canaries``) and the most outlying records of
    ``real`` for the rest; a frame (any input privgate accepts): those records (kind ``user``).
    ``pool`` is the population the training sets are drawn from (``real`` itself when
    ``pool_is_real``)."""
    if not isinstance(targets, str):
        return _user_targets(targets, pool)
    if targets != "auto":
        raise ParameterError(f"targets must be 'auto' or a frame of target records; got {targets!r}")
    if isinstance(n_targets, bool) or not isinstance(n_targets, (int, np.integer)) or n_targets < 1:
        raise ParameterError(f"n_targets must be a positive integer; got {n_targets!r}")
    made: list[tuple[str, pl.DataFrame]] = []
    if canaries:
        for kind, frame in (("canary_range", range_canary(pool, schema)), ("canary_level", level_canary(pool, schema))):
            if frame is not None and len(made) < n_targets:
                made.append((kind, frame))
    n_outliers = min(int(n_targets) - len(made), real.height)
    rows, scores = outlier_rows(real, pool, schema, n_outliers, pool_is_real=pool_is_real, seed=seed)
    frames = [real[rows.tolist()]] + [f for _, f in made]
    frame = pl.concat([f.cast(dict(pool.schema)) for f in frames], how="vertical") if frames else pool.head(0)
    return Targets(frame, ["outlier"] * len(rows) + [k for k, _ in made], [int(r) for r in rows] + [None] * len(made),
                   [float(s) for s in scores] + [None] * len(made))


def outlier_rows(real: pl.DataFrame, pool: pl.DataFrame, schema: Schema, n: int, *, pool_is_real: bool,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` rows of ``real`` with the largest mean distance to their
    ``OUTLIER_NEIGHBOURS`` nearest other population records (mixed space standardised on the
    population), most outlying first (ties: lowest row), with those mean distances."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    norm_pool = normalise_frame(pool, schema)
    if real.height > OUTLIER_CANDIDATES:
        candidates = np.sort(rng(seed, "targets").choice(real.height, OUTLIER_CANDIDATES, replace=False))
    else:
        candidates = np.arange(real.height)
    if pool_is_real:
        space = mixed_space({"real": norm_pool}, schema)
        k = min(OUTLIER_NEIGHBOURS, pool.height - 1)
        if k < 1:
            return candidates[:n], np.zeros(min(n, candidates.size))
        nb = knn_rows(space.real, candidates, k, categorical_slices=space.categorical_slices)
    else:
        frames = {"real": norm_pool, "candidates": normalise_frame(real, schema)}
        space = mixed_space(frames, schema, rows={"candidates": candidates})
        k = min(OUTLIER_NEIGHBOURS, pool.height)
        nb = knn(space["candidates"], space.real, k, categorical_slices=space.categorical_slices)
    score = nb.dist.mean(axis=1)
    order = np.lexsort((candidates, -score))[:n]
    return candidates[order], score[order]


def _mode_row(pool: pl.DataFrame) -> pl.DataFrame:
    """One record holding every column's most frequent value (ties: the smallest)."""
    return pl.DataFrame({c: pool[c].drop_nulls().mode().sort()[:1] if pool[c].null_count() < pool.height
                         else pool[c][:1] for c in pool.columns}).cast(dict(pool.schema))


def range_canary(pool: pl.DataFrame, schema: Schema) -> pl.DataFrame | None:
    """A record whose every integer and float column lies beyond every observed value; None when
    the data has no such column."""
    row = _mode_row(pool)
    changed = False
    for col in schema.numeric:
        dtype = pool.schema[col]
        if not (dtype.is_integer() or dtype.is_float()):
            continue
        lo, hi = pool[col].min(), pool[col].max()
        if lo is None or hi is None:
            continue
        value = float(hi) + RANGE_FACTOR * (float(hi) - float(lo)) + 1.0
        if dtype.is_integer():
            value = float(np.floor(value))
            top = _integer_max(dtype)
            if value > top:
                value = float(top)
            if value <= float(hi):
                continue
        if not np.isfinite(value):
            continue
        row = row.with_columns(pl.lit(value).cast(dtype).alias(col))
        changed = True
    return row if changed else None


def level_canary(pool: pl.DataFrame, schema: Schema) -> pl.DataFrame | None:
    """A record whose every string (or Categorical) column holds a level never seen in the
    population; None when the data has no such column."""
    row = _mode_row(pool)
    changed = False
    for j, col in enumerate(pool.columns):
        dtype = pool.schema[col]
        if schema.kind(col) == NUMERIC or not isinstance(dtype, (pl.String, pl.Categorical)):
            continue
        level = CANARY_LEVEL.format(j=j)
        seen = set(pool[col].cast(pl.String).drop_nulls().unique().to_list())
        while level in seen:
            level += "-x"
        row = row.with_columns(pl.lit(level).cast(dtype).alias(col))
        changed = True
    return row if changed else None


def _integer_max(dtype: pl.DataType) -> int:
    bits = {pl.Int8: 7, pl.Int16: 15, pl.Int32: 31, pl.Int64: 63, pl.UInt8: 8, pl.UInt16: 16, pl.UInt32: 32,
            pl.UInt64: 64}
    for t, b in bits.items():
        if dtype == t:
            return 2**b - 1
    return 2**63 - 1


def _user_targets(targets: Any, pool: pl.DataFrame) -> Targets:
    frame = load_frame(targets, role="targets")
    if frame.height == 0:
        raise ParameterError("targets: the frame has 0 rows; give at least one target record")
    check_same_columns({"population": pool, "targets": frame})
    frame = frame.select(pool.columns)
    for col, dtype in pool.schema.items():
        try:
            frame = frame.with_columns(pl.col(col).cast(dtype))
        except Exception:  # noqa: BLE001 - a failed cast quotes the value: name the column only
            raise InputError(f"targets: column {col!r} cannot be cast to the population's dtype {dtype}") from None
    n = frame.height
    return Targets(frame, ["user"] * n, [None] * n, [None] * n)
