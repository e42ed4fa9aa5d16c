"""Argument types the commands share."""

from __future__ import annotations

import argparse
from typing import Callable


def positive_int(flag: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting a positive integer; the error names ``flag``."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a positive integer, got {text!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be a positive integer, got {text!r}")
        return n
    return parse


def positive_seconds(flag: str) -> Callable[[str], float]:
    """An argparse ``type`` accepting a positive, finite number of seconds; the error names ``flag``."""
    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            x = float("nan")
        if not 0 < x < float("inf"):
            raise argparse.ArgumentTypeError(f"{flag} must be a positive number of seconds, got {text!r}")
        return x
    return parse
