"""The faiss screen computes float64 distances only for candidates whose float32 lower bound
reaches the k-th upper bound; answers must equal brute force (ties → lowest index)."""

import numpy as np
import pytest

from privgate.neighbours import SearchSettings, knn
from privgate.neighbours.backends import faiss_module

pytestmark = pytest.mark.skipif(faiss_module() is None, reason="faiss missing")


def brute(q, t, k, exclude_self):
    d = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(axis=2))
    if exclude_self:
        np.fill_diagonal(d, np.inf)
    idx = np.lexsort((np.broadcast_to(np.arange(t.shape[0]), d.shape), d), axis=-1)[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("exclude_self", [False, True])
@pytest.mark.parametrize("kind", ["ties", "duplicates", "continuous"])
def test_faiss_pass_matches_brute_force(k, exclude_self, kind):
    rng = np.random.default_rng(14 + k)
    if kind == "ties":  # small integer grid: many exactly equal distances
        t = rng.integers(0, 3, size=(300, 6)).astype(float)
    elif kind == "duplicates":
        base = rng.normal(size=(40, 6))
        t = base[rng.integers(0, 40, size=300)]
    else:
        t = rng.normal(size=(300, 6)) * rng.uniform(0.1, 50, size=6)
    q = t if exclude_self else rng.integers(0, 3, size=(120, 6)).astype(float) if kind == "ties" else t[:120] + 0.01
    # dedupe off and a small block so the faiss screen (not the one-block path) decides the rows
    nb = knn(q, t, k, exclude_self=exclude_self, dedupe=False, settings=SearchSettings(block_bytes=1024))
    assert nb.search["settled_by"].get("faiss_flat", 0) > 0
    bd, bi = brute(q, t, k, exclude_self)
    np.testing.assert_array_equal(nb.idx, bi)
    np.testing.assert_allclose(nb.dist, bd, rtol=1e-12, atol=1e-12)
