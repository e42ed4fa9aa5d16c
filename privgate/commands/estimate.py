"""``privgate estimate``: how much memory an evaluation will need, before running it — in one
step and in each metric-family step of the by-family Dagster evaluation (one pod per family).

The figures are the memory guard's (:func:`privgate.memory_guard.estimate_sizes`): the same
estimate the guard inside each run compares with its limit before any metric runs. The sizes
come either from the input files — row counts and the real data's categorical level counts,
read by lazy Parquet / Arrow / CSV scans, never a whole frame and never a value — or, for
planning, from ``--rows`` / ``--features`` with no file at all. Prints per family step the
estimated peak and a suggested pod memory request (the estimate rounded up to 0.5 GiB) and limit
(1.5 × the estimate, rounded up to 0.5 GiB; deploy/README.md, "Sizing the pods"), the single
step's peak and the sizes. Exit 0, or 2 on a usage error or an input it cannot read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..options import MAX_THREADS
from ._args import _option, positive_int

EXIT_BAD_INPUT = 2
#: the pod memory limit over the estimate (deploy/README.md, "Sizing the pods")
LIMIT_FACTOR = 1.5
#: pod memory figures are rounded up to this many GiB
ROUND_GIB = 0.5
GIB = 2**30


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "estimate",
        help="estimate the memory of an evaluation and of each metric-family pod, before running it",
        description="Estimate the peak memory of a gate evaluation — in one step and in each metric-family "
        "step (pod) of the by-family Dagster evaluation — with the memory guard's model, and "
        "suggest each pod's memory request and limit. Sizes come from the input files (row "
        "counts and the real data's category counts, read lazily) or, with no file, from "
        "--rows and --features.",
    )
    _add_input_arguments(p)
    _add_planned_size_arguments(p)
    _add_metric_arguments(p)
    _add_run_option_arguments(p)
    _add_output_arguments(p)
    p.set_defaults(_error_exit_code=EXIT_BAD_INPUT, _usage_exit_code=EXIT_BAD_INPUT)
    return p


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The gate configuration and the input files whose sizes are read."""
    p.add_argument(
        "--config",
        help="gate configuration whose metrics, schema and options are estimated "
        "(default: the shipped privgate/configs/default_gate.yaml)",
    )
    p.add_argument("--real", help="real (training) data: .parquet, .csv, .arrow/.feather")
    p.add_argument("--synthetic", "--release", dest="synthetic", help="the synthetic release")
    p.add_argument("--holdout", help="real records not used for training")


def _add_planned_size_arguments(p: argparse.ArgumentParser) -> None:
    """The sizes given instead of input files, for planning."""
    p.add_argument(
        "--rows", type=positive_int("--rows"), help="planning without files: rows of the real data and of the release"
    )
    p.add_argument(
        "--synthetic-rows",
        dest="synthetic_rows",
        type=positive_int("--synthetic-rows"),
        help="planning: rows of the release when they differ from --rows",
    )
    p.add_argument(
        "--holdout-rows",
        dest="holdout_rows",
        type=positive_int("--holdout-rows"),
        help="planning: rows of the holdout (default: no holdout)",
    )
    p.add_argument(
        "--features",
        type=positive_int("--features"),
        help="planning: columns of the encoded space (numeric columns + the real data's categorical levels)",
    )


def _add_metric_arguments(p: argparse.ArgumentParser) -> None:
    """Which metrics are estimated and whether the holdout baselines count."""
    p.add_argument(
        "--metrics",
        type=_metric_list,
        help="comma-separated metric names, or 'all' (every registered metric: the full "
        "suite) (default: the configuration's metrics for these inputs)",
    )
    p.add_argument(
        "--baseline",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="count the holdout baselines (default: the configuration's baseline rules; with "
        "--metrics: whenever there is a holdout)",
    )


