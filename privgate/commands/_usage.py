"""Usage errors of the ``privgate`` command line: the "did you mean" hints for a mistyped command,
choice or flag, shared by the top-level parser (:mod:`privgate.cli`) and the commands that set
their own usage-error exit code (:mod:`privgate.commands._args`); and quieting standard output
after a reader stopped early."""

from __future__ import annotations

import argparse
import re
import sys

from ..suggest import closest, did_you_mean

ARGV: list[str] = []  # the arguments being parsed (for the hints of a usage error)


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
        argv = ARGV or sys.argv[1:]  # empty when this module runs as __main__ (python -m)
        unknown = [
            w
            for w in argv
            if w.startswith("--")
            and w.split("=", 1)[0] not in known
            and not any(k.startswith(w.split("=", 1)[0]) for k in known)
        ]  # abbreviations are fine
        if unknown:
            return f"{message}; {unknown_flags_message(parser, unknown)}"
    return message


def unknown_flags_message(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """ "unrecognized arguments: ..." with the closest flag of ``parser`` for each mistyped one."""
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


def silence_stdout() -> None:
    """Point standard output at /dev/null: a reader that stopped early (a broken pipe) gets no
    traceback now, and none when Python flushes stdout at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass
