"""``build_privgate_family_checks``: the same gate checks as :func:`build_privgate_checks`, with
the evaluation split into one Dagster step per metric family, so a step-per-pod executor
(``dagster_k8s.k8s_job_executor``) runs the families in parallel pods, each with its own
resources and thread budget::

    checks = build_privgate_family_checks(
        assets=[my_release],
        step_tags={"tracing": {"dagster-k8s/config": {"container_config": {
            "resources": {"requests": {"cpu": "4", "memory": "8Gi"}}}}}},
        step_threads={"tracing": 4},
    )

Each checked asset gets a graph-backed ``AssetChecksDefinition`` named like the single-step
one (``privgate_<asset>``; the launchpad config ``ops: privgate_<asset>: config:`` is the same):

- one op per evaluation step, ``privgate_<asset>__<step>`` (default: one step per registry
  family of the configuration's metrics -- ``re_identification``, ``tracing``, ...). It loads the
  release (through the asset's IO manager), the real data and the holdout, evaluates its metrics
  of the gate's plan (:func:`privgate.gates.evaluate_for_gate`) and writes the results -- scores,
  intervals, details and per-record risks by row position, never a record value -- as JSON plus
  a NumPy ``.npz`` file to ``<work_dir>/<root run id>/<asset>/<step>.json|.npz``. Its Dagster
  output is ``Nothing``: no result passes through an IO manager.
- one join op, ``privgate_<asset>__gate``, after every step: it merges the steps' results
  (:func:`privgate.report.merge_reports`) and gates them with ``run_gate(report=...)`` under the
  per-dataset lock, in release order -- the same decision, check results, history row and
  reports as the single step -- then deletes the step files.

Failing closed: a step whose evaluation raises (an input it cannot load, an invalid
configuration, any error) records the failure instead of its results, and the join blocks the
release naming the step; a metric that no step evaluated blocks as a metric that produced no
result. A step that dies without writing (a pod killed for memory) fails the run: the join does
not run, the blocking checks are not executed and nothing downstream of the release is
materialised; nothing is recorded in the history (re-run the release). Steps hold no lock; only
the join is serialised per dataset (its ``pool``).

The price of the split: neighbour searches are shared within a step only. Each step loads the
inputs and builds its own context, so a search two families both read is computed once per step
(docs/dagster.md, *One release over several pods*).
"""

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import dagster as dg

from .build_checks import PrivgateRunConfig
from .check_body import CheckTarget, gate_config_of, gate_release
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig
    from privgate.report import Report

#: name of the join step (a step may not be called that)
GATE_STEP = "gate"
PARTIAL_FORMAT = 1


def default_steps(cfg: "GateConfig", translator: PrivgateTranslator = DEFAULT_TRANSLATOR) -> dict[str, list[str]]:
    """One step per registry family of ``cfg``'s metrics (configuration order): step name
    (:meth:`PrivgateTranslator.get_step_name`: the family as a Python identifier) → that
    family's name."""
    from privgate.catalogue import get_metric

    steps: dict[str, list[str]] = {}
    for name in cfg.metrics:
        family = get_metric(name).family
        steps.setdefault(translator.get_name({"kind": "step", "family": family}), [family])
    return steps


def step_of(metric: str, steps: Mapping[str, Sequence[str]]) -> str | None:
    """The step that evaluates ``metric``: the step naming it, else the step naming its registry
    family; None when no step does (or the metric is unknown)."""
    from privgate.catalogue import get_metric
    from privgate.errors import UnknownMetricError

    for step, members in steps.items():
        if metric in members:
            return step
    try:
        family = get_metric(metric).family
    except UnknownMetricError:
        return None
    return next((step for step, members in steps.items() if family in members), None)


