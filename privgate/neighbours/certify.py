"""Which rows of an IVF screen are provably right: a per-row certificate from the lists' geometry.

A row's screened k-th distance D is exact when no target of a list it did not probe can be within
D. Every target of list L lies (1) within the list's radius r_L of its centroid c_L, so it is at
least ‖q − c_L‖ − r_L from the query q (triangle inequality), and (2) on c_L's side of the
bisector between c_L and any other centroid c_j up to the float32 error of the assignment ε_L
(‖t − c_L‖² ≤ ‖t − c_j‖² + ε_L), so it is at least (‖q − c_L‖² − ‖q − c_j‖² − ε_L) / (2‖c_L − c_j‖)
from q (the distance to that half-space; c_j: q's nearest centroid). A row is certified when
both bounds' larger one exceeds D beyond the tie tolerance for every list it did not probe; the
others are the rows the screen may have wrong. The bounds are computed in float64 from the
float32 coordinates the lists were built on, less the float32 rounding of those coordinates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..ties import REL_TOL

if TYPE_CHECKING:
    from .ivf_lists import Lists

EPS32 = float(np.finfo(np.float32).eps)


def _list_geometry(lists: "Lists") -> dict:
    """The centroids (float64), their squared norms and pairwise distances, each list's radius
    and assignment error ε_L — computed once per set of lists (kept with them)."""
    geo = lists.certificate
    if geo:
        return geo
    ex = lists.exact
    cent = lists.quantizer.reconstruct_n(0, lists.nlist).astype(np.float64)
    cn2 = np.einsum("ij,ij->i", cent, cent)
    radius = np.zeros(lists.nlist)
    tmax2 = np.zeros(lists.nlist)
    m = lists.members.size
    chunk = max(1024, ex.settings.pair_chunk_bytes // (8 * max(1, cent.shape[1])))
    for s in range(0, m, chunk):
        pos = np.arange(s, min(m, s + chunk))
        lst = np.searchsorted(lists.start, pos, side="right") - 1
        t = ex.t32[lists.members[pos]].astype(np.float64)
        diff = t - cent[lst]
        np.maximum.at(radius, lst, np.einsum("ij,ij->i", diff, diff))
        np.maximum.at(tmax2, lst, np.einsum("ij,ij->i", t, t))
    # faiss' float32 d² of a (target, centroid) pair is within c·(‖t‖² + ‖c‖²) of the exact one
    # (the engine's bound, :class:`.exact.ExactSearch`); the assignment compares two such values
    c = float(ex.c)
    eps = 2.0 * c * (2.0 * tmax2 + cn2 + cn2.max(initial=0.0)) * (1 + 1e-6)
    cc = np.sqrt(np.maximum(cn2[:, None] + cn2[None, :] - 2.0 * cent @ cent.T, 0.0))
    geo.update(
        cent=cent,
        cn2=cn2,
        radius=np.sqrt(radius) * (1 + 1e-9) + 1e-12,
        eps=eps,
        cc=cc,
        tmax=float(np.sqrt(tmax2.max(initial=0.0))),
        empty=np.diff(lists.start) == 0,
    )
    return geo


def uncertain_rows(lists: "Lists", rows: np.ndarray, probed: np.ndarray, kth: np.ndarray) -> np.ndarray:
    """Which of the screened query ``rows`` (their k-th distances ``kth``, the lists the screen
    probed for each, −1: none) the certificate cannot prove right: a boolean mask over ``rows``."""
    ex = lists.exact
    geo = _list_geometry(lists)
    cent, cn2, cc = geo["cent"], geo["cn2"], geo["cc"]
    out = np.zeros(rows.size, dtype=bool)
    block = max(1, ex.block_bytes // max(1, 8 * 4 * lists.nlist))
    for s in range(0, rows.size, block):
        sel = rows[s : s + block]
        q = ex.q32[sel].astype(np.float64)
        qn2 = np.einsum("ij,ij->i", q, q)
        d2 = qn2[:, None] + cn2[None, :] - 2.0 * (q @ cent.T)
        # float64 rounding of the expanded form, and the float32 rounding of q and t themselves
        d2_slack = 1e-12 * (qn2[:, None] + cn2[None, :] + 1.0)
        lo2 = np.maximum(d2 - d2_slack, 0.0)
        hi2 = d2 + d2_slack
        near = hi2.argmin(axis=1)
        r = np.arange(sel.size)
        ball = np.sqrt(lo2) - geo["radius"][None, :]
        gap = lo2 - hi2[r, near][:, None] - geo["eps"][None, :]
        sep = cc[near]  # ‖c_L − c_j‖ per (row, list)
        with np.errstate(divide="ignore", invalid="ignore"):
            half = np.where(sep > 0, gap / (2.0 * sep), -np.inf)
        bound = np.maximum(ball, half)
        bound -= 2.0 * EPS32 * (np.sqrt(qn2)[:, None] + geo["tmax"]) if ex.q32 is not ex.q else 0.0
        probe = probed[s : s + block]
        bound[np.repeat(r, probe.shape[1])[probe.ravel() >= 0], probe[probe >= 0]] = np.inf
        bound[:, geo["empty"]] = np.inf  # a list without targets holds no neighbour
        d = kth[s : s + block]
        out[s : s + block] = ~(bound.min(axis=1) > d + 2 * REL_TOL * (1.0 + np.abs(d)))
    return out
