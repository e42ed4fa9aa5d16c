"""``privgate.evaluate``: run several metrics on one shared context.

Metrics are computed grouped by the encoded space they read (:func:`run_order`) and each space is
dropped after its last reader (:func:`spaces_still_read`); no value depends on the order, and the
report lists them in the order asked for.

Run options (:class:`privgate.options.RunOptions`, or the keywords of :func:`evaluate`):

* ``threads``: thread budget of the native libraries (privgate.threads): default
  $PRIVGATE_THREADS, else the cores free at the start of the run.
* ``exact``: True forces exact neighbour searches at every size (default: an approximate screen
  with measured recall above ``SearchSettings.exact_below_pairs``; docs/performance.md "Exact searches and the
  neighbour search settings").
* ``sample_real``: estimate the metrics that are means over real records on a seeded sample of
  this many real records (their ``details["sampled"]`` says so; None: as ``sample`` says).
* ``sample``: query-record sampling of both sides for the metrics that are means, shares or
  medians over records: "auto" (default: only a side of more than ``context.AUTO_SAMPLE_ABOVE``
  rows, and not with ``exact``), "off"/None, or N per side (docs/performance.md "Sampling").
* ``memory_limit``: the most memory the run may use (bytes, or "8G"; "auto":
  $PRIVGATE_MEMORY_LIMIT, else this process's RSS + the memory the system has available;
  None/"off": no check). Before any metric runs, its peak is estimated from the sizes, metrics and
  options (:mod:`privgate.memory_guard`) and a run that would not fit raises MemoryLimitError
  naming the metric and the options that would fit.
"""

from __future__ import annotations

import inspect
import sys
import time
from typing import Any, Callable, Mapping, Sequence

