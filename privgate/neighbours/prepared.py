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

from .backends import faiss_module
from .memo import target_prep
from .problem import Problem

EPS32 = float(np.finfo(np.float32).eps)


class PreparedSearch:
    """The prepared matrices of an exact search of ``problem`` (see the module docstring);
    ``use_faiss``: whether faiss' flat screen may be used (and faiss is installed)."""

    def __init__(self, problem: Problem, use_faiss: bool = True) -> None:
        q, t, settings = problem.q, problem.t, problem.settings
        prep = target_prep(t, settings)
        if prep is not None and "exact" in prep:
            centre, t32, tn = prep["exact"]
            t32 = t if t32 is None else t32
        else:
            centre, t32 = _centred32(t)
            tn = np.einsum("ij,ij->i", t32, t32, dtype=np.float32)
            if prep is not None:  # never the matrix itself: the entry must not keep it alive
                prep["exact"] = (centre, None if t32 is t else t32, tn)
        self.problem, self.settings = problem, settings
        self.q, self.t, self.k, self.exclude_self = q, t, problem.k, problem.exclude_self
        self.q32 = q if centre is None else np.ascontiguousarray((q - centre).astype(np.float32))
        self.qn = np.einsum("ij,ij->i", self.q32, self.q32, dtype=np.float32)
        self.t32, self.tn = t32, tn
        # a bound on |float32 d² − exact d²| for a pair (i, j): c·(‖q_i‖² + ‖t_j‖²)
        self.c = np.float32(4.0 * (q.shape[1] + 8) * EPS32)
        self.ctn = self.c * tn
        self.block_bytes = settings.block_bytes
        self.use_faiss = use_faiss and faiss_module() is not None


def _centred32(t: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(centre, float32 target rows minus it). Float32 targets (compact spaces) are used as they
    are, uncentred (centre None): a centred copy would double them, and the error bound holds for
    any centre (centring only tightens it); their float32 products then carry no rounding of the
    coordinates at all."""
    if t.dtype == np.float32:
        return None, t
    centre = t.mean(axis=0)
    return centre, np.ascontiguousarray((t - centre).astype(np.float32))
