"""A partition's records as rows of an encoded space, on the worker that reads it.

:class:`Inputs` is everything a worker needs besides its partition: every role's partitions,
the schema (identifier columns already left out), the encoding's fit merged over the partitions
and the identifiability weights. :func:`encode_rows` reads one partition, keeps the rows asked
for (global positions) and encodes them with :func:`privgate.spaces.mixed_space` and that fit:
each row equal to the whole-frame encoding's row, to the fit's rounding. In a label-free view
(:func:`read_rows`), a partition's records are read with its numeric columns mapped to the
reference's scale (:class:`MappedColumns`: that partition's values, computed once and held on the
cluster, a dependency of the task that reads it), their levels recoded and disguised records given their
sources' levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ..schema import Schema, normalise_frame
from ..spaces import SpaceFit, mixed_space
from .partitions import Partition, read_partition

__all__ = [
    "SPACES",
    "Inputs",
    "MappedColumns",
    "encode_rows",
    "read_rows",
    "recoded",
    "space_weights",
    "with_mapped",
]

#: the encoded spaces a sharded evaluation searches (kind, argument)
SPACES = (("mixed", None), ("identifiability", None))


@dataclass(frozen=True)
class Inputs:
    """What every task reads: partitions by role, the schema of the encoded columns, the fit,
    the identifiability weights (None until measured), the level count above which a column is
    coded and the matrices' dtype."""

    parts: Mapping[str, list[Partition]]
    schema: Schema
    fit: SpaceFit
    coded_above: int
    compact: bool = False
    weights: Mapping[str, float] | None = None
    identifiers: list[str] = field(default_factory=list)
    #: per role, per categorical column, level → code: the label-free view's recoding applied to
    #: every partition as it is read (:func:`privgate.label_free.recode`); None: records as they are
    codes: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None
    #: per role, records replaced in the label-free view: ``__row`` (sorted role positions) and the
    #: categorical levels they take (their sources', recoded); None: none
    sources: Mapping[str, pl.DataFrame] | None = None
    #: per role, numeric columns replaced in the label-free view (a numeric map back to the
    #: reference's scale): where each partition's replaced columns are held on the cluster; None: none
    mapped: Mapping[str, MappedColumns] | None = None

    def layout(self, space: tuple) -> tuple[list[tuple[int, float]], list[tuple[int, int]]]:
        """(coded columns, categorical slices) of ``space``: encoded from no record (none for a
        projection, :func:`encode_rows`)."""
        if not isinstance(space, tuple):
            return [], []

        empty = pl.DataFrame(
            {c: pl.Series([], dtype=pl.Float64 if k == "numeric" else pl.String) for c, k in self.schema.kinds.items()}
        )
        sp = mixed_space(
            {"x": empty}, self.schema, weights=space_weights(self, space), coded_above=self.coded_above, fit=self.fit
        )
        return list(sp.coded_columns), list(sp.categorical_slices or [])


@dataclass(frozen=True)
class MappedColumns:
    """A role's numeric columns in the label-free view, computed once per partition and held on
    the cluster: per partition (by its first role position) the key of the result {column:
    float64 values of the partition's rows, NaN for null}
    (:func:`privgate.sharded.label_free_tasks.snap_finish_task`). The caller holds the results'
    futures (:attr:`privgate.sharded.search.ShardedSearch.mapped`) as long as the view is read,
    and every task that reads such a partition takes that partition's future as a dependency
    (``mapped=``): the scheduler brings its values to the task's worker, or computes them again
    when the worker holding them was lost."""

    keys: Mapping[int, Any]


def with_mapped(frame: pl.DataFrame, values: Mapping[str, np.ndarray], rows: np.ndarray | None) -> pl.DataFrame:
    """``frame`` (normalised) with its columns in ``values`` replaced by those values at partition
    rows ``rows`` (None: every row), normalised as :func:`privgate.schema.normalise_frame` does
    (NaN a null, −0.0 as 0.0)."""
    cols = []
    for c, v in values.items():
        if c in frame.columns:
            v = v if rows is None else v[rows]
            cols.append(pl.Series(c, v + 0.0, dtype=pl.Float64).fill_nan(None))
    return frame.with_columns(cols) if cols else frame


