"""The far records of a column off the real scale only in its tails (``privgate.tail_maps``) on a
sharded evaluation's partitions: their own maps learnt, applied on the workers, and the view's
uniqueness check of the columns left out — the local correspondence, from partitions.

The local learning (:func:`privgate.tail_maps.learn_far_maps`) runs here unchanged; what it reads
of the whole release and reference (:class:`privgate.tail_maps.FarSource`) is answered by the
cluster (:class:`FarOnCluster`):

* **the far records**: each release partition (its mapped columns, when the view maps some) flags
  its values beyond the far bounds (:func:`privgate.numeric_maps.scale_bounds` of the reference's
  merged minimum, maximum and standard deviation) and returns their positions — 8 bytes a far
  record; the at most ``MAP_ANCHOR_ROWS`` anchored ones, evenly strided over the whole release's
  row order as locally, are then read by their partitions;
* **their anchors' coordinates**: a value's reference mid-rank from counts of smaller and equal
  reference values summed over the reference partitions, a level's share in the whole release from
  the merged level counts, and the snap of a mapped far value from the reference partitions'
  sorted values folded in one after another (:mod:`privgate.sharded.label_free_tasks`); the
  nearest reference record searched by broadcasting the ≤ 500 query rows to every reference
  partition, encoded there by its rows' whole-column ranks and shares;
* **a candidate map's marginal gap** (only asked when the anchored pairs support a map): the ≤ 500
  far values and that one reference column on one worker.

The learnt maps are applied per release partition on its worker (:func:`apply_tail_maps`): its far
records' images a·v + b snapped to the nearest reference value over the whole reference column,
exactly as :meth:`privgate.tail_maps.TailMaps.apply` snaps them; the result joins the partition's
mapped columns, held on the workers. A column still off in its tails is left out of the view
when the reference records stay identifying without it — counted by hash buckets of the kept
columns (:func:`unique_reference_records`: equal records share a bucket, each bucket's worker
counts its groups of one exactly) — else refused as locally
(:func:`privgate.label_free.counted_view_schema`). Nothing here reports a value: positions and
counts only.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from ..numeric_maps import SNAP_TOL, scale_bounds
from ..schema import Schema
from ..tail_maps import TailMaps, far_flags
from . import label_free_tasks as lt

__all__ = ["FarOnCluster", "apply_tail_maps", "unique_reference_records"]


def _far_bounds(cl: Any, columns: tuple[str, ...] | list[str]) -> dict[str, tuple[float, float, float, float]]:
    """Per column with finite reference values, its :func:`~privgate.numeric_maps.scale_bounds`
    from the reference's merged moments (as ``tail_maps.far_rows`` takes them of the column)."""
    out = {}
    for c in columns:
        n_r, _, sd_r, lo, hi = cl.moments("reference", c)
        if n_r:
            out[c] = scale_bounds(lo, hi, sd_r)
    return out


def _tolerance(cl: Any, c: str) -> float:
    """``numeric_maps._tolerance`` of the reference's column ``c`` from its merged minimum and maximum."""
    n_r, _, _, lo, hi = cl.moments("reference", c)
    return SNAP_TOL * (1.0 + max(abs(lo), abs(hi)) if n_r else 1.0)


def _top_two(cl: Any, columns: list[str]) -> dict[str, np.ndarray]:
    """Per column, the reference's two largest finite values (what ``_snap`` compares above them)."""
    tops = cl.client.gather([cl._submit(lt.top_two_task, s, columns) for s in cl.sorted_values("reference")])
    return {c: np.sort(np.concatenate([t[c] for t in tops]))[-2:] for c in columns}


