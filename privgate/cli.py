"""The ``privgate`` command line. Each command lives in ``privgate/commands/<name>.py`` and
exposes ``add_parser(subparsers)`` and ``run(args) -> int``."""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import PrivgateError

# command modules, in the order `privgate --help` lists them
COMMANDS = [
    "privgate.commands.evaluate",
    "privgate.commands.metrics",
    "privgate.commands.gate",
    "privgate.commands.history",
    "privgate.commands.audit",
    "privgate.commands.audits",
    "privgate.commands.demo",
]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="privgate", description="Privacy gate for synthetic data releases.")
    parser.add_argument("--version", action="version", version=f"privgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod_name in COMMANDS:
        mod = importlib.import_module(mod_name)
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # a command may set its own usage-error exit code (gate: 3 = error, never 2 = block)
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: unrecognized arguments: {' '.join(extra)}", file=sys.stderr)
        return getattr(args, "_usage_exit_code", 2)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except PrivgateError as exc:
        print(f"privgate: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return getattr(args, "_error_exit_code", 3)
    except BrokenPipeError:
        # the reader stopped early (`privgate metrics | head`): no traceback, and none at exit
        # when Python flushes stdout; 141 = 128 + SIGPIPE, what a shell reports for such a writer
        _silence_stdout()
        return EXIT_BROKEN_PIPE


EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
