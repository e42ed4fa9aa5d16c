"""The float64 decision every path ends with: exact distances of candidate pairs, ties within
the tolerance of :mod:`privgate.ties` snapped to the row minimum (then broken by the lowest
index), and the query's own row dropped from a candidate list."""

from __future__ import annotations

import numpy as np

from ..ties import REL_TOL
from .settings import SearchSettings, resolve


def snap_ties(d: np.ndarray, rowmin: np.ndarray) -> np.ndarray:
    """Distances within the tolerance of their row's minimum are set to that minimum, so ties at
    the nearest distance are broken by index."""
    tol = REL_TOL * (1.0 + np.maximum(np.abs(d), np.abs(rowmin)))
    return np.where(d - rowmin <= tol, rowmin, d)


def distances_of_pairs(
    q: np.ndarray, t: np.ndarray, qi: np.ndarray, ti: np.ndarray, settings: SearchSettings
) -> np.ndarray:
    """Exact float64 Euclidean distances of the pairs (q[qi], t[ti]) from coordinate differences
    (in chunks of ``settings.pair_chunk_bytes``; the chunking changes no bit). Float32
    coordinates (compact spaces) are differenced in float64."""
    d = q.shape[1]
    out = np.empty(qi.size, dtype=np.float64)
    chunk = max(1024, settings.pair_chunk_bytes // (8 * max(d, 1)))
    for s in range(0, qi.size, chunk):
        e = min(qi.size, s + chunk)
        # np.take: a row gather ~2× faster than fancy indexing; float32 coordinates in float64
        diff = np.take(q, qi[s:e], axis=0).astype(np.float64, copy=False)
        np.subtract(diff, np.take(t, ti[s:e], axis=0), out=diff)
        out[s:e] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return out


def pair_distances(a: np.ndarray, b: np.ndarray, settings: SearchSettings | None = None) -> np.ndarray:
    """Exact float64 distances between row i of ``a`` and row i of ``b``."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    idx = np.arange(a.shape[0])
    return distances_of_pairs(a, b, idx, idx, resolve(settings))


def drop_self(rows: np.ndarray, idx: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Candidate lists of a search of a set against itself, one column narrower: per row i of
    ``idx`` the entry equal to ``rows[i]`` (the query's own row) is removed, or the last entry
    when the row is not listed; ``values`` (the candidates' distances) lose the same entries.
    The order of the others is kept. Returns (idx, *values)."""
    n, width = idx.shape
    is_self = idx == rows[:, None]
    drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), width - 1)
    keep = np.ones_like(is_self)
    keep[np.arange(n), drop] = False
    return tuple(a[keep].reshape(n, width - 1) for a in (idx, *values))


def order_rows(d64: np.ndarray, idx: np.ndarray, k: int, unset: np.ndarray | None = None) -> np.ndarray:
    """Per row of (rows, width) candidate distances ``d64`` and indices ``idx``: the positions of
    the k nearest, ties within the tolerance of the row minimum broken by the lowest index.
    ``unset``: entries that are no candidate (they sort last)."""
    key = snap_ties(d64, d64.min(axis=1)[:, None])
    if unset is not None:
        key[unset] = np.inf  # (an infinite distance would snap to any finite minimum)
    return np.lexsort((idx, key), axis=-1)[:, :k]


def take_sorted(
    cr: np.ndarray,
    cc: np.ndarray,
    d64: np.ndarray,
    *,
    n_rows: int,
    k: int,
    out_d: np.ndarray,
    out_i: np.ndarray,
    rows: np.ndarray | None = None,
) -> None:
    """The k nearest of candidate pairs (row ``cr``, target ``cc``, distance ``d64``) of
    ``n_rows`` rows, ordered by row, then exact distance with tolerant ties snapped to the row
    minimum, then index; written to ``out_d`` / ``out_i`` at ``rows`` (default: every row, each
    of which has at least k candidates)."""
    rowmin = np.full(n_rows, np.inf)
    np.minimum.at(rowmin, cr, d64)
    key = snap_ties(d64, rowmin[cr])
    order = np.lexsort((cc, key, cr))
    cr, cc, d64 = cr[order], cc[order], d64[order]
    rows = np.arange(n_rows) if rows is None else rows
    first = np.searchsorted(cr, rows, side="left")
    take = first[:, None] + np.arange(k)[None, :]
    out_i[rows] = cc[take]
    out_d[rows] = d64[take]
