"""``privgate evaluate``: score a synthetic release against the real data and print a table."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..text_tables import TABLE_WIDTH, format_table, wrap_line
from ._args import add_run_options, run_options, seed_value


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "evaluate",
        help="score a synthetic release against the real data",
        description="Score a synthetic release against the real data. Without --real "
        "and --synthetic, runs on the bundled Adult example against a "
        "noisy copy of it.",
    )
    p.add_argument("--real", help="real (training) data: .parquet, .csv, .arrow/.feather")
    p.add_argument("--synthetic", help="the synthetic release to evaluate")
    p.add_argument("--holdout", help="real records not used for training (enables baselines)")
    p.add_argument("--metrics", type=_csv, help="comma-separated metric names (default: all applicable)")
    p.add_argument("--keys", type=_csv, help="comma-separated quasi-identifier columns")
    p.add_argument("--sensitive", type=_csv, help="comma-separated sensitive columns")
    p.add_argument("--schema", help='JSON object column → "numeric"|"categorical"')
    p.add_argument("--paired", action="store_true", help="synthetic row i was generated from real row i (hidden_rate)")
    p.add_argument("--baseline", action="store_true", help="score a holdout sample too and report the excess")
    p.add_argument(
        "--seed",
        type=seed_value("--seed"),
        default=0,
        help="seed of every random step, an integer in [0, 2**32 - 1] (default: 0)",
    )
    p.add_argument("--json", dest="json_out", help="write the full report as JSON to this path")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--wide", action="store_true", help="no width limit on the table (default: 100 columns)")
    add_run_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .. import evaluate

    inputs = _inputs(args)
    if inputs is None:
        print("privgate evaluate: give both --real and --synthetic (or neither for the example)", file=sys.stderr)
        return 2
    real, synthetic, holdout, keys, sensitive = inputs
    from ..config_files import parse_json

    schema = parse_json(args.schema, what="--schema") if args.schema else None
    _refuse_different_columns({"real": real, "synthetic": synthetic, "holdout": holdout})
    report = evaluate(
        real,
        synthetic,
        args.metrics,
        holdout=holdout,
        keys=keys,
        sensitive=sensitive,
        schema=schema,
        seed=args.seed,
        pairing=True if args.paired else None,
        baseline=args.baseline or (holdout is not None and args.real is None),
        progress=not args.quiet,
        options=run_options(args),
    )
    _print_report(report, wide=args.wide)
    if args.json_out:
        report.to_json(args.json_out)
        print(f"JSON report: {args.json_out}")
    return 0


def _inputs(args: argparse.Namespace) -> tuple[Any, Any, Any, list[str] | None, list[str] | None] | None:
    """(real, synthetic, holdout, keys, sensitive) as given, else the bundled example's; None if one side is missing."""
    from .. import baselines
    from ..data import EXAMPLE_KEYS, EXAMPLE_SENSITIVE, example_path, load_example

    real, synthetic = args.real, args.synthetic
    keys, sensitive = args.keys, args.sensitive
    holdout = args.holdout
    if real is None and synthetic is None:
        print(
            f"No --real/--synthetic given: evaluating a noisy copy of the bundled Adult example ({example_path()}).",
            file=sys.stderr,
        )
        real = load_example()
        synthetic = baselines.noisy_copy(real, seed=args.seed)
        holdout = holdout or example_path("adult_holdout")
        keys = keys or EXAMPLE_KEYS
        sensitive = sensitive or EXAMPLE_SENSITIVE
    elif real is None or synthetic is None:
        return None
    return real, synthetic, holdout, keys, sensitive


def _print_report(report: Any, *, wide: bool) -> None:
    """The table of the metrics' scores, then the sizes and time, then the run's options."""
    from ..catalogue import get_metric

    rows = []
    for name, r in report.results.items():
        rows.append([name, get_metric(name).family, r.value, r.raw, r.baseline, r.excess, round(r.seconds, 3)])
    print(
        format_table(
            ["metric", "family", "risk", "raw", "baseline", "excess", "seconds"],
            rows,
            width=None if wide else TABLE_WIDTH,
            wrap=("family",),
        )
    )
    print(
        f"\n{report.n_real} real, {report.n_synthetic} synthetic rows"
        + (f", {report.n_holdout} holdout" if report.n_holdout else "")
        + f"; {report.seconds:.1f} s. Risk: 0 = private, 1 = no privacy."
    )
    opts = report.params.get("options") or {}
    print(
        wrap_line(
            f"options: threads {opts.get('threads')}, exact {opts.get('exact')}, "
            f"sample_real {opts.get('sample_real') or 'off'}, sample {opts.get('sample')} "
            f"(query records sampled: {_sampled(opts.get('sampled'))})",
            None if wide else TABLE_WIDTH,
            indent="  ",
        )
    )


def _refuse_different_columns(inputs: dict) -> None:
    """Inputs whose columns differ are refused before anything is loaded, naming the columns
    where the format keeps names apart from records and giving a CSV's by position
    (:func:`privgate.io.column_difference`)."""
    from ..errors import SchemaMismatchError
    from ..io import column_difference, header_is_names, input_columns

    columns = {r: input_columns(d) for r, d in inputs.items() if d is not None}
    if any(c is None for c in columns.values()):
        return  # an input that cannot be read: loading it says why
    problem = column_difference(columns, {r: header_is_names(inputs[r]) for r in columns})
    if problem is not None:
        raise SchemaMismatchError(problem)


def _sampled(sampled: dict | None) -> str:
    parts = [f"{side} {n:,}" for side, n in (sampled or {}).items() if n]
    return ", ".join(parts) or "none, every record"
