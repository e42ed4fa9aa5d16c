"""How many threads privgate's native libraries may use, set from one place.

On a shared machine (two gate runs at once, a Dagster worker next to other jobs) native thread
pools that assume the whole machine is theirs spin: OpenMP threads busy-wait at barriers for a
sibling the OS has preempted (LightGBM was measured 30–100× slower that way), and BLAS or faiss
start one thread per core whether the core is free or not. privgate therefore

* asks the OpenMP runtimes to sleep rather than spin when idle: ``OMP_WAIT_POLICY=PASSIVE`` (and
  ``KMP_BLOCKTIME=0`` for Intel's runtime) are set when this module is imported — before the first
  OpenMP library loads, since a runtime reads them once — unless the user set them already;
* sizes Polars' one process-wide pool from ``PRIVGATE_THREADS`` when it is set (as
  ``POLARS_MAX_THREADS``, unless the user set that), for the same reason and at the same moment;
* runs every evaluation with one thread budget, ``threads``: LightGBM's ``n_jobs``, the number of
  detection_mlp fold workers, faiss' ``omp_set_num_threads`` and the BLAS/OpenMP pools (through
  threadpoolctl) inside :func:`limited`.

The budget is, in order: an explicit ``threads=`` (``evaluate``, ``EvaluationContext``, the CLI),
the environment variable ``PRIVGATE_THREADS`` (e.g. per Dagster step or container), else the cores
that are free now: the cores this process may run on minus the 1-minute load average of the
machine, at least 1. Scores never depend on the budget: the neighbour engine decides in float64,
detection_mlp trains each fold single-threaded with its own seed, and LightGBM runs with
``deterministic=True``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from .errors import ParameterError

ENV_VAR = "PRIVGATE_THREADS"

# read once by each OpenMP runtime when it starts: set before lightgbm / faiss / sklearn load it
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("KMP_BLOCKTIME", "0")


def _polars_pool_from_budget() -> None:
    """Polars' thread pool is sized once, when Polars is first imported, from
    ``POLARS_MAX_THREADS`` (else every core): when ``PRIVGATE_THREADS`` gives this process a budget
    and the user set no Polars size, the pool takes the budget — so a run given one thread does
    not spread its table work over every core. Without effect when Polars was imported first."""
    budget = os.environ.get(ENV_VAR, "").strip()
    if budget.isdigit() and int(budget) >= 1:
        os.environ.setdefault("POLARS_MAX_THREADS", budget)


_polars_pool_from_budget()


def available_cores() -> int:
    """Cores this process may run on (CPU affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def free_cores() -> int:
    """Cores not busy with other work: available cores minus the 1-minute load average
    (rounded), at least 1; the available cores where the OS gives no load average."""
    cores = available_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - non-Unix
        return cores
    return int(min(cores, max(1, round(cores - load))))


def _check(value: object, source: str) -> int:
    if isinstance(value, bool):
        raise ParameterError(f"{source} must be a positive integer number of threads; got {value!r}")
    try:
        n = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ParameterError(f"{source} must be a positive integer number of threads; got {value!r}") from None
    if n < 1 or (not isinstance(value, str) and n != value):
        raise ParameterError(f"{source} must be a positive integer number of threads; got {value!r}")
    return n


def resolve_threads(threads: int | None = None) -> int:
    """The thread budget of a run: ``threads`` if given, else ``$PRIVGATE_THREADS``, else
    :func:`free_cores`; never more than the available cores."""
    if threads is not None:
        n = _check(threads, "threads")
    elif os.environ.get(ENV_VAR, "").strip():
        n = _check(os.environ[ENV_VAR].strip(), f"environment variable {ENV_VAR}")
    else:
        n = free_cores()
    return min(n, available_cores())


@contextmanager
def limited(threads: int) -> Iterator[int]:
    """Run the block with BLAS, OpenMP and faiss limited to ``threads`` threads; restores the
    previous limits afterwards."""
    faiss = _faiss()
    before = faiss.omp_get_max_threads() if faiss is not None else None
    try:
        if faiss is not None:
            faiss.omp_set_num_threads(int(threads))
        with _controller().limit(limits=int(threads)):
            yield int(threads)
    finally:
        if faiss is not None and before is not None:
            faiss.omp_set_num_threads(before)


@contextmanager
def blas_limited(threads: int) -> Iterator[int]:
    """Run the block with BLAS and OpenMP limited to ``threads`` threads, without loading faiss
    (for code that never calls it: a sharded search's task on a cluster worker, where faiss
    alone would add ~40 MiB to every worker)."""
    with _controller().limit(limits=int(threads)):
        yield int(threads)


_CONTROLLER: list = []  # [(len(sys.modules) when made, threadpoolctl.ThreadpoolController)]


def _controller():
    """threadpoolctl's controller of the native thread pools loaded in this process, made again
    only after a module was imported (a new native library is loaded by an import): making one
    reads /proc/self/maps, ~2.4 ms, and limited() is entered per metric and per search."""
    import sys

    from threadpoolctl import ThreadpoolController

    n = len(sys.modules)
    if not _CONTROLLER or _CONTROLLER[0][0] != n:
        _CONTROLLER[:] = [(n, ThreadpoolController())]
    return _CONTROLLER[0][1]


def _faiss():
    try:
        import faiss  # noqa: PLC0415
    except ImportError:  # pragma: no cover - faiss is a dependency
        return None
    return faiss
