"""Reporting a gate run to the latest-release view (:mod:`privgate.dagster.latest`): the view's
materialisation and check evaluations as Dagster runless events, and the newest recorded release
replayed from the score history. Below :mod:`privgate.dagster.check_body`, which calls it after
every decision; the checked target is read through the fields it names (``CheckTarget``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateOutcome


def report_latest_release(
    context: Any, target: Any, outcome: "GateOutcome", partition: str | None, extra: dict[str, Any]
) -> bool:
    """Report ``outcome`` as the latest-release view's materialisation and check evaluations
    (runless events) when the view is defined — or, when ``partition`` is older in partition
    order than the release the view shows, that release again, replayed from the history; returns
    whether it reported. Never raises: the gate decided."""
    if partition is None or target.partitions_def is None:
        return False
    view = target.translator.get_asset_key({"kind": "latest_release", "asset_key": target.key})
    try:
        instance = context.instance
        if not _defined(context, view):
            return False
        keys = list(target.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
        shown = _shown_release(instance, view)
        if shown in keys and partition in keys and keys.index(partition) < keys.index(shown):
            # an older release re-gated: the view keeps the newest one, reported again so that
            # its results stay the latest (this run planned the view's checks at its start)
            outcome = replay_newest(getattr(context.resources, target.resource_key), target, instance) or outcome
            extra = {}
        release = str(outcome.release_id)
        decision = str(outcome.decision)
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                asset_key=view,
                metadata={"release": dg.MetadataValue.text(release), "decision": dg.MetadataValue.text(decision)},
                description=f"the newest gated release is {release}: {decision.upper()}",
            )
        )
        for result in target.results(outcome, extra):
            instance.report_runless_asset_event(
                dg.AssetCheckEvaluation(
                    asset_key=view,
                    check_name=result.check_name,
                    passed=bool(result.passed),
                    metadata=dict(result.metadata or {}),
                    severity=result.severity,
                    description=result.description,
                    blocking=_blocking(target, result.check_name),
                )
            )
        return True
    except Exception as exc:  # noqa: BLE001 - informative only: the release's own checks decided
        context.log.warning(f"privgate latest-release view {view.to_user_string()} not updated: {type(exc).__name__}")
        return False


def _blocking(target: Any, name: str) -> bool:
    """Whether the target's check ``name`` is declared blocking."""
    return any(spec.name == name and spec.blocking for spec in target.specs())


def _defined(context: Any, view: dg.AssetKey) -> bool:
    """Whether the Definitions the run belongs to define the view (it is opt-in: an undefined one
    is not reported, so no stray asset appears in the UI)."""
    for get in (lambda: context.repository_def.asset_graph, lambda: context.job_def.asset_layer.asset_graph):
        try:
            return bool(get().has(view))
        except Exception:  # noqa: BLE001 - not available in this context
            continue
    return False


def _shown_release(instance: Any, view: dg.AssetKey) -> str | None:
    """The release id the view shows now, or None."""
    event = instance.get_latest_materialization_event(view)
    mat = event.asset_materialization if event is not None else None
    value = (mat.metadata or {}).get("release") if mat is not None else None
    return None if value is None else str(getattr(value, "value", value))


def replay_newest(resource: Any, target: Any, instance: Any = None) -> "GateOutcome | None":
    """The newest recorded release of the target's dataset (the last in partition order among
    the recorded ones; ``instance`` resolves dynamic partitions), rebuilt from the history's run
    and check rows as a :class:`~privgate.gates.GateOutcome` without results (its checks carry
    the numbers), or None when none is recorded."""
    import json

    import polars as pl

    from privgate.gates import Decision, GateCheck

    dataset = resource.load_config(target.cfg).dataset
    store = resource.open_history()
    try:
        runs = store.runs(dataset)
        if runs.is_empty():
            return None
        keys = (
            list(target.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
            if target.partitions_def is not None
            else []
        )
        rank = {k: i for i, k in enumerate(keys)}
        runs = runs.with_columns(
            pl.col("release_id").replace_strict(rank, default=-1, return_dtype=pl.Int64).alias("_rank")
        ).sort("_rank", "seq")
        row = runs.row(runs.height - 1, named=True)
        rows = store.checks(row["run_id"]).to_dicts()
    finally:
        store.close()
    checks = [
        GateCheck(
            metric=r["metric"],
            rule=r["rule"],
            value=r["value"],
            raw=None,
            threshold=r["threshold"],
            severity=r["severity"] or "block",
            verdict=r["verdict"],
            message=r["message"] or "",
            skipped=bool(r["skipped"]),
            compared=r["compared"],
            on=r["decided_on"] or "",
            interval=(None if r["interval_low"] is None else (r["interval_low"], r["interval_high"])),
            p_value=r["p_value"],
        )
        for r in rows
    ]
    from privgate.gates import GateOutcome

    fingerprint = json.loads(row["fingerprint_json"] or "{}")
    return GateOutcome(
        run_id=row["run_id"],
        dataset=dataset,
        release_id=row["release_id"],
        decision=Decision(row["decision"]),
        checks=checks,
        exit_code=int(row["exit_code"]),
        has_holdout=bool(row["has_holdout"]),
        fingerprint=fingerprint,
    )


__all__ = ["replay_newest", "report_latest_release"]
