"""A gate run's checks (one rule evaluated on one metric, or a failure that blocks), the decision
they give and the exit code (``EXIT_CODES``):

====  =======  ==============================================================================
code  meaning  when
====  =======  ==============================================================================
0     pass     every rule passed
1     warn     a ``warn`` rule fired, no ``block`` rule fired
2     block    a ``block`` rule fired: the release is too risky
3     error    the gate could not decide completely (invalid configuration, missing or corrupt
               input, a non-optional metric failed, history unavailable); decision is ``block``
====  =======  ==============================================================================

A failure is an ``error`` check that blocks (fails closed), or is ignored for an optional
metric; its message is kept safe to store (:func:`safe_message`: no data values).

This module holds the checks, the decision and the exit codes; the run's whole result,
:class:`~privgate.gates.outcome.GateOutcome`, sits above it in :mod:`privgate.gates.outcome`, so
the decision table and its presentation can read checks without importing the outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping, Protocol

from ..errors import PrivgateError
from ..results import _jsonable


class Decision(str, Enum):
    """The gate's decision; compares equal to its string value."""

    PASS = "pass"
    WARN = "warn"
    BLOCK = "block"

    def __str__(self) -> str:
        return self.value


EXIT_CODES: dict[str, int] = {"pass": 0, "warn": 1, "block": 2, "error": 3}
VERDICT_RANK = {"pass": 0, "warn": 1, "block": 2}


@dataclass
class GateCheck:
    """One rule evaluated on one metric (or one failure that blocks).

    ``value`` is the metric's risk value, ``compared`` the quantity the rule compares with
    ``threshold`` (the value for threshold rules, the excess over the holdout baseline for baseline
    rules, the increase over the last accepted release for trend rules, the p-value for test
    rules) — or, with ``on`` = "lower" / "upper", that end of its interval. ``interval`` is the
    95 % interval of the compared quantity (``ci`` for threshold rules, ``excess_ci`` for baseline
    rules; None when the result has none or the rule has no interval), ``p_value`` the metric's
    own p-value when it is a test.
    """

    metric: str
    rule: str  # "threshold" | "baseline" | "trend" | "error"
    value: float | None
    raw: float | None
    threshold: float | None
    severity: str  # "warn" | "block"
    verdict: str  # "pass" | "warn" | "block"
    message: str = ""
    seconds: float = 0.0
    optional: bool = False
    compared: float | None = None
    baseline: float | None = None
    previous: float | None = None
    skipped: bool = False
    on: str = ""  # "estimate" | "lower" | "upper" | "p_value" ("" for errors)
    interval: tuple[float, float] | None = None
    p_value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({k: getattr(self, k) for k in self.__dataclass_fields__})


class CheckedRun(Protocol):
    """What the decision table and the text presentation read of a gate run — a
    :class:`~privgate.gates.outcome.GateOutcome` — so that they name these fields, not the outcome
    class (which sits above them and calls them)."""

    run_id: str
    dataset: str
    release_id: str
    checks: list[GateCheck]
    decision: Decision
    exit_code: int

    @property
    def results(self) -> Mapping[str, Any]: ...


def _check_dict(c: "GateCheck") -> dict[str, Any]:
    """A check as JSON, always with the interval fields (None when absent)."""
    out = c.to_dict()
    for k in ("on", "interval", "p_value"):
        out.setdefault(k, _jsonable(getattr(c, k, None)))
    return out


def missing_check(base: dict[str, Any], optional: bool, what: str) -> GateCheck:
    """A rule that cannot be evaluated because the result lacks what it compares: blocks (fails
    closed, exit 3), or is ignored for an optional metric."""
    if optional:
        return GateCheck(
            **{**base, "rule": "error"}, verdict="pass", skipped=True, message=f"{what}; optional metric, ignored"
        )
    return GateCheck(
        **{**base, "rule": "error", "severity": "block"}, verdict="block", message=f"{what} (fails closed)"
    )


def error_check(metric: str, message: str, *, optional: bool = False) -> GateCheck:
    """A failure as a check: blocks (fails closed, exit 3), or is ignored for an optional metric."""
    if optional:
        return GateCheck(
            metric=metric,
            rule="error",
            value=None,
            raw=None,
            threshold=None,
            severity="warn",
            verdict="pass",
            optional=True,
            skipped=True,
            message=f"{message}; optional metric, ignored",
        )
    return GateCheck(
        metric=metric,
        rule="error",
        value=None,
        raw=None,
        threshold=None,
        severity="block",
        verdict="block",
        message=f"{message} (fails closed)",
    )


def decision_of(checks: list[GateCheck]) -> tuple[Decision, int]:
    """The worst verdict and the exit code (3 when a blocking error check exists)."""
    worst = max((c.verdict for c in checks), key=VERDICT_RANK.__getitem__, default="pass")
    decision = Decision(worst)
    if any(c.rule == "error" and c.verdict == "block" for c in checks):
        return Decision.BLOCK, EXIT_CODES["error"]
    return decision, EXIT_CODES[decision.value]


_WRAPPED = re.compile(r"^(?P<head>.*?failed: )(?P<type>[A-Za-z_][\w.]*)(?::.*)?$", re.S)


def safe_message(message: str, limit: int = 400) -> str:
    """An error message safe to store: a wrapped foreign exception keeps only its type name
    (its text may quote data values); privgate's own messages never contain record values and
    are kept, truncated to ``limit`` characters."""
    text = str(message).strip().splitlines()[0] if str(message).strip() else "unknown error"
    m = _WRAPPED.match(text)
    if m:
        text = f"{m.group('head')}{m.group('type')}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def privgate_error_text(exc: BaseException) -> str:
    if isinstance(exc, PrivgateError):
        return safe_message(f"{type(exc).__name__}: {exc}")
    return f"{type(exc).__name__} (details withheld: they may quote data values)"
