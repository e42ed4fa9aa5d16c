"""``privgate gate``: decide whether a synthetic release may be published.

Prints the decision table and exits 0 (pass), 1 (warn), 2 (block) or 3 (error: the gate could
not decide — invalid configuration, missing or corrupt input, a failing metric, history
unavailable; the release is blocked). Every run is recorded in the score history unless
``--no-history`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._args import add_run_options, exit_usage_errors_with, positive_seconds, run_options

EXIT_ERROR = 3


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "gate",
        help="gate a synthetic release: pass / warn / block (exit 0 / 1 / 2; 3 = error)",
        description="Evaluate a synthetic release against the real data with the metrics and rules of "
        "a gate configuration, print the decision table, record the run in the score "
        "history and exit 0 (pass), 1 (warn), 2 (block) or 3 (error: the gate could not "
        "decide and blocks the release).",
    )
    _add_input_arguments(p)
    _add_history_arguments(p)
    _add_output_arguments(p)
    _add_generator_arguments(p)
    _add_execution_arguments(p)
    p.set_defaults(_error_exit_code=EXIT_ERROR, _usage_exit_code=EXIT_ERROR)

    exit_usage_errors_with(p, EXIT_ERROR)
    return p


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The gate configuration, the input files and what names the release."""
    p.add_argument(
        "--config", help="gate configuration, YAML or TOML (default: the shipped privgate/configs/default_gate.yaml)"
    )
    # required: argparse lists them as required; a missing one is a usage error, exit 3
    p.add_argument("--real", required=True, help="real (training) data: .parquet, .csv, .arrow/.feather")
    p.add_argument("--synthetic", required=True, help="the synthetic release to gate")
    p.add_argument("--holdout", help="real records not used for training (enables baseline rules)")
    p.add_argument(
        "--release-id", dest="release_id", required=True, help="identifier of this release (recorded in the history)"
    )
    p.add_argument("--dataset", help="dataset name (overrides the configuration's)")


