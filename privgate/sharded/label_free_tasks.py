"""The worker side of the sharded label-free view (:mod:`privgate.sharded.label_free`): functions
of one or two partitions (or of one hash bucket's pieces) that return counts, moments, a
partition's encoded rows or a few rows — never a table.

* :func:`summary_task`: per numeric column the moments of its finite values and up to three of
  its distinct values; per categorical column its level counts (null as :data:`NULL`).
* :func:`strided_task`, :func:`ks_task`: the evenly strided values of one column the local
  suspect test's Kolmogorov–Smirnov distance reads (bounded: about ``KS_SAMPLE`` per side), and
  that distance on one worker.
* :func:`scale_counts_task`: release values outside a column's scale bounds, counted.
* :func:`sorted_task`, :func:`count_task`, :func:`rank_step_task`, :func:`rank_block_task`: per
  value, how many values of a role are below it and equal to it, summed partition by partition:
  the mid-rank a whole-column rank gives, exactly, without the column on one worker.
* :func:`anchor_search_task`: a partition's records in a label-invariant view (ranks or values of
  numerics, shares of levels, standardised by broadcast moments) and the nearest of them for a
  broadcast block of query rows.
* :func:`snap_start_task`, :func:`snap_step_task`, :func:`top_two_task`,
  :func:`snap_finish_task`: a release partition's affine images folded through the reference
  partitions' sorted values (per value its two neighbours in the whole column) and snapped as
  :func:`privgate.numeric_maps._snap` snaps them over the whole column — the partition's mapped
  columns, which the tasks above take as ``mapped`` when they read that release partition.
* :func:`regular_sample_task`, :func:`bucket_split_task`, :func:`piece_task`, :func:`bucket_task`,
  :func:`monotone_positions_task`, :func:`pick_task`, :func:`monotone_finish_task`: a monotone
  map's values — the reference's order statistics at each release value's position — selected
  by buckets of the reference column (one open bucket's values, about two partitions' worth at
  most, on one worker), never the column on one worker.
* :func:`disguise_split_task`, :func:`disguise_bucket_task`, :func:`pair_tables_task`,
  :func:`pair_flags_task`, :func:`pairs_task`: the exact numeric matches of release and reference
  records (levels recoded by the view's classes when it has some), by hash buckets of the numeric
  tuple, what the local record-by-record search counts of them, and their levels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from ..disguised_records import column_flags, explained_by
from ..numeric_maps import _marginal_gap, counted_mid_ranks, ks_distance
from ..schema import Schema, normalise_frame
from .encode import with_mapped
from .kernel import engine_knn
from .partitions import Partition, read_partition

#: the level a null categorical cell counts as (a null is a level of its own in the shares)
NULL = "\x00lf-null"


def frame_of(
    part: Partition, kinds: dict[str, str], columns: Sequence[str], mapped: dict[str, np.ndarray] | None = None
) -> pl.DataFrame:
    """One partition's normalised ``columns``; those of ``mapped`` (the partition's numeric
    columns mapped to the reference's scale, :func:`snap_finish_task`) replaced by those values."""
    columns = list(columns)
    frame = normalise_frame(read_partition(part, columns), Schema({c: kinds[c] for c in columns}))
    return frame if mapped is None else with_mapped(frame, mapped, None)


def _finite(frame: pl.DataFrame, c: str) -> np.ndarray:
    v = frame.get_column(c).cast(pl.Float64).to_numpy()
    return v[np.isfinite(v)]


def summary_task(
    part: Partition, kinds: dict[str, str], num: list[str], cat: list[str], mapped: dict | None = None
) -> dict:
    """One partition's ``moments`` {numeric column: [n, mean, m2, min, max] of its finite
    values}, ``few`` {numeric column: up to three of its distinct finite values} and ``levels``
    {categorical column: {level (null as NULL): count}} (``mapped``: as :func:`frame_of`)."""
    frame = frame_of(part, kinds, [*num, *cat], mapped)
    moments, few, levels = {}, {}, {}
    for c in num:
        v = _finite(frame, c)
        moments[c] = (
            [float(v.size), float(v.mean()), float(((v - v.mean()) ** 2).sum()), float(v.min()), float(v.max())]
            if v.size
            else [0.0, 0.0, 0.0, np.inf, -np.inf]
        )
        few[c] = np.unique(v)[:3]
    for c in cat:
        counts = frame.get_column(c).fill_null(NULL).value_counts()
        levels[c] = dict(zip(counts.get_column(c).to_list(), counts.get_column("count").to_list()))
    return {"rows": part.rows, "moments": moments, "few": few, "levels": levels}


