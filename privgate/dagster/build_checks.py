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
config in the launchpad. See :mod:`privgate.dagster.privgate_resource` for how evaluations of one
dataset are serialised and ordered.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import dagster as dg
from pydantic import Field

from .asset_keys import asset_key_and_partitions
from .check_body import CheckTarget, gate_config_of, gate_release
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig


class PrivgateRunConfig(dg.Config):
    """Per-run settings of the privgate checks (launchpad: ``ops: <check op>: config:``)."""

    release_id: Optional[str] = Field(
        default=None, description="Release id for the history (default: the partition key, else the run id)."
    )
    holdout_path: Optional[str] = Field(
        default=None, description="A holdout for this run only (overrides the resource's)."
    )


def build_privgate_checks(
    *,
    assets: Sequence[Any],
    gate_config: "str | Path | GateConfig | None" = None,
    resource_key: str = "privgate",
    pool: str | None = None,
    name_prefix: str = "privgate",
    holdout: bool | None = None,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
) -> list[dg.AssetChecksDefinition]:
    """Blocking privgate gate checks for every asset in ``assets``.

    ``assets``: ``AssetsDefinition`` s (their partitions are used) or asset keys / ``AssetSpec`` s.
    ``gate_config``: the configuration the checks are declared from -- a path, a ``GateConfig``
    or ``None`` for privgate's default (``PrivgateResource.gate_config`` may replace it at run
    time; a rule it adds is still decided by ``gate_decision``). ``resource_key``: the key of the
    :class:`~privgate.dagster.privgate_resource.PrivgateResource`. ``pool``: the Dagster concurrency pool
    of the check steps (default :meth:`PrivgateTranslator.get_pool`, ``privgate_<dataset>``; give
    it a limit of 1 with run granularity to queue a dataset's evaluations in launch order -- see
    docs/dagster.md). ``holdout``: whether the runs have a holdout (the resource's
    ``holdout_path``): the checks declared are then exactly the rules that apply; ``None``
    declares every rule, and a blocking rule a run does not apply passes saying so
    (``applied: false``). ``translator``: names and describes the checks and ops
    (:class:`~privgate.dagster.translator.PrivgateTranslator`).

    Every run also materialises the release asset's privacy scorecard
    (:mod:`privgate.dagster.scorecard`; list :func:`build_privgate_scorecards` among the assets).
    """
    cfg = gate_config_of(gate_config)
    if not assets:
        raise dg.DagsterInvalidDefinitionError("build_privgate_checks: no assets given")
    pool_name = pool if pool is not None else translator.get_name({"kind": "pool", "dataset": cfg.dataset})
    return [
        _checks_for(CheckTarget.of(a, cfg, resource_key, translator, holdout), pool_name, name_prefix) for a in assets
    ]


def _checks_for(target: CheckTarget, pool: str, name_prefix: str) -> dg.AssetChecksDefinition:
    key = target.key

    @dg.multi_asset_check(
        name=target.translator.get_name({"kind": "op", "asset_key": key, "name_prefix": name_prefix}),
        specs=target.specs(),
        ins={"release": dg.AssetIn(key)},
        can_subset=True,
        required_resource_keys={target.resource_key},
        pool=pool,
        compute_kind="privgate",
        description=target.translator.get_description({"kind": "op", "asset_key": key}),
    )
    def _privgate_checks(context: dg.AssetCheckExecutionContext, release: Any, config: PrivgateRunConfig):
        yield from gate_release(context, release, config, target)

    return _privgate_checks


def applicable_check_keys(
    asset: Any, cfg: "GateConfig", *, has_holdout: bool, translator: PrivgateTranslator = DEFAULT_TRANSLATOR
) -> list[dg.AssetCheckKey]:
    """The check keys of ``asset`` whose rules apply to a run with (or without) a holdout:
    ``gate_decision`` and every rule except the ``when: with_holdout`` / ``no_holdout`` ones
    that do not. A run request that selects only these leaves the others out of the run, so
    Dagster does not show them as executed (or as failed executions of a blocked run)."""
    from .rule_checks import rule_checks

    key, _ = asset_key_and_partitions(asset)
    names = [
        translator.get_name({"kind": "check", "asset_key": key, "rule": rc})
        for rc in [None, *rule_checks(cfg)]
        if rc is None or rc.applies(has_holdout)
    ]
    return [dg.AssetCheckKey(key, n) for n in names]


__all__ = ["PrivgateRunConfig", "applicable_check_keys", "build_privgate_checks"]
