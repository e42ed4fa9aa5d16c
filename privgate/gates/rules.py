"""What a gate rule compares and when it fires: the one definition the gate, the GX expectations
and the Dagster checks ask.

For a rule kind, its ``on`` and a metric result (a :class:`~privgate.results.MetricResult`, or
the GX payload dict with the same field names):

* :func:`applies` — whether a rule of ``when`` applies to a run with / without a holdout;
* :func:`compare` — the quantity the rule compares (the ``value`` for threshold rules, the
  ``excess`` over the holdout baseline for baseline rules, the ``increase`` over the last
  accepted release for trend rules, the ``p_value`` for test rules), its 95 % interval, and the
  number compared with the limit (the estimate, or with ``on`` = "lower" / "upper" that end of
  the interval) — or the field the result lacks, so the caller fails closed;
* :func:`fires` — whether the compared number fires the rule (a test rule strictly below its
  limit, every other kind above it beyond a rounding tolerance).

Each kind's quantity, interval field and direction are its declaration in
:mod:`privgate.gates.rule_kinds`; an unknown kind raises there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .rule_kinds import END_WORDS, ON, rule_kind

# beyond this tolerance a quantity is above its limit (rounding in a difference is not a fire)
EPS = 1e-12
ENDS = tuple(END_WORDS)


def applies(when: str, has_holdout: bool | None) -> bool:
    """Whether a rule of ``when`` ("always", "with_holdout", "no_holdout") applies to a run with
    (True) or without (False) a holdout; every rule for None (not known yet, e.g. when checks
    are declared)."""
    if has_holdout is None or when == "always":
        return True
    return (when == "with_holdout") == bool(has_holdout)


@dataclass(frozen=True)
class Comparison:
    """What one rule compares on one result.

    ``estimate`` is the point estimate of the rule's quantity, ``interval`` its 95 % interval
    (None when the result has none or the kind has no interval), ``number`` what is compared
    with the limit. ``missing`` names the result field the rule needs and the result lacks
    ("excess", "ci", "excess_ci", "p_value"); ``number`` is then None and the rule fails closed.
    """

    kind: str
    on: str
    estimate: float | None
    interval: tuple[float, float] | None
    number: float | None
    missing: str | None = None

    @property
    def quantity(self) -> str:
        return rule_kind(self.kind).quantity


def result_field(result: Any, name: str) -> Any:
    """A field of a result object or of a result dict (None when absent)."""
    if isinstance(result, dict):
        return result.get(name)
    return getattr(result, name, None)


def result_interval(kind: str, result: Any) -> tuple[float, float] | None:
    """The 95 % interval of the quantity a ``kind`` rule compares, as the result reports it
    (the kind's ``interval_field``: ``ci`` for threshold rules, ``excess_ci`` for baseline rules;
    None for kinds without one)."""
    name = rule_kind(kind).interval_field
    ci = result_field(result, name) if name is not None and result is not None else None
    return (float(ci[0]), float(ci[1])) if ci is not None else None


def compare(kind: str, on: str, result: Any, previous: float | None = None) -> Comparison:
    """What a ``kind`` rule with ``on`` compares on ``result`` (``previous``: the last accepted
    release's value, for kinds that need the history); an unknown kind raises."""
    spec = rule_kind(kind)
    if spec.needs_history:  # the increase over the last accepted release
        estimate = float(result_field(result, "value")) - float(previous)
        return Comparison(kind, on, estimate, None, estimate)
    point = result_field(result, spec.quantity)
    if not spec.has_interval:  # the estimate only (a test's p-value)
        number = float(point) if point is not None else None
        return Comparison(kind, on, number, None, number, None if point is not None else spec.quantity)
    if point is None:
        return Comparison(kind, on, None, None, None, spec.quantity)
    interval = result_interval(kind, result)
    number = compared_number(float(point), interval, on)
    return Comparison(kind, on, float(point), interval, number, None if number is not None else spec.interval_field)


def compared_number(point: float, interval: Any, on: str) -> float | None:
    """The number a rule compares with its limit: the point estimate (``on="estimate"``) or the
    lower / upper end of its 95 % interval; None when an end is asked for and there is no
    interval (the caller fails closed)."""
    if on == "estimate":
        return float(point)
    if on not in ON:
        raise ValueError(f"on must be 'estimate', 'lower' or 'upper', got {on!r}")
    if interval is None:
        return None
    return float(interval[0] if on == "lower" else interval[1])


def fires(kind: str, number: float, limit: float) -> bool:
    """Whether a rule of ``kind`` fires on the number it compares: a kind that fires below its
    limit (a test's p-value) when the number is strictly below it, every other kind when the
    quantity is above its limit (beyond a rounding tolerance of 1e-12)."""
    if rule_kind(kind).fires_below:
        return number < limit
    return number > limit + EPS


def check_quantity(check: Any, result: Any = None) -> tuple[float | None, tuple[float, float] | None]:
    """The estimate of the quantity a decided check's rule compares (the value, the excess, the
    increase, the p-value) and its 95 % interval — the check's own, else the result's — for
    showing next to the limit; (None, None) for what the check does not carry."""
    spec = rule_kind(check.rule)
    if spec.needs_history:  # the increase over the last accepted release
        return check.compared, None
    interval = getattr(check, "interval", None)
    if interval is None:
        interval = result_interval(spec.name, result)
    value = getattr(check, spec.quantity, None)
    if value is None:
        value = result_field(result, spec.quantity)
    if not spec.has_interval:  # a test's p-value: no interval
        return (value if value is not None else check.compared), None
    if not _finite(value) and getattr(check, "on", None) in (None, "", "estimate"):
        value = check.compared
    return value, interval


def _finite(x: Any) -> bool:
    try:
        return x is not None and not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False