def strided_task(
    part: Partition, kinds: dict[str, str], c: str, first: int, stride: int, mapped: dict | None = None
) -> np.ndarray:
    """The finite values of column ``c`` in this partition whose position among the role's finite
    values (``first``: how many precede the partition's) is a multiple of ``stride`` (``mapped``:
    as :func:`frame_of`)."""
    v = _finite(frame_of(part, kinds, [c], mapped), c)
    return v[(-first) % stride :: stride]


def ks_task(release: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """On one worker: the two-sample Kolmogorov–Smirnov distance of two strided samples."""
    return ks_distance(np.concatenate(release), np.concatenate(reference))


def gap_task(release: list[np.ndarray], reference: list[np.ndarray], a: float, b: float) -> bool:
    """On one worker: whether a·v + b brings one column's release marginal nearer the reference's
    (:func:`privgate.numeric_maps._marginal_gap`; each side's values in pieces)."""
    rel, ref = np.concatenate(release), np.concatenate(reference)
    return _marginal_gap(a * rel + b, ref) < _marginal_gap(rel, ref)


def scale_counts_task(
    part: Partition,
    kinds: dict[str, str],
    bounds: dict[str, tuple[float, float, float, float]],
    mapped: dict | None = None,
) -> dict[str, tuple[int, int]]:
    """Per numeric column, how many finite values lie outside (lower, upper) far bounds and
    outside the widened range (:func:`privgate.numeric_maps.scale_bounds`; ``mapped``: as
    :func:`frame_of`)."""
    frame = frame_of(part, kinds, list(bounds), mapped)
    out = {}
    for c, (lo_w, hi_w, lo_p, hi_p) in bounds.items():
        v = _finite(frame, c)
        out[c] = (int(np.count_nonzero((v < lo_w) | (v > hi_w))), int(np.count_nonzero((v < lo_p) | (v > hi_p))))
    return out


def sorted_task(
    part: Partition, kinds: dict[str, str], num: list[str], mapped: dict | None = None
) -> dict[str, np.ndarray]:
    """Per numeric column, the partition's finite values sorted (``mapped``: as :func:`frame_of`)."""
    frame = frame_of(part, kinds, num, mapped)
    return {c: np.sort(_finite(frame, c)) for c in num}


def count_task(values: dict[str, np.ndarray], sorted_: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per column, for each of ``values`` (NaN: a null), how many of one partition's sorted values
    are below it and equal to it: a (2, n) array."""
    out = {}
    for c, v in values.items():
        s = sorted_[c]
        less = np.searchsorted(s, v, side="left")
        out[c] = np.vstack([less, np.searchsorted(s, v, side="right") - less]).astype(np.int64)
    return out


def rank_step_task(
    acc: dict[str, np.ndarray] | None, part: Partition, kinds: dict[str, str], sorted_: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """``acc`` plus, for every row of ``part``, the values of one other partition (``sorted_``)
    below and equal to its value in each numeric column."""
    frame = frame_of(part, kinds, list(sorted_))
    step = count_task({c: frame.get_column(c).cast(pl.Float64).to_numpy() for c in sorted_}, sorted_)
    return step if acc is None else {c: acc[c] + step[c] for c in step}


def mid_ranks(counts: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The local ``_ranks``: mid-rank over the role's size from (below, equal) counts; a null is 0.5."""
    return counted_mid_ranks(counts[0], counts[1], values, n)


def rank_block_task(
    acc: dict[str, np.ndarray], part: Partition, kinds: dict[str, str], num: list[str], n: int
) -> tuple[np.ndarray, list[list[float]]]:
    """(this partition's rows' mid-ranks in each numeric column of the role, (rows, columns)
    float64; per column [n, mean, m2, min, max] of them)."""
    frame = frame_of(part, kinds, num)
    cols = [mid_ranks(acc[c], frame.get_column(c).cast(pl.Float64).to_numpy(), n) for c in num]
    block = np.column_stack(cols) if cols else np.empty((part.rows, 0))
    moments = [
        [float(v.size), float(v.mean()), float(((v - v.mean()) ** 2).sum()), float(v.min()), float(v.max())]
        for v in cols
    ]
    return block, moments


def encode_view(frame: pl.DataFrame, spec: list[tuple], ranks: np.ndarray | None) -> np.ndarray:
    """The rows of ``frame`` in a label-invariant view, unstandardised (float64): per ``spec``
    entry ("rank", j) column j of ``ranks``, ("value", c, fill) the numeric values (a null as
    ``fill``), ("share", c, levels, shares) each cell's level share."""
    cols = []
    for entry in spec:
        if entry[0] == "rank":
            cols.append(ranks[:, entry[1]])
        elif entry[0] == "value":
            v = frame.get_column(entry[1]).cast(pl.Float64).to_numpy()
            cols.append(np.where(np.isnan(v), entry[2], v))
        else:
            _, c, levels, shares = entry
            s = frame.get_column(c).fill_null(NULL).replace_strict(levels, shares, return_dtype=pl.Float64)
            cols.append(s.to_numpy())
    return np.column_stack(cols) if cols else np.empty((frame.height, 0))


def anchor_search_task(
    query: np.ndarray,
    part: Partition,
    first: int,
    kinds: dict[str, str],
    spec: list[tuple],
    mean: np.ndarray,
    sd: np.ndarray,
    ranks: tuple[np.ndarray, list] | None,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The nearest of this partition's records (positions ``first`` + row in the reference) for
    each broadcast query row, in the view ``spec`` standardised by (``mean``, ``sd``), float32."""
    from ..threads import blas_limited

    cols = sorted({e[1] for e in spec if e[0] != "rank"})
    frame = frame_of(part, kinds, cols) if cols else pl.DataFrame({"__n": np.zeros(part.rows)})
    target = np.ascontiguousarray(
        (encode_view(frame, spec, None if ranks is None else ranks[0]) - mean) / sd, np.float32
    )
    ids = np.arange(first, first + part.rows, dtype=np.int64)
    with blas_limited(threads):
        return engine_knn(query, np.arange(query.shape[0], dtype=np.int64), target, ids, 1)


def rows_task(
    part: Partition,
    first: int,
    kinds: dict[str, str],
    columns: list[str],
    keep: np.ndarray,
    mapped: dict | None = None,
) -> pl.DataFrame:
    """The normalised ``columns`` of this partition's rows at role positions ``keep`` (sorted;
    ``first``: the partition's first position; ``mapped``: as :func:`frame_of`)."""
    frame = frame_of(part, kinds, columns, mapped)
    return frame[keep[(keep >= first) & (keep < first + part.rows)] - first]


def disguise_split_task(
    part: Partition,
    first: int,
    kinds: dict[str, str],
    num: list[str],
    cat: list[str],
    n: int,
    codes: dict,
    mapped: dict | None = None,
) -> list[pl.DataFrame]:
    """This partition's records (levels recoded by ``codes``, when given; numerics mapped by
    ``mapped``, as :func:`frame_of`) with a numeric tuple free of nulls, with their role
    positions (``__row``), split into ``n`` buckets by a hash of the numeric tuple (equal tuples,
    one bucket)."""
    from ..label_free import recode

    frame = recode(frame_of(part, kinds, [*num, *cat], mapped), codes).with_columns(
        pl.Series("__row", np.arange(first, first + part.rows, dtype=np.int64))
    )
    frame = frame.drop_nulls(num)
    key = pl.struct(num) if len(num) > 1 else pl.col(num[0])
    frame = frame.with_columns((key.hash(seed=11) % n).alias("__b"))
    return [frame.filter(pl.col("__b") == b).drop("__b") for b in range(n)]


def disguise_bucket_task(
    reference: list[pl.DataFrame], release: list[pl.DataFrame], num: list[str], cat: list[str]
) -> tuple[int, pl.DataFrame]:
    """One bucket's (reference numeric tuples held by one reference record, the release records
    holding such a tuple paired with it: release level ``s:<c>`` and reference level ``r:<c>``
    per categorical column, positions ``__s`` and ``__r``)."""
    ref = pl.concat(reference)
    unique = (
        ref.group_by(num)
        .agg(
            pl.len().alias("__n"),
            pl.col("__row").first().alias("__r"),
            *[pl.col(c).first().alias(f"r:{c}") for c in cat],
        )
        .filter(pl.col("__n") == 1)
    )
    rel = pl.concat(release).rename({"__row": "__s", **{c: f"s:{c}" for c in cat}})
    pairs = rel.join(unique.drop("__n"), on=num, how="inner")
    return unique.height, pairs.select("__s", "__r", *[f"s:{c}" for c in cat], *[f"r:{c}" for c in cat])


def pair_tables_task(bucket: tuple[int, pl.DataFrame], cat: list[str]) -> tuple[int, int, dict[str, pl.DataFrame]]:
    """(unique tuples, pairs, per categorical column the pairs' (s, r, len) count table) of one bucket."""
    unique, pairs = bucket
    tables = {
        c: pairs.select(pl.col(f"s:{c}").alias("s"), pl.col(f"r:{c}").alias("r")).group_by("s", "r").len() for c in cat
    }
    return unique, pairs.height, tables


def pair_flags_task(bucket: tuple[int, pl.DataFrame], cat: list[str], codes: dict[str, tuple[dict, dict]]) -> int:
    """How many of one bucket's pairs the correspondence ``codes`` (per column: release codes,
    reference codes) explains (:func:`privgate.disguised_records.explained_by`)."""
    _, pairs = bucket
    flags = [np.zeros(pairs.height, np.int64) for _ in range(3)]
    for c in cat:
        rel_codes, ref_codes = codes[c]
        for total, f in zip(
            flags, column_flags(pairs.get_column(f"s:{c}"), pairs.get_column(f"r:{c}"), rel_codes, ref_codes)
        ):
            total += f
    return int(explained_by(*flags, len(cat)).sum())


def pairs_task(bucket: tuple[int, pl.DataFrame]) -> pl.DataFrame:
    """One bucket's pairs: release position ``__s`` and the levels of both records."""
    return bucket[1]


# ---------------------------------------------------------------------- affine maps, snapped
def snap_start_task(part: Partition, kinds: dict[str, str], maps: dict[str, tuple[float, float]]) -> dict:
    """One release partition's affine images a·v + b per mapped column (NaN for null), with no
    reference neighbour yet: the state :func:`snap_step_task` folds the reference partitions into
    (``lo`` −inf, ``hi`` +inf)."""
    frame = frame_of(part, kinds, list(maps))
    x = {c: a * frame.get_column(c).cast(pl.Float64).to_numpy() + b for c, (a, b) in maps.items()}
    return {
        "x": x,
        "lo": {c: np.full(part.rows, -np.inf) for c in maps},
        "hi": {c: np.full(part.rows, np.inf) for c in maps},
    }


def neighbours(x: np.ndarray, ref_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per value of ``x``, (the largest value of ``ref_sorted`` below it, the smallest not below
    it) — −inf / +inf when there is none: the two neighbours :func:`privgate.numeric_maps._snap`
    chooses between (``searchsorted``'s left side)."""
    at = np.searchsorted(ref_sorted, x, side="left")
    n = ref_sorted.size
    lo = np.where(at > 0, ref_sorted[np.maximum(at - 1, 0)] if n else -np.inf, -np.inf)
    hi = np.where(at < n, ref_sorted[np.minimum(at, n - 1)] if n else np.inf, np.inf)
    return lo, hi


def snap_step_task(state: dict, ref_sorted: dict[str, np.ndarray]) -> dict:
    """``state`` (:func:`snap_start_task`) with one reference partition's sorted finite values
    (:func:`sorted_task`) folded in: per value the largest reference value below it and the
    smallest not below it, over the partitions seen so far (a max and a min: any order, any
    split of the column gives the same)."""
    lo, hi = {}, {}
    for c, x in state["x"].items():
        lo_p, hi_p = neighbours(x, ref_sorted[c])
        lo[c], hi[c] = np.maximum(state["lo"][c], lo_p), np.minimum(state["hi"][c], hi_p)
    return {"x": state["x"], "lo": lo, "hi": hi}


def top_two_task(ref_sorted: dict[str, np.ndarray], columns: list[str]) -> dict[str, np.ndarray]:
    """Per column, one reference partition's two largest finite values (fewer when it has fewer)."""
    return {c: ref_sorted[c][-2:] for c in columns}


def snapped(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, top_two: np.ndarray, tol: float) -> np.ndarray:
    """:func:`privgate.numeric_maps._snap` of ``x`` from each value's two neighbours in the whole
    sorted reference column (:func:`neighbours`, merged) and the column's two largest values
    ``top_two`` (sorted; ``_snap`` compares those two for a value above the largest): the nearer
    neighbour (the lower one at an equal distance) when within ``tol``, else the value (NaN stays
    NaN)."""
    with np.errstate(invalid="ignore"):
        near = np.where(np.abs(x - lo) <= np.abs(hi - x), lo, hi)
        if top_two.size == 2:  # above the largest value: _snap's clipped pair is the two largest
            second, top = top_two
            above = np.isinf(hi) & np.isfinite(lo)
            near = np.where(above & (np.abs(x - second) <= np.abs(top - x)), second, near)
        return np.where(np.abs(near - x) <= tol, near, x)


def snap_finish_task(state: dict, top_two: dict[str, np.ndarray], tols: dict[str, float]) -> dict[str, np.ndarray]:
    """Per mapped column of one release partition, each affine image replaced by its nearest
    reference value when within the column's tolerance (:func:`snapped`), once every reference
    partition was folded in: {column: float64 values of the partition's rows, NaN for null}."""
    return {c: snapped(x, state["lo"][c], state["hi"][c], top_two[c], tols[c]) for c, x in state["x"].items()}


def combine_task(*parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One release partition's mapped columns from the maps' separate results."""
    out: dict[str, np.ndarray] = {}
    for p in parts:
        out.update(p)
    return out


# ---------------------------------------------------------------------- monotone maps
def regular_sample_task(ref_sorted: dict[str, np.ndarray], c: str, k: int) -> np.ndarray:
    """``k`` evenly spaced values of one reference partition's sorted column ``c`` (its values at
    positions ⌊i·n/k⌋): the regular sample whose merged quantiles split the column into buckets of
    at most about two partitions' values each."""
    v = ref_sorted[c]
    return v[(np.arange(k) * v.size) // k] if v.size else v


def bucket_of(values: np.ndarray, splitters: np.ndarray) -> np.ndarray:
    """Each value's bucket among the sorted distinct ``splitters``: 2j for the open interval below
    splitter j (2·len above the last), 2j + 1 for a value equal to splitter j — buckets in the
    values' order, a repeated value never spread over buckets."""
    return np.searchsorted(splitters, values, side="left") + np.searchsorted(splitters, values, side="right")


def bucket_split_task(ref_sorted: dict[str, np.ndarray], c: str, splitters: np.ndarray) -> tuple[np.ndarray, list]:
    """(count of one reference partition's finite values of column ``c`` per bucket, its values of
    each open bucket — the even ones — in order)."""
    v = ref_sorted[c]
    b = bucket_of(v, splitters)
    counts = np.bincount(b, minlength=2 * splitters.size + 1).astype(np.int64)
    edges = np.searchsorted(b, np.arange(0, 2 * splitters.size + 2, 2))  # v sorted: b sorted
    ends = np.searchsorted(b, np.arange(0, 2 * splitters.size + 2, 2), side="right")
    return counts, [v[edges[i] : ends[i]] for i in range(splitters.size + 1)]


def piece_task(split: tuple[np.ndarray, list], i: int) -> np.ndarray:
    """One partition's values of open bucket ``2i`` (:func:`bucket_split_task`)."""
    return split[1][i]


def bucket_task(*pieces: np.ndarray) -> np.ndarray:
    """One open bucket's reference values, from every reference partition, sorted."""
    return np.sort(np.concatenate(pieces)) if pieces else np.empty(0)


def monotone_positions_task(
    counts: dict[str, np.ndarray],
    part: Partition,
    kinds: dict[str, str],
    c: str,
    n_release: int,
    n_ref: int,
    decreasing: bool,
    bucket_ends: np.ndarray,
) -> dict:
    """For one release partition's column ``c``: each row's position in the sorted reference
    column — ⌊u·n_ref⌋ clipped, u its mid-rank in the whole release (``counts``: values below and
    equal, summed over the release's partitions, :func:`rank_step_task`), flipped when
    ``decreasing`` — as (bucket, offset in the bucket) by the buckets' cumulative ``bucket_ends``;
    and its nulls."""
    v = frame_of(part, kinds, [c]).get_column(c).cast(pl.Float64).to_numpy()
    u = mid_ranks(counts[c], v, n_release)
    u = 1.0 - u if decreasing else u
    pos = np.clip((u * n_ref).astype(np.int64), 0, n_ref - 1)
    bucket = np.searchsorted(bucket_ends, pos, side="right")
    start = bucket_ends[bucket] - np.diff(np.concatenate([[0], bucket_ends]))[bucket]
    return {"bucket": bucket, "offset": pos - start, "null": np.isnan(v)}


def pick_task(state: dict, j: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of one release partition whose position lies in open bucket ``2j``, the reference
    values at their offsets in that bucket's sorted values)."""
    rows = np.flatnonzero(state["bucket"] == 2 * j)
    return rows, values[state["offset"][rows]]


def monotone_finish_task(state: dict, c: str, splitters: np.ndarray, *picks: tuple) -> dict[str, np.ndarray]:
    """One release partition's column ``c`` under the monotone map: the reference's order
    statistic at each row's position (:func:`privgate.numeric_maps.apply_numeric_maps`), NaN
    for a null."""
    b = state["bucket"]
    out = np.full(b.size, np.nan)
    point = b % 2 == 1
    out[point] = splitters[b[point] // 2]
    for rows, vals in picks:
        out[rows] = vals
    out[state["null"]] = np.nan
    return {c: out}
