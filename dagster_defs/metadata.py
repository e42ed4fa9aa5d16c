"""Dagster metadata of a gate run: scores and aggregates only, never a value of a real record.

Stable keys (the Dagster UI plots a numeric key across partitions/runs, so the keys never change
between releases):

- ``<metric>``: the metric's risk value in [0, 1] (1 = no privacy); ``<metric>.raw``: its value in
  the original definition; ``<metric>.baseline`` / ``<metric>.excess`` with a holdout;
- ``<metric>.<kind>.<severity>``: the limit of each rule (e.g. ``common_rows.threshold.block``);
- ``verdict`` / ``decision_code`` (0 pass, 1 warn, 2 block), ``exit_code``, ``rules_fired``;
- ``n_real``, ``n_synthetic``, ``n_holdout``, ``seconds``;
- ``summary`` (markdown table), ``html_report`` / ``json_report`` (paths), ``privgate_run_id``,
  ``config_hash``, ``release_fingerprint``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import polars as pl

from .gate_checks import DECISION_CODES, finite, rule_checks

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig, GateOutcome

#: columns of the evaluation asset's stored value (one row per gate check)
EVALUATION_SCHEMA: dict[str, pl.DataType] = {
    "metric": pl.String, "rule": pl.String, "severity": pl.String, "verdict": pl.String,
    "value": pl.Float64, "raw": pl.Float64, "compared": pl.Float64, "threshold": pl.Float64,
    "baseline": pl.Float64, "previous": pl.Float64, "skipped": pl.Boolean, "optional": pl.Boolean,
    "seconds": pl.Float64, "message": pl.String,
    "decision": pl.String, "dataset": pl.String, "release_id": pl.String,
    "privgate_run_id": pl.String, "config_hash": pl.String, "release_fingerprint": pl.String,
}


def frame_digest(frame: pl.DataFrame) -> str:
    """The content hash privgate's gate records in the history fingerprint
    (:func:`privgate.gates.frame_fingerprint`): identifies the exact release content that was
    evaluated without storing any of it."""
    from privgate.gates import frame_fingerprint

    return str(frame_fingerprint(frame)["content_sha256"])


def outcome_frame(outcome: "GateOutcome", release_fingerprint: str) -> pl.DataFrame:
    """The evaluation asset's value: one row per gate check, plus the run's identifiers."""
    rows = []
    for c in outcome.checks:
        rows.append({
            "metric": c.metric, "rule": c.rule, "severity": c.severity, "verdict": c.verdict,
            "value": finite(c.value), "raw": finite(c.raw), "compared": finite(c.compared),
            "threshold": finite(c.threshold), "baseline": finite(c.baseline),
            "previous": finite(c.previous), "skipped": bool(c.skipped), "optional": bool(c.optional),
            "seconds": finite(c.seconds), "message": str(c.message),
            "decision": str(outcome.decision), "dataset": outcome.dataset,
            "release_id": outcome.release_id, "privgate_run_id": outcome.run_id,
            "config_hash": outcome.config_hash, "release_fingerprint": release_fingerprint,
        })
    if not rows:  # a gate always produces checks; keep the identifiers even if not
        rows.append({k: None for k in EVALUATION_SCHEMA} | {
            "decision": str(outcome.decision), "dataset": outcome.dataset,
            "release_id": outcome.release_id, "privgate_run_id": outcome.run_id,
            "config_hash": outcome.config_hash, "release_fingerprint": release_fingerprint})
    return pl.DataFrame(rows, schema=EVALUATION_SCHEMA)


def evaluation_metadata(cfg: "GateConfig", outcome: "GateOutcome", *,
                        html_report: Path | None, json_report: Path | None,
                        release_fingerprint: str) -> dict[str, Any]:
    """Metadata of the evaluation asset's materialisation (see the module docstring)."""
    decision = str(outcome.decision)
    md: dict[str, Any] = {
        "verdict": dg.MetadataValue.text(decision),
        "decision_code": dg.MetadataValue.int(DECISION_CODES.get(decision, 2)),
        "exit_code": dg.MetadataValue.int(int(outcome.exit_code)),
        "rules_fired": dg.MetadataValue.int(sum(c.verdict != "pass" for c in outcome.checks)),
        "dataset": dg.MetadataValue.text(outcome.dataset),
        "privgate_run_id": dg.MetadataValue.text(str(outcome.run_id)),
        "release_fingerprint": dg.MetadataValue.text(release_fingerprint),
        "seconds": dg.MetadataValue.float(float(outcome.seconds or 0.0)),
        "has_holdout": dg.MetadataValue.bool(bool(outcome.has_holdout)),
    }
    if outcome.config_hash:
        md["config_hash"] = dg.MetadataValue.text(outcome.config_hash)
    if outcome.previous_release_id:
        md["previous_accepted_release"] = dg.MetadataValue.text(str(outcome.previous_release_id))
    report = outcome.report
    for attr in ("n_real", "n_synthetic", "n_holdout"):
        n = getattr(report, attr, None) if report is not None else None
        if isinstance(n, int) and not isinstance(n, bool):
            md[attr] = dg.MetadataValue.int(n)
    for name, res in outcome.results.items():
        for key, x in ((name, res.value), (f"{name}.raw", res.raw),
                       (f"{name}.baseline", getattr(res, "baseline", None)),
                       (f"{name}.excess", getattr(res, "excess", None)),
                       (f"{name}.seconds", getattr(res, "seconds", None))):
            f = finite(getattr(x, "value", x))  # baseline may be a MetricResult or a float
            if f is not None:
                md[key] = dg.MetadataValue.float(f)
    for rc in rule_checks(cfg):
        md[f"{rc.metric}.{rc.kind}.{rc.severity}"] = dg.MetadataValue.float(rc.limit)
    md["summary"] = dg.MetadataValue.md(summary_markdown(outcome))
    if html_report is not None:
        md["html_report"] = dg.MetadataValue.path(str(html_report))
    if json_report is not None:
        md["json_report"] = dg.MetadataValue.path(str(json_report))
    return md


def summary_markdown(outcome: "GateOutcome") -> str:
    """A markdown decision table: one row per gate check (scores and limits only)."""
    lines = [
        f"**Decision: {str(outcome.decision).upper()}** — dataset `{outcome.dataset}`, "
        f"release `{outcome.release_id}`, privgate run `{outcome.run_id}`",
        "",
        "| metric | rule | value | compared | limit | severity | verdict | note |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for c in outcome.checks:
        lines.append("| " + " | ".join([
            c.metric, c.rule, _num(c.value), _num(c.compared, signed=c.rule in ("baseline", "trend")),
            _num(c.threshold, plain=True), c.severity,
            f"**{c.verdict.upper()}**" if c.verdict != "pass" else "pass",
            str(c.message).replace("|", "\\|").replace("\n", " "),
        ]) + " |")
    return "\n".join(lines)


def _num(x: Any, signed: bool = False, plain: bool = False) -> str:
    f = finite(x)
    if f is None:
        return "–"
    if plain:
        return f"{f:g}"
    return f"{f:+.4f}" if signed else f"{f:.4f}"
