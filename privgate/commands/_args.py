"""Argument types, the run-option flags and the usage-error exit the commands share."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from ..errors import ParameterError
from ..options import (
    AUTO_SAMPLE_ABOVE,
    AUTO_SAMPLE_SIZE,
    MAX_DEADLINE,
    MAX_RECORDS,
    MAX_THREADS,
    RunOptions,
    check_seed,
)


def positive_int(flag: str, most: int = MAX_RECORDS) -> Callable[[str], int]:
    """An argparse ``type`` accepting an integer in [1, ``most``]; the error names ``flag``."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if not 1 <= n <= most:
            raise argparse.ArgumentTypeError(f"{flag} must be a positive integer, got {text!r} (at most {most:,})")
        return n

    return parse


def positive_seconds(flag: str, most: float = MAX_DEADLINE) -> Callable[[str], float]:
    """An argparse ``type`` accepting a number of seconds in (0, ``most``]; the error names ``flag``."""

    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            x = float("nan")
        if not 0 < x <= most:  # false for nan and inf
            raise argparse.ArgumentTypeError(f"{flag} must be a number of seconds in (0, {most:g}], got {text!r}")
        return x

    return parse


def seed_value(flag: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting a seed, an integer in [0, 2**32 − 1]; the error names ``flag``."""

    def parse(text: str) -> int:
        try:
            return check_seed(text, where=flag)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def add_run_options(p: argparse.ArgumentParser, default: str = "") -> None:
    """``--threads N``, ``--exact/--no-exact``, ``--sample-real N``, ``--sample`` and
    ``--memory-limit`` (gate and evaluate; an absent flag is not given: None); ``default`` names
    where an unset option comes from first (gate: the configuration)."""
    first = f"{default}, else " if default else ""
    p.add_argument(
        "--threads",
        type=positive_int("--threads", MAX_THREADS),
        default=None,
        help=f"thread budget of the run (default: {first}$PRIVGATE_THREADS or the free cores)",
    )
    p.add_argument(
        "--exact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"exact neighbour searches at every size (default: {first}approximate above "
        "~45k × 45k records, with measured recall)",
    )
    p.add_argument(
        "--sample-real",
        dest="sample_real",
        type=positive_int("--sample-real"),
        default=None,
        help=f"estimate per-real-record means on a seeded sample of N real records (default: {first}as --sample says)",
    )
    p.add_argument(
        "--sample",
        dest="sample",
        type=_option(
            "sample", f"--sample must be auto, off or a positive integer (at most {MAX_RECORDS:,}), got {{text!r}}"
        ),
        default=None,
        help=f"query-record sampling of both sides: auto (only a side of more than {AUTO_SAMPLE_ABOVE:,} rows: "
        f"{AUTO_SAMPLE_SIZE:,} seeded records), off (every record) or N per side (default: {first}auto)",
    )
    p.add_argument(
        "--memory-limit",
        dest="memory_limit",
        type=_option("memory_limit", flag="--memory-limit"),
        default=None,
        help="refuse a run estimated to need more memory than this before any metric runs "
        "(exit 3, naming the metric and the option that fits): bytes, a size such as 8G, or "
        "off (default: $PRIVGATE_MEMORY_LIMIT, else the memory available)",
    )


def _option(key: str, message: str = "", *, flag: str = "") -> Callable[[str], Any]:
    """An argparse ``type`` validating one run option as :class:`RunOptions` does; the error is
    ``message`` (``{text!r}`` the flag's text), else the option's own with ``flag`` in place of
    the option's name."""

    def parse(text: str) -> Any:
        value = "auto" if key == "memory_limit" and text.strip().lower() == "auto" else text
        try:
            return getattr(RunOptions(**{key: value}), key)
        except ParameterError as exc:
            own = str(exc).replace(key, flag, 1) if flag else str(exc)
            raise argparse.ArgumentTypeError(message.format(text=text) if message else own) from None

    return parse


def run_options(args: argparse.Namespace) -> RunOptions:
    """The run options the flags give (an absent flag: not given)."""
    return RunOptions(
        **{k: getattr(args, k, None) for k in ("threads", "exact", "sample_real", "sample", "deadline", "memory_limit")}
    )


def exit_usage_errors_with(parser: argparse.ArgumentParser, code: int) -> None:
    """Make ``parser``'s usage errors exit with ``code`` (argparse exits 2, which for the gate and
    audit commands means "block"), printing the usage and the error with its "did you mean"."""

    def usage_error(message: str) -> None:
        from ._usage import explain_usage_error

        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {explain_usage_error(parser, message)}", file=sys.stderr)
        raise SystemExit(code)

    parser.error = usage_error  # type: ignore[method-assign]
