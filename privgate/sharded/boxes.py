"""hitting_rate's box queries sharded over a Dask cluster, with the local gate's answers.

A real record is hit when some target record has every must-equal value equal (categories, null
indicators, the value of a constant numeric column) and every other numeric value within one box
unit, h = (max − min of the real column) / divisor. The tolerances come from the real
partitions' minima and maxima (one task per partition; min and max merge exactly). Then one task
per (query partition, target partition): the worker reads both partitions' rows asked for, builds
their coordinates with the local code (:func:`privgate.box_query.fold_box_column`: the same
v / h in float64, the group number of the must-equal values over that pair's records, exact —
equal values, never a hash) and answers with the local k-d tree box query
(:func:`privgate.neighbours.any_within_box`, ≤ 1 box unit inclusive). A target within one box
unit of a query in some partition is within it in the whole set, so one task per query
partition ORs its pairs' flags: each flag is the local gate's. A sampled query set (at most
:data:`~privgate.sharded.search.BROADCAST_QUERIES` records) is read once, stacked on a worker and
sent to one task per target partition instead. A worker holds two partitions' records (or the
sampled query block and one partition) and their coordinates at a time; the caller receives one
flag per query record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ..box_query import box_matrices, fold_box_column, tolerance_of
from ..neighbours import any_within_box
from ..schema import Schema, normalise_frame
from .partitions import Partition, read_partition
from .search import BROADCAST_QUERIES, View, _inside

__all__ = ["ShardedBoxQuery", "box_block_task", "box_pair_task", "range_task"]


def range_task(part: Partition, schema: Schema) -> dict[str, tuple[float, float]]:
    """On a worker: (min, max) of each numeric column's non-null values in one partition
    (inf, −inf when it has none) — two numbers per column, never a record."""
    cols = list(schema.numeric)
    if not cols:
        return {}
    frame = normalise_frame(read_partition(part, cols), schema.subset(cols))
    out = {}
    for col in cols:
        v = frame.get_column(col).to_numpy().astype(np.float64, copy=False)
        v = v[~np.isnan(v)]
        out[col] = (float(v.min()), float(v.max())) if v.size else (np.inf, -np.inf)
    return out


def _rows(schema: Schema, part: Partition, keep: np.ndarray | None):
    """One partition's normalised records (its rows ``keep``, global positions; None: all)."""
    frame = read_partition(part, schema.columns)
    if keep is not None:
        frame = frame[keep - part.start]
    return normalise_frame(frame, schema)


def box_pair_task(
    schema: Schema,
    tolerances: Mapping[str, float],
    qpart: Partition,
    q_keep: np.ndarray | None,
    tpart: Partition,
    t_keep: np.ndarray | None,
    exclude_self: bool,
    threads: int,
) -> np.ndarray:
    """On a worker: for ``qpart``'s rows ``q_keep``, whether some row ``t_keep`` of ``tpart``
    (global positions; None: all) lies within one box unit. ``exclude_self``: the query and
    target partitions are of one role and a record's own row never counts."""
    q_ids = np.arange(qpart.start, qpart.stop, dtype=np.int64) if q_keep is None else q_keep
    query = _rows(schema, qpart, q_keep)
    return box_block_task(schema, tolerances, query, q_ids, tpart, t_keep, exclude_self, threads)


def box_block_task(
    schema: Schema,
    tolerances: Mapping[str, float],
    query: pl.DataFrame,
    q_ids: np.ndarray,
    tpart: Partition,
    t_keep: np.ndarray | None,
    exclude_self: bool,
    threads: int,
) -> np.ndarray:
    """On a worker: for the normalised ``query`` records (global positions ``q_ids``), whether
    some row ``t_keep`` of ``tpart`` lies within one box unit — the pair's coordinates built by
    the local code, then the local k-d tree box query."""
    from ..threads import limited

    frames = {"query": query, "target": _rows(schema, tpart, t_keep)}
    coords: dict[str, list[np.ndarray]] = {"query": [], "target": []}
    group = None
    for col in schema.columns:
        group = fold_box_column(frames, col, schema.kind(col), tolerances.get(col), coords, group)
    m = box_matrices(coords, group, {r: f.height for r, f in frames.items()})
    del frames, coords, group
    self_rows = None
    if exclude_self:
        t_ids = np.arange(tpart.start, tpart.stop, dtype=np.int64) if t_keep is None else t_keep
        pos = np.minimum(np.searchsorted(t_ids, q_ids), t_ids.size - 1)
        self_rows = np.where(t_ids[pos] == q_ids, pos, -1)
    with limited(threads):
        if self_rows is None:
            return any_within_box(m["query"], m["target"], 1.0)
        return any_within_box(m["query"], m["target"], 1.0, self_rows=self_rows)


def stack_task(*frames: pl.DataFrame) -> pl.DataFrame:
    """On a worker: the pieces of a chosen query set, one block (sent to every target task)."""
    return pl.concat(frames)


def any_task(*flags: np.ndarray) -> np.ndarray:
    """On a worker: one query partition's flags, hit in some target partition."""
    return np.logical_or.reduce(flags) if flags else np.zeros(0, dtype=bool)


