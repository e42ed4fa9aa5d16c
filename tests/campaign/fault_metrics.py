"""Test-only metrics that misbehave on purpose (raise, return junk), registered for one test and
removed from the registry afterwards."""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any, Callable, Iterator

from privgate import registry
from privgate.results import MetricResult

FAULTS = (
    "ok",
    "system_exit",
    "keyboard_interrupt",
    "value_error_quoting_data",
    "value_none",
    "value_nan",
    "value_inf",
    "value_neg_inf",
    "value_above_1",
    "value_below_0",
    "value_string",
    "baseline_nan",
    "excess_inf",
    "ci_nan",
    "p_value_2",
    "returns_none",
    "returns_string",
    "raw_string",
)
# runs that never end by themselves (not drawn by the generated campaign: they wait for a deadline)
HANGS = ("hang_python", "hang_native")
HANG_NATIVE_SECONDS = 30.0


def _ok(ctx: Any) -> MetricResult:
    value = 1.0 / ctx.n_synthetic  # any legitimate score in [0, 1]
    return MetricResult.from_context(ctx, "fault", value, float(ctx.n_synthetic), "test only")


def fault_function(kind: str) -> Callable[..., Any]:
    """A metric function ``fn(ctx)`` behaving as ``kind`` (see :data:`FAULTS`)."""

    def fn(ctx: Any, **_: Any) -> Any:
        res = _ok(ctx)
        first = str(ctx.real.row(0)[0])  # a real cell: must never reach any output
        if kind == "system_exit":
            raise SystemExit(0)
        if kind == "keyboard_interrupt":
            raise KeyboardInterrupt
        if kind == "hang_python":  # never ends by itself; runs Python code between short waits
            while True:
                time.sleep(0.02)
        if kind == "hang_native":  # one long call that no exception can interrupt
            time.sleep(HANG_NATIVE_SECONDS)
        if kind == "value_error_quoting_data":
            raise ValueError(f"cannot handle {first}")
        if kind == "returns_none":
            return None
        if kind == "returns_string":
            return first
        mutate = {
            "value_none": ("value", None),
            "value_nan": ("value", float("nan")),
            "value_inf": ("value", float("inf")),
            "value_neg_inf": ("value", float("-inf")),
            "value_above_1": ("value", 1.5),
            "value_below_0": ("value", -0.25),
            "value_string": ("value", first),
            "baseline_nan": ("baseline", float("nan")),
            "excess_inf": ("excess", float("inf")),
            "ci_nan": ("ci", (float("nan"), 0.5)),
            "p_value_2": ("p_value", 2.0),
            "raw_string": ("raw", first),
        }.get(kind)
        if mutate:  # changed after construction: __post_init__ cannot see it
            setattr(res, *mutate)
        return res

    return fn


@contextlib.contextmanager
def fault_metric(kind: str) -> Iterator[str]:
    """Register a metric behaving as ``kind`` under a fresh name; yields the name and removes it
    from the registry afterwards."""
    name = f"test_fault_{kind}_{uuid.uuid4().hex[:6]}"
    registry.register_metric(
        family="statistical", attack="test only", reference="test only", orientation="test only", name=name
    )(fault_function(kind))
    try:
        yield name
    finally:
        registry._REGISTRY.pop(name, None)
