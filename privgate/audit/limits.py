"""The sizes and the time a generator audit may take, checked before any work starts.

**Deadline.** An audit has a deadline covering everything it does: the planning (targets,
feature space, design), the preflight runs and every generator run; past it the worker processes
are ended and the audit fails with an :class:`~privgate.errors.AuditError` saying how many runs
were made. The default, :data:`DEFAULT_DEADLINE`, is 24 hours: an audit retrains the generator
hundreds of times (200 runs by default), so it is given four times a gate run's 6 hours — 200
runs of a generator that trains in 7 minutes finish on one worker — while a generator that hangs
is still stopped within a day, before a daily scheduled audit starts again. ``deadline=``
(``privgate audit --deadline``) overrides it, up to :data:`MAX_DEADLINE` (a week, as a gate's).

**Sizes.** Far beyond any real audit, and far below what exhausts a machine before the first
run: at most :data:`MAX_RUNS` runs per target, :data:`MAX_TARGETS` targets,
:data:`MAX_RUN_TARGET_CELLS` (run, target) pairs in all (the design's arrays and the features of
every target on every release are this many rows), :data:`MAX_ROWS` records per training set and
per release, :data:`MAX_WORKERS` worker processes. A size beyond its bound raises
:class:`~privgate.errors.ParameterError` naming it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..errors import AuditError, ParameterError
from ..options import MAX_DEADLINE

#: seconds an audit may take, planning and every run included (module docstring)
DEFAULT_DEADLINE = 24 * 3600.0
#: generator runs per target (the default is 200; published audits use hundreds to thousands)
MAX_RUNS = 100_000
#: targets of one audit (the default is 10)
MAX_TARGETS = 1_000
#: (run, target) pairs: the design's arrays and the features array have this many rows
MAX_RUN_TARGET_CELLS = 10_000_000
#: records per training set (training_rows) and per release (n_rows)
MAX_ROWS = 10_000_000
#: worker processes of one audit
MAX_WORKERS = 1_024
#: looks of a sequential audit (each spends 1/looks of the error budget: more looks than this
#: leave each too little to show anything)
MAX_LOOKS = 100

__all__ = [
    "DEFAULT_DEADLINE",
    "MAX_DEADLINE",
    "MAX_LOOKS",
    "MAX_ROWS",
    "MAX_RUNS",
    "MAX_RUN_TARGET_CELLS",
    "MAX_TARGETS",
    "MAX_WORKERS",
    "Clock",
    "check_sizes",
    "deadline_seconds",
]


def _count(value: Any, name: str, bound: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"{name} must be a positive integer; got {value!r}")
    if value > bound:
        raise ParameterError(f"{name} must be at most {bound:,}; got {int(value):,}")
    return int(value)


def check_sizes(
    *,
    runs: Any,
    n_targets: Any,
    training_rows: Any = None,
    n_rows: Any = None,
    design: str = "shared",
    user_targets: int | None = None,
) -> None:
    """Refuse sizes beyond the bounds of the module docstring, naming the size. ``user_targets``:
    the number of target records given as a frame (their count replaces ``n_targets``)."""
    runs_ = _count(runs, "runs", MAX_RUNS)
    targets_ = _count(n_targets, "n_targets", MAX_TARGETS)
    if user_targets is not None and user_targets > MAX_TARGETS:
        raise ParameterError(f"targets: at most {MAX_TARGETS:,} target records; got {user_targets:,}")
    _count(training_rows, "training_rows", MAX_ROWS)
    _count(n_rows, "n_rows", MAX_ROWS)
    k = max(targets_ or 1, user_targets or 0)
    total = runs_ * (k if design == "separate" else 1)
    if total * k > MAX_RUN_TARGET_CELLS:
        raise ParameterError(
            f"runs × targets: the audit would make {total:,} runs of {k:,} targets "
            f"({total * k:,} run-target pairs; at most {MAX_RUN_TARGET_CELLS:,}) — fewer runs or "
            "fewer targets"
        )


def deadline_seconds(value: Any) -> float:
    """An audit's deadline in seconds: ``value`` (None: :data:`DEFAULT_DEADLINE`), a finite number
    in (0, :data:`MAX_DEADLINE`]; else :class:`~privgate.errors.ParameterError` naming it."""
    if value is None:
        return DEFAULT_DEADLINE
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
        or not 0 < value <= MAX_DEADLINE
    ):
        raise ParameterError(f"deadline must be a number of seconds in (0, {MAX_DEADLINE:g}]; got {value!r}")
    return float(value)


class Clock:
    """One audit's deadline as a point in time (monotonic clock)."""

    def __init__(self, seconds: Any = None) -> None:
        self.seconds = deadline_seconds(seconds)
        self.stop_at = time.monotonic() + self.seconds

    def left(self) -> float:
        """Seconds left (≤ 0 once passed)."""
        return self.stop_at - time.monotonic()

    def check(self, step: str) -> None:
        """Raise the deadline's AuditError when it passed before ``step``."""
        if self.left() <= 0:
            raise AuditError(
                f"the audit did not finish within its deadline of {self.seconds:g} s (it passed "
                f"before {step}) — raise the deadline, make fewer runs or a faster generator"
            )
