"""The metadata of a generator audit's materialisation (:mod:`privgate.dagster.audit`): its
numbers and the audit rules' decision. :class:`~privgate.dagster.translator.PrivgateTranslator`
attaches them (``get_audit_metadata``, ``get_audit_decision_metadata``); rounded scores, counts,
seconds and ids only, never a value of a record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

if TYPE_CHECKING:  # pragma: no cover
    from privgate.audit import AuditResult

#: digits kept of the numbers recorded as metadata
DIGITS = 4


def _round(x: Any) -> Any:
    """``x`` to :data:`DIGITS` decimals (None stays None)."""
    return None if x is None else round(float(x), DIGITS)


def verdict_of(result: "AuditResult") -> str:
    """The audit's verdict in words."""
    if result.checked_nothing:
        return "checked nothing"
    if result.violation is None:
        return "no claim"
    return "violation" if result.violation else "no violation found"


def audit_metadata(result: "AuditResult") -> dict[str, Any]:
    """The numbers a person plots across versions — rounded scores, counts and seconds; ids of
    targets and attacks, never a value of a record."""
    cost = result.cost
    own = (
        (cost.get("seconds_features_total") or 0.0)
        + (cost.get("seconds_analysis") or 0.0)
        + (cost.get("seconds_prepare") or 0.0)
    )
    md: dict[str, Any] = {
        "verdict": dg.MetadataValue.text(verdict_of(result)),
        "epsilon_lower": dg.MetadataValue.float(_round(result.epsilon_lower)),
        "auc_lower": dg.MetadataValue.float(_round(result.auc_lower)),
        "mu_lower": dg.MetadataValue.float(_round(result.mu_lower)),
        "delta": dg.MetadataValue.float(float(result.delta)),
        "confidence": dg.MetadataValue.float(float(result.confidence)),
        "checked_nothing": dg.MetadataValue.bool(result.checked_nothing),
        "n_audited": dg.MetadataValue.int(int(result.n_audited)),
        "targets": dg.MetadataValue.int(len(result.targets)),
        "runs": dg.MetadataValue.int(int(cost.get("runs", 0))),
        "runs_failed": dg.MetadataValue.int(int(cost.get("runs_failed", 0))),
        "preflight_runs": dg.MetadataValue.int(int(cost.get("preflight_runs", 0))),
        "seconds_generator": dg.MetadataValue.float(_round(cost.get("seconds_generate_total", 0.0))),
        "seconds_audit": dg.MetadataValue.float(_round(own)),
        "generator_version": dg.MetadataValue.text(str(result.generator.get("version"))),
        "generator": dg.MetadataValue.text(str(result.generator.get("name"))),
    }
    if result.claimed_epsilon is not None:
        md["claimed_epsilon"] = dg.MetadataValue.float(float(result.claimed_epsilon))
    if result.violation is not None:
        md["violation"] = dg.MetadataValue.bool(bool(result.violation))
    if result.max_auc is not None:
        md["max_auc"] = dg.MetadataValue.float(_round(result.max_auc))
    if result.best:
        md["strongest_target"] = dg.MetadataValue.text(f"{result.best['target']} ({result.best['kind']})")
        md["strongest_attack"] = dg.MetadataValue.text(str(result.best["attack"]))
    if cost.get("wall_seconds") is not None:
        md["wall_seconds"] = dg.MetadataValue.float(_round(cost["wall_seconds"]))
    return md


def decision_metadata(outcome: Any) -> dict[str, Any]:
    """The audit rules' decision (:func:`privgate.gates.audit_rules.decide_audit`): what a
    release check reads (``accepted``: pass or warn)."""
    return {
        "decision": dg.MetadataValue.text(outcome.decision),
        "decision_code": dg.MetadataValue.int(int(outcome.exit_code)),
        "accepted": dg.MetadataValue.bool(bool(outcome.accepted)),
        "privgate_run_id": dg.MetadataValue.text(outcome.run_id),
        "recorded": dg.MetadataValue.bool(bool(outcome.recorded)),
        "rules": dg.MetadataValue.md("```\n" + outcome.table() + "\n```"),
    }


__all__ = ["DIGITS", "audit_metadata", "decision_metadata", "verdict_of"]