def _check_steps(steps: Mapping[str, Sequence[str]], cfg: "GateConfig") -> dict[str, list[str]]:
    from privgate.catalogue import get_metric
    from privgate.registry import FAMILIES

    out: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for step, members in steps.items():
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", step) or step == GATE_STEP:
            raise dg.DagsterInvalidDefinitionError(
                f"build_privgate_family_checks: step name {step!r} must be a Python identifier other than {GATE_STEP!r}"
            )
        if isinstance(members, str):
            members = [members]
        for m in members:
            if m not in FAMILIES:
                get_metric(m)  # UnknownMetricError names the known metrics
            if m in owner:
                raise dg.DagsterInvalidDefinitionError(
                    f"build_privgate_family_checks: {m!r} is in steps {owner[m]!r} and {step!r}"
                )
            owner[m] = step
        out[step] = list(members)
    if not out:
        raise dg.DagsterInvalidDefinitionError("build_privgate_family_checks: no steps given")
    lost = [m for m in cfg.metrics if step_of(m, out) is None]
    if lost:
        raise dg.DagsterInvalidDefinitionError(
            f"build_privgate_family_checks: no step evaluates {lost} (name them or their family in a step)"
        )
    return out


def build_privgate_family_checks(
    *,
    assets: Sequence[Any],
    gate_config: "str | Path | GateConfig | None" = None,
    steps: Mapping[str, Sequence[str]] | None = None,
    step_tags: Mapping[str, Mapping[str, Any]] | None = None,
    step_threads: Mapping[str, int] | None = None,
    retry_policy: dg.RetryPolicy | None = None,
    resource_key: str = "privgate",
    pool: str | None = None,
    name_prefix: str = "privgate",
    holdout: bool | None = None,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
) -> list[dg.AssetChecksDefinition]:
    """The checks of :func:`~privgate.dagster.build_privgate_checks` (same names, specs and
    results), evaluated in one step per metric family and decided by a join step.

    ``steps``: step name → metric names and/or registry family names it evaluates (default:
    one step per family of the configuration's metrics, :func:`default_steps`). ``step_tags``:
    step name (or ``"gate"`` for the join) → op tags, e.g. ``{"dagster-k8s/config": ...}`` for
    that step's pod resources. ``step_threads``: step name → thread budget of its evaluation
    (default: the resource's ``threads``); match it to the pod's CPU. ``retry_policy``: retries
    of the family steps (e.g. after a pod eviction). ``pool``: concurrency pool of the join
    step (default :meth:`PrivgateTranslator.get_pool`, ``privgate_<dataset>``). Other arguments
    (``translator`` too) as ``build_privgate_checks``.
    """
    cfg = gate_config_of(gate_config)
    if not assets:
        raise dg.DagsterInvalidDefinitionError("build_privgate_family_checks: no assets given")
    plan_steps = _check_steps(steps if steps is not None else default_steps(cfg, translator), cfg)
    tags = dict(step_tags or {})
    unknown = sorted(set(tags) - set(plan_steps) - {GATE_STEP})
    if unknown:
        raise dg.DagsterInvalidDefinitionError(
            f"build_privgate_family_checks: step_tags for unknown steps {unknown}; the steps are "
            f"{sorted(plan_steps)} and {GATE_STEP!r}"
        )
    unknown = sorted(set(step_threads or {}) - set(plan_steps))
    if unknown:
        raise dg.DagsterInvalidDefinitionError(
            f"build_privgate_family_checks: step_threads for unknown steps {unknown}"
        )
    pool_name = pool if pool is not None else translator.get_name({"kind": "pool", "dataset": cfg.dataset})
    return [
        _family_checks_for(
            CheckTarget.of(a, cfg, resource_key, translator, holdout),
            plan_steps,
            tags,
            dict(step_threads or {}),
            retry_policy,
            pool_name,
            name_prefix,
        )
        for a in assets
    ]


