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
