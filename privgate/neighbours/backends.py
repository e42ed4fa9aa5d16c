"""The native libraries the engine calls: faiss (optional at import) and its thread count."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


def faiss_module():
    """faiss, or None when it cannot be imported (the NumPy paths are exact on their own)."""
    try:
        import faiss  # noqa: PLC0415
    except ImportError:  # pragma: no cover - faiss is a dependency; NumPy path still exact
        return None
    return faiss


def workers() -> int:
    """Worker threads for scipy's k-d tree and the IVF list scan: the run's budget
    (privgate.threads.limited sets faiss' OpenMP count); -1 (scipy: all cores) when faiss is
    absent, in which case there is no IVF screen."""
    faiss = faiss_module()
    return int(faiss.omp_get_max_threads()) if faiss is not None else -1


@contextmanager
def faiss_blas(threshold: int) -> Iterator[None]:
    """faiss' flat search computes distances one pair at a time (no BLAS) below
    ``faiss.cvar.distance_compute_blas_threshold`` queries — 128000 in the faiss-cpu wheels, so a
    search of 400 or 3000 open rows ran 15× slower per row than one of 2000 rows against 100k
    targets (measured, 1 thread). Inside this block the threshold is ``threshold``
    (``SearchSettings.faiss_blas_threshold``); it is restored afterwards (it only changes speed
    and float32 rounding, which the error bound covers)."""
    faiss = faiss_module()
    before = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = threshold
    try:
        yield
    finally:
        faiss.cvar.distance_compute_blas_threshold = before


#: How the engine builds scipy's k-d trees: sliding-midpoint splits and uncompacted node boxes
#: build 2.2-2.6× faster than the default median splits over a million points of 8 coordinates
#: (0.21 against 0.47-0.55 CPU-s; 10,000 to 100,000 queries as fast or faster). The grouped
#: search builds one per categorical column set and search (about 190 at a 1M gate). The trees
#: answer the same queries either way: only the build's split rule differs.
KDTREE_BUILD = {"balanced_tree": False, "compact_nodes": False}


def kdtree(points):
    """scipy's cKDTree over ``points``, built as :data:`KDTREE_BUILD` says."""
    from scipy.spatial import cKDTree

    return cKDTree(points, **KDTREE_BUILD)
