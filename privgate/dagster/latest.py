"""The latest release of a partitioned release asset, as an asset whose checks follow it.

Dagster sums up a partitioned check over all its partitions: after a blocked release and then an
honest one, the release asset's check list still shows each check as failed (one partition
failed). The partitions keep every release's own results; a team asking "may today's release
go out" looks at the **latest-release view**, ``<release asset>_latest_release``
(:func:`build_privgate_latest_release`): an unpartitioned asset with the same checks as the
release asset (``gate_decision`` and one per rule), whose results are always those of the newest
release gated — newest in partition order, so re-gating an older partition does not move it back.

Every gate run of the checks (:mod:`privgate.dagster.check_body`) reports the view's
materialisation (the release id, its decision) and its check evaluations as Dagster runless
events right after it decides, so the view follows blocked releases too (a blocked run stops
downstream steps, and an ordinary downstream asset would not be updated). Executing the view's
checks on their own replays the newest recorded release from the score history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import dagster as dg

from .asset_keys import asset_key_and_partitions
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig, GateOutcome

    from .check_body import CheckTarget


def build_privgate_latest_release(
    *, assets: Sequence[Any], gate_config: "Any" = None, resource_key: str = "privgate",
    holdout: bool | None = None, group_name: str | None = None,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
) -> list[Any]:
    """The latest-release view of every partitioned asset in ``assets`` (give the same assets,
    gate configuration, ``holdout`` and translator as to
    :func:`~privgate.dagster.build_privgate_checks`): per asset an unpartitioned ``AssetSpec``
    ``<key>_latest_release`` and the definition of its checks, all to list among the
    Definitions' ``assets``. An unpartitioned release asset needs no view: its checks are its
    latest release's."""
    from .check_body import CheckTarget, gate_config_of

    cfg = gate_config_of(gate_config)
    out: list[Any] = []
    for asset in assets:
        key, partitions_def = asset_key_and_partitions(asset)
        if partitions_def is None:
            continue
        view = translator.get_latest_release_key(key)
        target = CheckTarget.of(asset, cfg, resource_key, translator, holdout)
        out.append(dg.AssetSpec(key=view, deps=[key], group_name=group_name, kinds={"privgate"},
                                description=translator.get_latest_release_description(key)))
        out.append(_view_checks(target, view))
    return out


def _view_checks(target: "CheckTarget", view: dg.AssetKey) -> dg.AssetChecksDefinition:
    """The definition of the view's checks. In a release's own (partitioned) run it yields
    nothing — the gate step reports the view once it has decided; executed alone it replays the
    newest recorded release."""
    specs = _unpartitioned_specs(target, view)

    @dg.multi_asset_check(
        name=f"{'__'.join(view.path)}_checks", specs=specs, can_subset=True,
        required_resource_keys={target.resource_key}, compute_kind="privgate",
        description=f"The checks of the newest gated release of {target.key.to_user_string()} "
                    "(reported by every gate run; executed alone: replayed from the score history)")
    def _latest_release_checks(context):  # (annotations are strings in this module: none here)
        if context.run.tags.get("dagster/partition") is not None:
            return  # a release's own run: its gate step reports the view once it has decided
        outcome = replay_newest(getattr(context.resources, target.resource_key), target, context.instance)
        if outcome is None:
            context.log.info("no release of this dataset is recorded in the score history yet")
            return
        selected = {k.name for k in context.selected_asset_check_keys}
        for result in target.results(outcome, {}):
            if result.check_name in selected:
                yield result._replace(asset_key=view)

    return _latest_release_checks


def _unpartitioned_specs(target: "CheckTarget", view: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    """The release asset's check specs, on the view and unpartitioned."""
    from .gate_checks import check_specs, rule_checks

    rules = {rc.name: rc for rc in rule_checks(target.cfg)}
    return [target.translator.get_check_spec(view, rules.get(spec.name), spec)
            for spec in check_specs(target.cfg, view, partitions_def=None, has_holdout=target.holdout)]


def report_latest_release(context: Any, target: "CheckTarget", outcome: "GateOutcome",
                          partition: str | None, extra: dict[str, Any]) -> bool:
    """Report ``outcome`` as the latest-release view's materialisation and check evaluations
    (runless events) when the view is defined — or, when ``partition`` is older in partition
    order than the release the view shows, that release again, replayed from the history; returns
    whether it reported. Never raises: the gate decided."""
    if partition is None or target.partitions_def is None:
        return False
    view = target.translator.get_latest_release_key(target.key)
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
        instance.report_runless_asset_event(dg.AssetMaterialization(
            asset_key=view, metadata={"release": dg.MetadataValue.text(release),
                                      "decision": dg.MetadataValue.text(decision)},
            description=f"the newest gated release is {release}: {decision.upper()}"))
        for result in target.results(outcome, extra):
            instance.report_runless_asset_event(dg.AssetCheckEvaluation(
                asset_key=view, check_name=result.check_name, passed=bool(result.passed),
                metadata=dict(result.metadata or {}), severity=result.severity,
                description=result.description, blocking=_blocking(target, result.check_name)))
        return True
    except Exception as exc:  # noqa: BLE001 - informative only: the release's own checks decided
        context.log.warning(f"privgate latest-release view {view.to_user_string()} not updated: "
                            f"{type(exc).__name__}")
        return False


def _blocking(target: "CheckTarget", name: str) -> bool:
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


def replay_newest(resource: Any, target: "CheckTarget", instance: Any = None) -> "GateOutcome | None":
    """The newest recorded release of the target's dataset (the last in partition order among
    the recorded ones; ``instance`` resolves dynamic partitions), rebuilt from the history's run and check rows as a
    :class:`~privgate.gates.GateOutcome` without results (its checks carry the numbers), or
    None when none is recorded."""
    import json

    import polars as pl

    from privgate.gates import Decision, GateCheck

    dataset = resource.load_config(target.cfg).dataset
    store = resource.open_history()
    try:
        runs = store.runs(dataset)
        if runs.is_empty():
            return None
        keys = (list(target.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
                if target.partitions_def is not None else [])
        rank = {k: i for i, k in enumerate(keys)}
        runs = runs.with_columns(pl.col("release_id").replace_strict(rank, default=-1, return_dtype=pl.Int64)
                                 .alias("_rank")).sort("_rank", "seq")
        row = runs.row(runs.height - 1, named=True)
        rows = store.checks(row["run_id"]).to_dicts()
    finally:
        store.close()
    checks = [GateCheck(metric=r["metric"], rule=r["rule"], value=r["value"], raw=None, threshold=r["threshold"],
                        severity=r["severity"] or "block", verdict=r["verdict"], message=r["message"] or "",
                        skipped=bool(r["skipped"]), compared=r["compared"], on=r["decided_on"] or "",
                        interval=(None if r["interval_low"] is None else (r["interval_low"], r["interval_high"])),
                        p_value=r["p_value"])
              for r in rows]
    from privgate.gates import GateOutcome

    fingerprint = json.loads(row["fingerprint_json"] or "{}")
    return GateOutcome(run_id=row["run_id"], dataset=dataset, release_id=row["release_id"],
                       decision=Decision(row["decision"]), checks=checks, exit_code=int(row["exit_code"]),
                       has_holdout=bool(row["has_holdout"]), fingerprint=fingerprint)


__all__ = ["build_privgate_latest_release", "replay_newest", "report_latest_release"]
