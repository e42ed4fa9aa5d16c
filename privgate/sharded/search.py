"""Exact k-nearest-neighbour searches sharded over a Dask cluster.

A search of query records (a role's records, or the rows of a sample drawn once on the caller
and sent with the tasks as row positions) against a role's target records is one task per
(query partition, target partition) pair: the worker reads and encodes both partitions (only the
rows asked for), and returns the k nearest targets of its query rows in its target partition
with their global positions (:func:`privgate.sharded.kernel.block_knn`); one task per query
partition merges them exactly (:func:`~privgate.sharded.kernel.merge_lists`). So a worker holds
two partitions and a screening block at a time, never a table; the caller receives k distances
and positions per query row. A worker lost mid-search loses the tasks it held; the scheduler
makes them again elsewhere (they are pure functions of their arguments), and the answer is the
same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .encode import Inputs, encode_rows
from .kernel import block_knn, engine_knn, merge_lists
from .partitions import Partition

__all__ = ["ShardedSearch", "View", "pair_task"]


@dataclass(frozen=True)
class View:
    """A role's records as a metric sees them: ``role``'s partitions, only the rows ``keep``
    (sorted global positions; None: all) — a holdout baseline's holdout sample is one."""

    role: str
    keep: np.ndarray | None = None

    def size(self, inputs: Inputs) -> int:
        return int(self.keep.size) if self.keep is not None else sum(p.rows for p in inputs.parts[self.role])

    def globals_of(self, rows: np.ndarray | None) -> np.ndarray | None:
        """Global positions of the view's rows ``rows`` (None: every row of the view)."""
        if rows is None:
            return self.keep
        rows = np.asarray(rows, dtype=np.int64)
        return rows if self.keep is None else self.keep[rows]

    def sub(self, rows: np.ndarray) -> View:
        """The view of these rows of this view (sorted positions)."""
        return View(self.role, self.globals_of(np.asarray(rows, dtype=np.int64)))


def _inside(part: Partition, keep: np.ndarray | None) -> np.ndarray | None:
    return None if keep is None else keep[(keep >= part.start) & (keep < part.stop)]


