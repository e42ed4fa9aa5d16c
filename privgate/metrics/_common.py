"""The neighbour lists a grouped jackknife reads: how many neighbours a search asks for when a
jackknife will delete groups of its targets, and the nearest target outside each deleted group
(:mod:`privgate.metrics.intervals` attaches the jackknife's interval).
"""

from __future__ import annotations

import numpy as np

from ..neighbours import Neighbours, knn, knn_rows

# neighbours a search returns when a jackknife will delete groups of its target records: the
# nearest target outside a deleted group is among the first JACKKNIFE_K unless all of them are in
# that group (probability about 1/G^JACKKNIFE_K per row; those rows are searched again)
JACKKNIFE_K = 3
# neighbours of the second, batched search for the rows whose JACKKNIFE_K were all deleted
REFILL_K = 16


def search_k(labels: np.ndarray | None) -> int:
    """How many neighbours to ask the engine for: ``JACKKNIFE_K`` when a jackknife will delete
    groups of the search's targets, else 1."""
    return 1 if labels is None else JACKKNIFE_K


def nearest_outside_groups(nb: Neighbours, labels: np.ndarray, query: np.ndarray, target: np.ndarray, *,
                           same: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per deleted group g and query row, the nearest target row whose label is not g: (G, n)
    distances and target indices. Read from the search's sorted neighbour lists (ties already by
    lowest index). Rows whose listed neighbours all lie in some group are searched once more,
    all together, for ``REFILL_K`` neighbours (one search, whatever the number of groups); a
    (row, group) pair still without a neighbour outside the group is searched exactly among the
    targets left (``knn``, same tie rule). ``same``: query and target are one set (a real → real
    search): a query in group g is itself deleted, its entry in row g is NaN / −1.
    The loops run over the G ≤ 50 groups, not over records."""
    labels = np.asarray(labels)
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
        if same:
            own = labels == g
            dist[g, own], idx[g, own] = np.nan, -1
            redo &= ~own
        todo = np.flatnonzero(redo)
        miss_rows.append(todo)
        miss_groups.append(np.full(todo.size, g))
    mr, mg = np.concatenate(miss_rows), np.concatenate(miss_groups)
    if mr.size:
        need = np.unique(mr)
        available = target.shape[0] - (1 if same else 0)
        k = min(available, REFILL_K)
        more = knn_rows(target, need, k) if same else knn(query[need], target, k)
        pos = np.searchsorted(need, mr)
        ok = labels[more.idx[pos]] != mg[:, None]
        first = ok.argmax(axis=1)
        found = ok[np.arange(mr.size), first]
        dist[mg[found], mr[found]] = more.dist[pos[found], first[found]]
        idx[mg[found], mr[found]] = more.idx[pos[found], first[found]]
        for g in np.unique(mg[~found]):  # every one of the REFILL_K nearest is in group g: rare
            todo = mr[~found & (mg == g)]
            keep = np.flatnonzero(labels != g)
            kk = 2 if same else 1
            if keep.size < kk:
                raise ValueError(f"a jackknife group leaves {keep.size} target rows; at least {kk} are needed")
            got = knn(query[todo], target[keep], kk)
            cand = keep[got.idx]
            col = (cand[:, 0] == todo).astype(np.int64) if same else np.zeros(todo.size, dtype=np.int64)
            dist[g, todo] = got.dist[np.arange(todo.size), col]
            idx[g, todo] = cand[np.arange(todo.size), col]
    return dist, idx