def _add_run_option_arguments(p: argparse.ArgumentParser) -> None:
    """The run options the estimate depends on: threads, exactness and sampling."""
    p.add_argument(
        "--threads",
        type=positive_int("--threads", MAX_THREADS),
        default=None,
        help="thread budget of the run (default: the configuration's options.threads, else $PRIVGATE_THREADS, else 1)",
    )
    p.add_argument(
        "--step-threads",
        dest="step_threads",
        type=_step_threads,
        default=None,
        help="JSON object: a family step's threads by step name, as PRIVGATE_STEP_THREADS "
        "(default: $PRIVGATE_STEP_THREADS, else --threads)",
    )
    p.add_argument(
        "--exact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="exact neighbour searches (default: the configuration's options)",
    )
    p.add_argument(
        "--sample-real",
        dest="sample_real",
        type=positive_int("--sample-real"),
        default=None,
        help="real records sampled (default: the configuration's options)",
    )
    p.add_argument(
        "--sample",
        dest="sample",
        type=_option("sample", "--sample must be auto, off or a positive integer, got {text!r}"),
        default=None,
        help="query-record sampling: auto, off or N (default: the configuration's options)",
    )


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    """What is printed: the table or JSON."""
    p.add_argument("--format", choices=("table", "json"), default="table", help="what to print (default: table)")
    p.add_argument("--json", dest="format", action="store_const", const="json", help="print JSON (--format json)")


def _metric_list(text: str) -> list[str] | str:
    if text.strip().lower() == "all":
        return "all"
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise argparse.ArgumentTypeError("--metrics must name at least one metric (or 'all')")
    return names


def _step_threads(text: str) -> dict[str, int]:
    """A JSON object step name → positive threads (the form of PRIVGATE_STEP_THREADS)."""
    from ..config_files import parse_json
    from ..errors import ConfigError

    try:
        value = parse_json(text, what="--step-threads")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value.values()
    ):
        raise argparse.ArgumentTypeError(
            'step threads must be a JSON object of positive integers, e.g. {"re_identification": 4}'
        )
    return value


