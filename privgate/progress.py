"""Progress inside a long metric: the neighbour engine's block loops say how far they are, and the
evaluation's progress callback hears it at most once per ``PROGRESS_EVERY`` seconds.

The engine calls :func:`report` (rows done of the rows of the current search) from its loops; it
does nothing unless an evaluation opened a :func:`within` scope for the metric being computed
(a context variable, so concurrent evaluations in other threads never mix).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

#: Seconds between two progress lines of one metric, at least.
PROGRESS_EVERY = 10.0

_CURRENT: ContextVar["Reporter | None"] = ContextVar("privgate_progress", default=None)


class Reporter:
    """Throttled progress of one metric: ``emit(detail)`` is called with a dict — metric,
    done, total, unit, elapsed seconds since the metric started — when ``interval`` seconds
    have passed since the metric started or since the last call."""

    def __init__(
        self,
        metric: str,
        emit: Callable[[dict], Any],
        interval: float = PROGRESS_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metric, self.emit, self.interval, self.clock = metric, emit, float(interval), clock
        self.start = self.last = clock()
        self.calls = 0

    def step(self, done: int, total: int, unit: str) -> None:
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        self.calls += 1
        self.emit(
            {"metric": self.metric, "done": int(done), "total": int(total), "unit": unit, "elapsed": now - self.start}
        )


@contextmanager
def within(
    metric: str,
    emit: Callable[[dict], Any] | None,
    interval: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Reporter | None]:
    """While the block runs, :func:`report` calls reach ``emit`` (throttled to one per
    ``interval`` seconds, default :data:`PROGRESS_EVERY`; nothing when ``emit`` is None)."""
    every = PROGRESS_EVERY if interval is None else interval
    reporter = Reporter(metric, emit, every, clock) if emit is not None else None
    token = _CURRENT.set(reporter)
    try:
        yield reporter
    finally:
        _CURRENT.reset(token)


def report(done: int, total: int, unit: str = "query rows of the current search") -> None:
    """The engine's loops: ``done`` of ``total`` units of the current step are done."""
    reporter = _CURRENT.get()
    if reporter is not None:
        reporter.step(done, total, unit)


def line(detail: dict) -> str:
    """A progress detail as one line of text (no values of records: counts and seconds only)."""
    return (
        f"    {detail['metric']}: {detail['done']:,} of {detail['total']:,} {detail['unit']} "
        f"({detail['elapsed']:.0f} s)"
    )
