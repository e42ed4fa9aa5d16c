"""Box queries: is some target within a given Chebyshev distance of each query row."""

from __future__ import annotations

import numpy as np

from .backends import kdtree, workers


def any_within_box(
    query: np.ndarray, target: np.ndarray, radius: float = 1.0, *, self_rows: np.ndarray | None = None
) -> np.ndarray:
    """For each query row, whether some target row differs by at most ``radius`` in every
    coordinate (Chebyshev distance ≤ radius, inclusive up to 1e-9 relative slack).

    ``self_rows``: for each query row its own position among the target rows (−1: not a target
    row); that target row does not count (another row at the same point does).

    Used by hitting_rate on coordinates scaled so that one unit is the allowed difference; a
    k-d tree answers the box query exactly without any n×m matrix.
    """

    q = np.ascontiguousarray(query, dtype=np.float64)
    t = np.ascontiguousarray(target, dtype=np.float64)
    if q.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    if q.shape[1] == 0:
        return np.full(q.shape[0], t.shape[0] > 0)
    tree = kdtree(t)
    bound = radius * (1 + 1e-9) + 1e-12
    if self_rows is None:
        dist, _ = tree.query(q, k=1, p=np.inf, distance_upper_bound=bound * (1 + 1e-12), workers=workers())
        return dist <= bound
    # the two nearest: when the nearest is the row itself the second decides (a duplicate of the
    # row at distance 0 may come first or second; either way some other row is that near)
    dist, idx = tree.query(q, k=2, p=np.inf, distance_upper_bound=bound * (1 + 1e-12), workers=workers())
    own = idx[:, 0] == np.asarray(self_rows)
    return np.where(own, dist[:, 1] <= bound, dist[:, 0] <= bound)