def _family_checks_for(
    target: CheckTarget,
    steps: dict[str, list[str]],
    tags: dict[str, Mapping[str, Any]],
    threads: dict[str, int],
    retry_policy: dg.RetryPolicy | None,
    pool: str,
    name_prefix: str,
) -> dg.AssetChecksDefinition:
    key, translator = target.key, target.translator
    specs_by_output = {spec.get_python_identifier(): spec for spec in target.specs()}
    step_ops = {
        step: _step_op(
            translator.get_name({"kind": "step_op", "asset_key": key, "step": step, "name_prefix": name_prefix}),
            step,
            target,
            steps,
            tags.get(step),
            threads.get(step),
            retry_policy,
        )
        for step in steps
    }
    join = _join_op(
        translator.get_name({"kind": "step_op", "asset_key": key, "step": GATE_STEP, "name_prefix": name_prefix}),
        target,
        steps,
        specs_by_output,
        tags.get(GATE_STEP),
        pool,
    )

    def config_fn(config: Any) -> dict[str, Any]:
        values = config if isinstance(config, dict) else config.model_dump()
        values = {k: v for k, v in values.items() if v is not None}
        return {op.name: {"config": values} for op in (*step_ops.values(), join)}

    @dg.graph(
        name=translator.get_name({"kind": "op", "asset_key": key, "name_prefix": name_prefix}),
        ins={"release": dg.GraphIn()},
        out={name: dg.GraphOut() for name in specs_by_output},
        config=dg.ConfigMapping(config_fn=config_fn, config_schema=PrivgateRunConfig.to_config_schema()),
        description=translator.get_description({"kind": "op", "asset_key": key, "steps": list(steps)}),
    )
    def _graph(release):
        done = {f"after_{step}": op(release) for step, op in step_ops.items()}
        outs = join(release=release, **done)
        return {name: getattr(outs, name) for name in specs_by_output}

    return dg.AssetChecksDefinition.create(
        keys_by_input_name={"release": key},
        node_def=_graph,
        check_specs_by_output_name=specs_by_output,
        can_subset=True,
    )


# --- the family steps ---------------------------------------------------------------------------


def _work_folder(target: CheckTarget, resource: Any, context: Any) -> Path:
    """Where the steps of this run leave results (:meth:`PrivgateTranslator.get_step_work_folder`)."""
    return target.translator.get_path(
        {"kind": "step_folder", "work_dir": resource.work_dir, "run": context.run, "asset_key": target.key}
    )


def _refuse_cluster_settings(resource: Any) -> None:
    """Raise when the resource asks for a Dask cluster: a by-family step evaluates its metrics in
    its own Dagster step, so ``executor`` / ``sharded`` would not be honoured (the join then
    blocks the release rather than gate results evaluated elsewhere than asked)."""
    from privgate.errors import ConfigError

    if resource.sharded or (resource.executor or "local") != "local":
        raise ConfigError(
            "the by-family checks evaluate in their own Dagster steps: the resource's executor and "
            "sharded settings apply to build_privgate_checks; unset them for build_privgate_family_checks"
        )


def _step_failed(
    context: dg.OpExecutionContext, folder: Path, step: str, metrics: list[str], exc: BaseException
) -> dg.Output:
    """Record a step that failed or ran past the deadline, for the join to block on, and log why."""
    from privgate.gates.checks import privgate_error_text
    from privgate.gates.deadline import DeadlineExceeded

    reason = (
        "the step did not finish within the run's deadline and was stopped"
        if isinstance(exc, DeadlineExceeded)
        else privgate_error_text(exc)
    )
    write_partial(folder, step, None, metrics=metrics, error=reason)
    context.log.error(f"privgate step {step!r} failed ({reason}); the gate step will block the release")
    return dg.Output(None, metadata={"status": "failed", "metrics": len(metrics)})


def _step_evaluated(
    context: dg.OpExecutionContext, folder: Path, step: str, report: "Report", budget: int | None, start: float
) -> dg.Output:
    """Log an evaluated step and return its output: counts, threads, time, peak memory, results file."""
    context.log.info(
        f"privgate step {step!r}: {len(report.results)} metric(s) evaluated, "
        f"{len(report.errors)} failed, in {time.perf_counter() - start:.1f} s"
    )
    return dg.Output(
        None,
        metadata={
            "status": "evaluated",
            "metrics": len(report.results),
            "failed_metrics": len(report.errors),
            "threads": budget,
            "seconds": dg.MetadataValue.float(time.perf_counter() - start),
            # sizing the step's pod: the peak memory of this process (of the whole run's
            # process under the in-process executor)
            "peak_rss_mib": dg.MetadataValue.int(_peak_rss_mib()),
            "step_results": dg.MetadataValue.path(str(folder / f"{step}.json")),
        },
    )


