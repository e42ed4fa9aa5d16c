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
from .latest_report import replay_newest
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator, named_check_spec

if TYPE_CHECKING:  # pragma: no cover
    from .check_body import CheckTarget


def build_privgate_latest_release(
    *,
    assets: Sequence[Any],
    gate_config: "Any" = None,
    resource_key: str = "privgate",
    holdout: bool | None = None,
    group_name: str | None = None,
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
        view = translator.get_asset_key({"kind": "latest_release", "asset_key": key})
        target = CheckTarget.of(asset, cfg, resource_key, translator, holdout)
        out.append(
            dg.AssetSpec(
                key=view,
                deps=[key],
                group_name=group_name,
                kinds={"privgate"},
                description=translator.get_description({"kind": "latest_release", "asset_key": key}),
            )
        )
        out.append(_view_checks(target, view))
    return out


def _view_checks(target: "CheckTarget", view: dg.AssetKey) -> dg.AssetChecksDefinition:
    """The definition of the view's checks. In a release's own (partitioned) run it yields
    nothing — the gate step reports the view once it has decided; executed alone it replays the
    newest recorded release."""
    specs = _unpartitioned_specs(target, view)

    @dg.multi_asset_check(
        name=f"{'__'.join(view.path)}_checks",
        specs=specs,
        can_subset=True,
        required_resource_keys={target.resource_key},
        compute_kind="privgate",
        description=f"The checks of the newest gated release of {target.key.to_user_string()} "
        "(reported by every gate run; executed alone: replayed from the score history)",
    )
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
    from .rule_checks import check_specs, rule_checks

    rules = {rc.name: rc for rc in rule_checks(target.cfg)}
    return [
        named_check_spec(target.translator, view, rules.get(spec.name), spec)
        for spec in check_specs(target.cfg, view, partitions_def=None, has_holdout=target.holdout)
    ]


__all__ = ["build_privgate_latest_release"]
