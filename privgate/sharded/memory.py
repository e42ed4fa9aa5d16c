"""How much memory a sharded evaluation takes on each worker, estimated before any search, and
the refusal of a run that would not fit a worker.

A search task holds its query rows and its target partition, each read (Arrow + the normalised
Polars frame) and encoded (the space's float64 or float32 matrix), the dense float64 copies the
kernel screens with, and one screening block (:data:`privgate.sharded.kernel.SCREEN_BYTES`) plus
the candidate pairs; a worker runs ``nthreads`` tasks at once. Its peak is therefore set by the
largest partition and the broadcast query blocks, not by the tables' sizes. A label-free metric
adds what the worker keeps of the view's mapped release columns (:func:`mapped_bytes`): its share
of the release's partitions, one float64 per numeric column and record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import MemoryLimitError
from .encode import Inputs
from .kernel import SCREEN_BYTES
from .search import BROADCAST_QUERIES

__all__ = ["check_workers", "mapped_bytes", "task_bytes"]

#: bytes of one record's column as read (Arrow) and normalised (Polars), per column
READ_BYTES_PER_CELL = 48
#: what a worker process is taken to hold before any task when the scheduler reports nothing
WORKER_BASE_BYTES = 220 * 2**20


def task_bytes(inputs: Inputs, metrics: Sequence[str] = ()) -> int:
    """The estimated peak of one task: a search task's — two of the largest partitions read and
    encoded, their dense float64 copies, one screening block (with its mask and the partial sort's
    copy) and a broadcast block of sampled query rows — or, when ``metrics`` has dcr and its FAMD
    input has no coded column, a refit task's if larger: one partition read and its Gram matrices
    (one per jackknife group and the whole one, p × p float64 each, at most
    :data:`privgate.sharded.famd.MAX_GRAM_BYTES`)."""
    rows = max(p.rows for ps in inputs.parts.values() for p in ps)
    cols = len(inputs.schema.columns) + len(inputs.identifiers)
    width = sum(len(v) for v in inputs.fit.levels.values()) + len(inputs.schema.numeric)
    item = 4 if inputs.compact else 8
    per_part = rows * (cols * READ_BYTES_PER_CELL + width * (item + 8))
    screen = min(SCREEN_BYTES, 8 * rows * rows)
    largest = max(sum(p.rows for p in ps) for ps in inputs.parts.values())
    block = min(BROADCAST_QUERIES, largest) * width * 8  # a broadcast query block (a sample)
    search = int(2 * per_part + 3 * screen + block)
    levels = [len(v) for v in inputs.fit.levels.values()]
    if "dcr" not in metrics or any(n > inputs.coded_above for n in levels):
        return search
    from ..metrics.distance import DCR_GROUPS
    from .famd import MAX_GRAM_BYTES

    p = sum(levels) + len(inputs.schema.numeric)
    return max(search, int(per_part + min((DCR_GROUPS + 1) * p * p * 8, MAX_GRAM_BYTES)))


def mapped_bytes(inputs: Inputs, metrics: Sequence[str], workers: int) -> int:
    """What a worker may hold of the label-free view's mapped columns (float64 per numeric
    column of the release's partitions, kept on the worker that computed them) when ``metrics``
    has a label-free metric: every numeric column taken as mapped, and the release's partitions
    spread over the ``workers`` — the largest partition's share times their number per worker."""
    from ..metrics.label_free import LABEL_FREE_METRICS

    parts = inputs.parts.get("synthetic", [])
    if not parts or not any(m in LABEL_FREE_METRICS for m in metrics):
        return 0
    per_worker = -(-len(parts) // max(workers, 1))
    return per_worker * max(p.rows for p in parts) * len(inputs.schema.numeric) * 8


def check_workers(client: Any, inputs: Inputs, metrics: Sequence[str], *, memory_limit: Any = "auto") -> dict:
    """Each worker's estimated peak (the memory it holds now, as the scheduler last heard, + its
    threads × :func:`task_bytes`) against its memory limit (Dask's ``--memory-limit``, times the
    fraction at which Dask pauses — or else restarts — a worker; ``memory_limit`` a number of
    bytes caps it further, None / "off" checks nothing): a run that would not fit raises
    :class:`MemoryLimitError` naming the worker's address, the estimate and the largest
    partition."""
    import dask

    info = client.scheduler_info(n_workers=-1)["workers"]
    per_task = task_bytes(inputs, metrics)
    mapped = mapped_bytes(inputs, metrics, len(info))
    cfg = dask.config.get("distributed.worker.memory", {})
    fraction = float(cfg.get("pause") or cfg.get("terminate") or 1.0)
    out = {}
    for addr, w in info.items():
        limit = w.get("memory_limit") or 0
        if isinstance(memory_limit, (int, float)) and not isinstance(memory_limit, bool) and memory_limit > 0:
            limit = min(limit, int(memory_limit)) if limit else int(memory_limit)
        held = int((w.get("metrics") or {}).get("memory") or WORKER_BASE_BYTES)
        need = held + int(w.get("nthreads", 1)) * per_task + mapped
        out[addr] = {"estimate": need, "limit": limit, "mapped_columns": mapped}
        if memory_limit in (None, "off") or not limit or not metrics:
            continue
        if need > fraction * limit:
            view = f" + {mapped / 2**20:,.0f} MiB of the label-free view's mapped columns" if mapped else ""
            biggest = max((p for ps in inputs.parts.values() for p in ps), key=lambda p: p.rows)
            raise MemoryLimitError(
                f"the sharded evaluation needs about {need / 2**20:,.0f} MiB on worker {addr} "
                f"({held / 2**20:,.0f} MiB held + {w.get('nthreads', 1)} threads × {per_task / 2**20:,.0f} MiB a search "
                f"task{view}), above {fraction:.0%} of its memory limit of {limit / 2**20:,.0f} MiB; the largest partition is {biggest.name()} "
                f"({biggest.rows:,} records): write smaller row groups or give the workers more memory"
            )
    return out
