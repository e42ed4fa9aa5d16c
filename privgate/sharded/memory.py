"""How much memory a sharded evaluation takes on each worker, estimated before any search, and
the refusal of a run that would not fit a worker.

A search task holds its query rows and its target partition, each read (Arrow + the normalised
Polars frame) and encoded (the space's float64 or float32 matrix), the dense float64 copies the
kernel screens with, and one screening block (:data:`privgate.sharded.kernel.SCREEN_BYTES`) plus
the candidate pairs; a worker runs ``nthreads`` tasks at once. Its peak is therefore set by the
largest partition and the broadcast query blocks, not by the tables' sizes.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import MemoryLimitError
from .encode import Inputs
from .kernel import SCREEN_BYTES

__all__ = ["task_bytes", "check_workers"]

#: bytes of one record's column as read (Arrow) and normalised (Polars), per column
READ_BYTES_PER_CELL = 48
#: what a worker process holds before any task (the interpreter, NumPy, Polars, privgate, Dask)
WORKER_BASE_BYTES = 350 * 2**20


def task_bytes(inputs: Inputs) -> int:
    """The estimated peak of one search task: two of the largest partitions read and encoded,
    their dense float64 copies, one screening block and its candidate pairs."""
    rows = max(p.rows for ps in inputs.parts.values() for p in ps)
    cols = len(inputs.schema.columns) + len(inputs.identifiers)
    width = sum(len(v) for v in inputs.fit.levels.values()) + len(inputs.schema.numeric)
    item = 4 if inputs.compact else 8
    per_part = rows * (cols * READ_BYTES_PER_CELL + width * (item + 8))
    return int(2 * per_part + 3 * SCREEN_BYTES)


def check_workers(client: Any, inputs: Inputs, metrics: Sequence[str], *, memory_limit: Any = "auto") -> dict:
    """Each worker's estimated peak (its threads × :func:`task_bytes` + its base) against its
    memory limit (Dask's ``--memory-limit``; ``memory_limit`` a number of bytes caps it further,
    None / "off" checks nothing): a run that would not fit raises :class:`MemoryLimitError`
    naming the worker's address, the estimate and the largest partition."""
    info = client.scheduler_info(n_workers=-1)["workers"]
    per_task = task_bytes(inputs)
    out = {}
    for addr, w in info.items():
        limit = w.get("memory_limit") or 0
        if isinstance(memory_limit, (int, float)) and not isinstance(memory_limit, bool) and memory_limit > 0:
            limit = min(limit, int(memory_limit)) if limit else int(memory_limit)
        need = WORKER_BASE_BYTES + int(w.get("nthreads", 1)) * per_task
        out[addr] = {"estimate": need, "limit": limit}
        if memory_limit in (None, "off") or not limit or not metrics:
            continue
        if need > 0.8 * limit:  # Dask pauses a worker at 80 % of its limit
            biggest = max((p for ps in inputs.parts.values() for p in ps), key=lambda p: p.rows)
            raise MemoryLimitError(
                f"the sharded evaluation needs about {need / 2**20:,.0f} MiB on worker {addr} "
                f"({w.get('nthreads', 1)} threads × {per_task / 2**20:,.0f} MiB a search task), above 80 % of its "
                f"memory limit of {limit / 2**20:,.0f} MiB; the largest partition is {biggest.name()} "
                f"({biggest.rows:,} records): write smaller row groups or give the workers more memory")
    return out
