"""``privgate.evaluate``: run several metrics on one shared context."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Mapping, Sequence


from .context import EvaluationContext
from .errors import ParameterError, PrivgateError
from .registry import get_metric, metric_names, run_spec
from .report import Report
from .threads import limited

ProgressFn = Callable[[str, int, int], None]


def default_metrics(ctx: EvaluationContext) -> list[str]:
    """Every registered metric whose needs these inputs satisfy: reconstruction and disclosure
    metrics need sensitive columns, hidden_rate needs a pairing."""
    out = []
    for name in metric_names():
        needs = set(get_metric(name).needs)
        if ("sensitive" in needs or "targets" in needs) and not ctx.sensitive:
            continue
        if "pairing" in needs and ctx.pairing in (None, False):
            continue
        if "holdout" in needs and ctx.holdout is None:
            continue
        out.append(name)
    return out


def evaluate(
    real: Any,
    synthetic: Any,
    metrics: Sequence[str] | str | None = None,
    *,
    holdout: Any = None,
    keys: Sequence[str] | None = None,
    sensitive: Sequence[str] | str | None = None,
    schema: Mapping[str, str] | None = None,
    seed: int = 0,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    pairing: Any = None,
    baseline: bool = False,
    on_error: str = "raise",
    progress: ProgressFn | bool | None = None,
    threads: int | None = None,
) -> Report:
    """Evaluate a synthetic release against the real data with several metrics.

    Args:
        real, synthetic, holdout: Polars/pyarrow/pandas frames or paths (.parquet, .csv, .arrow).
        metrics: metric names (default: every registered metric these inputs can feed).
        keys / sensitive: quasi-identifiers and sensitive columns (reconstruction, disclosure).
        schema: column → "numeric" | "categorical", overriding inference.
        seed: seed of every random step (same inputs + seed → same scores).
        params: metric name → keyword parameters for that metric.
        pairing: hidden_rate's pairing (True = row i ↔ row i, or per-synthetic real row indices).
        baseline: with a holdout, also score a holdout sample of the release's size in place of
            the synthetic set and attach ``baseline`` / ``excess`` to each result (not to
            self-controlled metrics, which compare with the holdout themselves).
        on_error: "raise" (default) or "record": a metric that fails is recorded in
            ``Report.errors`` and the others still run (gates use this to fail closed).
        progress: True prints one line per metric to stderr, or a callable(name, i, total).
        threads: thread budget of the native libraries (privgate.threads): default
            $PRIVGATE_THREADS, else the cores free at the start of the run.

    Input validation errors are always raised: nothing is computed on invalid inputs.
    """
    if on_error not in ("raise", "record"):
        raise ParameterError(f"on_error must be 'raise' or 'record'; got {on_error!r}")
    start = time.perf_counter()
    ctx = EvaluationContext(real, synthetic, holdout=holdout, schema=schema, keys=keys,
                            sensitive=sensitive, seed=seed, pairing=pairing, threads=threads)
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    names = list(metrics) if metrics is not None else default_metrics(ctx)
    params = {k: dict(v) for k, v in (params or {}).items()}
    unknown_params = sorted(set(params) - set(names))
    if unknown_params:
        raise ParameterError(f"params given for metrics that are not evaluated: {unknown_params}")
    specs = [get_metric(n) for n in names]  # unknown names fail before any work
    if baseline and ctx.holdout is None:
        raise ParameterError("baseline=True needs a holdout")
    base_ctx = ctx.holdout_baseline() if baseline else None
    report_fn = _progress_fn(progress)
    results, errors = {}, {}
    with limited(ctx.threads):
        _run_all(specs, ctx, base_ctx, params, report_fn, on_error, results, errors)
    return Report(results=results, errors=errors, schema=ctx.schema.as_dict(), n_real=ctx.n_real,
                  n_synthetic=ctx.n_synthetic, n_holdout=ctx.n_holdout, seed=seed,
                  seconds=time.perf_counter() - start,
                  params={"metrics": names, "keys": ctx.keys, "sensitive": ctx.sensitive,
                          "metric_params": params, "baseline": baseline})


def _run_all(specs, ctx, base_ctx, params, report_fn, on_error, results, errors) -> None:
    for i, spec in enumerate(specs, 1):
        if report_fn:
            report_fn(spec.name, i, len(specs))
        p = params.get(spec.name, {})
        try:
            res = run_spec(spec, ctx, p)
            if base_ctx is not None and not spec.self_controlled:
                res.with_baseline(run_spec(spec, base_ctx, p).value)
            results[spec.name] = res
        except PrivgateError as exc:
            if on_error == "raise":
                raise
            errors[spec.name] = f"{type(exc).__name__}: {exc}"


def _progress_fn(progress: ProgressFn | bool | None) -> ProgressFn | None:
    if progress is True:
        def show(name: str, i: int, total: int) -> None:
            print(f"[{i}/{total}] {name} ...", file=sys.stderr, flush=True)
        return show
    if callable(progress):
        return progress
    return None


__all__ = ["evaluate", "default_metrics"]
