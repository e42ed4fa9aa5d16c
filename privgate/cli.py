"""The ``privgate`` command line. Each command lives in ``privgate/commands/<name>.py`` and
exposes ``add_parser(subparsers)`` and ``run(args) -> int``."""

from __future__ import annotations

import argparse
import importlib
import sys

from .commands._usage import ARGV, explain_usage_error, silence_stdout, unknown_flags_message
from .errors import PrivgateError

# command modules, in the order `privgate --help` lists them
COMMANDS = [
    "privgate.commands.evaluate",
    "privgate.commands.metrics",
    "privgate.commands.gate",
    "privgate.commands.estimate",
    "privgate.commands.history",
    "privgate.commands.audit",
    "privgate.commands.audits",
    "privgate.commands.demo",
]


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a mistyped command or choice."""

    def error(self, message: str):  # type: ignore[override]
        super().error(explain_usage_error(self, message))


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="privgate", description="Privacy gate for synthetic data releases.")
    parser.add_argument("--version", action="version", version=f"privgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod_name in COMMANDS:
        mod = importlib.import_module(mod_name)
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # a command may set its own usage-error exit code (gate: 3 = error, never 2 = block);
        # the usage shown is the command's own, with the closest flag for a mistyped one
        own = getattr(args, "_parser", None) or parser
        own.print_usage(sys.stderr)
        print(f"{own.prog}: error: {unknown_flags_message(own, extra)}", file=sys.stderr)
        return getattr(args, "_usage_exit_code", 2)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        if args.command in GUARDED:
            from .native_stderr import native_stderr_guard

            with native_stderr_guard():
                return int(args._run(args) or 0)
        return int(args._run(args) or 0)
    except PrivgateError as exc:
        print(f"privgate: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return getattr(args, "_error_exit_code", 3)
    except BrokenPipeError:
        # the reader stopped early (`privgate metrics | head`): no traceback, and none at exit
        # when Python flushes stdout; 141 = 128 + SIGPIPE, what a shell reports for such a writer
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - one line, the type only: the text may quote data values
        if args.command not in GUARDED:
            raise
        print(
            f"privgate {args.command}: error: unexpected {type(exc).__name__} (details withheld: they may "
            "quote data values)",
            file=sys.stderr,
        )
        return getattr(args, "_error_exit_code", 3)


EXIT_BROKEN_PIPE = 141
# the commands that read data: a native library's panic message is kept off their standard error
# (privgate/native_stderr.py), and an unexpected exception is reported by type, one line
GUARDED = ("gate", "evaluate", "estimate")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
