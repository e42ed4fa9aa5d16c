"""A gate run whose inputs stay in their partitions: fingerprinted and evaluated on a Dask
cluster's workers (:mod:`privgate.sharded`), then checked and decided here like any precomputed
report. Which metrics can run sharded and why the others cannot: docs/cluster.md, "Sharded gate".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..report import Report
from .config_model import GateConfig

__all__ = ["evaluate_sharded_gate", "refused_metrics", "sharded_fingerprint_of"]


def refused_metrics(config: GateConfig, plan: dict[str, Any]) -> str | None:
    """Why this run cannot be gated sharded, before anything is read: the planned metrics that are
    not optional and cannot be evaluated sharded, each with why (None: every one can, or is
    optional and then reported as an error of its own)."""
    from ..sharded.evaluate import not_sharded

    refused = {m: why for m, why in not_sharded(plan["metrics"]).items() if not config.metrics[m].optional}
    if not refused:
        return None
    return "the configuration asks for metrics a sharded gate cannot compute, so nothing was evaluated: " + "; ".join(
        refused.values()
    )


def sharded_fingerprint_of(sources: dict[str, Any], executor: Any) -> dict[str, Any]:
    """The inputs' fingerprint, each role's made on the cluster from its partitions (the digest a
    local run gives the same records; :mod:`privgate.sharded.fingerprint`)."""
    import polars as pl

    from ..audit.cluster import connect
    from ..sharded.fingerprint import sharded_fingerprint
    from .fingerprint import HASH_ALGORITHM, _release_names_only

    client, opened = connect(executor)
    try:
        fp: dict[str, Any] = {"hash_algorithm": HASH_ALGORITHM, "polars_version": pl.__version__}
        for role, source in sources.items():
            if source is not None:
                fp[role] = sharded_fingerprint(client, source, role)
        names = set((fp.get("synthetic") or {}).get("schema") or {})
        for role in ("real", "holdout"):
            if role in fp:
                fp[role]["schema"] = _release_names_only(fp[role]["schema"], names)
        return fp
    finally:
        if opened:
            client.close()


def evaluate_sharded_gate(
    config: GateConfig,
    plan: dict[str, Any],
    sources: dict[str, Any],
    fingerprint: dict,
    *,
    executor: Any,
    progress: Callable[..., Any] | None = None,
) -> Report:
    """The report of the run's ``plan`` on the partitioned inputs, evaluated on the cluster, with
    the inputs' digests (so :func:`privgate.gates.plan.precomputed_report` checks it as any part)."""
    from ..sharded.evaluate import evaluate_sharded

    report = evaluate_sharded(
        sources["real"],
        sources["synthetic"],
        plan["metrics"],
        holdout=sources.get("holdout"),
        executor=executor,
        schema=plan["schema"],
        seed=plan["seed"],
        params=plan["params"],
        baseline=plan["baseline"],
        options=config.options,
        memory_limit=config.options.memory_limit,
        progress=progress,
    )
    report.params["inputs_sha256"] = {r: fingerprint[r]["content_sha256"] for r, s in sources.items() if s is not None}
    report.params["schema_overrides"] = dict(plan["schema"] or {})
    return report
