"""The gate's rule kinds, one declaration each: what a rule of the kind compares, how it is
written, when it can be evaluated and how every adapter shows it.

A rule kind (``threshold``, ``baseline``, ``trend``, ``test``) is a :class:`RuleKind`. The
configuration's keys, the deciding (:mod:`privgate.gates.rules`, :mod:`privgate.gates.deciding`),
the decision table, the GX expectations, the Dagster checks and scorecard and the trend charts
read these declarations and never compare a kind's name; :func:`rule_kind` raises
:class:`~privgate.errors.UnknownRuleKindError`, naming the kind and the known ones, for a kind
no declaration has. A new kind is one :func:`register_rule_kind` call (CONTRIBUTING.md).

Check labels that are not rules (``error``, ``unchecked``, ``audit``) are :data:`CHECK_LABELS`:
:func:`kind_of_check` returns None for them and raises for anything else unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import UnknownRuleKindError
from ..suggest import did_you_mean

# what a threshold or baseline rule may compare: the point estimate, or an end of its 95 % interval
ON = ("estimate", "lower", "upper")
END_WORDS = {"lower": "lower bound", "upper": "upper bound"}
# the labels of gate checks that are no rule: a failure, a run that checked nothing, the audit
CHECK_LABELS = ("error", "unchecked", "audit")


@dataclass(frozen=True)
class GxForm:
    """How a rule kind is written as a Great Expectations expectation: ``expectation`` "risk"
    (``ExpectSyntheticPrivacyRiskToBeBelow`` and the named risk expectations, comparing the
    result field ``compare_to``) or "p_value" (``ExpectSyntheticPrivacyTestPValueToBeAbove``)."""

    expectation: Literal["risk", "p_value"]
    compare_to: str = "value"


@dataclass(frozen=True)
class RuleKind:
    """One gate rule kind.

    * ``quantity`` — the result field the rule compares (``value``, ``excess``, ``p_value``), or
      for a kind that ``needs_history`` the name of its difference (``increase``: the value
      minus the last accepted release's); ``words`` the quantity in words.
    * ``interval_field`` — the result field holding the quantity's 95 % interval (``ci``,
      ``excess_ci``); None when the rule compares the estimate only.
    * ``ons`` — what of the quantity a rule may compare (``on``); the first is the default.
    * ``limits`` — the range of the rule's limits.
    * ``fires_below`` — the rule fires when the quantity is strictly below its limit (a p-value);
      otherwise when it is above the limit beyond a rounding tolerance. A warn limit is then at
      or above the block limit, and a limit must be above 0.
    * ``signed`` — the quantity is a difference, shown with its sign.
    * ``needs_holdout`` / ``needs_history`` — evaluated only with a holdout baseline / an
      earlier accepted release of the dataset in the history.
    * ``message`` — the check's message, what was compared: a format string over ``estimate``,
      ``number``, ``baseline`` (the holdout's value) and ``previous``; ``explains_view``: a
      fired check says how a label-free metric's view differed from the plain release.
    * ``requirement`` — the Dagster check's requirement in words over ``limit`` ("" : the
      quantity must be ≤ the limit, said from ``words`` and ``on``).
    * ``gx`` — the kind as a GX expectation (:class:`GxForm`), or None with ``gx_skipped`` why.
    * ``scorecard`` — what the Dagster scorecard appends to the metric's name for the number.
    * ``chart`` — the history columns a trend chart draws (value, interval low, interval high,
      words), or None when the kind has no fixed limit to draw.
    * ``bar_limit`` — where the HTML report's bar chart draws the limit: on the value axis
      ("value"), over the holdout baseline ("baseline"), or not at all (None).
    """

    name: str
    quantity: str
    words: str
    message: str
    interval_field: str | None = None
    ons: tuple[str, ...] = ("estimate",)
    limits: tuple[float, float] = (0.0, 1.0)
    fires_below: bool = False
    signed: bool = False
    needs_holdout: bool = False
    needs_history: bool = False
    explains_view: bool = True
    requirement: str = ""
    gx: GxForm | None = None
    gx_skipped: str = ""
    scorecard: str = ""
    chart: tuple[str, str | None, str | None, str] | None = None
    bar_limit: Literal["value", "baseline"] | None = None

    @property
    def default_on(self) -> str:
        return self.ons[0]

    @property
    def has_interval(self) -> bool:
        return self.interval_field is not None


_KINDS: dict[str, RuleKind] = {}


def register_rule_kind(kind: RuleKind) -> RuleKind:
    """Declare a rule kind (a name already declared is replaced); returns it."""
    _KINDS[kind.name] = kind
    return kind


def unregister_rule_kind(name: str) -> None:
    """Forget a declared rule kind (tests that declare one of their own)."""
    _KINDS.pop(name, None)


def rule_kind(name: str) -> RuleKind:
    """The declaration of rule kind ``name``; an unknown kind raises
    :class:`~privgate.errors.UnknownRuleKindError` naming it, the closest and the known ones."""
    try:
        return _KINDS[name]
    except (KeyError, TypeError):
        hint = did_you_mean(name, _KINDS) if isinstance(name, str) else ""
        raise UnknownRuleKindError(f"unknown rule kind {name!r}{hint}; known rule kinds: {', '.join(_KINDS)}") from None


def kind_names() -> tuple[str, ...]:
    """The declared rule kinds' names, in declaration order (the configuration's key order)."""
    return tuple(_KINDS)


def kinds() -> tuple[RuleKind, ...]:
    """Every declared rule kind, in declaration order."""
    return tuple(_KINDS.values())


def is_rule(label: str) -> bool:
    """Whether a check's ``rule`` label is a declared rule kind (not ``error`` and the like)."""
    return label in _KINDS