class FarOnCluster:
    """:class:`privgate.tail_maps.FarSource` of a sharded evaluation (``cl``: its
    :class:`privgate.sharded.label_free._OnCluster`, the release read with its mapped columns)."""

    def __init__(self, cl: Any, schema: Schema) -> None:
        self.cl, self.schema = cl, schema

    def far_rows(self, columns: tuple[str, ...]) -> np.ndarray:
        cl = self.cl
        bounds = _far_bounds(cl, columns)
        if not bounds:
            return np.empty(0, dtype=np.int64)
        pieces = cl.client.gather(
            [
                cl._submit(far_positions_task, p, first, cl.kinds, bounds, mapped=cl._mapped("release", p))
                for p, first in cl.parts["release"]
            ]
        )
        return np.concatenate(pieces).astype(np.int64) if pieces else np.empty(0, dtype=np.int64)

    def release_rows(self, rows: np.ndarray) -> pl.DataFrame:
        return self.cl.rows("release", rows, list(self.schema.columns))

    def reference_rows(self, positions: np.ndarray, columns: list[str]) -> pl.DataFrame:
        return self.cl.rows("reference", positions, columns)

    def reference_ranks(self, c: str, values: np.ndarray) -> np.ndarray:
        return self.cl.ranks("reference", c, values)

    def snapped(self, c: str, x: np.ndarray) -> np.ndarray:
        cl = self.cl
        state: Any = {"x": {c: x}, "lo": {c: np.full(x.shape, -np.inf)}, "hi": {c: np.full(x.shape, np.inf)}}
        for s in cl.sorted_values("reference"):
            state = cl._submit(lt.snap_step_task, state, s)
        return cl._submit(lt.snap_finish_task, state, _top_two(cl, [c]), {c: _tolerance(cl, c)}).result()[c]

    def release_shares(self, rows: np.ndarray, at: pl.DataFrame, columns: list[str]) -> np.ndarray:
        return np.column_stack([self.cl.release_shares(at.get_column(c)) for c in columns])

    def nearest(self, q: np.ndarray, schema: Schema, name: str) -> np.ndarray:
        cl = self.cl
        _, r_mean, r_sd = cl.rank_blocks()
        spec, mean, sd = [], [], []
        for c in schema.numeric:
            j = cl.num.index(c)
            spec.append(("rank", j))
            mean.append(r_mean[j])
            sd.append(r_sd[j])
        for c in schema.categorical:
            entry, m, s = cl.share_entry(c)
            spec.append(entry)
            mean.append(m)
            sd.append(s)
        mean, sd = np.array(mean, dtype=np.float64), np.array(sd, dtype=np.float64)
        sd = np.where(sd > 0, sd, 1.0)  # numeric_maps._standardised
        query = np.ascontiguousarray((q - mean) / sd, dtype=np.float32)
        return cl.search(query, spec, mean, sd, name)

    def tolerance(self, c: str) -> float:
        return _tolerance(self.cl, c)

    def nearer(self, c: str, values: np.ndarray) -> Callable[[float, float], bool]:
        cl = self.cl

        def nearer(a: float, b: float) -> bool:
            return bool(cl._submit(lt.gap_task, [values], cl.strided("reference", c, 1), a, b).result())

        return nearer


def apply_tail_maps(cl: Any, tails: TailMaps, off: tuple[str, ...]) -> None:
    """Put the far records of ``off`` (those :meth:`FarOnCluster.far_rows` found, which each
    release partition finds again) on the reference's scale by ``tails.maps``, on the workers, as
    :meth:`privgate.tail_maps.TailMaps.apply` does: per release partition its far records' images
    a·v + b folded through the reference partitions' sorted values and snapped; the partition's
    mapped columns (``cl.mapped``) then hold them. The release's summaries are the mapped
    release's from then on."""
    coef = {c: (m.a, m.b) for c, m in tails.maps.items()}
    bounds = _far_bounds(cl, off)
    sorted_ = cl.sorted_values("reference")
    top_two = _top_two(cl, list(coef))
    tols = {c: _tolerance(cl, c) for c in coef}
    mapped = {}
    for p, _ in cl.parts["release"]:
        before = cl._mapped("release", p)
        start = cl._submit(tail_start_task, p, cl.kinds, coef, bounds, mapped=before)
        state = cl._submit(operator.getitem, start, 1)
        for s in sorted_:
            state = cl._submit(lt.snap_step_task, state, s)
        done = cl._submit(tail_finish_task, cl._submit(operator.getitem, start, 0), state, top_two, tols)
        mapped[p.start] = done if before is None else cl._submit(lt.combine_task, before, done)
    cl.mapped = mapped
    cl.summaries["release"] = cl._summaries("release")
    cl._sorted.pop("release", None)
    cl._checks.clear()


