"""What a privgate check op does, written once for the single-step checks
(:func:`~privgate.dagster.build_privgate_checks`) and the join step of the by-family checks
(:func:`~privgate.dagster.build_privgate_family_checks`): gate one release through the
:class:`~privgate.dagster.PrivgateResource` (per-dataset lock, release order), log the
decision, materialise the scorecard and yield the selected check results.

:class:`CheckTarget` is one checked release asset: its key, partitions, the gate configuration
the checks are declared from and the translator that names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import dagster as dg

from .asset_keys import asset_key_and_partitions
from .rule_checks import DECISION_CHECK, check_results, check_specs, rule_checks
from .translator import PrivgateTranslator, named_check_spec

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig
    from privgate.report import Report

#: statuses of a Dagster run that is evaluating (or about to evaluate) right now
_ACTIVE = ("STARTING", "STARTED")


def gate_config_of(gate_config: "str | Path | GateConfig | None") -> "GateConfig":
    """The gate configuration a check factory was given: a GateConfig as is, a path loaded and
    validated, None the shipped default."""
    from privgate.gates import default_gate_config
    from privgate.gates.config import resolve_gate_config

    return default_gate_config() if gate_config is None else resolve_gate_config(gate_config)


@dataclass(frozen=True)
class CheckTarget:
    """One release asset checked with gate configuration ``cfg``, named by ``translator``."""

    key: dg.AssetKey
    partitions_def: Any
    cfg: "GateConfig"
    resource_key: str
    translator: PrivgateTranslator
    holdout: bool | None = None

    @classmethod
    def of(
        cls,
        asset: Any,
        cfg: "GateConfig",
        resource_key: str,
        translator: PrivgateTranslator,
        holdout: bool | None = None,
    ) -> "CheckTarget":
        key, partitions_def = asset_key_and_partitions(asset)
        return cls(key, partitions_def, cfg, resource_key, translator, holdout)

    def names(self) -> dict[str, str]:
        """privgate's check name → the translator's, for the decision and every rule."""
        names = {
            DECISION_CHECK if rc is None else rc.name: self.translator.get_name(
                {"kind": "check", "asset_key": self.key, "rule": rc}
            )
            for rc in [None, *rule_checks(self.cfg)]
        }
        return names

    def specs(self) -> list[dg.AssetCheckSpec]:
        """The declared checks (the rules that apply with / without a holdout, as the translator
        names and describes them)."""
        rules = {rc.name: rc for rc in rule_checks(self.cfg)}
        return [
            named_check_spec(self.translator, self.key, rules.get(spec.name), spec)
            for spec in check_specs(self.cfg, self.key, partitions_def=self.partitions_def, has_holdout=self.holdout)
        ]

    def results(self, outcome: Any, extra: dict[str, Any]) -> list[dg.AssetCheckResult]:
        """The check results of a gate outcome, named as declared."""
        names = self.names()
        return [
            r._replace(check_name=names.get(r.check_name, r.check_name))
            for r in check_results(self.cfg, outcome, self.key, decision_metadata=extra)
        ]


def gate_release(
    context: Any,
    release: Any,
    config: Any,
    target: CheckTarget,
    *,
    report: "Report | None" = None,
    steps: int | None = None,
    after_evaluate: Callable[[], None] | None = None,
) -> Iterator[dg.AssetCheckResult]:
    """The check op body: gate ``release`` (``report``: results the family steps computed;
    ``steps``: how many), call ``after_evaluate``, log the decision and the scorecard, and yield
    the results of the checks the run selected."""
    resource = getattr(context.resources, target.resource_key)
    partition = context.partition_key if context.has_partition_key else None
    release_id = config.release_id or partition or default_release_id(context, target.key)
    earlier, in_progress = earlier_releases(context, partition, target.partitions_def)
    outcome, reports = resource.evaluate(
        release,
        release_id=release_id,
        declared=target.cfg,
        earlier_releases=earlier,
        earlier_in_progress=in_progress,
        holdout_path=config.holdout_path,
        log=context.log,
        report=report,
    )
    if after_evaluate is not None:
        after_evaluate()
    split = "" if steps is None else f" ({steps} evaluation steps)"
    context.log.info(
        f"privgate gate on release {release_id!r}{split}: {outcome.decision} (exit code "
        f"{outcome.exit_code}, privgate run {outcome.run_id}, recorded: {outcome.recorded})"
    )
    log_scorecard(context, resource, target, outcome, partition, reports)
    extra = target.translator.get_metadata(
        {"kind": "check", "asset_key": target.key, "reports": reports, "steps": steps}
    )
    from .latest_report import report_latest_release

    report_latest_release(context, target, outcome, partition, extra)
    selected = {k.name for k in context.selected_asset_check_keys}
    for result in target.results(outcome, extra):
        if result.check_name in selected:
            yield result


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


def log_scorecard(
    context: Any, resource: Any, target: CheckTarget, outcome: Any, partition: Optional[str], reports: dict[str, Any]
) -> None:
    """Materialise the release asset's privacy scorecard for this gate run
    (:mod:`privgate.dagster.scorecard`); a failure to build it is logged, never raised (the gate
    has decided)."""
    from .scorecard import recent_runs, recent_trends, scorecard_materialization

    try:
        try:
            run_cfg = resource.load_config(target.cfg)
        except Exception:  # noqa: BLE001 - an invalid run-time configuration: the declared one
            run_cfg = target.cfg
        event = scorecard_materialization(
            run_cfg,
            outcome,
            target.key,
            partition=partition,
            reports=reports,
            history=recent_runs(resource, outcome.dataset),
            translator=target.translator,
            trends=recent_trends(resource, outcome.dataset),
        )
        op_context = getattr(context, "op_execution_context", context)
        op_context.log_event(event)
    except Exception as exc:  # noqa: BLE001
        context.log.warning(
            f"privgate scorecard of {target.key.to_user_string()} not materialised: {type(exc).__name__}"
        )


def _active_runs_of(context: Any, partitions: set[str]) -> Callable[[], list[str]] | None:
    """A function returning the partitions among ``partitions`` that another run is evaluating
    right now (STARTING / STARTED): the evaluation waits for them."""
    if not partitions:
        return None

    def active() -> list[str]:
        from dagster import DagsterRunStatus, RunsFilter

        runs = context.instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus[s] for s in _ACTIVE]))
        me = context.run.run_id
        return sorted(
            {
                r.tags.get("dagster/partition")
                for r in runs
                if r.run_id != me and r.tags.get("dagster/partition") in partitions
            }
        )

    return active


def earlier_releases(context: Any, partition: Optional[str], partitions_def: Any) -> tuple[Any, Any]:
    """(the releases before ``partition`` in partition order, those of them being evaluated in
    other runs right now) — what the gate's trend rules must wait for; (None, None) for an
    unpartitioned asset."""
    if partition is None or partitions_def is None:
        return None, None
    keys = list(partitions_def.get_partition_keys(dynamic_partitions_store=context.instance))
    earlier = keys[: keys.index(partition)] if partition in keys else []
    return earlier, _active_runs_of(context, set(earlier))


__all__ = ["CheckTarget", "asset_key_and_partitions", "gate_config_of", "gate_release"]
