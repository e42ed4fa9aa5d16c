"""Presenting a gate run as text: the decision table (:mod:`privgate.gates.decision_table`)
fitted to the terminal, the notes under it and the decision line — what ``privgate gate``
prints; the HTML report and the Dagster checks reuse its notes."""

from __future__ import annotations

from typing import Any, Mapping

from ..text_tables import TABLE_WIDTH, format_table, table_blocks, wrap_line
from .checks import CheckedRun
from .decision_table import columns, decision_rows
from .rule_kinds import kind_of_check

DECISION_LABEL = {0: "PASS", 1: "WARN", 2: "BLOCK", 3: "BLOCK (error: the gate could not decide; fails closed)"}


def unchecked_note(outcome: CheckedRun) -> str:
    """A sentence for a release that passed with nothing checked (``allow_unchecked``), else ""."""
    if any(c.rule == "unchecked" for c in outcome.checks):
        return (
            " Nothing was checked: no rule of the gate could be evaluated on this run, and the "
            "release passes UNCHECKED only because the configuration says allow_unchecked: true."
        )
    return ""


def sampling_summary(results: Mapping[str, Any]) -> str | None:
    """One line naming the metrics estimated on sampled query records (``details["sampled"]``)
    and how many of how many records per side, or None when every record was used."""
    parts = []
    for name, res in (results or {}).items():
        sampled = (getattr(res, "details", None) or {}).get("sampled")
        if not sampled:
            continue
        sides = [sampled] + [v for v in sampled.values() if isinstance(v, dict)]
        text = ", ".join(f"{d.get('side', 'real')} {d['n']:,} of {d['of']:,}" for d in sides)
        parts.append(f"{name} ({text})")
    if not parts:
        return None
    return "sampled query records (seeded; intervals include the sampling error): " + "; ".join(parts)


def column_handling_rows(outcome: Any) -> list[tuple[str, str]]:
    """(label, text) lines saying what the inputs' schema decided about columns before any
    metric ran (the evaluation's ``params["columns"]``): identifier columns left out of every
    metric but identifier_reuse, and categorical columns compared as equal or not (more levels
    than the one-hot limit) with their level counts — column names and counts only."""
    report = getattr(outcome, "report", None)
    found = ((getattr(report, "params", None) or {}).get("columns")) or {}
    rows = []
    if found.get("identifiers_left_out"):
        names = ", ".join(found["identifiers_left_out"])
        rows.append(("identifier columns", f"{names} — left out of every metric but identifier_reuse"))
    if found.get("coded"):
        coded = ", ".join(f"{c} ({n:,} levels)" for c, n in found["coded"].items())
        rows.append(("compared as equal or not", f"{coded} — a mismatch adds its one-hot distance"))
    return rows


def format_checks(outcome: CheckedRun, compact: bool = False) -> str:
    """A fixed-width decision table (warn and block limits of one rule on one row; values with
    their 95 % intervals; p-values) followed by the decision line.

    ``compact``: no line longer than 100 characters — per row the metric, the rule, the quantity
    compared with the limits (with its interval), the limits and the verdict (the p-value only
    when a test rule is present), and each row's note (why it warned, blocked or was skipped) on
    an indented line below it."""
    width = TABLE_WIDTH if compact else None
    lines = _compact_table(outcome) if compact else _wide_table(outcome)
    lines.append("")
    note = sampling_summary(outcome.results)
    if note:
        lines.append(wrap_line(note, width, indent="  "))
    if unchecked_note(outcome):
        lines.append(wrap_line(unchecked_note(outcome).strip(), width, indent="  "))
    label = DECISION_LABEL.get(outcome.exit_code, str(outcome.decision).upper())
    lines.append(
        wrap_line(
            f"decision: {label}  (dataset {outcome.dataset!r}, release {outcome.release_id!r}, "
            f"run {outcome.run_id}, exit code {outcome.exit_code})",
            width,
            indent="  ",
        )
    )
    return "\n".join(lines)


def _wide_table(outcome: CheckedRun) -> list[str]:
    cols = columns()
    rows = [tuple(r[c.key] for c in cols) for _, _, r in decision_rows(outcome)]
    return [line.rstrip() for line in format_table([c.header() for c in cols], rows).splitlines()]


def _compact_table(outcome: CheckedRun) -> list[str]:
    cols = columns(compact=True, with_p=any(_compares_p_value(c.rule) for c in outcome.checks))
    text_rows = [r for _, _, r in decision_rows(outcome)]
    lines, blocks = table_blocks(
        [c.header() for c in cols],
        [[r[c.key] for c in cols] for r in text_rows],
        width=TABLE_WIDTH,
        wrap=tuple(c.header() for c in cols if c.wrap),
    )
    for r, block in zip(text_rows, blocks):
        lines += block
        if r["note"]:
            lines.append(wrap_line(f"    {r['note']}", TABLE_WIDTH, indent="    "))
    return lines


def _compares_p_value(label: str) -> bool:
    """Whether a check's rule compares a p-value (the compact table then shows the p column)."""
    kind = kind_of_check(label)
    return kind is not None and kind.quantity == "p_value"
