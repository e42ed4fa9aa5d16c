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
- **Cell canaries** (``canary_cell``), the worst case for a generator that publishes counts over a
  public domain (a histogram, a graphical model's marginals): records whose every value lies
  well inside the population's domain (a category level it shows, a numeric value at one of its
  quartiles) but whose combination the population lacks — no population record shares their
  categories with numeric values within one quantile bin of theirs. Alone in their cell, they
  move its count from (about) 0 to 1, the largest change one record can make, and a threshold
  on that count is the likelihood-ratio test for Laplace-noised counts (Annamalai, Ganev &
  De Cristofaro, USENIX Security 2024, audit with such worst-case records and backgrounds).
  Several cell canaries lie in distinct regions, so each one's count answers for it alone.
- A frame of the user's own targets (kind ``user``).

Targets never leave the audit as values: results name them by id, kind and row position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import polars as pl

from ..binning import assign_bins, quantile_edges
from ..errors import InputError, ParameterError
from ..io import load_frame
from ..neighbours import knn, knn_rows
from ..schema import NUMERIC, Schema, check_same_columns, normalise_frame
from ..spaces import mixed_space
from .cells import domain_cell_canaries, mode_row
from .defaults import DEFAULT_TARGETS
from .seeds import rng

#: neighbours averaged for the outlier score (Meeus et al. use the 5 closest records)
OUTLIER_NEIGHBOURS = 5
#: above this many real records, outlier scores are computed for a seeded sample of candidates
OUTLIER_CANDIDATES = 20_000
#: the canary's numeric value: max + RANGE_FACTOR · (max − min) + 1
RANGE_FACTOR = 3.0
CANARY_LEVEL = "privgate-canary-{j}"
KINDS = ("outlier", "canary_range", "canary_level", "canary_cell", "user")
#: numeric values a cell canary may take: these population quantiles (inside any public domain)
CELL_QUANTILES = (0.25, 0.5, 0.75)
#: level canaries of the many-canary design (the rest are cell canaries): enough to prove a
#: domain read from the data at the first look (32 × 3 test runs of guesses)
LEVEL_CANARIES = 32
#: candidate value combinations scored when searching for empty cells
CELL_CANDIDATES = 4096
#: population rows the empty-cell search counts (a seeded sample of a larger population)
CELL_POOL_ROWS = 50_000


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
        return Targets(
            self.frame[keep],
            [self.kinds[i] for i in keep],
            [self.source_rows[i] for i in keep],
            [self.scores[i] for i in keep],
        )

    def describe(self) -> list[dict[str, Any]]:
        """Id, kind, row position and score of each target: no values."""
        return [
            {"target": t, "kind": k, "real_row": r, "outlier_score": s}
            for t, k, r, s in zip(self.ids, self.kinds, self.source_rows, self.scores)
        ]


def select_targets(
    real: pl.DataFrame,
    pool: pl.DataFrame,
    schema: Schema,
    targets: Any = "auto",
    *,
    n_targets: int = DEFAULT_TARGETS,
    canaries: bool = True,
    pool_is_real: bool = True,
    seed: int = 0,
) -> Targets:
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
        n_cells = (int(n_targets) - len(made)) // 2
        cells = cell_canaries(pool, schema, n_cells, seed=seed)
        made.extend(("canary_cell", cells[i : i + 1]) for i in range(cells.height))
    n_outliers = min(int(n_targets) - len(made), real.height)
    rows, scores = outlier_rows(real, pool, schema, n_outliers, pool_is_real=pool_is_real, seed=seed)
    frames = [real[rows.tolist()]] + [f for _, f in made]
    frame = pl.concat([f.cast(dict(pool.schema)) for f in frames], how="vertical") if frames else pool.head(0)
    return Targets(
        frame,
        ["outlier"] * len(rows) + [k for k, _ in made],
        [int(r) for r in rows] + [None] * len(made),
        [float(s) for s in scores] + [None] * len(made),
    )


