"""The nearest neighbour outside a deleted group, for the grouped jackknife of the metrics'
intervals (:mod:`privgate.stats.jackknife`): read from the k-lists a search already returned,
with the few rows whose listed neighbours are all deleted searched again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .result import Neighbours
from .search import search_matrices
from .settings import SearchSettings, resolve


class MatrixSearch(Protocol):
    """A search of one matrix against another (:func:`.search.search_matrices`'s signature;
    the evaluation context's :meth:`~privgate.context.EvaluationContext.search` is one)."""

    def __call__(
        self,
        query: np.ndarray,
        target: np.ndarray,
        k: int = 1,
        *,
        exclude_self: bool = False,
        rows: np.ndarray | None = None,
    ) -> Neighbours: ...


def search_k(labels: np.ndarray | None, settings: SearchSettings | None = None) -> int:
    """How many neighbours to ask the engine for: ``settings.jackknife_k`` when a jackknife will
    delete groups of the search's targets, else 1."""
    return 1 if labels is None else resolve(settings).jackknife_k


def nearest_outside_groups(
    nb: Neighbours,
    labels: np.ndarray,
    query: np.ndarray,
    target: np.ndarray,
    *,
    same: bool,
    search: MatrixSearch = search_matrices,
    settings: SearchSettings | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per deleted group g and query row, the nearest target row whose label is not g: (G, n)
    distances and target indices. Read from the search's sorted neighbour lists (ties already by
    lowest index). Rows whose listed neighbours all lie in some group are searched once more,
    all together, for ``settings.refill_k`` neighbours (one search, whatever the number of
    groups); a (row, group) pair still without a neighbour outside the group is searched exactly
    among the targets left (same tie rule). ``same``: query and target are one set (a real → real
    search): a query in group g is itself deleted, its entry in row g is NaN / −1. ``search``
    makes those searches (default: the engine's exact search). The loops run over the G ≤ 50
    groups, not over records."""
    outside = _Outside(
        labels=np.asarray(labels), query=query, target=target, same=same, search=search, settings=resolve(settings)
    )
    return outside.from_lists(nb)


@dataclass(frozen=True)
class _Outside:
    """One look-up: the labels, the query and target matrices and how to search them again."""

    labels: np.ndarray
    query: np.ndarray
    target: np.ndarray
    same: bool
    search: MatrixSearch
    settings: SearchSettings

    def from_lists(self, nb: Neighbours) -> tuple[np.ndarray, np.ndarray]:
        """(G, n) distances and indices read from ``nb``'s lists; the pairs whose listed
        neighbours are all in the group are searched again (:meth:`refill`)."""
        labels = self.labels
        groups = int(labels.max()) + 1
        n = nb.idx.shape[0]
        rows = np.arange(n)
        dist = np.empty((groups, n))
        idx = np.empty((groups, n), dtype=np.int64)
        miss_rows, miss_groups = [], []
        lab_nb = labels[nb.idx]
        for g in range(groups):
            ok = lab_nb != g
            first = ok.argmax(axis=1)
            dist[g], idx[g] = nb.dist[rows, first], nb.idx[rows, first]
            redo = ~ok[rows, first]
            if self.same:
                own = labels == g
                dist[g, own], idx[g, own] = np.nan, -1
                redo &= ~own
            todo = np.flatnonzero(redo)
            miss_rows.append(todo)
            miss_groups.append(np.full(todo.size, g))
        mr, mg = np.concatenate(miss_rows), np.concatenate(miss_groups)
        if mr.size:
            self.refill(mr, mg, dist, idx)
        return dist, idx

    def refill(self, mr: np.ndarray, mg: np.ndarray, dist: np.ndarray, idx: np.ndarray) -> None:
        """Fill the (row ``mr``, group ``mg``) pairs whose listed neighbours were all in the
        group: one search of those rows for ``refill_k`` neighbours, then an exact search among
        the targets left for the pairs still without one (rare)."""
        labels, query, target, same = self.labels, self.query, self.target, self.same
        need = np.unique(mr)
        available = target.shape[0] - (1 if same else 0)
        more = self.search(
            target if same else query, target, min(available, self.settings.refill_k), exclude_self=same, rows=need
        )
        pos = np.searchsorted(need, mr)
        ok = labels[more.idx[pos]] != mg[:, None]
        first = ok.argmax(axis=1)
        found = ok[np.arange(mr.size), first]
        dist[mg[found], mr[found]] = more.dist[pos[found], first[found]]
        idx[mg[found], mr[found]] = more.idx[pos[found], first[found]]
        for g in np.unique(mg[~found]):  # every one of the refill_k nearest is in group g
            todo = mr[~found & (mg == g)]
            keep = np.flatnonzero(labels != g)
            kk = 2 if same else 1
            if keep.size < kk:
                raise ValueError(f"a jackknife group leaves {keep.size} target rows; at least {kk} are needed")
            got = self.search(query[todo], target[keep], kk)
            cand = keep[got.idx]
            col = (cand[:, 0] == todo).astype(np.int64) if same else np.zeros(todo.size, dtype=np.int64)
            dist[g, todo] = got.dist[np.arange(todo.size), col]
            idx[g, todo] = cand[np.arange(todo.size), col]
