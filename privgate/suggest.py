""" "Did you mean ...?" for a mistyped name (a flag, a metric, a dataset)."""

from __future__ import annotations

import difflib
from typing import Iterable


def closest(word: str, choices: Iterable[str], n: int = 1) -> list[str]:
    """The ``n`` choices most like ``word`` (difflib's ratio ≥ 0.6; case ignored), best first."""
    options = [str(c) for c in choices]
    lower = {c.lower(): c for c in options}
    return [lower[m] for m in difflib.get_close_matches(str(word).lower(), list(lower), n=n, cutoff=0.6)]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""`` when none is close."""
    best = closest(word, choices)
    return f"; did you mean {best[0]!r}?" if best else ""
