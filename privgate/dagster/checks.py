"""``build_privgate_checks``: privgate's gate as blocking asset checks on *your* release assets.

Built like Dagster's own check factories (``build_metadata_bounds_checks``,
``build_column_schema_change_checks``): give it the assets that produce a synthetic release --
their value a Polars / pandas DataFrame, a pyarrow Table or a file path, loaded through the
asset's own IO manager -- and it returns one ``AssetChecksDefinition`` per asset::

    import dagster as dg
    from privgate.dagster import PrivgateResource, build_privgate_checks

    defs = dg.Definitions(
        assets=[my_release],
        asset_checks=build_privgate_checks(assets=[my_release]),
        resources={"privgate": PrivgateResource(real_path="data/real.parquet")},
    )

Each asset gets ``gate_decision`` plus one check per rule of the gate configuration
(``<metric>__<kind>_<severity>``); ``block`` rules and ``gate_decision`` are **blocking**, so a
blocked release stops everything downstream of the asset in that run. A partitioned asset gets
partitioned checks (one result per release partition; the partition key is the release id).
Per-run settings come from the run config (:class:`PrivgateRunConfig`) and the resource's
config in the launchpad. See :mod:`privgate.dagster.resource` for how evaluations of one dataset
are serialised and ordered.
"""


from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import dagster as dg
from pydantic import Field

from privgate.names import identifier

from .gate_checks import DECISION_CHECK, check_results, check_specs

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig

#: statuses of a Dagster run that is evaluating (or about to evaluate) right now
_ACTIVE = ("STARTING", "STARTED")


class PrivgateRunConfig(dg.Config):
    """Per-run settings of the privgate checks (launchpad: ``ops: <check op>: config:``)."""

    release_id: Optional[str] = Field(
        default=None, description="Release id for the history (default: the partition key, else the run id).")
    holdout_path: Optional[str] = Field(
        default=None, description="A holdout for this run only (overrides the resource's).")


def build_privgate_checks(
    *,
    assets: Sequence[Any],
    gate_config: "str | Path | GateConfig | None" = None,
    resource_key: str = "privgate",
    pool: str | None = None,
    name_prefix: str = "privgate",
    holdout: bool | None = None,
) -> list[dg.AssetChecksDefinition]:
    """Blocking privgate gate checks for every asset in ``assets``.

    ``assets``: ``AssetsDefinition`` s (their partitions are used) or asset keys / ``AssetSpec`` s.
    ``gate_config``: the configuration the checks are declared from -- a path, a ``GateConfig``
    or ``None`` for privgate's default (``PrivgateResource.gate_config`` may replace it at run
    time; a rule it adds is still decided by ``gate_decision``). ``resource_key``: the key of the
    :class:`~privgate.dagster.resource.PrivgateResource`. ``pool``: the Dagster concurrency pool
    of the check steps (default ``privgate_<dataset>``; give it a limit of 1 with run
    granularity to queue a dataset's evaluations in launch order -- see docs/dagster.md).
    ``holdout``: whether the runs have a holdout (the resource's ``holdout_path``): the checks
    declared are then exactly the rules that apply; ``None`` declares every rule, and a blocking
    rule a run does not apply passes saying so (``applied: false``).

    Every run also materialises the release asset's privacy scorecard
    (:mod:`privgate.dagster.scorecard`; list :func:`build_privgate_scorecards` among the assets).
    """
    cfg = gate_config_of(gate_config)
    if not assets:
        raise dg.DagsterInvalidDefinitionError("build_privgate_checks: no assets given")
    pool_name = pool if pool is not None else f"privgate_{_identifier(cfg.dataset)}"
    return [_checks_for(a, cfg, resource_key, pool_name, name_prefix, holdout) for a in assets]


def _asset_key_and_partitions(asset: Any) -> tuple[dg.AssetKey, Any]:
    if isinstance(asset, dg.AssetsDefinition):
        if len(asset.keys) != 1:
            raise dg.DagsterInvalidDefinitionError(
                f"build_privgate_checks: {asset.node_def.name} defines {len(asset.keys)} assets; "
                "pass the release asset's key (or AssetSpec) instead")
        return asset.key, asset.partitions_def
    if isinstance(asset, dg.AssetSpec):
        return asset.key, asset.partitions_def
    return dg.AssetKey.from_coercible(asset), None


def _checks_for(asset: Any, cfg: "GateConfig", resource_key: str, pool: str,
                name_prefix: str, holdout: bool | None = None) -> dg.AssetChecksDefinition:
    key, partitions_def = _asset_key_and_partitions(asset)
    specs = check_specs(cfg, key, partitions_def=partitions_def, has_holdout=holdout)
    op_name = f"{name_prefix}_{key.to_python_identifier()}"

    @dg.multi_asset_check(
        name=op_name,
        specs=specs,
        ins={"release": dg.AssetIn(key)},
        can_subset=True,
        required_resource_keys={resource_key},
        pool=pool,
        compute_kind="privgate",
        description=f"privgate privacy gate on {key.to_user_string()}",
    )
    def _privgate_checks(context: dg.AssetCheckExecutionContext, release: Any,
                         config: PrivgateRunConfig):
        resource = getattr(context.resources, resource_key)
        partition = context.partition_key if context.has_partition_key else None
        release_id = config.release_id or partition or default_release_id(context, key)
        earlier, in_progress = earlier_releases(context, partition, partitions_def)
        outcome, reports = resource.evaluate(
            release, release_id=release_id, declared=cfg, earlier_releases=earlier,
            earlier_in_progress=in_progress, holdout_path=config.holdout_path, log=context.log)
        context.log.info(
            f"privgate gate on release {release_id!r}: {outcome.decision} (exit code "
            f"{outcome.exit_code}, privgate run {outcome.run_id}, recorded: {outcome.recorded})")
        log_scorecard(context, resource, cfg, outcome, key, partition, reports)
        extra = {f"{kind}_report": dg.MetadataValue.path(str(path)) for kind, path in reports.items()}
        selected = {k.name for k in context.selected_asset_check_keys}
        for result in check_results(cfg, outcome, key, decision_metadata=extra):
            if result.check_name in selected:
                yield result

    return _privgate_checks


