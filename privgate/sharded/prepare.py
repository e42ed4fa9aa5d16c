"""Everything a sharded evaluation settles before its first search, from the partitions alone:
the partitions listed (on the workers), the schema, the identifier columns, the encoding's fit,
the identifiability weights and whether the spaces are compact — as a local context would
settle them from the whole frames — and the local gate's value checks. Only footers, counts,
moments, levels and single columns' entropies reach the caller (:mod:`privgate.sharded.summary`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ..context_spaces import COMPACT_SPACES_ABOVE, coded_above
from ..errors import InputLoadError, PrivgateError
from ..schema import (
    CATEGORICAL,
    IDENTIFIER_DISTINCT_SHARE,
    IDENTIFIER_MIN_ROWS,
    Schema,
    check_same_columns,
    check_values_lazily,
    infer_schema,
    normalise_frame,
)
from ..spaces import column_entropy
from .encode import Inputs
from .joins import sharded_distinct
from .partitions import Partition, _where, list_partitions, read_partition
from .summary import merge_fit, partition_levels, summarise_partition

__all__ = ["check_values_task", "column_task", "prepare_inputs"]


def check_values_task(parts: Mapping[str, list[Partition]], schema: Schema) -> None:
    """On a worker: the value checks a local gate makes (:func:`privgate.schema.check_values_lazily`:
    no infinite or overflowing number, no real column of nulls only) on every role's files, one
    streamed aggregation per role; the same errors, naming the column and role, never a value."""
    frames = {r: pl.scan_parquet(list(dict.fromkeys(p.path for p in ps))) for r, ps in parts.items()}
    heights = {r: sum(p.rows for p in ps) for r, ps in parts.items()}
    try:
        check_values_lazily(frames, schema, heights)
    except PrivgateError:
        raise
    except Exception as exc:  # noqa: BLE001 - the text may quote content: type only
        raise InputLoadError(
            f"cannot read the {', '.join(parts)} files{_where()} to check their values ({type(exc).__name__})"
        ) from None


def column_task(parts: list[Partition], column: str, kind: str) -> float:
    """On one worker: one real column gathered from every real partition (a column, never a
    table) and its entropy (:func:`privgate.spaces.column_entropy`: its quantile bins need the
    whole column's order)."""
    series = pl.concat(
        [normalise_frame(read_partition(p, [column]), Schema({column: kind})).get_column(column) for p in parts]
    )
    return column_entropy(series, kind)


def prepare_inputs(
    client: Any, sources: Mapping[str, Any], *, user_schema: Mapping[str, str] | None = None, entropies: bool = False
) -> tuple[Inputs, dict]:
    """(the evaluation's :class:`Inputs`, the report's column handling) for these inputs (role →
    a Parquet file, folder, glob or list of files), everything read on the cluster's workers."""
    listed = {
        role: client.submit(list_partitions, src, role, pure=False) for role, src in sources.items() if src is not None
    }
    found = {role: fut.result() for role, fut in listed.items()}
    parts = {role: ps for role, (ps, _) in found.items()}
    shapes = {role: shape for role, (_, shape) in found.items()}
    check_same_columns(shapes)
    order = shapes["real"].columns
    schema = infer_schema({r: f.select(order) for r, f in shapes.items()}, user_schema, check_values=False)
    # what infer_schema checks on loaded frames: without it an infinite value or a real column of
    # nulls only would be fitted (NaN or zero moments) and gated where a local gate refuses it
    client.submit(check_values_task, parts, schema, pure=False).result()
    kinds = schema.as_dict()
    summaries = {
        role: client.gather([client.submit(summarise_partition, p, kinds, pure=False) for p in ps])
        for role, ps in parts.items()
    }
    n_real = sum(p.rows for p in parts["real"])
    ids = _identifiers(client, parts["real"], schema, summaries["real"], n_real)
    if len(ids) == len(schema.columns):
        ids = []
    encoded = schema.subset([c for c in schema.columns if c not in ids])
    cats = encoded.categorical
    levels = client.gather(
        [client.submit(partition_levels, p, kinds, cats, pure=False) for ps in parts.values() for p in ps]
    )
    fit = merge_fit(summaries["real"], levels, encoded)
    coded = {c: len(fit.levels[c]) for c in cats if len(fit.levels[c]) > coded_above()}
    weights = None
    ent_values = None
    if entropies:
        futs = {c: client.submit(column_task, parts["real"], c, encoded.kind(c), pure=False) for c in encoded.columns}
        ent_values = {c: float(f.result()) for c, f in futs.items()}
        weights = {c: (1.0 / h if h > 0 else 0.0) for c, h in ent_values.items()}
    heights = {r: sum(p.rows for p in ps) for r, ps in parts.items()}
    inputs = Inputs(
        parts=parts,
        schema=encoded,
        fit=fit,
        coded_above=coded_above(),
        compact=max(heights.values()) > COMPACT_SPACES_ABOVE,
        weights=weights,
        identifiers=ids,
    )
    return inputs, {"coded": coded, "entropies": ent_values, "shapes": shapes}


def _identifiers(
    client: Any, real_parts: list[Partition], schema: Schema, summaries: list[dict], n_real: int
) -> list[str]:
    """The identifier columns (:func:`privgate.schema.identifier_columns`' rule): a categorical
    column distinct in 99.9 % of the real rows. Rows repeating a value inside a partition repeat
    it in the whole data, so only a column with few such rows can be one; its distinct count is
    then counted exactly, bucket by bucket on the workers (:func:`~.joins.sharded_distinct`)."""
    if n_real < IDENTIFIER_MIN_ROWS:
        return []
    need = IDENTIFIER_DISTINCT_SHARE * n_real
    out = []
    for col in schema.categorical:
        upper = sum(s["distinct"][col] for s in summaries)
        if upper < need:
            continue
        if sharded_distinct(client, real_parts, col, CATEGORICAL) >= need:
            out.append(col)
    return out
