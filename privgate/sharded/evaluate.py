"""``evaluate_sharded``: the metrics of one evaluation over partitioned inputs on a Dask cluster,
with the local evaluation's own metric code (:func:`privgate.evaluation._run_all`) on a
:class:`~privgate.sharded.context.ShardedContext` — the same values, intervals and baselines as a
local run on the same records, to the searches' rounding (docs/cluster.md, "Sharded gate")."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ParameterError
from ..options import RunOptions
from ..report import Report
from .context import NOT_SHARDED, SHARDED_METRICS, ShardedContext
from .prepare import prepare_inputs
from .search import ShardedSearch, View

__all__ = ["evaluate_sharded", "not_sharded"]


def not_sharded(metrics: Sequence[str]) -> dict[str, str]:
    """The metrics among ``metrics`` a sharded evaluation cannot compute, each with why."""
    return {
        m: f"{m} cannot be evaluated sharded: {NOT_SHARDED.get(m, 'it reads whole frames')}; "
        "gate it on one machine, or leave it out of a sharded gate's configuration (docs/cluster.md)"
        for m in metrics
        if m not in SHARDED_METRICS
    }


def evaluate_sharded(
    real: Any,
    synthetic: Any,
    metrics: Sequence[str],
    *,
    holdout: Any = None,
    executor: Any,
    schema: Mapping[str, str] | None = None,
    seed: int = 0,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    baseline: bool = False,
    options: RunOptions | None = None,
    task_threads: int = 1,
    memory_limit: Any = "auto",
    progress: Callable[..., Any] | None = None,
) -> Report:
    """The report of ``metrics`` on partitioned inputs (each a Parquet file, a folder of them, a
    glob or a list of files, read by the workers), evaluated on the cluster ``executor``; a
    metric that cannot be sharded is an error of the report (:func:`not_sharded`), never
    computed otherwise. ``task_threads``: the threads of each search task."""
    from ..audit.cluster import connect
    from ..catalogue import get_metric
    from ..evaluation import (
        _progress_fn,
        _run_all,
        column_handling,
        run_options,
        run_order,
    )
    from .memory import check_workers

    start = time.perf_counter()
    opts = (options or RunOptions()).with_defaults()  # as privgate.evaluate: sample "auto" unless given
    names = list(metrics)
    params = {k: dict(v) for k, v in (params or {}).items()}
    errors = not_sharded(names)
    todo = [n for n in names if n not in errors]
    if baseline and holdout is None:
        raise ParameterError("baseline=True needs a holdout")
    client, opened = connect(executor)
    try:
        inputs, found = prepare_inputs(
            client,
            {"real": real, "synthetic": synthetic, "holdout": holdout},
            user_schema=schema,
            entropies="identifiability" in todo,
        )
        check_workers(client, inputs, todo, memory_limit=memory_limit)
        search = ShardedSearch(client, inputs, threads=task_threads)
        views = {r: View(r) for r in inputs.parts}
        ctx = ShardedContext(search, views, seed=seed, options=opts, column_report=found["coded"])
        if found["entropies"] is not None:
            ctx._shared["entropy_values"] = found["entropies"]
        specs = [get_metric(n) for n in todo]
        base_ctx = ctx.holdout_baseline() if baseline else None
        results: dict = {}
        _run_all(run_order(specs), ctx, base_ctx, params, _progress_fn(progress), "record", results, errors)
        return Report(
            results={n: results[n] for n in names if n in results},
            errors={n: errors[n] for n in names if n in errors},
            schema=ctx.schema.as_dict(),
            n_real=ctx.n_real,
            n_synthetic=ctx.n_synthetic,
            n_holdout=ctx.n_holdout,
            seed=seed,
            seconds=time.perf_counter() - start,
            params={
                "metrics": names,
                "keys": None,
                "sensitive": None,
                "metric_params": params,
                "baseline": baseline,
                "options": run_options(ctx),
                "columns": column_handling(ctx),
                "sharded": {"partitions": {r: len(p) for r, p in inputs.parts.items()}, "search_tasks": search.tasks},
            },
        )
    finally:
        if opened:
            client.close()
