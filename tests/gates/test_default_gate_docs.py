"""docs/gates.md's table of the default gate says what privgate/configs/default_gate.yaml does:
per metric, the limits that apply without a holdout, those that apply with one (a threshold's,
and the holdout baseline's excess), and the trend rule's warn limit. A limit changed in the YAML
and not in the table (or the other way) fails here."""

from __future__ import annotations

import re
from pathlib import Path

from privgate.gates import default_gate_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "gates.md"
LIMIT = re.compile(r"\b(warn|block)\s*>\s*([0-9.]+)")


def documented_rows() -> dict[str, list[str]]:
    """Metric name → its row's cells (without holdout, with holdout, trend) in the table whose
    header starts ``| metric | without holdout |``."""
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| metric | without holdout | with holdout | trend (warn) |") :]
    rows: dict[str, list[str]] = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            rows[name] = cells[1:4]
    for name, cells in rows.items():  # "as memorisation": that row's limits
        rows[name] = [
            rows[m.group(1)][i] if (m := re.fullmatch(r"as ([a-z_]+)", c)) else c for i, c in enumerate(cells)
        ]
    return rows


def limits(cell: str) -> set[tuple[str, str, float]]:
    """(kind, severity, limit) said by a cell: ``excess: warn > a`` parts are baseline rules, a
    ``+x`` cell is a trend rule's warn limit, other ``warn > x`` parts threshold rules."""
    if re.fullmatch(r"\+[0-9.]+", cell):
        return {("trend", "warn", float(cell[1:]))}
    out = set()
    for part in cell.split(";"):
        kind = "baseline" if part.strip().startswith("excess:") else "threshold"
        out |= {(kind, sev, float(v)) for sev, v in LIMIT.findall(part)}
    return out


def test_the_default_gate_table_says_what_the_yaml_does():
    rows = documented_rows()
    config = default_gate_config()
    assert set(rows) == set(config.metrics), "a metric of the default gate without a row, or a row without a metric"
    for name, gate in config.metrics.items():
        without, with_holdout, trend = (limits(c) for c in rows[name])
        rules = [(r.kind, r.when, r.severity, r.limit) for r in gate.rules]
        assert without == {(k, s, v) for k, w, s, v in rules if k == "threshold" and w != "with_holdout"}, name
        assert with_holdout == {
            (k, s, v) for k, w, s, v in rules if k in ("threshold", "baseline") and w != "no_holdout"
        }, name
        assert trend == {(k, s, v) for k, _, s, v in rules if k == "trend"}, name


def test_a_cell_is_read_as_its_rules():
    assert limits("block > 0.5; excess: warn > 0.03, block > 0.10") == {
        ("threshold", "block", 0.5),
        ("baseline", "warn", 0.03),
        ("baseline", "block", 0.10),
    }
    assert limits("+0.002") == {("trend", "warn", 0.002)} and limits("— (not computed)") == set()