from . import seeds, stats
from .catalogue import get_metric, metric_names
from .context import EvaluationContext
from .errors import ParameterError, PrivgateError
from .memory_guard import check_run
from .metrics.search_error import widen_excess_for_search
from .options import RunOptions, call_options
from .progress import line as progress_line
from .progress import within as progress_within
from .registry import has_baseline, run_spec
from .report import Report
from .results import MetricResult
from .stats.metric_intervals import BOOT, intervals_on, jackknife_sources, per_record_mean
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
    exact: bool = False,
    sample_real: int | None = None,
    sample: int | str | None = "auto",
    memory_limit: int | str | None = "auto",
    options: RunOptions | None = None,
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
            the synthetic set and attach ``baseline`` / ``excess`` with their intervals to each
            result that has one (:func:`attach_baseline`, :func:`has_baseline`).
        on_error: "raise" (default) or "record": a metric that fails is recorded in
            ``Report.errors`` and the others still run (gates use this to fail closed).
        progress: True prints one line per metric to stderr, and inside a long metric how far
            its neighbour searches are (rows done, seconds; at most one line per
            ``privgate.progress.PROGRESS_EVERY`` = 10 s); or a callable(name, i, total), called
            also as callable(name, done, total, detail={...}) inside a metric when it takes a
            ``detail`` keyword.
        threads, exact, sample_real, sample, memory_limit: the run options (module docstring).
        options: the run options as one :class:`privgate.options.RunOptions`, whose given fields
            win over those keywords (``sample=None``, ``memory_limit=None`` there: off).

    Metrics run grouped by the space they read, each space dropped after its last reader (module
    docstring); invalid inputs always raise, before anything is computed.
    """
    if on_error not in ("raise", "record"):
        raise ParameterError(f"on_error must be 'raise' or 'record'; got {on_error!r}")
    start = time.perf_counter()
    opts = call_options(
        options, threads=threads, exact=exact, sample_real=sample_real, sample=sample, memory_limit=memory_limit
    )
    ctx = EvaluationContext(
        real,
        synthetic,
        holdout=holdout,
        schema=schema,
        keys=keys,
        sensitive=sensitive,
        seed=seed,
        pairing=pairing,
        options=opts,
    )
    names, params, specs = _metrics_asked(ctx, metrics, params, baseline=baseline, memory_limit=opts.memory_limit)
    base_ctx = ctx.holdout_baseline() if baseline else None
    report_fn = _progress_fn(progress)
    results, errors = {}, {}
    with limited(ctx.threads):
        _run_all(run_order(specs), ctx, base_ctx, params, report_fn, on_error, results, errors)
    return Report(
        results={n: results[n] for n in names if n in results},  # the order asked for
        errors={n: errors[n] for n in names if n in errors},
        schema=ctx.schema.as_dict(),
        n_real=ctx.n_real,
        n_synthetic=ctx.n_synthetic,
        n_holdout=ctx.n_holdout,
        seed=seed,
        seconds=time.perf_counter() - start,
        params={
            "metrics": names,
            "keys": ctx.keys,
            "sensitive": ctx.sensitive,
            "metric_params": params,
            "baseline": baseline,
            "options": run_options(ctx),
            "columns": column_handling(ctx),
        },
    )


def _metrics_asked(
    ctx: EvaluationContext,
    metrics: Sequence[str] | str | None,
    params: Mapping[str, Mapping[str, Any]] | None,
    *,
    baseline: bool,
    memory_limit: Any,
) -> tuple[list[str], dict, list[Any]]:
    """(names, parameters, registry entries) of the metrics asked for (default: every one these
    inputs can feed); unknown names, parameters for metrics not evaluated, a baseline without a
    holdout and a run estimated not to fit in ``memory_limit`` fail before any work."""
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    names = list(metrics) if metrics is not None else default_metrics(ctx)
    params = {k: dict(v) for k, v in (params or {}).items()}
    unknown_params = sorted(set(params) - set(names))
    if unknown_params:
        raise ParameterError(f"params given for metrics that are not evaluated: {unknown_params}")
    specs = [get_metric(n) for n in names]
    if baseline and ctx.holdout is None:
        raise ParameterError("baseline=True needs a holdout")
    ctx.coded_columns()  # which columns are compared as level codes: decided (and reported) before any metric
    check_run(ctx, [spec.name for spec in specs], baseline=baseline, memory_limit=memory_limit)
    return names, params, specs


def column_handling(ctx: EvaluationContext) -> dict[str, Any]:
    """What the inputs' schema decided about columns before any metric ran, for the report: the
    identifier columns left out of every metric but identifier_reuse, and the categorical
    columns compared as equal or not (coded: more levels than the one-hot limit), with their level
    counts — names and counts only."""
    return {"identifiers_left_out": list(ctx.identifiers), "coded": ctx.coded_columns()}


def run_options(ctx: EvaluationContext) -> dict[str, Any]:
    """The run options an evaluation used (recorded in reports and the history): the thread
    budget, whether searches were forced exact, the explicit real-record sample size, the
    ``sample`` option and the query records it sampled per side (None: every record)."""
    return {
        "threads": ctx.threads,
        "exact": ctx.exact,
        "sample_real": ctx.sample_real,
        "sample": ctx.sample if ctx.sample is not None else "off",
        "sampled": {"real": ctx.sample_size("real"), "synthetic": ctx.sample_size("synthetic")},
    }


def _run_all(specs, ctx, base_ctx, params, report_fn, on_error, results, errors) -> None:
    within_fn = _within_fn(report_fn)
    for i, spec in enumerate(specs, 1):
        if report_fn:
            report_fn(spec.name, i, len(specs))
        p = params.get(spec.name, {})
        try:
            with progress_within(spec.name, within_fn):
                res = run_spec(spec, ctx, p)
            if base_ctx is not None and has_baseline(spec):
                with progress_within(f"{spec.name} (holdout baseline)", within_fn):
                    attach_baseline(res, run_spec(spec, base_ctx, p), ctx.seed)
            results[spec.name] = res
        except PrivgateError as exc:
            if on_error == "raise":
                raise
            errors[spec.name] = f"{type(exc).__name__}: {exc}"
        finally:
            keep = spaces_still_read(specs[i:])
            for c in (ctx, base_ctx):
                if c is not None:
                    c.release_spaces(keep)


def run_order(specs: Sequence[Any]) -> list[Any]:
    """The order metrics are computed in: those that read no encoded space first, then the
    metrics of each kind of space together (kinds in the order they first appear; the metrics
    of one kind in the order given), so that a kind's space — gigabytes at a million rows — is
    dropped before the next kind is built (:func:`spaces_still_read`) instead of several being
    held at once. Values do not depend on it: a metric's searches are cached per space, and the
    metrics sharing a space keep their order. The given order when a metric does not declare
    its spaces (``MetricSpec.spaces`` None). Reports list the results in the order asked for."""
    if any(spec.spaces is None for spec in specs):
        return list(specs)
    first: dict[str, int] = {}
    for spec in specs:
        for kind in spec.spaces:
            first.setdefault(kind, len(first))
    return sorted(specs, key=lambda spec: min((first[k] for k in spec.spaces), default=-1))


def spaces_still_read(specs: Sequence[Any]) -> set[str] | None:
    """The kinds of encoded space the metrics ``specs`` (those still to run) may read — a space
    of another kind is dropped (at a million rows each is gigabytes) — or None when one of them
    does not declare its spaces (then every space is kept)."""
    keep: set[str] = set()
    for spec in specs:
        if spec.spaces is None:
            return None
        keep.update(spec.spaces)
    return keep


def attach_baseline(res: MetricResult, base: MetricResult, seed: int) -> MetricResult:
    """Attach the holdout baseline ``base`` to ``res`` with the interval of the excess
    value − baseline, and say how it was computed in ``details["excess_ci_method"]``:

    * grouped jackknife when both results carry delete-a-group replicates for the real records
      and for their synthetic set (``stats.metric_intervals.keep_jackknife``; the reconstruction metrics, whose
      per-record scores read count tables or nearest records of the release, so that which
      records the release and the holdout sample hold varies the excess as much as which people
      are in the real data): three independent sources — the real records (the same partition for
      both, so the replicates of the difference are paired), the release's records and the
      holdout sample's records — their variances added (Satterthwaite df), excess ± t·√v;
    * paired bootstrap (the same real records resampled for both) when both intervals treat the
      value as the mean of its per-record array over the same real records
      (``details["ci_per_record_mean"]``) — the release and the baseline are then scored on one
      sample of people, and the pairing removes the shared variation;
    * otherwise MOVER (:func:`privgate.stats.difference_interval`) from the two intervals, which
      treats them as independent (conservative when both are scored on the same real records);
    * no interval when either side has none.
    """
    ci, method = None, "none: intervals switched off"
    jk_res, jk_base = jackknife_sources(res), jackknife_sources(base)
    if intervals_on():
        if (
            all(k in jk for jk in (jk_res, jk_base) for k in ("real", "synthetic"))
            and jk_res["real"].shape == jk_base["real"].shape
        ):
            sources = {
                "real": jk_res["real"] - jk_base["real"],
                "synthetic": jk_res["synthetic"],
                "holdout": jk_base["synthetic"],
            }
            ci, _, df = stats.jackknife_interval(res.value - base.value, sources, bounds=(-1.0, 1.0))
            method = (
                f"grouped jackknife, seed {seed}: {sources['real'].size} groups of the real records (paired: "
                f"the same groups for release and baseline) + {sources['synthetic'].size} groups of the release's "
                f"records + {sources['holdout'].size} groups of the holdout sample's records deleted in turn; "
                f"variances added, excess ± t({df:.0f} df)·standard error"
            )
        elif per_record_mean(res) and per_record_mean(base) and res.per_record.shape == base.per_record.shape:
            ci = stats.bootstrap_mean_ci(
                res.per_record, seeds.derive(seed, "bootstrap"), n_boot=BOOT, paired=base.per_record
            )
            method = (
                f"paired percentile bootstrap ({BOOT} replicates, seed {seed}) of the mean per-record "
                f"difference over the same {res.per_record.size} real records"
            )
        elif res.ci is not None and base.ci is not None:
            ci = stats.difference_interval(res.value, res.ci, base.value, base.ci)
            method = "MOVER difference of the release's and the baseline's intervals (treated as independent)"
        else:
            method = "none: the release or the baseline has no interval"
    res.with_baseline(base.value, base.ci, widen_excess_for_search(ci, res, base))
    res.details["excess_ci_method"] = method
    res.details["baseline_ci_method"] = base.details.get("ci_method")
    return res


def _progress_fn(progress: ProgressFn | bool | None) -> ProgressFn | None:
    if progress is True:

        def show(name: str, i: int, total: int, *, detail: dict | None = None) -> None:
            if detail is not None:
                print(progress_line(detail), file=sys.stderr, flush=True)
            else:
                print(f"[{i}/{total}] {name} ...", file=sys.stderr, flush=True)

        return show
    if callable(progress):
        return progress
    return None


def _within_fn(report_fn: ProgressFn | None) -> Callable[[dict], Any] | None:
    """Progress inside a metric (:mod:`privgate.progress`) for a progress callable that takes a
    ``detail`` keyword (or ``**kwargs``): called as ``fn(metric, done, total, detail=...)``;
    None for a callable of (name, i, total) only, which keeps its one call per metric."""
    if report_fn is None:
        return None
    try:
        params = inspect.signature(report_fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if not any(p.name == "detail" or p.kind is p.VAR_KEYWORD for p in params):
        return None
    return lambda detail: report_fn(detail["metric"], detail["done"], detail["total"], detail=detail)


__all__ = ["attach_baseline", "evaluate", "default_metrics"]