def unique_reference_records(cl: Any, columns: list[str]) -> int:
    """How many reference records are unique on ``columns`` (as the local
    ``reference.group_by(columns).len()`` counts groups of one; nulls equal nulls): the reference
    partitions split by a hash of the columns' values into buckets, each bucket's groups counted
    on one worker."""
    from .joins import _split

    parts = [p for p, _ in cl.parts["reference"]]
    if not columns or not parts:
        return 0
    n = max(1, len(parts))
    pieces = _split(cl.client, parts, cl.kinds, columns, n, None, False)
    return int(sum(cl.client.gather([cl._submit(_unique_in_bucket, pieces[b], columns) for b in range(n)])))


# ---------------------------------------------------------------------- worker side
def far_positions_task(
    part: Any, first: int, kinds: dict[str, str], bounds: dict[str, tuple], mapped: dict | None = None
) -> np.ndarray:
    """The role positions (``first``: the partition's first) of this release partition's records
    holding, in a column of ``bounds``, a value outside its far bounds
    (:func:`privgate.tail_maps.far_flags`; ``mapped``: as :func:`~.label_free_tasks.frame_of`)."""
    frame = lt.frame_of(part, kinds, list(bounds), mapped)
    far = np.zeros(part.rows, dtype=bool)
    for c, b in bounds.items():
        far |= far_flags(frame.get_column(c), b)
    return np.flatnonzero(far).astype(np.int64) + first


def tail_start_task(
    part: Any,
    kinds: dict[str, str],
    maps: dict[str, tuple[float, float]],
    bounds: dict[str, tuple],
    mapped: dict | None = None,
) -> tuple[dict, dict]:
    """(this release partition's far rows and its mapped columns' values as they are, the snap
    state of their far rows' images a·v + b — :func:`~.label_free_tasks.snap_step_task` folds the
    reference partitions into it)."""
    frame = lt.frame_of(part, kinds, sorted({*maps, *bounds}), mapped)
    far = np.zeros(part.rows, dtype=bool)
    for c, b in bounds.items():
        far |= far_flags(frame.get_column(c), b)
    rows = np.flatnonzero(far)
    values = {c: frame.get_column(c).cast(pl.Float64).to_numpy().astype(np.float64, copy=True) for c in maps}
    x = {c: a * values[c][rows] + b for c, (a, b) in maps.items()}
    state = {
        "x": x,
        "lo": {c: np.full(rows.size, -np.inf) for c in maps},
        "hi": {c: np.full(rows.size, np.inf) for c in maps},
    }
    return {"rows": rows, "values": values}, state


def tail_finish_task(
    base: dict, state: dict, top_two: dict[str, np.ndarray], tols: dict[str, float]
) -> dict[str, np.ndarray]:
    """Per mapped column of one release partition, its values with the far rows' images snapped
    (:func:`~.label_free_tasks.snapped`; a null stays NaN): {column: float64 values of every row}."""
    rows, out = base["rows"], {}
    for c, v in base["values"].items():
        x = lt.snapped(state["x"][c], state["lo"][c], state["hi"][c], top_two[c], tols[c])
        v = v.copy()
        v[rows] = np.where(np.isnan(v[rows]), np.nan, x)
        out[c] = v
    return out


def _unique_in_bucket(pieces: list[pl.DataFrame], columns: list[str]) -> int:
    """On a worker: one bucket's groups of one record (equal values on ``columns``)."""
    frame = pl.concat(pieces)
    if frame.height == 0:
        return 0
    return int(frame.group_by(columns).len().filter(pl.col("len") == 1).height)