def _step_op(
    op_name: str,
    step: str,
    target: CheckTarget,
    steps: dict[str, list[str]],
    tags: Mapping[str, Any] | None,
    threads: int | None,
    retry_policy: dg.RetryPolicy | None,
) -> dg.OpDefinition:
    cfg = target.cfg

    @dg.op(
        name=op_name,
        ins={"release": dg.In()},
        out=dg.Out(dg.Nothing),
        required_resource_keys={target.resource_key},
        tags=dict(tags or {}),
        retry_policy=retry_policy,
        description=target.translator.get_description(
            {"kind": "step_op", "asset_key": target.key, "step": step, "members": steps[step]}
        ),
    )
    def _evaluate_step(context: dg.OpExecutionContext, release: Any, config: PrivgateRunConfig):
        resource = getattr(context.resources, target.resource_key)
        folder = _work_folder(target, resource, context)
        start = time.perf_counter()
        metrics: list[str] = []
        from privgate.gates.deadline import DeadlineExceeded, with_deadline

        try:
            from privgate.gates import evaluate_for_gate, evaluation_plan

            _refuse_cluster_settings(resource)
            # the resource's run options apply to every step as to the single-step evaluation
            run_cfg = resource.load_config(cfg).with_options(
                exact=resource.exact, sample_real=resource.sample_real, sample=resource.sample
            )
            holdout = (config.holdout_path if config.holdout_path is not None else resource.holdout_path) or None
            metrics = [m for m in evaluation_plan(run_cfg, holdout is not None)["metrics"] if step_of(m, steps) == step]
            budget = threads if threads is not None else resource.threads
            # the step has the run's deadline too: past it the step is stopped and the join blocks
            seconds = resource.deadline if resource.deadline is not None else run_cfg.options.deadline
            report, _ = with_deadline(
                lambda: evaluate_for_gate(
                    run_cfg, resource.real_path, release, holdout, metrics=metrics, threads=budget
                ),
                seconds,
            )
            write_partial(folder, step, report, metrics=metrics)
        except (Exception, DeadlineExceeded) as exc:  # noqa: BLE001 - recorded for the join, which blocks
            return _step_failed(context, folder, step, metrics, exc)
        return _step_evaluated(context, folder, step, report, budget, start)

    return _evaluate_step


def _peak_rss_mib() -> int:
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return int(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024)


