"""The gate's decision table: its columns, their headers and how each cell is written from a
check — the one spec the CLI table (:func:`privgate.gates.present.format_checks`), the Markdown
table of the Dagster ``gate_decision`` check and the HTML report's table all read.

One row per rule of a metric (its warn and block limits together, :func:`merged_checks`); the
value with the metric's 95 % interval, the quantity the rule compares with the interval it
decides on, the limits, the p-value, the verdict and, for a row that did not simply pass, why.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from . import rules
from .checks import VERDICT_RANK, CheckedRun, GateCheck
from .rule_kinds import kind_of_check


@dataclass(frozen=True)
class Column:
    """One column of the decision table: the row key of its cells, its title, whether its
    header names the 95 % interval its cells carry, whether it holds numbers (right-aligned in
    Markdown, class ``num`` in HTML), whether the 100-column CLI view shows it and may wrap it,
    and its HTML cell class."""

    key: str
    title: str
    interval: bool = False
    numeric: bool = False
    compact: bool = True
    wrap: bool = False
    css: str = ""

    def header(self, spaced: bool = False) -> str:
        """``value [95% CI]`` (terminal) or, ``spaced``, ``value [95 % CI]`` (Markdown, HTML)."""
        if not self.interval:
            return self.title
        return f"{self.title} [95{' ' if spaced else ''}% CI]"


COLUMNS: tuple[Column, ...] = (
    Column("metric", "metric"),
    Column("rule", "rule"),
    Column("value", "value", interval=True, numeric=True, compact=False, css="num"),
    Column("compared", "compared", interval=True, numeric=True, wrap=True, css="num"),
    Column("limits", "limits", wrap=True, css="limits"),
    Column("p", "p", numeric=True, css="num"),
    Column("verdict", "verdict", css="verdict"),
    Column("note", "note", compact=False),
)


def columns(compact: bool = False, with_p: bool = True) -> list[Column]:
    """The columns shown: every one, or (``compact``) the 100-column CLI view's (without the
    p-value unless ``with_p``: a table with no test rule)."""
    return [c for c in COLUMNS if (not compact or c.compact) and (with_p or c.key != "p")]


def fmt_number(x: float | None, signed: bool = False) -> str:
    """A score as text; "-" for anything that is not a finite number (a broken result never
    breaks the table that reports it)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
        return "-"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def merged_checks(checks: list[GateCheck]) -> list[tuple[GateCheck, str, str]]:
    """Consecutive checks of one metric and rule on the same quantity (a warn and a block limit)
    become one row: (the deciding check, limits text, verdict)."""
    rows: list[tuple[GateCheck, str, str]] = []
    group: list[GateCheck] = []

    def flush() -> None:
        if not group:
            return
        worst = max(group, key=lambda c: VERDICT_RANK[c.verdict])
        limits = " / ".join(f"{c.severity} {c.threshold:g}" for c in group if c.threshold is not None) or "-"
        rows.append((worst if worst.verdict != "pass" else group[0], limits, worst.verdict))
        group.clear()

    for c in checks:
        if group and (c.metric, c.rule, c.compared, c.skipped) != (
            group[0].metric,
            group[0].rule,
            group[0].compared,
            group[0].skipped,
        ):
            flush()
        group.append(c)
        if c.rule == "error":
            flush()
    flush()
    return rows


def fmt_interval(ci: Any, signed: bool = False) -> str:
    """``[lower, upper]`` of an interval in the decision table's number format, "" without one."""
    if ci is None:
        return ""
    try:
        return f"[{fmt_number(float(ci[0]), signed)}, {fmt_number(float(ci[1]), signed)}]"
    except (TypeError, ValueError, IndexError, KeyError):
        return ""


def fmt_p(p: Any) -> str:
    """A p-value: 4 decimals, small ones as "<0.0001"; "-" without one."""
    if p is None:
        return "-"
    p = float(p)
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def with_interval(x: float | None, ci: Any, signed: bool = False) -> str:
    """A value followed by its interval: ``0.0120 [0.0040, 0.0310]``."""
    text = fmt_number(x, signed)
    iv = fmt_interval(ci, signed) if x is not None else ""
    return f"{text} {iv}" if iv else text


def check_row(outcome: CheckedRun, c: GateCheck, limits: str, verdict: str) -> dict[str, str]:
    """One decision-table row as text: the value with the metric's interval, the compared
    quantity with the rule's interval (the check's own, else the result's: ``ci`` for threshold
    rules, ``excess_ci`` for baseline rules), the interval end the rule decided on and the
    p-value (the check's, else the metric's). The GateCheck fields ``on``, ``interval`` and
    ``p_value`` are read when present."""
    res = outcome.results.get(c.metric)
    kind = kind_of_check(c.rule)
    on = getattr(c, "on", None)
    interval = getattr(c, "interval", None)
    if interval is None and res is not None and kind is not None:
        interval = rules.result_interval(kind.name, res)
    p = getattr(c, "p_value", None)
    if p is None and res is not None and c.rule != "error":
        p = res.p_value
    signed = kind is not None and kind.signed
    return {
        "metric": c.metric + (" (optional)" if c.optional else ""),
        "rule": c.rule + (f" ({on})" if on in ("lower", "upper") else ""),
        "value": with_interval(c.value, res.ci if res is not None else None),
        "compared": with_interval(c.compared, interval, signed),
        "limits": limits,
        "p": fmt_p(p),
        "verdict": verdict.upper() if verdict != "pass" else "pass",
        "note": c.message if verdict != "pass" or c.skipped or c.rule == "error" else "",
    }


def decision_rows(outcome: CheckedRun) -> list[tuple[GateCheck, str, dict[str, str]]]:
    """The decision table (warn and block limits of one rule on one row): (the deciding check,
    its verdict, its row as text)."""
    return [
        (c, verdict, check_row(outcome, c, limits, verdict)) for c, limits, verdict in merged_checks(outcome.checks)
    ]