def outlier_rows(
    real: pl.DataFrame, pool: pl.DataFrame, schema: Schema, n: int, *, pool_is_real: bool, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
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


def range_canary(pool: pl.DataFrame, schema: Schema) -> pl.DataFrame | None:
    """A record whose every integer and float column lies beyond every observed value; None when
    the data has no such column."""
    row = mode_row(pool)
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
    row = mode_row(pool)
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


def level_canaries(pool: pl.DataFrame, schema: Schema, n: int) -> pl.DataFrame:
    """``n`` records each with ONE string column at a level of its own that the population never
    shows (the columns taken in turn), every other column at the population's most frequent
    value: a generator that reads its domain from the private data can emit canary j's level
    only when canary j was trained on, whatever the other canaries do. No rows when the data has
    no string column."""
    cols = [
        c for c in pool.columns if schema.kind(c) != NUMERIC and isinstance(pool.schema[c], (pl.String, pl.Categorical))
    ]
    if n <= 0 or not cols:
        return pool.head(0)
    mode = mode_row(pool)
    seen = {c: set(pool[c].cast(pl.String).drop_nulls().unique().to_list()) for c in cols}
    rows = []
    for j in range(n):
        col = cols[j % len(cols)]
        level = CANARY_LEVEL.format(j=f"{pool.columns.index(col)}-{j}")
        while level in seen[col]:
            level += "-x"
        rows.append(mode.with_columns(pl.lit(level).cast(pool.schema[col]).alias(col)))
    return pl.concat(rows, how="vertical")


def canary_targets(
    pool: pl.DataFrame, schema: Schema, n: int, *, seed: int = 0, domain: Mapping[str, Any] | None = None
) -> Targets:
    """The many-canary design's ``n`` crafted canaries: cell canaries — in distinct cells of the
    generator's published ``domain`` when it states one (:mod:`privgate.audit.cells`), else in
    distinct sparse regions of the population — for all but ``min(n // 2, LEVEL_CANARIES)``
    (all when the data has no string column), and single-column level canaries for the rest
    (more of them when fewer distinct cells exist)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ParameterError(f"n_targets must be an integer ≥ 2 in the canaries design; got {n!r}")
    has_text = level_canaries(pool, schema, 1).height > 0
    n_levels = min(n // 2, LEVEL_CANARIES) if has_text else 0
    if domain is not None:
        cells = domain_cell_canaries(pool, schema, domain, n - n_levels, seed=seed)
    else:
        cells = cell_canaries(pool, schema, n - n_levels, seed=seed)
    levels = level_canaries(pool, schema, n - cells.height)
    frames = [f for f in (cells, levels) if f.height]
    if not frames:
        raise InputError(
            "the canaries design found no canary to craft: the data has neither a string column "
            "nor columns whose values can be combined into an empty cell"
        )
    frame = pl.concat([f.cast(dict(pool.schema)) for f in frames], how="vertical")
    kinds = ["canary_cell"] * cells.height + ["canary_level"] * levels.height
    return Targets(frame, kinds, [None] * frame.height, [None] * frame.height)


def cell_canaries(pool: pl.DataFrame, schema: Schema, n: int, *, seed: int = 0) -> pl.DataFrame:
    """Up to ``n`` records in distinct, sparsely populated regions of the population's domain (see
    the module docstring), emptiest first; a frame with no rows when ``n`` ≤ 0 or no column can
    vary. A region: the same categories, numeric values within one population quantile bin
    (10 bins); two canaries never share a region."""
    out = pool.head(0)
    if n <= 0 or pool.height == 0:
        return out
    gen = rng(seed, "targets", 1)
    sample = (
        pool
        if pool.height <= CELL_POOL_ROWS
        else pool[np.sort(gen.choice(pool.height, CELL_POOL_ROWS, replace=False)).tolist()]
    )
    columns = _cell_columns(pool, sample, schema)
    if columns is None:
        return out
    options, numeric, codes = columns
    sizes = [len(c[1]) if c is not None else 1 for c in codes]
    total = int(np.prod(np.asarray(sizes, dtype=np.float64)))
    if total <= CELL_CANDIDATES:
        cand = np.stack(np.unravel_index(np.arange(total), sizes), axis=1) if total else np.zeros((0, len(sizes)), int)
    else:
        cand = np.stack([gen.integers(0, k, CELL_CANDIDATES) for k in sizes], axis=1)
        cand = np.unique(cand, axis=0)
    counts = _region_counts(cand, codes, numeric)
    order = np.lexsort((gen.random(cand.shape[0]), counts))
    chosen = _distinct_regions(cand[order], codes, numeric, n)
    if not chosen:
        return out
    return _cell_canary_rows(pool, chosen, options, numeric, codes)


def _cell_columns(pool: pl.DataFrame, sample: pl.DataFrame, schema: Schema) -> tuple[list, list[bool], list] | None:
    """Per column, the values a cell canary may take, whether it is numeric and the (sample's,
    options') codes — None codes for a column of another kind (dates); None when a column has no
    value to take."""
    options, numeric, codes = [], [], []
    for col in pool.columns:
        s = sample[col]
        dtype = pool.schema[col]
        if schema.kind(col) == NUMERIC and (dtype.is_integer() or dtype.is_float()):
            column = _numeric_cell_column(s)
        elif isinstance(dtype, (pl.String, pl.Categorical, pl.Boolean)) or schema.kind(col) != NUMERIC:
            column = _level_cell_column(s)
        else:  # a column of another kind (dates): its most frequent value
            column = (None, False, None)
        if column is None:
            return None
        options.append(column[0])
        numeric.append(column[1])
        codes.append(column[2])
    return options, numeric, codes


def _numeric_cell_column(s: pl.Series) -> tuple[np.ndarray, bool, tuple[np.ndarray, np.ndarray]] | None:
    """A numeric column's canary values (its ``CELL_QUANTILES``), True, and the quantile-bin codes
    of the sample's values and of those values; None when it has no finite value."""
    x = s.cast(pl.Float64).drop_nulls().to_numpy()
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    edges = quantile_edges(x)
    vals = np.unique(np.quantile(x, CELL_QUANTILES, method="lower"))
    return vals, True, (assign_bins(s.cast(pl.Float64).fill_null(np.nan).to_numpy(), edges), assign_bins(vals, edges))


def _level_cell_column(s: pl.Series) -> tuple[pl.Series, bool, tuple[np.ndarray, np.ndarray]] | None:
    """A categorical column's levels (in order of appearance), False, and the level codes of the
    sample's values (−1: null) and of the levels; None when it has no level."""
    levels = s.drop_nulls().unique(maintain_order=True)
    if levels.len() == 0:
        return None
    lv = np.asarray(levels.cast(pl.String).to_list(), dtype=object)
    index = {v: i for i, v in enumerate(lv)}
    uniq, inverse = np.unique(s.cast(pl.String).fill_null("").to_numpy().astype(str), return_inverse=True)
    pool_code = np.array([index.get(v, -1) for v in uniq], dtype=np.int64)[inverse.ravel()]
    pool_code[s.is_null().to_numpy()] = -1
    return levels, False, (pool_code, np.arange(lv.size))


def _distinct_regions(ranked: np.ndarray, codes: list, numeric: list[bool], n: int) -> list[np.ndarray]:
    """The first ``n`` of the ``ranked`` candidates of which no two share a region."""
    chosen: list[np.ndarray] = []
    for c in ranked:
        if any(_same_region(c, o, codes, numeric) for o in chosen):
            continue
        chosen.append(c)
        if len(chosen) == n:
            break
    return chosen


def _cell_canary_rows(
    pool: pl.DataFrame, chosen: list[np.ndarray], options: list, numeric: list[bool], codes: list
) -> pl.DataFrame:
    """One record per chosen candidate: its option of every column (integers rounded), the
    population's most frequent value in a column of another kind."""
    mode = mode_row(pool)
    rows = []
    for c in chosen:
        row = {}
        for j, col in enumerate(pool.columns):
            if codes[j] is None:
                row[col] = mode[col]
            elif numeric[j]:
                v = float(options[j][c[j]])
                row[col] = pl.Series(col, [round(v) if pool.schema[col].is_integer() else v]).cast(pool.schema[col])
            else:
                row[col] = options[j][int(c[j]) : int(c[j]) + 1].cast(pool.schema[col])
        rows.append(pl.DataFrame(row))
    return pl.concat(rows, how="vertical")


def _region_counts(cand: np.ndarray, codes: list, numeric: list[bool]) -> np.ndarray:
    """Population records in each candidate's region: equal categories, numeric bins within 1."""
    out = np.zeros(cand.shape[0], dtype=np.int64)
    cols = [j for j, c in enumerate(codes) if c is not None]
    for start in range(0, cand.shape[0], 64):
        block = cand[start : start + 64]
        hit = None
        for j in cols:
            pool_code, cand_code = codes[j]
            want = cand_code[block[:, j]][:, None]
            ok = np.abs(pool_code[None, :] - want) <= 1 if numeric[j] else pool_code[None, :] == want
            hit = ok if hit is None else hit & ok
        out[start : start + 64] = hit.sum(axis=1) if hit is not None else 0
    return out


def _same_region(a: np.ndarray, b: np.ndarray, codes: list, numeric: list[bool]) -> bool:
    """Whether two candidates' regions overlap (equal categories, numeric bins within 2)."""
    for j, c in enumerate(codes):
        if c is None:
            continue
        ca, cb = c[1][a[j]], c[1][b[j]]
        if (abs(int(ca) - int(cb)) > 2) if numeric[j] else ca != cb:
            return False
    return True


def _integer_max(dtype: pl.DataType) -> int:
    bits = {
        pl.Int8: 7,
        pl.Int16: 15,
        pl.Int32: 31,
        pl.Int64: 63,
        pl.UInt8: 8,
        pl.UInt16: 16,
        pl.UInt32: 32,
        pl.UInt64: 64,
    }
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
