"""``privgate audit``: audit a synthetic-data generator (run it with and without target records,
attack its releases, bound ε) and decide pass / warn / block with the audit rules.

Prints the audit's summary, a per-target table and the decision, and exits 0 (pass), 1 (warn),
2 (block: e.g. a proven DP violation) or 3 (error: bad input, an audit that checked nothing, a
report or history row that cannot be written). Reports are written whole or not at all; the
audit is recorded in the history when ``--history`` or ``--dataset`` is given.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ._args import exit_usage_errors_with, positive_int, positive_seconds

EXIT_ERROR = 3


def add_parser(sub) -> argparse.ArgumentParser:
    from ..audit.plan import DEFAULT_RUNS
    from ..audit.targets import DEFAULT_TARGETS

    p = sub.add_parser(
        "audit", help="audit a generator: retrain it with and without targets, bound ε (exit 0/1/2; 3 = error)",
        description="Audit a synthetic-data generator: run it many times with and without target records, "
                    "attack every release, bound ε empirically, decide with the audit rules and exit 0 "
                    "(pass), 1 (warn), 2 (block: e.g. a proven DP violation) or 3 (error).")
    p.add_argument("--generator", required=True,
                   help="module:name of generate(training, n_rows, seed) — a function, a callable instance, a "
                        "class (instantiated with --generator-args) or a factory called with --generator-args; "
                        "the module is imported from the current directory too")
    p.add_argument("--generator-args", dest="generator_args", help="JSON object of keyword arguments for a class "
                                                                   "or factory, e.g. '{\"epsilon\": 1}'")
    p.add_argument("--generator-name", dest="generator_name",
                   help="name the audit is recorded under (default: the --generator text)")
    p.add_argument("--generator-version", dest="generator_version",
                   help="the generator's version (recorded with the generator's digest — module source and "
                        "--generator-args, printed under the decision — which a release gate's require_audit "
                        "matches: privgate gate --generator / --generator-digest)")
    p.add_argument("--real", required=True, help="the sensitive records: .parquet, .csv, .arrow/.feather")
    p.add_argument("--population", help="records training sets are drawn from (default: --real)")
    p.add_argument("--claimed-epsilon", dest="claimed_epsilon", type=float,
                   help="the generator's DP claim (default: the configuration's)")
    p.add_argument("--delta", type=float, help="the claim's δ (default: the configuration's, else 0)")
    p.add_argument("--runs", type=positive_int("--runs"), default=DEFAULT_RUNS,
                   help=f"generator runs per target (default {DEFAULT_RUNS})")
    p.add_argument("--targets", default="auto", help="auto (outliers and canaries) or a file of target records")
    p.add_argument("--n-targets", dest="n_targets", type=positive_int("--n-targets"), default=DEFAULT_TARGETS,
                   help=f"targets 'auto' picks (default {DEFAULT_TARGETS})")
    p.add_argument("--training-rows", dest="training_rows", type=positive_int("--training-rows"),
                   help="background rows per run (default min(1000, population))")
    p.add_argument("--n-rows", dest="n_rows", type=positive_int("--n-rows"),
                   help="records asked of the generator per run (default: --training-rows)")
    p.add_argument("--design", choices=("shared", "separate"), default="shared")
    p.add_argument("--attacks", help="comma-separated attack names (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=positive_int("--workers"), help="worker processes (default: the thread budget)")
    p.add_argument("--deadline", type=positive_seconds("--deadline"), default=None,
                   help="seconds the generator runs may take; then the worker processes are ended and the "
                        "audit fails (exit 3) (default: none)")
    p.add_argument("--threads", type=positive_int("--threads"),
                   help="thread budget (default: $PRIVGATE_THREADS or the free cores)")
    p.add_argument("--config", help="audit rules: YAML/TOML file with an audit block (default: epsilon "
                                    "{block: claimed}, auc_lower {warn: 0.6, block: 0.8})")
    p.add_argument("--history", help="record the audit in this history database (SQLAlchemy URL or SQLite path)")
    p.add_argument("--dataset", help="dataset name recorded with the audit, the one a release gate's "
                                     "require_audit matches (records in the default history when --history "
                                     "is not given)")
    p.add_argument("--json", dest="json_out", help="write the JSON report (decision, checks, result) here")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(_error_exit_code=EXIT_ERROR, _usage_exit_code=EXIT_ERROR)

    exit_usage_errors_with(p, EXIT_ERROR)
    return p


def run(args: argparse.Namespace) -> int:
    """Audit; any unexpected failure exits 3 with one line (its type only: a generator's message
    may quote training records)."""
    from ..errors import PrivgateError

    try:
        return _run(args)
    except PrivgateError:
        raise  # the CLI prints it and exits 3
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            raise
        print(f"privgate audit: error: unexpected {type(exc).__name__} (exit {EXIT_ERROR})", file=sys.stderr)
        return EXIT_ERROR


def fail(message: str) -> int:
    print(f"privgate audit: error: {message} (exit {EXIT_ERROR})", file=sys.stderr)
    return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    from ..audit import audit_generator
    from ..errors import ConfigError
    from ..gates.audit_rules import default_audit_config, decide_audit, load_audit_config
    from ..io import load_frame

    for flag, path in (("--json", args.json_out), ("--html", args.html)):
        if path and not Path(path).expanduser().resolve().parent.is_dir():
            return fail(f"{flag}: the folder of {path} does not exist")
        if path and Path(path).is_dir():
            return fail(f"{flag}: {path} is a folder")
    config = load_audit_config(args.config) if args.config else default_audit_config()
    claimed, delta = args.claimed_epsilon, args.delta
    if claimed is not None and config.claimed_epsilon is not None and claimed != config.claimed_epsilon:
        raise ConfigError(f"audit.claimed_epsilon: the configuration claims {config.claimed_epsilon:g} and "
                          f"--claimed-epsilon {claimed:g}; give one")
    if delta is not None and config.delta is not None and delta != config.delta:
        raise ConfigError(f"audit.delta: the configuration says {config.delta:g} and --delta {delta:g}; give one")
    claimed = claimed if claimed is not None else config.claimed_epsilon
    delta = delta if delta is not None else (config.delta if config.delta is not None else 0.0)
    generate = load_generator(args.generator, args.generator_args)
    from ..audit.identity import spec_digest

    digest = spec_digest(args.generator, args.generator_args)
    targets: Any = "auto" if args.targets == "auto" else load_frame(args.targets, role="targets")
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()] if args.attacks else None
    started = time.perf_counter()
    result = audit_generator(
        generate, args.real, population=args.population, claimed_epsilon=claimed, delta=delta, targets=targets,
        n_targets=args.n_targets, runs=args.runs, training_rows=args.training_rows, n_rows=args.n_rows,
        design=args.design, attacks=attacks, seed=args.seed, workers=args.workers, threads=args.threads,
        deadline=args.deadline,
        generator_name=args.generator_name or args.generator, generator_version=args.generator_version,
        generator_digest=digest,
        progress=None if args.quiet else progress_printer(started))
    outcome = decide_audit(result, config, dataset=args.dataset)
    return finish(outcome, args)


def finish(outcome: Any, args: argparse.Namespace) -> int:
    """Print, then write the reports and the history row all or nothing: the reports go to
    temporary files, the audit is recorded, and only then are the files moved into place."""
    from ..render.audit import render_audit_html

    texts = []
    if args.json_out:
        texts.append((args.json_out, json.dumps({"report_format": 1, **outcome.to_dict()}, indent=2,
                                                allow_nan=False) + "\n"))
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
    from ..render.reports import write_temporary

    return write_temporary(path, text)


def progress_printer(started: float):
    """A progress callback printing one line per tenth of the runs to stderr."""
    last = [-1]

    def progress(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth > last[0] and (tenth > 0 or done == total):
            last[0] = tenth
            print(f"audit: {done}/{total} runs ({done / max(total, 1):.0%}), "
                  f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    return progress


def target_table(result: Any) -> str:
    """One line per target (at most 100 characters): kind, status, best attack, AUC with its
    interval, TPR at FPR 1 %, ε lower bound."""
    from ..render.audit import best_attack
    from ..text_tables import format_table

    rows = []
    for t in result.targets:
        b = best_attack(t)
        status = str(t.get("status", ""))[:12]
        if b is None:
            rows.append((str(t["target"])[:8], str(t["kind"])[:12], status, "-", "-", "-", "-"))
            continue
        name, a = b
        ci = a.get("auc_ci") or [None, None]
        auc = f"{a['auc']:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None else "")
        tprs = a.get("tpr_at_fpr") or []
        rows.append((str(t["target"])[:8], str(t["kind"])[:12], status, str(name)[:10], auc,
                     f"{tprs[0]['tpr']:.3f}" if tprs else "-", f"{a['epsilon_lower']:.3f}"))
    lines = format_table(("target", "kind", "status", "attack", "AUC [95% CI]", "TPR@1%", "ε lower"), rows)
    return "\n".join(line.rstrip() for line in lines.splitlines())


def load_generator(spec: str, args_json: str | None = None) -> Any:
    """``module:name`` → the generate callable: a function or callable instance as is; a class
    instantiated with the ``args_json`` keyword arguments; a function given ``args_json`` is a
    factory called with them. The module is imported with the current directory on the path."""
    from ..errors import ParameterError

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ParameterError(f"--generator must be module:name, got {spec!r}")
    kwargs: dict[str, Any] | None = None
    if args_json is not None:
        try:
            kwargs = json.loads(args_json)
        except json.JSONDecodeError as exc:
            raise ParameterError(f"--generator-args is not valid JSON: {exc.msg} at character {exc.pos}") from None
        if not isinstance(kwargs, dict):
            raise ParameterError(f"--generator-args must be a JSON object of keyword arguments, got "
                                 f"{type(kwargs).__name__}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ParameterError(f"--generator: cannot import module {exc.name or module_name!r}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        raise ParameterError(f"--generator: importing module {module_name!r} failed: {type(exc).__name__}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ParameterError(f"--generator: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or kwargs is not None:
        if not callable(obj):
            raise ParameterError(f"--generator-args given but {spec} is not a class or factory")
        try:
            obj = obj(**(kwargs or {}))
        except TypeError as exc:
            raise ParameterError(f"--generator: {spec} does not take these --generator-args: "
                                 f"{type(exc).__name__}") from None
    if not callable(obj):
        method = getattr(obj, "generate", None)
        if not callable(method):
            raise ParameterError(f"--generator: {spec} is not callable (and has no generate method)")
        obj = method
    return obj
