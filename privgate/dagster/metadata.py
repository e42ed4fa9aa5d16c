"""What the checks say about a gate run, in words and numbers -- scores and aggregates only,
never a value of a real record: the content digest of a release and the markdown decision table
of the ``gate_decision`` check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from .gate_checks import finite

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateOutcome


def frame_digest(frame: pl.DataFrame) -> str:
    """The content hash privgate's gate records in the history fingerprint
    (:func:`privgate.gates.frame_fingerprint`): identifies the exact release content that was
    evaluated without storing any of it."""
    from privgate.gates import frame_fingerprint

    return str(frame_fingerprint(frame)["content_sha256"])


def summary_markdown(outcome: "GateOutcome") -> str:
    """A markdown decision table: one row per gate check (scores, intervals and limits only)."""
    lines = [
        f"**Decision: {str(outcome.decision).upper()}** — dataset `{outcome.dataset}`, "
        f"release `{outcome.release_id}`, privgate run `{outcome.run_id}`",
        "",
        "| metric | rule | value | compared | 95 % interval | p | limit | severity | verdict | note |",
        "|---|---|---:|---:|---|---:|---:|---|---|---|",
    ]
    for c in outcome.checks:
        interval = getattr(c, "interval", None)
        lines.append("| " + " | ".join([
            c.metric, c.rule, _num(c.value), _num(c.compared, signed=c.rule in ("baseline", "trend")),
            _interval(interval), _num(getattr(c, "p_value", None), plain=True),
            _num(c.threshold, plain=True), c.severity,
            ("skipped" if c.skipped else f"**{c.verdict.upper()}**" if c.verdict != "pass" else "pass"),
            str(c.message).replace("|", "\\|").replace("\n", " "),
        ]) + " |")
    return "\n".join(lines)


def _interval(ci: Any) -> str:
    try:
        lo, hi = ci
    except (TypeError, ValueError):
        return "–"
    if finite(lo) is None or finite(hi) is None:
        return "–"
    return f"[{float(lo):.4f}, {float(hi):.4f}]"


def _num(x: Any, signed: bool = False, plain: bool = False) -> str:
    f = finite(x)
    if f is None:
        return "–"
    if plain:
        return f"{f:.3g}"
    return f"{f:+.4f}" if signed else f"{f:.4f}"