def write_partial(
    folder: Path, step: str, report: "Report | None", *, metrics: Sequence[str], error: str | None = None
) -> Path:
    """Write one step's results (or its failure) as ``<step>.json`` + ``<step>.npz`` (per-record
    risks), each atomically (a reader sees a whole file or none)."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": PARTIAL_FORMAT,
        "step": step,
        "metrics": list(metrics),
        "status": "failed" if report is None else "evaluated",
        "error": error,
        "report": None if report is None else report.to_dict(),
    }
    arrays = (
        {}
        if report is None
        else {n: np.asarray(r.per_record) for n, r in report.results.items() if r.per_record is not None}
    )
    npz = folder / f"{step}.npz"
    fd, tmp = tempfile.mkstemp(prefix=f".{step}.", suffix=".npz.tmp", dir=folder)
    with os.fdopen(fd, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, npz)
    target = folder / f"{step}.json"
    fd, tmp = tempfile.mkstemp(prefix=f".{step}.", suffix=".json.tmp", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, allow_nan=False)
    os.replace(tmp, target)  # written last: the JSON says the step finished
    return target


def read_partial(folder: Path, step: str) -> dict[str, Any]:
    """One step's payload with its report rebuilt (``payload["report"]`` a Report or None)."""
    import numpy as np

    from privgate.report import Report

    payload = json.loads((folder / f"{step}.json").read_text(encoding="utf-8"))
    if payload.get("format") != PARTIAL_FORMAT or payload.get("step") != step:
        raise ValueError(f"{folder / f'{step}.json'} is not a format-{PARTIAL_FORMAT} result of step {step!r}")
    if payload.get("report") is not None:
        with np.load(folder / f"{step}.npz", allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        payload["report"] = Report.from_dict(payload["report"], arrays)
    return payload


# --- the join -----------------------------------------------------------------------------------


def merged_report(folder: Path, cfg: Any, steps: dict[str, list[str]], has_holdout: bool) -> "Report":
    """The steps' results as one report of the gate's plan: a step that failed, left no results
    or disagrees with the others gives each of its planned metrics an error (the gate blocks)."""
    from privgate.errors import PrivgateError
    from privgate.gates import evaluation_plan
    from privgate.gates.checks import safe_message
    from privgate.report import Report, merge_reports

    planned = evaluation_plan(cfg, has_holdout)["metrics"]
    parts: list[Report] = []
    errors: dict[str, str] = {}

    def fail(metrics: Sequence[str], why: str) -> None:
        for m in metrics:
            errors.setdefault(m, why)

    for step in steps:
        mine = [m for m in planned if step_of(m, steps) == step]
        try:
            payload = read_partial(folder, step)
        except FileNotFoundError:
            fail(
                mine,
                f"evaluation step {step!r} left no results in {folder} (did it run? is the "
                "work_dir shared by every step?)",
            )
            continue
        except Exception as exc:  # noqa: BLE001
            fail(mine, f"the results of evaluation step {step!r} cannot be read ({type(exc).__name__})")
            continue
        if payload["report"] is None:
            fail(mine, f"evaluation step {step!r} stopped ({safe_message(str(payload.get('error')))})")
            continue
        stale = sorted(set(mine) - set(payload["metrics"]))
        if stale:  # the step planned another configuration (changed between the steps)
            fail(
                mine,
                f"evaluation step {step!r} did not evaluate {stale} (the gate configuration "
                "changed between the steps?)",
            )
            continue
        parts.append(payload["report"])
    for m in planned:
        if step_of(m, steps) is None:
            fail([m], "no evaluation step evaluates this metric (add it or its family to a step)")
    try:
        merged = merge_reports(parts, order=planned) if parts else Report(results={})
    except PrivgateError as exc:
        fail(planned, f"the evaluation steps disagree: {safe_message(str(exc))}")
        merged = Report(results={})
    for m in errors:
        merged.results.pop(m, None)
    merged.errors = {m: (merged.errors.get(m) or errors[m]) for m in planned if m in errors or m in merged.errors}
    merged.params["metrics"] = list(planned)
    return merged


def _join_op(
    op_name: str,
    target: CheckTarget,
    steps: dict[str, list[str]],
    specs_by_output: dict[str, dg.AssetCheckSpec],
    tags: Mapping[str, Any] | None,
    pool: str,
) -> dg.OpDefinition:

    @dg.op(
        name=op_name,
        ins={"release": dg.In(), **{f"after_{s}": dg.In(dg.Nothing) for s in steps}},
        out={name: dg.Out(dg.Nothing, is_required=False) for name in specs_by_output},
        required_resource_keys={target.resource_key},
        tags=dict(tags or {}),
        pool=pool,
        description=target.translator.get_description({"kind": "join", "asset_key": target.key}),
    )
    def _gate(context: dg.OpExecutionContext, release: Any, config: PrivgateRunConfig):
        resource = getattr(context.resources, target.resource_key)
        folder = _work_folder(target, resource, context)
        report = _joined_report(resource, target.cfg, config, folder, steps)
        yield from gate_release(
            context,
            release,
            config,
            target,
            report=report,
            steps=len(steps),
            after_evaluate=lambda: _remove_work_folder(folder),
        )

    return _gate


def _joined_report(
    resource: Any, cfg: "GateConfig", config: PrivgateRunConfig, folder: Path, steps: dict[str, list[str]]
) -> "Report":
    """The steps' merged results for the gate; an empty report (the gate blocks naming the
    configuration) when the run's configuration is invalid."""
    holdout = (config.holdout_path if config.holdout_path is not None else resource.holdout_path) or None
    try:
        # the resource's run options apply to every step as to the single-step evaluation
        run_cfg = resource.load_config(cfg).with_options(
            exact=resource.exact, sample_real=resource.sample_real, sample=resource.sample
        )
    except Exception:  # noqa: BLE001 - run_gate names the invalid configuration and blocks
        return _empty_report()
    return merged_report(folder, run_cfg, steps, holdout is not None)


def _remove_work_folder(folder: Path) -> None:
    """Delete the steps' files, then the run's folder once no other checked asset uses it."""
    shutil.rmtree(folder, ignore_errors=True)
    try:
        folder.parent.rmdir()
    except OSError:
        pass


def _empty_report() -> "Report":
    from privgate.report import Report

    return Report(results={})


__all__ = ["build_privgate_family_checks", "default_steps", "merged_report", "step_of"]
