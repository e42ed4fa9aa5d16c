"""What a gate run evaluates (:func:`evaluation_plan`), evaluating part of it in another process
(:func:`evaluate_for_gate`), and checking such parts against a run (:func:`precomputed_report`)."""

from __future__ import annotations

from typing import Any, Callable

from ..options import RunOptions
from .config_model import GateConfig


def evaluation_plan(config: GateConfig, has_holdout: bool) -> dict[str, Any]:
    """What a gate run of ``config`` evaluates, as :func:`privgate.evaluate` keyword arguments
    (without the inputs): the metrics with a rule that applies (in configuration order), their
    parameters, keys, sensitive columns, schema, seed, and whether holdout baselines are
    needed. One plan for :func:`run_gate` and for evaluations split over several processes."""
    names = config.metrics_for(has_holdout)
    return {
        "metrics": names,
        "keys": config.keys,
        "sensitive": config.sensitive,
        "schema": config.schema,
        "seed": config.seed,
        "params": {n: p for n, p in config.params().items() if n in names},
        "baseline": bool(has_holdout and config.needs_baseline),
    }


def evaluate_for_gate(
    config: GateConfig,
    real: Any,
    synthetic: Any,
    holdout: Any = None,
    *,
    metrics: Any = None,
    threads: int | None = None,
    progress: Callable[..., Any] | None = None,
) -> Any:
    """Evaluate part of a gate run's plan (:func:`evaluation_plan`): the planned metrics among
    ``metrics`` (default: all), with the plan's parameters, seed and baselines, metric failures
    recorded in ``Report.errors``. The report carries the content digests of its inputs
    (``params["inputs_sha256"]``) so :func:`run_gate` (``report=``) can check that the parts it
    is given were computed from the inputs it gates. A metric's result does not depend on which
    other metrics share its context (each searches or slices the same exact neighbours), so the
    parts of a split evaluation give the results of the whole.

    Input validation errors raise (as :func:`privgate.evaluate`)."""
    from ..evaluation import evaluate
    from ..io import load_frame
    from .fingerprint import frame_fingerprint

    frames = {
        role: load_frame(data, role=role)
        for role, data in (("real", real), ("synthetic", synthetic), ("holdout", holdout))
        if data is not None
    }
    plan = evaluation_plan(config, "holdout" in frames)
    if metrics is not None:
        wanted = set(metrics)
        plan["metrics"] = [m for m in plan["metrics"] if m in wanted]
        plan["params"] = {k: v for k, v in plan["params"].items() if k in wanted}
    options = RunOptions(threads=threads).over(config.options)
    report = evaluate(
        frames["real"],
        frames["synthetic"],
        holdout=frames.get("holdout"),
        on_error="record",
        progress=progress,
        options=options,
        **plan,
    )
    report.params["inputs_sha256"] = {role: frame_fingerprint(f)["content_sha256"] for role, f in frames.items()}
    report.params["schema_overrides"] = dict(plan["schema"] or {})
    return report


def precomputed_report(report: Any, plan: dict[str, Any], fingerprint: dict[str, Any], frames: dict[str, Any]) -> Any:
    """``report`` checked against this run's plan and inputs, as a copy in plan order; raises
    ParameterError naming what does not match."""
    from ..errors import ParameterError
    from ..report import Report

    if not isinstance(report, Report):
        raise ParameterError(f"the precomputed report is a {type(report).__name__}, not a privgate Report")
    planned = list(plan["metrics"])
    params = report.params or {}

    def mismatch(what: str) -> ParameterError:
        return ParameterError(f"the precomputed report does not match this gate run: {what}")

    extra = [n for n in (*report.results, *report.errors) if n not in planned]
    if extra:
        raise mismatch(f"it has metrics the configuration does not plan for this run: {extra[:5]}")
    if report.results:  # results must come from these inputs with these settings
        digests = params.get("inputs_sha256")
        if not isinstance(digests, dict):
            raise mismatch("it carries no input digests (params['inputs_sha256']; use evaluate_for_gate)")
        for role, frame in frames.items():
            if frame is not None and digests.get(role) != (fingerprint.get(role) or {}).get("content_sha256"):
                raise mismatch(f"it was computed from other {role} data (content digest differs)")
        if set(digests) - {r for r, f in frames.items() if f is not None}:
            raise mismatch(f"it was computed with inputs this run lacks: {sorted(set(digests) - set(frames))}")
        if report.seed != plan["seed"]:
            raise mismatch(f"seed {report.seed!r}, the configuration's is {plan['seed']!r}")
        if dict(params.get("schema_overrides") or {}) != dict(plan["schema"] or {}):
            raise mismatch("it was computed with other column kinds (schema) than the configuration's")
        for key in ("keys", "sensitive", "baseline"):
            have = params.get(key)
            want = plan[key]
            if key != "baseline":
                have, want = list(have or []), list(want or [])
            if have != want:
                raise mismatch(f"{key} {have!r}, the configuration's is {want!r}")
        got = params.get("metric_params") or {}
        for name in report.results:
            if dict(got.get(name) or {}) != dict(plan["params"].get(name) or {}):
                raise mismatch(f"metric {name!r} was computed with other parameters than the configuration's")
    return Report(
        results={n: report.results[n] for n in planned if n in report.results},
        errors={n: report.errors[n] for n in planned if n in report.errors},
        schema=dict(report.schema),
        n_real=report.n_real,
        n_synthetic=report.n_synthetic,
        n_holdout=report.n_holdout,
        seed=report.seed,
        seconds=report.seconds,
        params={**params, "metrics": planned},
    )