def _add_history_arguments(p: argparse.ArgumentParser) -> None:
    """Where the score history is read and recorded, or that it is not."""
    p.add_argument(
        "--history",
        help="history database: SQLAlchemy URL or SQLite file path (default: "
        "$PRIVGATE_HISTORY_URL or ./privgate-history.sqlite)",
    )
    p.add_argument("--no-history", action="store_true", help="do not read or record the score history")


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    """The reports written and what is printed."""
    p.add_argument("--html", help="write the HTML report to this path")
    p.add_argument("--json", dest="json_out", help="write the JSON report to this path")
    p.add_argument("--format", choices=("table", "json"), default="table", help="what to print (default: table)")
    p.add_argument(
        "--wide",
        action="store_true",
        help="every column of the decision table (default: a table that fits 100 columns)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def _add_generator_arguments(p: argparse.ArgumentParser) -> None:
    """The generator that made the release, for the configuration's require_audit."""
    p.add_argument(
        "--generator-version",
        dest="generator_version",
        help="version of the generator that made the release (for the configuration's require_audit)",
    )
    p.add_argument(
        "--generator-digest",
        dest="generator_digest",
        help="digest of the generator that made the release, as privgate audit printed and recorded "
        "it (for require_audit: only an audit of this very generator counts)",
    )
    p.add_argument(
        "--generator",
        dest="generator_spec",
        metavar="MODULE:NAME",
        help="the generator that made the release, as given to privgate audit --generator: its "
        "digest (module source and --generator-args) is computed without running it",
    )
    p.add_argument(
        "--generator-args",
        dest="generator_args",
        help="JSON object of keyword arguments, as given to privgate audit --generator-args",
    )


def _add_execution_arguments(p: argparse.ArgumentParser) -> None:
    """How the evaluation runs: the run options, its deadline and where it runs."""
    add_run_options(p, "the configuration's options")
    p.add_argument(
        "--deadline",
        type=positive_seconds("--deadline"),
        default=None,
        help="seconds the run may take; then it is stopped and the release blocked (exit 3, "
        "recorded) (default: the configuration's options.deadline, else 21600 = 6 hours)",
    )
    p.add_argument(
        "--executor",
        default=None,
        metavar="dask://HOST:PORT",
        help="evaluate each metric family on a worker of this Dask cluster (extra [dask]); the "
        "results and decision are those of a local run (default: this process)",
    )
    p.add_argument(
        "--sharded",
        action="store_true",
        help="with --executor: the workers read the inputs (each a Parquet file, a folder of "
        "them or a glob, at paths the workers can reach) partition by partition and every "
        "neighbour search is sharded; no table is loaded here (docs/cluster.md, Sharded gate)",
    )


def run(args: argparse.Namespace) -> int:
    """Gate one release; any unexpected failure exits 3 (an uncaught exception would exit 1,
    which a pipeline reads as "warn": accepted)."""
    from ..errors import PrivgateError

    try:
        return _run(args)
    except PrivgateError:
        raise  # the CLI prints it and exits with this command's error code, 3
    except BaseException as exc:  # noqa: BLE001 - fails closed; the type only (its text may quote data)
        print(
            f"privgate gate: error: unexpected {type(exc).__name__}; the release is blocked (exit {EXIT_ERROR})",
            file=sys.stderr,
        )
        return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    from ..history import HistoryStore

    missing = _missing_flags(args)
    if missing:
        print(
            f"privgate gate: error: missing {', '.join(missing)}; the release is blocked (exit {EXIT_ERROR})",
            file=sys.stderr,
        )
        return EXIT_ERROR
    config = _gate_config(args)

    digest = _generator_digest(args)
    history = None
    if not args.no_history:
        try:
            history = HistoryStore(args.history)
        except Exception as exc:  # noqa: BLE001 - fails closed
            print(f"privgate gate: error: {exc}; the release is blocked (exit {EXIT_ERROR})", file=sys.stderr)
            return EXIT_ERROR
    try:
        outcome = _gate(args, config, history, digest)
        written = finish(outcome, history, html=args.html, json_path=args.json_out)
    finally:
        if history is not None:
            history.close()
    _print_outcome(outcome, written, history, args)
    _end_if_still_running(outcome)
    return outcome.exit_code


def _missing_flags(args: argparse.Namespace) -> list[str]:
    """The required flags given no value or an empty one."""
    return [
        flag
        for flag, v in (("--real", args.real), ("--synthetic", args.synthetic), ("--release-id", args.release_id))
        if not v
    ]


def _gate_config(args: argparse.Namespace) -> Any:
    """The configuration to gate with (--config, else the shipped default), its problems said now."""
    from ..gates import DEFAULT_CONFIG_PATH

    config = args.config or DEFAULT_CONFIG_PATH
    if not args.config and not args.quiet:
        print(f"Using the default gate configuration {DEFAULT_CONFIG_PATH}", file=sys.stderr)
    problem = _config_problem(config, args)
    if problem is not None:  # errors first: said now, before the history is opened or an input read;
        # the run (which opens no input either) records it as a blocked run and prints its table
        print(
            f"privgate gate: error: invalid configuration {config}: {problem}; the release is blocked "
            f"(exit {EXIT_ERROR})",
            file=sys.stderr,
        )
    return config


def _gate(args: argparse.Namespace, config: Any, history: Any, digest: str | None) -> Any:
    """The gate's outcome for the release the flags name (not yet recorded: :func:`finish` does)."""
    from ..gates import run_gate

    return run_gate(
        config,
        args.real,
        args.synthetic,
        holdout=args.holdout,
        release_id=args.release_id,
        history=history,
        dataset=args.dataset,
        progress=None if args.quiet else True,
        record=False,
        options=run_options(args),
        generator_version=getattr(args, "generator_version", None),
        generator_digest=digest,
        executor=args.executor,
        sharded=bool(getattr(args, "sharded", False)),
    )


def _end_if_still_running(outcome: Any) -> None:
    """End the process with the outcome's exit code when its evaluation is still running."""
    if outcome.worker is not None and outcome.worker.is_alive():
        # a run stopped at its deadline whose worker is still inside one native call: the blocked
        # outcome is recorded and printed; end the process now rather than wait for that call
        import os

        print(
            "privgate gate: the stopped evaluation is still inside a native call; ending the process", file=sys.stderr
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(outcome.exit_code)


def _print_outcome(outcome: Any, written: list, history: Any, args: argparse.Namespace) -> None:
    """The decision table (or JSON) on standard output, then the reports and the history record
    named on standard error; a reader that stopped early changes nothing."""
    try:
        if args.format == "json":
            print(json.dumps(outcome.to_dict(), indent=2, allow_nan=False, default=str))
        else:
            print(outcome.table(compact=not args.wide))
        if not args.quiet:
            for path in written:
                print(f"report: {path}", file=sys.stderr)
            if outcome.recorded:
                print(f"history: run {outcome.run_id} recorded in {history!r}", file=sys.stderr)
    except BrokenPipeError:
        from ._usage import silence_stdout

        silence_stdout()  # a reader that stopped early does not change the decision


def _config_problem(config, args: argparse.Namespace) -> str | None:
    """Why the gate configuration ``config`` (with ``--dataset`` and the run-option flags) is
    invalid, or None: validated before anything else so a typo is reported in a second."""
    from ..errors import ConfigError
    from ..gates.checks import safe_message
    from ..gates.config import resolve_gate_config

    try:
        resolve_gate_config(config, args.dataset).with_options(run_options(args))
    except ConfigError as exc:
        return safe_message(str(exc))
    return None


def _generator_digest(args: argparse.Namespace) -> str | None:
    """The release's generator digest: --generator-digest, or computed from --generator (and
    --generator-args); both given must agree."""
    from ..audit.identity import spec_digest
    from ..errors import ParameterError

    given = getattr(args, "generator_digest", None)
    spec = getattr(args, "generator_spec", None)
    if spec is None:
        if getattr(args, "generator_args", None) is not None:
            raise ParameterError("--generator-args needs --generator module:name")
        return given
    computed = spec_digest(spec, getattr(args, "generator_args", None))
    if given is not None and given != computed:
        raise ParameterError(
            "--generator-digest differs from the digest of --generator (and --generator-args); give one"
        )
    return computed


def finish(outcome, history, *, html: str | None = None, json_path: str | None = None):
    """Write the reports, then record the run's FINAL decision once
    (:func:`privgate.finalise.finalise_run`); a report that cannot be written is named on
    stderr. Returns the paths written."""
    from ..finalise import finalise_run

    def tell(path, kind, reason):
        print(
            f"privgate gate: error: cannot write report {path}: {reason}; the release is blocked (exit {EXIT_ERROR})",
            file=sys.stderr,
        )

    targets = [(p, kind) for p, kind in ((html, "html"), (json_path, "json")) if p]
    return [p for p, _ in finalise_run(outcome, history, targets, on_report_error=tell)]