def run(args: argparse.Namespace) -> int:
    from ..errors import ParameterError

    try:
        plan = _plan(args)
    except ParameterError as exc:  # a usage error found after parsing: exit 2, not a traceback
        print(f"privgate estimate: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = estimate(**plan)
    print(json.dumps(result, indent=2) if args.format == "json" else format_estimate(result))
    return 0


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`estimate` the flags give."""
    from ..errors import ParameterError
    from ..gates import DEFAULT_CONFIG_PATH
    from ..gates.config import load_gate_config
    from ..options import RunOptions

    files = [f for f in ("real", "synthetic", "holdout") if getattr(args, f)]
    planned = [f for f in ("rows", "synthetic_rows", "holdout_rows", "features") if getattr(args, f)]
    if files and planned:
        raise ParameterError(
            "give either input files (--real, --synthetic, --holdout) or planned sizes "
            "(--rows, --features, ...), not both"
        )
    if not files and not planned:
        raise ParameterError(
            "give --real and --synthetic (sizes read from the files) or --rows and --features (planning)"
        )
    config = load_gate_config(args.config or DEFAULT_CONFIG_PATH)
    if files:
        if not (args.real and args.synthetic):
            raise ParameterError("give both --real and --synthetic")
        sizes = read_sizes(args.real, args.synthetic, args.holdout, schema=config.schema)
    else:
        if not (args.rows and args.features):
            raise ParameterError("planning needs both --rows and --features")
        sizes = {
            "n_real": args.rows,
            "n_synthetic": args.synthetic_rows or args.rows,
            "n_holdout": args.holdout_rows or 0,
            "features": args.features,
            "source": "planned",
        }
    options = RunOptions(threads=args.threads, exact=args.exact, sample_real=args.sample_real, sample=args.sample).over(
        config.options
    )
    metrics, baseline = _metrics(args, config, has_holdout=sizes["n_holdout"] > 0)
    step_threads = args.step_threads
    if step_threads is None and os.environ.get("PRIVGATE_STEP_THREADS", "").strip():
        try:
            step_threads = _step_threads(os.environ["PRIVGATE_STEP_THREADS"])
        except argparse.ArgumentTypeError as exc:
            raise ParameterError(f"environment variable PRIVGATE_STEP_THREADS: {exc}") from None
    return {
        "sizes": sizes,
        "metrics": metrics,
        "baseline": baseline,
        "options": options,
        "step_threads": step_threads,
        "source": "--metrics" if args.metrics else str(args.config or DEFAULT_CONFIG_PATH),
    }


def _metrics(args: argparse.Namespace, config, *, has_holdout: bool) -> tuple[list[str], bool]:
    """(the metrics estimated, whether the holdout baselines are counted)."""
    from ..catalogue import get_metric, metric_names
    from ..errors import ParameterError
    from ..gates.plan import evaluation_plan

    if args.metrics is None:
        plan = evaluation_plan(config, has_holdout)
        names, baseline = plan["metrics"], plan["baseline"]
    elif args.metrics == "all":  # the full suite: every metric whose holdout need is met
        names = [n for n in metric_names() if has_holdout or "holdout" not in get_metric(n).needs]
        baseline = has_holdout
    else:
        names = [get_metric(n).name for n in args.metrics]  # an unknown name: UnknownMetricError
        baseline = has_holdout
    if args.baseline is not None:
        baseline = args.baseline
    if baseline and not has_holdout:
        raise ParameterError("--baseline needs a holdout (--holdout or --holdout-rows)")
    return names, baseline


def read_sizes(
    real: str, synthetic: str, holdout: str | None = None, *, schema: dict[str, str] | None = None
) -> dict[str, Any]:
    """Row counts of the inputs and the encoded space's columns (numeric columns + the real
    data's categorical levels), from lazy scans: Parquet and Arrow read their metadata and the
    categorical columns only, CSV is streamed; no frame is loaded and no value is kept. The
    column kinds are inferred as an evaluation infers them (``schema`` overrides)."""
    import polars as pl

    from ..io import collect_scan
    from ..memory_guard import encoded_features
    from ..schema import check_not_empty, check_same_columns, infer_schema

    scans = {
        role: scan_input(path, role)
        for role, path in (("real", real), ("synthetic", synthetic), ("holdout", holdout))
        if path
    }
    heights = {role: int(collect_scan(lf.select(pl.len()), role).item()) for role, lf in scans.items()}
    shapes = {role: pl.DataFrame(schema=lf.collect_schema()) for role, lf in scans.items()}
    for role, f in shapes.items():
        check_not_empty(SimpleNamespace(width=f.width, height=heights[role]), role)
    check_same_columns(shapes)
    order = shapes["real"].columns
    kinds = infer_schema({r: f.select(order) for r, f in shapes.items()}, schema, check_values=False).as_dict()
    return {
        "n_real": heights["real"],
        "n_synthetic": heights["synthetic"],
        "n_holdout": heights.get("holdout", 0),
        "features": encoded_features(kinds, scans["real"]),
        "source": "files",
    }


def scan_input(path: str | Path, role: str):
    """A lazy scan of one input file (Parquet / Arrow IPC / CSV read as privgate reads it); a
    missing file, a folder or an unknown suffix raises InputLoadError naming ``role``."""
    import polars as pl

    from ..io import _check_csv_header, _read_error, input_kind, scan_frame

    path = Path(path)
    kind = input_kind(path, role)
    if kind != "csv":
        return scan_frame(path, role=role)
    _check_csv_header(path, role)
    try:
        lf = pl.scan_csv(path, infer_schema_length=10000, null_values=[""], try_parse_dates=False)
        lf.collect_schema()
    except Exception as exc:  # noqa: BLE001 - parser errors carry file content; keep only the type
        raise _read_error(path, role, kind, exc) from None
    return lf


def estimate(
    *,
    sizes: dict[str, Any],
    metrics: list[str],
    baseline: bool,
    options: Any,
    step_threads: dict[str, int] | None = None,
    source: str = "",
) -> dict[str, Any]:
    """The single step's and each family step's estimate (:func:`privgate.memory_guard.estimate_sizes`,
    :func:`~privgate.memory_guard.family_estimates`) for ``sizes`` (n_real, n_synthetic,
    n_holdout, features) and the run ``options`` (:class:`privgate.options.RunOptions`), with
    each step's suggested pod memory request and limit, as a JSON-ready dict."""
    from ..context import EvaluationContext
    from ..memory_guard import estimate_sizes, family_estimates
    from ..names import identifier

    threads = _threads(options.threads)
    exact = bool(options.exact)
    # the real query records a sampled metric computes on, as the run's context decides it
    planned = SimpleNamespace(
        n_real=sizes["n_real"],
        n_synthetic=sizes["n_synthetic"],
        sample_real=options.sample_real,
        sample=None if options.sample == "off" else options.sample,
        exact=exact,
    )
    sample = EvaluationContext.sample_size(planned, "real")
    auto = sample is not None and EvaluationContext.sample_size(planned, "real", auto=False) is None
    shape = (sizes["n_real"], sizes["n_synthetic"], sizes["n_holdout"], sizes["features"], metrics)
    common = {
        "exact": exact,
        "sample": sample,
        "baseline": baseline,
        "sample_off": options.sample == "off",
        "sample_auto": auto,
    }
    single = estimate_sizes(*shape, threads=threads, **common)
    by_family = family_estimates(*shape, threads=threads, step_threads=step_threads, **common)
    steps = {}
    for family, est in by_family.items():
        step = identifier(family)
        n_threads = (step_threads or {}).get(step, (step_threads or {}).get(family, threads))
        steps[step] = {"family": family, **_step(est, n_threads)}
    return {
        "sizes": {k: sizes[k] for k in ("n_real", "n_synthetic", "n_holdout", "features", "source")},
        "options": {
            "threads": threads,
            "exact": exact,
            "sample_real": options.sample_real,
            "sample": options.sample,
            "real_records_sampled": sample,
            "baseline": baseline,
        },
        "metrics_from": source,
        "single_step": _step(single, threads),
        "family_steps": steps,
        "per_metric_gib": {m: round(b / GIB, 3) for m, b in single.per_metric.items()},
        "pod_memory": {
            "request": f"the estimate rounded up to {ROUND_GIB} GiB",
            "limit": f"{LIMIT_FACTOR} × the estimate rounded up to {ROUND_GIB} GiB",
        },
    }


def _threads(given: int | None) -> int:
    """The run's threads: given, else $PRIVGATE_THREADS, else 1 (a Dagster step's default) — not
    lowered to this machine's cores: the run being sized may run elsewhere."""
    from ..threads import ENV_VAR, _check

    if given is not None:
        return int(given)
    text = os.environ.get(ENV_VAR, "").strip()
    return _check(text, f"environment variable {ENV_VAR}") if text else 1


def _step(est: Any, threads: int) -> dict[str, Any]:
    worst = max(est.per_metric, key=est.per_metric.get) if est.per_metric else None
    request, limit = pod_memory_gib(est.peak)
    return {
        "metrics": list(est.per_metric),
        "threads": threads,
        "peak_bytes": int(math.ceil(est.peak)),
        "peak_gib": round(est.peak / GIB, 3),
        "peak_metric": worst,
        "request_gib": request,
        "limit_gib": limit,
        "request": quantity(request),
        "limit": quantity(limit),
    }


def pod_memory_gib(peak_bytes: float) -> tuple[float, float]:
    """(request, limit) in GiB for a pod whose estimated peak is ``peak_bytes``: the estimate and
    ``LIMIT_FACTOR`` × the estimate, each rounded up to ``ROUND_GIB``."""

    def up(x: float) -> float:
        return math.ceil(round(x / GIB / ROUND_GIB, 9)) * ROUND_GIB

    return up(peak_bytes), up(LIMIT_FACTOR * peak_bytes)


def quantity(gib: float) -> str:
    """A Kubernetes memory quantity for ``gib`` GiB: "12Gi", or "12800Mi" for 12.5."""
    return f"{int(gib)}Gi" if float(gib).is_integer() else f"{int(round(gib * 1024))}Mi"


def format_estimate(result: dict[str, Any]) -> str:
    """The table `privgate estimate` prints: one row per family step and one for the single step,
    then the sizes and options."""
    from ..text_tables import TABLE_WIDTH, format_table

    rows = [
        [step, len(s["metrics"]), s["threads"], f"{s['peak_gib']:.2f}", s["request"], s["limit"], s["peak_metric"]]
        for step, s in result["family_steps"].items()
    ]
    one = result["single_step"]
    rows.append(
        [
            "(single step)",
            len(one["metrics"]),
            one["threads"],
            f"{one['peak_gib']:.2f}",
            one["request"],
            one["limit"],
            one["peak_metric"],
        ]
    )
    table = format_table(
        ["family step", "metrics", "threads", "peak GiB", "request", "limit", "peak in"], rows, width=TABLE_WIDTH
    )
    sz, opt = result["sizes"], result["options"]
    sampled = f"{opt['real_records_sampled']:,}" if opt["real_records_sampled"] else "none, every record"
    return "\n".join(
        [
            table,
            "",
            f"sizes ({'read from the files' if sz['source'] == 'files' else 'planned'}): {sz['n_real']:,} real × "
            f"{sz['n_synthetic']:,} release"
            + (f" × {sz['n_holdout']:,} holdout" if sz["n_holdout"] else "")
            + f" rows, {sz['features']:,} encoded features",
            f"options: exact {opt['exact']}, sample {opt['sample']} (real records sampled: {sampled}), holdout "
            f"baselines {'counted' if opt['baseline'] else 'not counted'}; metrics from {result['metrics_from']}",
            f"pod memory: request = the estimate rounded up to {ROUND_GIB} GiB, limit = {LIMIT_FACTOR} × the "
            f"estimate rounded up to {ROUND_GIB} GiB. The memory guard in each step refuses a run whose estimate "
            "is above the pod's limit (exit 3) before any metric runs.",
        ]
    )
