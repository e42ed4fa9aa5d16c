"""Exact matches between records — the copies and reused identifiers the re-identification
metrics count: equal rows (nulls equal, values normalised so numbers compare by value) and
identifier values one set shares with another. Plain Polars joins on frames or scans; the
evaluation context applies them to its frames (``copied_real_rows``, ``identifier_hits``) and a
sharded evaluation to each hash bucket of its partitions (:mod:`privgate.sharded.joins`)."""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["carries_real_identifier", "copied_rows"]


def carries_real_identifier(real: pl.DataFrame, other: pl.DataFrame, ids: list[str]) -> np.ndarray:
    """Per row of ``other``: whether in some column of ``ids`` it holds a value (not null) that
    some row of ``real`` holds."""
    hit = pl.lit(False)
    for c in ids:
        hit = hit | pl.col(c).is_in(real.get_column(c).drop_nulls().unique().implode()).fill_null(False)
    return other.select(hit.alias("hit"))["hit"].to_numpy().astype(bool)


def copied_rows(real: pl.LazyFrame, synthetic: pl.LazyFrame, cols: list[str]) -> np.ndarray:
    """Sorted ``__row`` of the ``real`` rows equal on every column (nulls equal; values are
    normalised, so numbers compare by value) to some ``synthetic`` row. Streamed in two steps so
    that a large release is never held whole: rows whose 64-bit row hash occurs in the release
    are candidates (only hashes are kept), then the candidates are compared exactly, column by
    column, with the release rows of the same hashes (a hash collision is never a match)."""
    h = pl.struct(cols).hash(seed=0).alias("__h")
    syn_hashes = synthetic.select(h).unique()
    cand = real.select("__row", h).join(syn_hashes, on="__h", how="semi").collect(engine="streaming")
    if cand.height == 0:
        return np.empty(0, dtype=np.int64)
    real_c = real.join(cand.lazy().select("__row"), on="__row", how="semi")
    syn_c = synthetic.with_columns(h).join(cand.lazy().select("__h").unique(), on="__h", how="semi").drop("__h")
    copied = real_c.join(syn_c, on=cols, how="semi", nulls_equal=True)
    return np.sort(copied.select("__row").collect(engine="streaming")["__row"].to_numpy())
