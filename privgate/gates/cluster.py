"""A gate's evaluation spread over a Dask distributed cluster, one task per metric family.

The same split as the Dagster family steps (docs/performance.md, "Dagster: one step, or one pod
per metric family"): the run's plan (:func:`.plan.evaluation_plan`) is cut by the metrics'
families, each family is evaluated on a cluster worker by :func:`.plan.evaluate_for_gate` (its
own context, the plan's seed and parameters, so its results are those of the whole run), and the
parts are merged in plan order (:func:`privgate.report.merge_reports`). :func:`.run.run_gate`
(``executor=``) then checks the merged report against its inputs and plan, as it checks any
precomputed report, and decides as it would on a report computed here.

The frames are loaded here and sent to the workers once each (``Client.scatter``, broadcast),
so a worker needs neither the files nor the paths; a worker that dies mid-run loses its family,
which the scheduler gives to another worker. Which engine and why, and how to point the same
code at a real cluster: docs/cluster.md.
"""

from __future__ import annotations

from typing import Any, Callable

from ..audit.cluster import connect
from ..catalogue import get_metric
from ..report import Report, merge_reports
from .config_model import GateConfig
from .plan import evaluate_for_gate, evaluation_plan

__all__ = ["evaluate_on_cluster", "families_of"]


def families_of(metrics: list[str]) -> dict[str, list[str]]:
    """The planned metrics grouped by family (the registry's), each in plan order."""
    out: dict[str, list[str]] = {}
    for name in metrics:
        out.setdefault(get_metric(name).family, []).append(name)
    return out


def evaluate_on_cluster(
    config: GateConfig,
    real: Any,
    synthetic: Any,
    holdout: Any = None,
    *,
    executor: Any,
    threads: int | None = None,
    progress: Callable[..., Any] | None = None,
) -> Report:
    """The report of ``config``'s plan on these frames, each metric family evaluated on a worker
    of the cluster ``executor`` (a ``dask://host:port`` address or a ``distributed.Client``),
    ``threads`` threads per family (default 1). ``progress(family, done, total)`` is called as
    each family returns."""
    plan = evaluation_plan(config, holdout is not None)
    families = families_of(plan["metrics"])
    client, opened = connect(executor)
    futures: list[Any] = []
    try:
        frames = client.scatter({"real": real, "synthetic": synthetic, "holdout": holdout}, broadcast=True)
        futures = [
            client.submit(
                evaluate_for_gate,
                config,
                frames["real"],
                frames["synthetic"],
                frames["holdout"],
                metrics=names,
                threads=threads or 1,
                key=f"privgate-gate-{family}-{id(frames)}",
                pure=False,
            )
            for family, names in families.items()
        ]
        parts: list[Report] = []
        for done, (family, fut) in enumerate(zip(families, futures), start=1):  # they run at once
            parts.append(fut.result())
            if progress is not None and callable(progress):
                progress(f"family {family} (on the cluster)", done, len(futures))
        return merge_reports(parts, order=plan["metrics"])
    finally:
        for fut in futures:
            if not fut.done():
                fut.cancel()
        if opened:
            client.close()