class ShardedBoxQuery:
    """hitting_rate's box queries of a sharded evaluation (module docstring): the same questions
    as :class:`privgate.box_query.BoxQuery`, asked of the records in their partitions."""

    def __init__(
        self, search: Any, views: Mapping[str, View], tolerance_divisor: float, shared: dict, searches: dict
    ) -> None:
        self.search = search
        self.views = views
        self.searches = searches  # each query reported by name, as the context's searches are
        inputs = search.inputs
        if "box_ranges" not in shared:  # the real records' ranges: one task per real partition
            found = search.client.gather(
                [search.client.submit(range_task, p, inputs.schema, pure=False) for p in inputs.parts["real"]]
            )
            shared["box_ranges"] = {
                c: (min(f[c][0] for f in found), max(f[c][1] for f in found)) for c in inputs.schema.numeric
            }
        self.tolerances = {c: tolerance_of(lo, hi, tolerance_divisor) for c, (lo, hi) in shared["box_ranges"].items()}

    def hits(
        self,
        query_rows: np.ndarray | None,
        target: str,
        target_rows: np.ndarray | None = None,
        *,
        exclude_self: bool = False,
        name: str,
    ) -> np.ndarray:
        """:meth:`privgate.box_query.BoxQuery.hits`: for each real record ``query_rows`` (None:
        every one), whether some ``target`` record of ``target_rows`` (positions in that role's
        view; None: all) hits it; ``exclude_self``: a real record's own row never counts."""
        query, tview = self.views["real"], self.views[target]
        q_glob = query.globals_of(query_rows)
        n = q_glob.size if q_glob is not None else query.size(self.search.inputs)
        order = None
        if q_glob is not None and np.any(np.diff(q_glob) < 0):
            order = np.argsort(q_glob, kind="stable")
            q_glob = q_glob[order]
        t_glob = tview.globals_of(None if target_rows is None else np.asarray(target_rows, dtype=np.int64))
        if t_glob is not None:
            t_glob = np.sort(t_glob)  # a set of target records: its order does not matter
        if q_glob is not None and query.keep is None and np.array_equal(q_glob, np.arange(n)):
            q_glob = None  # every real record: by pairs of partitions, never one block
        targets = [(tp, _inside(tp, t_glob)) for tp in self.search.inputs.parts[tview.role]]
        targets = [(tp, tk) for tp, tk in targets if tk is None or tk.size]
        how = "per query and target partition, OR-combined"
        if not targets:  # no target record: none is hit
            flags = np.zeros(n, dtype=bool)
        elif q_glob is not None and q_glob.size <= BROADCAST_QUERIES:
            flags = self._broadcast(query, q_glob, targets, exclude_self)
            how = "per target partition against one block of the chosen query records, OR-combined"
        else:
            flags = self._pairs(query, q_glob, targets, exclude_self)
        if flags.size != n:
            raise RuntimeError(f"a sharded box query returned {flags.size} flags for {n} queries")
        if order is not None:
            back = np.empty_like(flags)
            back[order] = flags
            flags = back
        self.searches[name] = {
            "exact": True,
            "method": f"sharded k-d tree box query (Dask): {how}",
            "n_query": int(n),
            "n_target": int(t_glob.size if t_glob is not None else tview.size(self.search.inputs)),
        }
        return flags

    def _broadcast(self, query: View, q_glob: np.ndarray, targets: list, exclude_self: bool) -> np.ndarray:
        """A chosen query set (a sample): its rows read by their partitions' workers and stacked
        on a worker into one block, sent to one task per target partition; OR-merged there."""
        s, schema = self.search, self.search.inputs.schema
        pieces = [
            s.client.submit(_rows, schema, qp, _inside(qp, q_glob), pure=False)
            for qp in s.inputs.parts[query.role]
            if _inside(qp, q_glob).size
        ]
        block = s.client.submit(stack_task, *pieces, pure=False)
        tasks = [
            s.client.submit(
                box_block_task, schema, self.tolerances, block, q_glob, tp, tk, exclude_self, s.threads, pure=False
            )
            for tp, tk in targets
        ]
        s.tasks += len(tasks)
        return s.client.submit(any_task, *tasks, pure=False).result()

    def _pairs(self, query: View, q_glob: np.ndarray | None, targets: list, exclude_self: bool) -> np.ndarray:
        """Every real record (or a query set too large for one block): one task per (query
        partition, target partition), OR-merged per query partition on a worker; the flags in
        query order."""
        s, schema = self.search, self.search.inputs.schema
        merged = []
        for qp in s.inputs.parts[query.role]:
            qk = _inside(qp, q_glob)
            if qk is not None and qk.size == 0:
                continue
            pair = [
                s.client.submit(
                    box_pair_task, schema, self.tolerances, qp, qk, tp, tk, exclude_self, s.threads, pure=False
                )
                for tp, tk in targets
            ]
            s.tasks += len(pair)
            merged.append(s.client.submit(any_task, *pair, pure=False))
        done = s.client.gather(merged)
        return np.concatenate(done) if done else np.zeros(0, dtype=bool)
