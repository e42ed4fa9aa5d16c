"""``privgate audit``: audit a synthetic-data generator (run it with and without target records,
attack its releases, bound ε) and decide pass / warn / block with the audit rules.

Prints the audit's summary, a per-target table and the decision, and exits 0 (pass), 1 (warn),
2 (block: e.g. a proven DP violation) or 3 (error: bad input, an audit that checked nothing, a
report or history row that cannot be written). Reports are written whole or not at all; the
audit is recorded in the history when ``--history`` or ``--dataset`` is given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ._args import exit_usage_errors_with, positive_int

EXIT_ERROR = 3
#: the largest DP claim the command takes (a claim this large promises nothing; an audit never disproves it)
MAX_EPSILON = 1000.0
MAX_SEED = 2**63 - 1


def number(
    flag: str, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in the interval; the error names ``flag``."""
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            x = math.nan
        ok = math.isfinite(x) and (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
        if not ok:
            raise argparse.ArgumentTypeError(f"{flag} must be a finite number in {interval}, got {text!r}")
        return x

    return parse


def seed_int(text: str) -> int:
    """An argparse ``type``: the audit's seed, an integer in [0, MAX_SEED]."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"--seed must be an integer in [0, {MAX_SEED}], got {text!r}")
    return n


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "audit",
        help="audit a generator: retrain it with and without targets, bound ε (exit 0/1/2; 3 = error)",
        description="Audit a synthetic-data generator: run it many times with and without target records, "
        "attack every release, bound ε empirically, decide with the audit rules and exit 0 "
        "(pass), 1 (warn), 2 (block: e.g. a proven DP violation) or 3 (error).",
    )
    _add_generator_arguments(p)
    _add_data_and_claim_arguments(p)
    _add_design_arguments(p)
    _add_execution_arguments(p)
    _add_rules_and_output_arguments(p)
    p.set_defaults(_error_exit_code=EXIT_ERROR, _usage_exit_code=EXIT_ERROR)

    exit_usage_errors_with(p, EXIT_ERROR)
    return p


def _add_generator_arguments(p: argparse.ArgumentParser) -> None:
    """The generator audited and how it is named and versioned."""
    p.add_argument(
        "--generator",
        required=True,
        help="module:name of generate(training, n_rows, seed) — a function, a callable instance, a "
        "class (instantiated with --generator-args) or a factory called with --generator-args; "
        "the module is imported from the current directory too",
    )
    p.add_argument(
        "--generator-args",
        dest="generator_args",
        help="JSON object of keyword arguments for a class or factory, e.g. '{\"epsilon\": 1}'",
    )
    p.add_argument(
        "--generator-name",
        dest="generator_name",
        help="name the audit is recorded under (default: the --generator text)",
    )
    p.add_argument(
        "--generator-version",
        dest="generator_version",
        help="the generator's version (recorded with the generator's digest — module source and "
        "--generator-args, printed under the decision — which a release gate's require_audit "
        "matches: privgate gate --generator / --generator-digest)",
    )


def _add_data_and_claim_arguments(p: argparse.ArgumentParser) -> None:
    """The records targets and training sets come from, and the DP claim tested."""
    p.add_argument("--real", required=True, help="the sensitive records: .parquet, .csv, .arrow/.feather")
    p.add_argument("--population", help="records training sets are drawn from (default: --real)")
    p.add_argument(
        "--claimed-epsilon",
        dest="claimed_epsilon",
        type=number("--claimed-epsilon", 0.0, MAX_EPSILON),
        help=f"the generator's DP claim, in [0, {MAX_EPSILON:g}] (default: the configuration's)",
    )
    p.add_argument(
        "--delta",
        type=number("--delta", 0.0, 1.0, high_open=True),
        help="the claim's δ, in [0, 1) (default: the configuration's, else 0)",
    )


def _add_design_arguments(p: argparse.ArgumentParser) -> None:
    """The audit's design: runs, targets, sizes, design, looks, attacks and seed."""
    _add_size_arguments(p)
    _add_game_arguments(p)
    _add_looks_attacks_and_seed_arguments(p)


def _add_size_arguments(p: argparse.ArgumentParser) -> None:
    """How many generator runs and targets, and how many rows each run trains on and asks for."""
    from ..audit.defaults import CANARY_TARGETS, DEFAULT_DESIGN, DEFAULT_RUNS, DEFAULT_TARGETS
    from ..audit.limits import MAX_ROWS, MAX_RUNS, MAX_TARGETS

    p.add_argument(
        "--runs",
        type=positive_int("--runs", MAX_RUNS),
        help=f"generator runs: in all for the {DEFAULT_DESIGN} and shared designs (every run serves "
        f"every target), per target for the separate design (default {DEFAULT_RUNS}, at most "
        f"{MAX_RUNS:,}; with a claim a default audit stops early once the claim is disproved)",
    )
    p.add_argument("--targets", default="auto", help="auto (outliers and canaries) or a file of target records")
    p.add_argument(
        "--n-targets",
        dest="n_targets",
        type=positive_int("--n-targets", MAX_TARGETS),
        help=f"targets 'auto' picks (default {CANARY_TARGETS} canaries in the canaries design, "
        f"{DEFAULT_TARGETS} in the shared and separate designs; at most {MAX_TARGETS:,})",
    )
    p.add_argument(
        "--training-rows",
        dest="training_rows",
        type=positive_int("--training-rows", MAX_ROWS),
        help=f"background rows per run (default min(1000, population), at most {MAX_ROWS:,})",
    )
    p.add_argument(
        "--n-rows",
        dest="n_rows",
        type=positive_int("--n-rows", MAX_ROWS),
        help=f"records asked of the generator per run (default: --training-rows, at most {MAX_ROWS:,})",
    )


def _add_game_arguments(p: argparse.ArgumentParser) -> None:
    """The game played: the design, the background and whether canaries are crafted."""
    from ..audit.defaults import BACKGROUNDS, DEFAULT_BACKGROUND, DEFAULT_DESIGN, DEFAULT_DESIGN_WITH_DELTA, DESIGNS

    p.add_argument(
        "--design",
        choices=DESIGNS,
        help=f"canaries (many crafted canaries, each in each run with probability 1/2, the bound from "
        f"all their guesses), shared (every run serves every target: outliers and canaries) or "
        f"separate (runs per target) (default {DEFAULT_DESIGN}; {DEFAULT_DESIGN_WITH_DELTA} for a "
        f"claim with --delta > 0); see privgate.audit.plan",
    )
    p.add_argument(
        "--background",
        choices=BACKGROUNDS,
        help=f"fixed (one background set for every run: the strongest audit) or redrawn (default {DEFAULT_BACKGROUND})",
    )
    p.add_argument(
        "--no-canaries",
        dest="canaries",
        action="store_false",
        help="targets=auto picks outliers of --real only, no crafted canaries",
    )


def _add_looks_attacks_and_seed_arguments(p: argparse.ArgumentParser) -> None:
    """When a sequential audit looks, which attacks are made, and the audit's seed."""
    from ..audit.defaults import FIRST_LOOK
    from ..audit.limits import MAX_LOOKS

    p.add_argument(
        "--looks",
        type=positive_int("--looks", MAX_LOOKS),
        default=None,
        help=f"sequential audit: the runs in this many batches, stopping at the first whose bound "
        f"exceeds the claim (confidence split equally over the looks; needs --claimed-epsilon); "
        f"1: one look, never stop early (default: with a claim, δ = 0 and local runs, a look after "
        f"{FIRST_LOOK} runs and at every doubling, half the confidence budget on the last)",
    )
    p.add_argument("--attacks", help="comma-separated attack names (default: all)")
    p.add_argument(
        "--seed", type=seed_int, default=0, help=f"the audit's seed, an integer in [0, {MAX_SEED}] (default 0)"
    )


def _add_execution_arguments(p: argparse.ArgumentParser) -> None:
    """Where and how long the generator runs are made: workers, executor, deadline, threads."""
    from ..audit.limits import DEFAULT_DEADLINE, MAX_WORKERS
    from ..options import MAX_DEADLINE

    p.add_argument(
        "--workers", type=positive_int("--workers", MAX_WORKERS), help="worker processes (default: the thread budget)"
    )
    p.add_argument(
        "--executor",
        default=None,
        help="where the generator runs are made: local (processes of this machine, the default) or "
        "a Dask scheduler address, dask://host:port (extra [dask]; --threads is then per run, "
        "default 1)",
    )
    p.add_argument(
        "--deadline",
        type=number("--deadline", 0.0, MAX_DEADLINE, low_open=True),
        default=None,
        help=f"seconds the whole audit may take — planning, preflight and every run; then the worker "
        f"processes are killed and the audit fails (exit 3) (default {DEFAULT_DEADLINE:g}: 24 hours, "
        f"at most {MAX_DEADLINE:g})",
    )
    p.add_argument(
        "--threads", type=positive_int("--threads"), help="thread budget (default: $PRIVGATE_THREADS or the free cores)"
    )


def _add_rules_and_output_arguments(p: argparse.ArgumentParser) -> None:
    """The audit rules, where the audit is recorded and reported, and progress output."""
    p.add_argument(
        "--config",
        help="audit rules: YAML/TOML file with an audit block (default: epsilon "
        "{block: claimed}, auc_lower {warn: 0.6, block: 0.8})",
    )
    p.add_argument("--history", help="record the audit in this history database (SQLAlchemy URL or SQLite path)")
    p.add_argument(
        "--dataset",
        help="dataset name recorded with the audit, the one a release gate's "
        "require_audit matches (records in the default history when --history "
        "is not given)",
    )
    p.add_argument("--json", dest="json_out", help="write the JSON report (decision, checks, result) here")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


class Terminated(BaseException):
    """The audit's process received SIGTERM: the workers are killed and the audit exits 3."""


def run(args: argparse.Namespace) -> int:
    """Audit; whatever ends it early — privgate's errors, the generator's exit, an interrupt,
    SIGTERM — exits 3 with one line. A message is shown only when privgate's own code wrote it;
    otherwise the exception's type alone (the user's code may quote training records, in its
    own exceptions or in privgate's)."""
    from ..audit.single_run import _raised_by_privgate
    from ..errors import PrivgateError

    previous = _on_sigterm()
    try:
        return _run(args)
    except PrivgateError as exc:
        if _raised_by_privgate(exc):
            raise  # the CLI prints it and exits 3
        return fail(f"{type(exc).__name__} raised by the generator's code")
    except Terminated:
        return fail("the audit received SIGTERM and was stopped; its worker processes were ended")
    except KeyboardInterrupt:
        return fail("the audit was interrupted and stopped; its worker processes were ended")
    except BaseException as exc:  # noqa: BLE001 - SystemExit of any code included: never a false exit 0
        return fail(f"unexpected {type(exc).__name__}")
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _on_sigterm() -> Any:
    """Make SIGTERM raise :class:`Terminated` in this (main) thread, so the workers are killed
    and the audit exits 3; returns the handler to restore (None off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        return signal.signal(signal.SIGTERM, stop)
    except (ValueError, OSError):
        return None


def fail(message: str) -> int:
    print(f"privgate audit: error: {message} (exit {EXIT_ERROR})", file=sys.stderr)
    return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    from ..audit import audit_generator
    from ..gates.audit_rules import decide_audit, default_audit_config, load_audit_config
    from ..io import load_frame

    why = _report_path_error(args)
    if why is not None:
        return fail(why)
    config = load_audit_config(args.config) if args.config else default_audit_config()
    claimed, delta = _claim(args, config)
    generate, digest = _generator_and_digest(args)
    targets: Any = "auto" if args.targets == "auto" else load_frame(args.targets, role="targets")
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()] if args.attacks else None
    started = time.perf_counter()
    result = audit_generator(
        generate,
        args.real,
        population=args.population,
        claimed_epsilon=claimed,
        delta=delta,
        targets=targets,
        training_rows=args.training_rows,
        n_rows=args.n_rows,
        canaries=args.canaries,
        **_given_design(args),
        attacks=attacks,
        seed=args.seed,
        workers=args.workers,
        threads=args.threads,
        deadline=args.deadline,
        executor=args.executor,
        generator_name=args.generator_name or args.generator,
        generator_version=args.generator_version,
        generator_digest=digest,
        progress=None if args.quiet else progress_printer(started),
    )
    outcome = decide_audit(result, config, dataset=args.dataset)
    return finish(outcome, args)


def _report_path_error(args: argparse.Namespace) -> str | None:
    """Why a --json or --html report cannot be written where asked (its folder missing, or a folder
    itself), else None."""
    for flag, path in (("--json", args.json_out), ("--html", args.html)):
        if path and not Path(path).expanduser().resolve().parent.is_dir():
            return f"{flag}: the folder of {path} does not exist"
        if path and Path(path).is_dir():
            return f"{flag}: {path} is a folder"
    return None


def _claim(args: argparse.Namespace, config: Any) -> tuple[float | None, float]:
    """(the claimed ε, δ) from the command line or the configuration, refused when both give one and
    they differ; δ defaults to 0."""
    from ..errors import ConfigError

    claimed, delta = args.claimed_epsilon, args.delta
    if claimed is not None and config.claimed_epsilon is not None and claimed != config.claimed_epsilon:
        raise ConfigError(
            f"audit.claimed_epsilon: {args.config} claims ε = {config.claimed_epsilon:g} and "
            f"--claimed-epsilon says {claimed:g}; give the claim once, in the file or on the "
            "command line"
        )
    if delta is not None and config.delta is not None and delta != config.delta:
        raise ConfigError(
            f"audit.delta: {args.config} says δ = {config.delta:g} and --delta says {delta:g}; give "
            "δ once, in the file or on the command line"
        )
    claimed = claimed if claimed is not None else config.claimed_epsilon
    delta = delta if delta is not None else (config.delta if config.delta is not None else 0.0)
    return claimed, delta


def _generator_and_digest(args: argparse.Namespace) -> tuple[Any, str]:
    """The generator to audit (a reference the workers import, or the generator itself for a
    cluster) and its digest."""
    from ..audit.identity import spec_digest
    from ..audit.loader import GeneratorRef

    # imported by the audit's worker processes, never here: a module that exits, hangs or
    # crashes while importing ends a worker under the audit's deadline, and the audit says so;
    # its digest reads the module's source file without running it
    generate: Any = GeneratorRef(args.generator, args.generator_args)
    digest = spec_digest(args.generator, args.generator_args)
    if args.executor not in (None, "local"):
        # a cluster's workers may not have the generator's module: it is imported here and sent
        # with the generator (cloudpickle by value)
        from ..audit.cluster import send_module_by_value

        generate = generate.resolve()
        send_module_by_value(generate)
    return generate, digest


def _given_design(args: argparse.Namespace) -> dict[str, Any]:
    """The design flags given on the command line; a flag left out is not passed, so the API's
    default (privgate.audit.defaults) applies."""
    return {
        k: v
        for k, v in (
            ("n_targets", args.n_targets),
            ("runs", args.runs),
            ("design", args.design),
            ("background", args.background),
            ("looks", args.looks),
        )
        if v is not None
    }


def finish(outcome: Any, args: argparse.Namespace) -> int:
    """Print, then write the reports and the history row all or nothing: the reports go to
    temporary files, the audit is recorded, and only then are the files moved into place."""
    from ..render.audit import render_audit_html

    texts = []
    if args.json_out:
        texts.append(
            (args.json_out, json.dumps({"report_format": 1, **outcome.to_dict()}, indent=2, allow_nan=False) + "\n")
        )
    if args.html:
        texts.append((args.html, render_audit_html(outcome.result, outcome)))
    print(outcome.result.summary())
    print()
    print(target_table(outcome.result))
    print()
    print(outcome.table())
    temps: list[tuple[str, Path]] = []
    try:
        for path, text in texts:
            temps.append((_temp(path, text), Path(path)))
        if args.history or args.dataset:
            from ..history import HistoryStore

            with HistoryStore(args.history) as store:
                store.record_audit(outcome, dataset=args.dataset)
            if not args.quiet:
                print(f"history: audit {outcome.run_id} recorded in {store!r}", file=sys.stderr)
        for tmp, final in temps:
            os.replace(tmp, final)
    except BaseException as exc:  # noqa: BLE001 - nothing half-written
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        from ..errors import PrivgateError

        why = f"{type(exc).__name__}: {exc}" if isinstance(exc, PrivgateError) else type(exc).__name__
        return fail(f"cannot finish the audit's outputs: {why}; nothing was written")
    if not args.quiet:
        for _, final in temps:
            print(f"report: {final}", file=sys.stderr)
    return outcome.exit_code


def _temp(path: str, text: str) -> str:
    from ..render.files import write_temporary

    return write_temporary(path, text)


def progress_printer(started: float):
    """A progress callback printing one line per tenth of the runs to stderr."""
    last = [-1]

    def progress(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth > last[0] and (tenth > 0 or done == total):
            last[0] = tenth
            print(
                f"audit: {done}/{total} runs ({done / max(total, 1):.0%}), {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    return progress


def target_table(result: Any) -> str:
    """One line per target (at most 100 characters): kind, status, best attack, AUC with its
    interval, TPR at FPR 1 %, ε lower bound. A run of consecutive targets of one kind with no
    attack of their own (the canaries design's pooled canaries) is one line, ``t0–t19``, since
    their evidence is the pooled bound of the summary."""
    from ..render.audit import best_attack
    from ..text_tables import format_table

    rows: list[tuple[str, ...]] = []
    run: list[dict] = []

    def flush() -> None:
        if run:
            first, last = str(run[0]["target"]), str(run[-1]["target"])
            label = first if len(run) == 1 else f"{first}–{last}"
            kind = str(run[0]["kind"]) + (f" ×{len(run)}" if len(run) > 1 else "")
            rows.append((label[:12], kind[:16], str(run[0].get("status", ""))[:12], "-", "-", "-", "-"))
            run.clear()

    for t in result.targets:
        b = best_attack(t)
        status = str(t.get("status", ""))[:12]
        if b is None:
            if run and (run[-1]["kind"], run[-1].get("status")) != (t["kind"], t.get("status")):
                flush()
            run.append(t)
            continue
        flush()
        name, a = b
        ci = a.get("auc_ci") or [None, None]
        auc = f"{a['auc']:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None else "")
        tprs = a.get("tpr_at_fpr") or []
        rows.append(
            (
                str(t["target"])[:8],
                str(t["kind"])[:12],
                status,
                str(name)[:10],
                auc,
                f"{tprs[0]['tpr']:.3f}" if tprs else "-",
                f"{a['epsilon_lower']:.3f}",
            )
        )
    flush()
    lines = format_table(("target", "kind", "status", "attack", "AUC [95% CI]", "TPR@1%", "ε lower"), rows)
    return "\n".join(line.rstrip() for line in lines.splitlines())


def load_generator(spec: str, args_json: str | None = None) -> Any:
    """``module:name`` → the generate callable (:func:`privgate.audit.loader.load_generator`)."""
    from ..audit.loader import load_generator as load

    return load(spec, args_json)