def default_release_id(context: Any, key: dg.AssetKey) -> str:
    """The release id of an unpartitioned release without ``release_id`` in the run config: the
    UTC time the release asset was last materialised (``2026-11-25T20:35:12Z``; the check run's
    start when there is none) — readable and in release order, never a run id."""
    import time
    from datetime import datetime, timezone

    stamp = None
    try:
        event = context.instance.get_latest_materialization_event(key)
        stamp = event.timestamp if event is not None else None
    except Exception:  # noqa: BLE001 - an instance without event storage
        stamp = None
    if stamp is None:
        stats = getattr(context.instance, "get_run_stats", None)
        try:
            stamp = stats(context.run.run_id).start_time if stats else None
        except Exception:  # noqa: BLE001
            stamp = None
    return datetime.fromtimestamp(stamp or time.time(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log_scorecard(context: Any, resource: Any, cfg: "GateConfig", outcome: Any, key: dg.AssetKey,
                  partition: Optional[str], reports: dict[str, Any]) -> None:
    """Materialise the release asset's privacy scorecard for this gate run
    (:mod:`privgate.dagster.scorecard`); a failure to build it is logged, never raised (the gate
    has decided)."""
    from .scorecard import recent_runs, scorecard_materialization

    try:
        try:
            run_cfg = resource.load_config(cfg)
        except Exception:  # noqa: BLE001 - an invalid run-time configuration: the declared one
            run_cfg = cfg
        event = scorecard_materialization(
            run_cfg, outcome, key, partition=partition, reports=reports,
            history=recent_runs(resource, outcome.dataset))
        op_context = getattr(context, "op_execution_context", context)
        op_context.log_event(event)
    except Exception as exc:  # noqa: BLE001
        context.log.warning(f"privgate scorecard of {key.to_user_string()} not materialised: "
                            f"{type(exc).__name__}")


def _active_runs_of(context: dg.AssetCheckExecutionContext, partitions: set[str]):
    """A function returning the partitions among ``partitions`` that another run is evaluating
    right now (STARTING / STARTED): the evaluation waits for them."""
    if not partitions:
        return None

    def active() -> list[str]:
        from dagster import DagsterRunStatus, RunsFilter

        runs = context.instance.get_runs(filters=RunsFilter(
            statuses=[DagsterRunStatus[s] for s in _ACTIVE]))
        me = context.run.run_id
        return sorted({r.tags.get("dagster/partition") for r in runs
                       if r.run_id != me and r.tags.get("dagster/partition") in partitions})

    return active


def applicable_check_keys(asset: Any, cfg: "GateConfig", *, has_holdout: bool) -> list[dg.AssetCheckKey]:
    """The check keys of ``asset`` whose rules apply to a run with (or without) a holdout:
    ``gate_decision`` and every rule except the ``when: with_holdout`` / ``no_holdout`` ones
    that do not. A run request that selects only these leaves the others out of the run, so
    Dagster does not show them as executed (or as failed executions of a blocked run)."""
    from .gate_checks import rule_checks

    key, _ = _asset_key_and_partitions(asset)
    names = [DECISION_CHECK] + [rc.name for rc in rule_checks(cfg)
                                if rc.when == "always" or (rc.when == "with_holdout") == has_holdout]
    return [dg.AssetCheckKey(key, n) for n in names]


def _identifier(name: str) -> str:
    return identifier(name, "dataset")


def gate_config_of(gate_config: "str | Path | GateConfig | None") -> "GateConfig":
    """The gate configuration a check factory was given: a GateConfig as is, a path loaded and
    validated, None the shipped default."""
    from privgate.gates import GateConfig, default_gate_config, load_gate_config

    if isinstance(gate_config, GateConfig):
        return gate_config
    if gate_config is None:
        return default_gate_config()
    return load_gate_config(gate_config)


def earlier_releases(context: Any, partition: Optional[str], partitions_def: Any) -> tuple[Any, Any]:
    """(the releases before ``partition`` in partition order, those of them being evaluated in
    other runs right now) — what the gate's trend rules must wait for; (None, None) for an
    unpartitioned asset."""
    if partition is None or partitions_def is None:
        return None, None
    keys = list(partitions_def.get_partition_keys(dynamic_partitions_store=context.instance))
    earlier = keys[:keys.index(partition)] if partition in keys else []
    return earlier, _active_runs_of(context, set(earlier))