def kind_of_check(label: str) -> RuleKind | None:
    """The rule kind of a check's ``rule`` label; None for the labels of checks that are no rule
    (:data:`CHECK_LABELS`); any other label raises :class:`~privgate.errors.UnknownRuleKindError`."""
    if label in CHECK_LABELS:
        return None
    return rule_kind(label)


def gx_kind(expectation: str, compare_to: str) -> RuleKind:
    """The rule kind a GX expectation of form ``expectation`` comparing ``compare_to`` decides
    like; raises :class:`~privgate.errors.UnknownRuleKindError` when no kind is written so."""
    for kind in _KINDS.values():
        if kind.gx == GxForm(expectation, compare_to):  # type: ignore[arg-type]
            return kind
    raise UnknownRuleKindError(
        f"no rule kind is a GX {expectation} expectation comparing {compare_to!r}; "
        f"known rule kinds: {', '.join(_KINDS)}"
    )


def gx_quantities() -> tuple[str, ...]:
    """What a GX risk expectation may compare (``compare_to``): the declared kinds' fields."""
    return tuple(k.gx.compare_to for k in _KINDS.values() if k.gx is not None and k.gx.expectation == "risk")


def requirement_words(kind: RuleKind, on: str, limit: float) -> str:
    """What a rule of ``kind`` with ``on`` and ``limit`` requires, in words (a Dagster check's
    description)."""
    if kind.requirement:
        return kind.requirement.format(limit=limit)
    quantity = kind.words
    if on in END_WORDS:
        quantity = f"the {on} end of the 95 % interval of the {quantity}"
    return f"{quantity} must be ≤ {limit:g}"


THRESHOLD = register_rule_kind(
    RuleKind(
        name="threshold",
        quantity="value",
        words="risk value",
        message="value {estimate:.4f}",
        interval_field="ci",
        ons=ON,
        gx=GxForm("risk", "value"),
        chart=("value", "ci_low", "ci_high", "value"),
        bar_limit="value",
    )
)
BASELINE = register_rule_kind(
    RuleKind(
        name="baseline",
        quantity="excess",
        words="excess over the holdout baseline",
        message="excess {estimate:+.4f} over holdout baseline {baseline:.4f}",
        interval_field="excess_ci",
        ons=ON,
        limits=(-1.0, 1.0),
        signed=True,
        needs_holdout=True,
        gx=GxForm("risk", "excess"),
        scorecard=" excess",
        chart=("excess", "excess_ci_low", "excess_ci_high", "excess over the holdout baseline"),
        bar_limit="baseline",
    )
)
TREND = register_rule_kind(
    RuleKind(
        name="trend",
        quantity="increase",
        words="increase over the last accepted release",
        message="increase {estimate:+.4f} over last accepted {previous:.4f}",
        limits=(-1.0, 1.0),
        signed=True,
        needs_history=True,
        gx_skipped="trend rules need the privgate history store",
        scorecard=" increase",
    )
)
TEST = register_rule_kind(
    RuleKind(
        name="test",
        quantity="p_value",
        words="p-value",
        message="p-value {number:.3g}",
        ons=("p_value",),
        fires_below=True,
        explains_view=False,
        gx=GxForm("p_value"),
        scorecard=" p-value",
        requirement="its test's p-value must be ≥ {limit:g} (a smaller p-value is evidence of the leak)",
        chart=("p_value", None, None, "p-value"),
    )
)
