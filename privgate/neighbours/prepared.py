"""The matrices an exact search prepares once and every screen reads: float32 query and target
rows (centred on the target mean unless already float32), their squared norms and the constant
of the float32 error bound |float32 d² − exact d²| ≤ c·(‖q‖² + ‖t‖²) (Higham 2002, "Accuracy and
Stability of Numerical Algorithms", §3.1, for inner products in floating point).

Below :mod:`.exact` (whose :class:`~.exact.ExactSearch` is a :class:`PreparedSearch` with the
blocked path added) and the screens it calls, :mod:`.screened` and :mod:`.ivf_lists`, which read
these matrices without importing the exact search back.
"""

from __future__ import annotations

import numpy as np

from ..ties import REL_TOL
from .backends import faiss_module
from .memo import target_prep
from .problem import Problem

EPS32 = float(np.finfo(np.float32).eps)


#: One-hot columns are reduced (:func:`one_hot_reduction`) in spaces of at most this many
#: coordinates: the change of basis is one float64 GEMM with a d × d' matrix, and a wider space's
#: columns have many levels each, so dropping one coordinate per column saves little.
REDUCE_MAX_DIM = 512


class PreparedSearch:
    """The prepared matrices of an exact search of ``problem`` (see the module docstring);
    ``use_faiss``: whether faiss' flat screen may be used (and faiss is installed);
    ``categorical_slices``: the one-hot ranges of a mixed space, whose float32 copies then drop
    one coordinate per column (:func:`one_hot_reduction`); ``rows``: the query rows the search
    will read (None: all) — only those get float32 copies (the others stay unset)."""

    def __init__(
        self,
        problem: Problem,
        use_faiss: bool = True,
        categorical_slices: list[tuple[int, int]] | None = None,
        rows: np.ndarray | None = None,
    ) -> None:
        q, t, settings = problem.q, problem.t, problem.settings
        prep = target_prep(t, settings, problem.memo)
        reduce = t.dtype != np.float32 and q.shape[1] <= REDUCE_MAX_DIM
        reduced = reducible_columns(q, t, categorical_slices) if reduce else ()
        basis = one_hot_reduction(q.shape[1], reduced)
        if prep is not None and "exact" in prep and prep["exact"][3] == reduced:
            centre, t32, tn, _ = prep["exact"]
            t32 = t if t32 is None else t32
        else:
            centre, t32 = _centred32(t, basis)
            tn = np.einsum("ij,ij->i", t32, t32, dtype=np.float32)
            if prep is not None:  # never the matrix itself: the entry must not keep it alive
                prep["exact"] = (centre, None if t32 is t else t32, tn, reduced)
        self.problem, self.settings = problem, settings
        self.slices = list(categorical_slices or [])
        self.q, self.t, self.k, self.exclude_self = q, t, problem.k, problem.exclude_self
        # the one-hot columns the float32 copies reduced: part of the key of anything built
        # from them and kept for other searches of the same target (the IVF lists)
        self.reduced = reduced
        if centre is None:
            self.q32 = q
            self.qn = np.einsum("ij,ij->i", q, q, dtype=np.float32)
        elif q is t:  # a set searched against itself: one float32 copy
            self.q32, self.qn = t32, tn
        elif rows is None or rows.size == q.shape[0]:
            self.q32 = _rows32(q, centre, basis)
            self.qn = np.einsum("ij,ij->i", self.q32, self.q32, dtype=np.float32)
        else:
            self.q32 = np.zeros((q.shape[0], t32.shape[1]), dtype=np.float32)
            self.qn = np.zeros(q.shape[0], dtype=np.float32)
            part = _rows32(q[rows], centre, basis)
            self.q32[rows] = part
            self.qn[rows] = np.einsum("ij,ij->i", part, part, dtype=np.float32)
        self.t32, self.tn = t32, tn
        # a bound on |float32 d² − exact d²| for a pair (i, j): c·(‖q_i‖² + ‖t_j‖²)
        self.c = np.float32(4.0 * (q.shape[1] + 8) * EPS32)
        self.ctn = self.c * tn
        self.block_bytes = settings.block_bytes
        self.use_faiss = use_faiss and faiss_module() is not None

    def kth_upper(self, d2: np.ndarray, idx: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
        """Per query row of ``rows``, an upper bound of its k-th smallest exact d² from its first
        ``k`` candidates ``idx`` (valid target indices) and their float32 squared distances
        ``d2`` (float64 array, ‖q‖² included): the largest float32 value plus the error bound,
        widened by the tie margin (a target beyond it is beyond the k-th and its ties). The
        flat screen settles a row by it, and the category-tile screen prunes by it."""
        qn64 = self.qn[rows].astype(np.float64)
        upper = (d2[:, :k] + self.c * (qn64[:, None] + self.tn[idx[:, :k]].astype(np.float64))).max(axis=1)
        return upper * (1 + 4 * REL_TOL) + 4 * REL_TOL


def _centred32(t: np.ndarray, basis: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray]:
    """(centre, float32 target rows minus it, in the coordinates of ``basis``
    (:func:`one_hot_reduction`) when given). Float32 targets (compact spaces) are used as they
    are, uncentred (centre None): a centred copy would double them, and the error bound holds for
    any centre (centring only tightens it); their float32 products then carry no rounding of the
    coordinates at all."""
    if t.dtype == np.float32:
        return None, t
    centre = t.mean(axis=0)
    return centre, _rows32(t, centre, basis)


def _rows32(x: np.ndarray, centre: np.ndarray, basis: np.ndarray | None) -> np.ndarray:
    """float32 rows of ``x`` − ``centre``, in the coordinates of ``basis`` (columns) when given."""
    x = x - centre
    if basis is not None:
        x = x @ basis
    return np.ascontiguousarray(x.astype(np.float32))


def reducible_columns(q: np.ndarray, t: np.ndarray, slices: list[tuple[int, int]] | None) -> tuple:
    """The one-hot columns ((start, stop) ranges) of at least two levels whose rows, in ``q`` and
    ``t``, all sum to one value (one level set, at one scale): :func:`one_hot_reduction` can drop
    a coordinate of each. A column with a row of zeros is not one of them."""
    wide = [(int(a), int(b)) for a, b in (slices or []) if b - a >= 2]
    if not wide or not (q.shape[0] and t.shape[0]):
        return ()
    lows, highs = [], []
    for x in (q,) if q is t else (q, t):
        sums = np.stack([x[:, a:b].sum(axis=1) for a, b in wide], axis=1)
        lows.append(sums.min(axis=0))
        highs.append(sums.max(axis=0))
    return tuple(w for w, ok in zip(wide, np.minimum.reduce(lows) == np.maximum.reduce(highs)) if ok)


def one_hot_reduction(d: int, reduced: tuple) -> np.ndarray | None:
    """An orthonormal basis (d × d' columns) with one coordinate fewer per column of ``reduced``
    (:func:`reducible_columns`) that keeps every distance between their rows, or None when
    ``reduced`` is empty.

    A one-hot column of L levels whose rows all sum to the same value has differences orthogonal
    to the all-ones vector of its L coordinates: they lie in an (L − 1)-dimensional subspace, and
    their coordinates in an orthonormal basis of it (Helmert's contrasts) keep every length. The
    flat screen's GEMM then runs on one coordinate fewer per column (the mixed space of 11
    columns, 95 → 84: about 10 % of the screen's time). Its float32 error bound is that of the
    new coordinates (their norms) plus the float64 rounding of the change of basis, ~d·1e-16
    relative, far inside the bound's margins; the answers are decided in float64 on the original
    coordinates, so they do not change."""
    if not reduced:
        return None
    inside = np.zeros(d, dtype=bool)
    for a, b in reduced:
        inside[a:b] = True
    kept = np.flatnonzero(~inside)
    basis = np.zeros((d, d - len(reduced)))
    basis[kept, np.arange(kept.size)] = 1.0  # coordinates outside the reduced columns as they are
    col = kept.size
    for a, b in reduced:
        basis[a:b, col : col + b - a - 1] = _helmert(b - a)
        col += b - a - 1
    return basis


def _helmert(n: int) -> np.ndarray:
    """n × (n − 1) orthonormal columns orthogonal to the all-ones vector (Helmert's contrasts:
    column j is (1, …, 1, −j, 0, …) / √(j(j + 1)), with j ones)."""
    j = np.arange(1, n, dtype=np.float64)
    h = np.triu(np.ones((n, n - 1)))  # row i, column j − 1: 1 where i < j
    h[np.arange(1, n), np.arange(n - 1)] = -j  # row j, column j − 1: −j
    return h / np.sqrt(j * (j + 1.0))
