"""The reference cost every scale benchmark prints its ratios against: one exact blocked float32
GEMM 1-NN search (‖t‖² − 2 q·t, argmin per row), centred on the target mean like privgate's own
float32 path. Measured in the same run as what it is compared with, because this machine is
shared and absolute seconds swing 5×."""

from __future__ import annotations

import time

import numpy as np


def load_code() -> float:
    """Import what a metric run would import on its first use — every built-in metric module
    (the registry learns them on its first lookup) and the engine's native libraries (faiss,
    scipy's k-d tree, statistics and sparse graphs, threadpoolctl, pandas' hash-table factorize)
    — and return the seconds it took: a
    process pays them once, so a benchmark loads them before it starts timing work."""
    start = time.perf_counter()
    import pandas  # noqa: F401, PLC0415
    import scipy.sparse.csgraph  # noqa: F401, PLC0415
    import scipy.spatial  # noqa: F401, PLC0415
    import scipy.stats  # noqa: F401, PLC0415
    import threadpoolctl  # noqa: F401, PLC0415

    from privgate.catalogue import metric_names  # noqa: PLC0415
    from privgate.neighbours.backends import faiss_module  # noqa: PLC0415

    faiss_module()
    metric_names()
    return time.perf_counter() - start


def gemm_1nn_seconds(
    query: np.ndarray, target: np.ndarray, threads: int | None = None, block_bytes: int = 64 * 2**20
) -> float:
    """Seconds of one exact 1-NN search of every ``query`` row among the ``target`` rows (float32
    blocks of at most ``block_bytes``), under a thread limit of ``threads`` (None: as set)."""
    from privgate.threads import limited

    start = time.perf_counter()
    with limited(threads):
        centre = target.mean(axis=0)
        a = (query - centre).astype(np.float32)
        b = (target - centre).astype(np.float32)
        bn = np.einsum("ij,ij->i", b, b)
        out = np.empty(a.shape[0], dtype=np.int64)
        step = max(1, block_bytes // (4 * b.shape[0]))
        for s in range(0, a.shape[0], step):
            d = a[s : s + step] @ b.T
            d *= -2.0
            d += bn
            out[s : s + step] = d.argmin(axis=1)
    return time.perf_counter() - start