def space_weights(inputs: Inputs, space: tuple) -> dict[str, float] | None:
    """The per-column weights of ``space`` (identifiability: 1/H, 0 when H = 0)."""
    if space[0] == "mixed":
        return None
    if space[0] != "identifiability" or inputs.weights is None:
        raise ValueError(f"no sharded encoding of the space {space!r}")
    return dict(inputs.weights)


def recoded(
    frame: pl.DataFrame,
    codes: Mapping | None,
    role: str,
    ids: np.ndarray | None = None,
    sources: Mapping | None = None,
) -> pl.DataFrame:
    """``frame`` (normalised records of ``role`` at role positions ``ids``) with its levels
    recoded by ``codes[role]``, and the records of ``sources[role]`` given their levels."""
    if codes and codes.get(role):
        from ..label_free import recode

        frame = recode(frame, {c: dict(m) for c, m in codes[role].items() if c in frame.columns})
    src = (sources or {}).get(role)
    if src is None or ids is None:
        return frame
    rows = src.get_column("__row").to_numpy()
    inside = np.isin(rows, ids)
    if not inside.any():
        return frame
    pos = np.searchsorted(ids, rows[inside])
    cols = [c for c in src.columns if c != "__row" and c in frame.columns]
    return frame.with_columns([frame.get_column(c).scatter(pos, src.get_column(c).filter(inside)) for c in cols])


def read_rows(
    inputs: Inputs, part: Partition, keep: np.ndarray | None = None, mapped: Mapping[str, np.ndarray] | None = None
) -> tuple[pl.DataFrame, np.ndarray]:
    """(normalised frame, global row positions) of ``part``'s records: all of them, or those whose
    global positions are in the sorted array ``keep`` — in the label-free view when the inputs
    carry one (numeric columns mapped, :func:`with_mapped`, by ``mapped``: the partition's mapped
    columns, which the task took as a dependency; levels recoded, :func:`recoded`)."""
    frame = read_partition(part, inputs.schema.columns)
    ids = np.arange(part.start, part.stop, dtype=np.int64)
    if keep is not None:
        ids = keep[(keep >= part.start) & (keep < part.stop)]
        frame = frame[ids - part.start]
    frame = normalise_frame(frame, inputs.schema)
    if (inputs.mapped or {}).get(part.role) is not None:
        if mapped is None:  # fail closed: the view's values, never the partition's as they are
            raise RuntimeError(
                f"the label-free view's mapped columns of the {part.role} partition at record {part.start} "
                "were not given to the task that reads it"
            )
        frame = with_mapped(frame, mapped, None if keep is None else ids - part.start)
    return recoded(frame, inputs.codes, part.role, ids, inputs.sources), ids


def encode_rows(
    inputs: Inputs,
    space: Any,
    part: Partition,
    keep: np.ndarray | None = None,
    mapped: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(matrix, global row positions) of ``part``'s records in ``space``: all of them, or those
    whose global positions are in the sorted array ``keep``. ``space``: a mixed space's key, or a
    projection fitted on the caller (an object whose ``encode(frame)`` gives the frame's
    coordinates: the FAMD space, :class:`privgate.sharded.famd.FamdProjection`); ``mapped``: as
    :func:`read_rows`."""
    frame, ids = read_rows(inputs, part, keep, mapped)
    if not isinstance(space, tuple):
        return space.encode(frame), ids
    sp = mixed_space(
        {"x": frame},
        inputs.schema,
        weights=space_weights(inputs, space),
        dtype=np.float32 if inputs.compact else np.float64,
        coded_above=inputs.coded_above,
        fit=inputs.fit,
    )
    return sp.matrices["x"], ids