def pair_task(
    inputs: Inputs,
    space: tuple,
    qpart: Partition,
    q_keep: np.ndarray | None,
    tpart: Partition,
    t_keep: np.ndarray | None,
    k: int,
    exclude_self: bool,
    q_exclude: np.ndarray | None,
    t_labels: np.ndarray | None,
    threads: int,
    q_mapped: dict | None = None,
    t_mapped: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """On a worker: the k nearest of ``tpart``'s rows ``t_keep`` for ``qpart``'s rows ``q_keep``
    (global positions; None: all) in ``space`` (``q_mapped``, ``t_mapped``: each partition's
    mapped columns in a label-free view, :func:`privgate.sharded.encode.read_rows`)."""
    q, q_ids = encode_rows(inputs, space, qpart, q_keep, q_mapped)
    return block_task(inputs, space, q, q_ids, tpart, t_keep, k, exclude_self, q_exclude, t_labels, threads, t_mapped)


def encode_task(
    inputs: Inputs, space: tuple, part: Partition, keep: np.ndarray | None, mapped: dict | None = None
) -> np.ndarray:
    """On a worker: the encoded rows ``keep`` of one partition (a piece of a broadcast query block;
    ``mapped``: as :func:`privgate.sharded.encode.read_rows`)."""
    return encode_rows(inputs, space, part, keep, mapped)[0]


def block_task(
    inputs: Inputs,
    space: tuple,
    query: np.ndarray,
    q_ids: np.ndarray,
    tpart: Partition,
    t_keep: np.ndarray | None,
    k: int,
    exclude_self: bool,
    q_exclude: np.ndarray | None,
    t_labels: np.ndarray | None,
    threads: int,
    t_mapped: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """On a worker: the k nearest of ``tpart``'s rows ``t_keep`` for a broadcast block of encoded
    query rows (global positions ``q_ids``; ``t_mapped``: as :func:`privgate.sharded.encode.read_rows`)."""
    from ..threads import blas_limited

    t, t_ids = encode_rows(inputs, space, tpart, t_keep, t_mapped)
    coded, slices = inputs.layout(space)
    with blas_limited(threads):
        if q_exclude is None:
            return engine_knn(
                query, q_ids, t, t_ids, k, coded=coded, categorical_slices=slices, exclude_self=exclude_self
            )
        return block_knn(
            query,
            q_ids,
            t,
            t_ids,
            k,
            coded=coded,
            exclude_self=exclude_self,
            query_exclude=q_exclude,
            target_labels=t_labels,
        )


def merge_task(k: int, *lists: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """On a worker: the exact merge of one query partition's partial lists."""
    return merge_lists(lists, k)


#: a query set of at most this many chosen rows (a sample, the rows a jackknife searches again) is
#: encoded once and broadcast to one task per target partition, instead of one task per pair of
#: partitions (each of which would encode and prepare its target partition again)
BROADCAST_QUERIES = 50_000


class ShardedSearch:
    """The searches of one sharded evaluation: its client, its inputs (sent to the cluster once)
    and the threads each task may use."""

    def __init__(self, client: Any, inputs: Inputs, threads: int = 1, mapped: dict | None = None) -> None:
        self.client = client
        self.inputs = inputs
        self.threads = threads
        #: role → partition start → the future of that partition's mapped columns in a label-free
        #: view (:class:`privgate.sharded.encode.MappedColumns`), held here and given to every
        #: task that reads the partition as a dependency
        self.mapped: dict[str, dict[int, Any]] = dict(mapped or {})
        self.sent = client.scatter(inputs, broadcast=True, hash=False)
        self.tasks = 0
        #: space key → the projection its tasks encode with (sent to every worker once)
        self.projections: dict[tuple, Any] = {}

    def held(self, part: Partition) -> Any:
        """The future of ``part``'s mapped columns (None: the partition is read as it is)."""
        return self.mapped.get(part.role, {}).get(part.start)

    def add_projection(self, space: tuple, projection: Any) -> None:
        """Search ``space`` (a key such as ("famd", 2)) as ``projection``'s coordinates: an object
        fitted on the caller whose ``encode(frame)`` each task applies to its partition's rows
        (:func:`privgate.sharded.encode.encode_rows`)."""
        self.projections[space] = self.client.scatter(projection, broadcast=True, hash=False)

    def knn(
        self,
        space: tuple,
        query: View,
        rows: np.ndarray | None,
        target: View,
        target_rows: np.ndarray | None,
        k: int,
        *,
        exclude_self: bool = False,
        exclude: np.ndarray | None = None,
        labels: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(n, k) distances and indices of the k nearest ``target`` records (positions within the
        view, or within ``target_rows`` when given) of ``query``'s rows ``rows`` (None: all), in
        that order. ``exclude_self``: query and target are one set and a record never lists
        itself. ``exclude`` (per query row) and ``labels`` (per target position of the view):
        a target whose label is the query's excluded one is never listed."""
        q_glob = query.globals_of(rows)
        n = q_glob.size if q_glob is not None else query.size(self.inputs)
        q_order = None
        if q_glob is not None and np.any(np.diff(q_glob) < 0):
            q_order = np.argsort(q_glob, kind="stable")
            q_glob = q_glob[q_order]
            exclude = exclude[q_order] if exclude is not None else None
        t_sel = None if target_rows is None else np.asarray(target_rows, dtype=np.int64)
        t_glob = target.globals_of(t_sel)
        t_order = None
        if t_glob is not None and np.any(np.diff(t_glob) < 0):
            t_order = np.argsort(t_glob, kind="stable")
            t_glob = t_glob[t_order]
        lab_glob = None
        if labels is not None:  # labels by global target position
            base = target.globals_of(None)
            size = sum(p.rows for p in self.inputs.parts[target.role])
            lab_glob = np.full(size, -1, dtype=np.int64)
            lab_glob[base if base is not None else np.arange(size)] = labels
        space = self.projections.get(space, space)
        if q_glob is not None and q_glob.size <= BROADCAST_QUERIES:
            dist, idx = self._broadcast(space, query, q_glob, target, t_glob, k, exclude_self, exclude, lab_glob)
        else:
            dist, idx = self._pairs(space, query, q_glob, target, t_glob, k, exclude_self, exclude, lab_glob)
        if dist.shape[0] != n:
            raise RuntimeError(f"a sharded search returned {dist.shape[0]} rows for {n} queries")
        if q_order is not None:
            back = np.empty_like(q_order)
            back[q_order] = np.arange(q_order.size)
            dist, idx = dist[back], idx[back]
        return dist, _positions(idx, t_glob, t_order)

    def _targets(self, target: View, t_glob: np.ndarray | None, lab_glob: np.ndarray | None):
        """(target partition, its rows searched, their labels) for every partition with some."""
        for tp in self.inputs.parts[target.role]:
            tk = _inside(tp, t_glob)
            if tk is not None and tk.size == 0:
                continue
            t_lab = None
            if lab_glob is not None:
                t_lab = lab_glob[tk] if tk is not None else lab_glob[tp.start : tp.stop]
            yield tp, tk, t_lab

    def _broadcast(self, space, query, q_glob, target, t_glob, k, exclude_self, exclude, lab_glob):
        """A chosen query set: encoded by its partitions' workers, sent to every target
        partition's task as one block, the partial lists merged."""
        pieces = [
            self.client.submit(encode_task, self.sent, space, qp, _inside(qp, q_glob), self.held(qp), pure=False)
            for qp in self.inputs.parts[query.role]
            if _inside(qp, q_glob).size
        ]
        block = np.vstack(self.client.gather(pieces)) if pieces else None
        if block is None:
            return np.empty((0, k)), np.empty((0, k), dtype=np.int64)
        sent = self.client.scatter(block, broadcast=True, hash=False)
        tasks = [
            self.client.submit(
                block_task,
                self.sent,
                space,
                sent,
                q_glob,
                tp,
                tk,
                k,
                exclude_self,
                exclude,
                t_lab,
                self.threads,
                self.held(tp),
                pure=False,
            )
            for tp, tk, t_lab in self._targets(target, t_glob, lab_glob)
        ]
        self.tasks += len(tasks)
        return self.client.submit(merge_task, k, *tasks, pure=False).result()

    def _pairs(self, space, query, q_glob, target, t_glob, k, exclude_self, exclude, lab_glob):
        """Every query record: one task per (query partition, target partition), merged per
        query partition."""
        parts_d, parts_i = [], []
        merged = []
        for qp in self.inputs.parts[query.role]:
            qk = _inside(qp, q_glob)
            if qk is not None and qk.size == 0:
                continue
            q_excl = None
            if exclude is not None:
                lo = 0 if q_glob is None else np.searchsorted(q_glob, qp.start)
                q_excl = exclude[lo : lo + (qk.size if qk is not None else qp.rows)]
            pair = []
            for tp, tk, t_lab in self._targets(target, t_glob, lab_glob):
                pair.append(
                    self.client.submit(
                        pair_task,
                        self.sent,
                        space,
                        qp,
                        qk,
                        tp,
                        tk,
                        k,
                        exclude_self,
                        q_excl,
                        t_lab,
                        self.threads,
                        self.held(qp),
                        self.held(tp),
                        pure=False,
                    )
                )
            self.tasks += len(pair)
            merged.append(self.client.submit(merge_task, k, *pair, pure=False))
        for d, i in self.client.gather(merged):
            parts_d.append(d)
            parts_i.append(i)
        dist = np.concatenate(parts_d) if parts_d else np.empty((0, k))
        idx = np.concatenate(parts_i) if parts_i else np.empty((0, k), dtype=np.int64)
        return dist, idx


def _positions(idx: np.ndarray, t_glob: np.ndarray | None, t_order: np.ndarray | None) -> np.ndarray:
    """Global target positions → positions within the searched target rows (−1 kept)."""
    if t_glob is None:
        return idx
    pos = np.searchsorted(t_glob, np.where(idx < 0, 0, idx))
    if t_order is not None:
        pos = t_order[np.minimum(pos, t_order.size - 1)]
    return np.where(idx < 0, -1, pos)
