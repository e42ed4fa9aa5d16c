"""The ``privgate`` command line. Each command lives in ``privgate/commands/<name>.py`` and
exposes ``add_parser(subparsers)`` and ``run(args) -> int``."""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from .errors import PrivgateError
from .suggest import closest, did_you_mean

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


_ARGV: list[str] = []  # the arguments being parsed (for the hints of a usage error)


def explain_usage_error(parser: argparse.ArgumentParser, message: str) -> str:
    """An argparse error message with "did you mean" hints: for a mistyped command or choice, and
    for mistyped flags when a required flag is reported missing (argparse stops there before it
    names the unrecognised ones)."""
    match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if match:
        choices = re.findall(r"'([^']*)'", match.group(2))
        return message + did_you_mean(match.group(1), choices)
    if "arguments are required" in message:
        known = {s for a in parser._actions for s in a.option_strings}
        argv = _ARGV or sys.argv[1:]  # empty when this module runs as __main__ (python -m)
        unknown = [w for w in argv if w.startswith("--") and w.split("=", 1)[0] not in known
                   and not any(k.startswith(w.split("=", 1)[0]) for k in known)]  # abbreviations are fine
        if unknown:
            return f"{message}; {unknown_flags_message(parser, unknown)}"
    return message


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


def unknown_flags_message(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """"unrecognized arguments: ..." with the closest flag of ``parser`` for each mistyped one."""
    flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    hints = []
    for word in extra:
        if word.startswith("-"):
            best = closest(word.split("=", 1)[0], flags)
            if best:
                hints.append((word.split("=", 1)[0], best[0]))
    text = f"unrecognized arguments: {' '.join(extra)}"
    if len(hints) == 1:
        return f"{text}; did you mean {hints[0][1]}?"
    if hints:
        return f"{text}; did you mean " + ", ".join(f"{b} (for {w})" for w, b in hints) + "?"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    _ARGV[:] = list(sys.argv[1:] if argv is None else argv)
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
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - one line, the type only: the text may quote data values
        if args.command not in GUARDED:
            raise
        print(f"privgate {args.command}: error: unexpected {type(exc).__name__} (details withheld: they may "
              "quote data values)", file=sys.stderr)
        return getattr(args, "_error_exit_code", 3)


EXIT_BROKEN_PIPE = 141
# the commands that read data: a native library's panic message is kept off their standard error
# (privgate/native_stderr.py), and an unexpected exception is reported by type, one line
GUARDED = ("gate", "evaluate", "estimate")


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
