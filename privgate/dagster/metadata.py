"""What the checks say about a gate run, in words and numbers -- scores and aggregates only,
never a value of a real record: the content digest of a release and the markdown decision table
of the ``gate_decision`` check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateOutcome


def frame_digest(frame: pl.DataFrame) -> str:
    """The content hash privgate's gate records in the history fingerprint
    (:func:`privgate.gates.frame_fingerprint`): identifies the exact release content that was
    evaluated without storing any of it."""
    from privgate.gates import frame_fingerprint

    return str(frame_fingerprint(frame)["content_sha256"])


def summary_markdown(outcome: "GateOutcome") -> str:
    """A markdown decision table: the gate's own decision table (the columns and cells of
    :mod:`privgate.gates.decision_table`, as the CLI and the HTML report show it: one row per
    rule, warn and block limits together, values with their 95 % intervals) — scores and limits
    only."""
    from privgate.gates.decision_table import columns, decision_rows

    cols = columns()
    lines = [
        f"**Decision: {str(outcome.decision).upper()}** — dataset `{outcome.dataset}`, "
        f"release `{outcome.release_id}`, privgate run `{outcome.run_id}`",
        "",
        "| " + " | ".join(c.header(spaced=True) for c in cols) + " |",
        "|" + "|".join("---:" if c.numeric else "---" for c in cols) + "|",
    ]
    for _, verdict, row in decision_rows(outcome):
        cells = {c.key: str(row[c.key]).replace("|", "\\|").replace("\n", " ") for c in cols}
        if verdict != "pass" and cells["verdict"].lower() == verdict:
            cells["verdict"] = f"**{cells['verdict']}**"
        lines.append("| " + " | ".join(cells[c.key] for c in cols) + " |")
    return "\n".join(lines)
