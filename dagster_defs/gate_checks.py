"""Gate rules as Dagster asset checks.

Every rule of the gate configuration -- one metric, one rule kind (``threshold``, ``baseline``,
``trend``), one severity -- becomes one asset check on the evaluation asset, named
``<metric>__<kind>_<severity>`` (e.g. ``common_rows__threshold_block``):

- a ``block`` rule is a **blocking** check whose failure has severity ERROR, so Dagster does not
  materialise anything downstream of the evaluation (``published_release``) in that run;
- a ``warn`` rule is a non-blocking check whose failure has severity WARN.

One more blocking ERROR check, ``gate_decision``, carries the gate's overall decision. It catches
what no single rule names: an input that cannot be loaded, a non-optional metric that failed with
only ``warn`` rules, a history store that cannot be written. The gate fails closed, and so does
this mapping: a rule whose metric failed, or that could not be evaluated because the run failed
as a whole, is a failed check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

from privgate.gates.config import check_name as gate_check_name

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateCheck, GateConfig, GateOutcome

DECISION_CHECK = "gate_decision"
EVALUATION_ASSET = "privacy_evaluation"
DECISION_CODES = {"pass": 0, "warn": 1, "block": 2}


@dataclass(frozen=True)
class RuleCheck:
    """One configured rule and the asset check it is reported as."""

    metric: str
    kind: str
    severity: str
    limit: float
    when: str = "always"

    @property
    def name(self) -> str:
        return check_name(self.metric, self.kind, self.severity)

    @property
    def blocking(self) -> bool:
        return self.severity == "block"

    @property
    def dagster_severity(self) -> dg.AssetCheckSeverity:
        return dg.AssetCheckSeverity.ERROR if self.blocking else dg.AssetCheckSeverity.WARN

    def description(self) -> str:
        quantity = {"threshold": "risk value",
                    "baseline": "excess over the holdout baseline",
                    "trend": "increase over the last accepted release"}.get(self.kind, self.kind)
        cond = "" if self.when == "always" else f" (only {self.when.replace('_', ' ')})"
        effect = "blocks publication" if self.blocking else "warns"
        return (f"privgate {self.kind} rule on {self.metric}: {quantity} must be ≤ {self.limit:g}; "
                f"otherwise the release {effect}{cond}.")


def check_name(metric: str, kind: str, severity: str) -> str:
    """The stable asset-check name of one rule (the name GX suites built from the same gate
    configuration use too)."""
    return gate_check_name(metric, kind, severity)


def rule_checks(cfg: "GateConfig") -> list[RuleCheck]:
    """Every rule of ``cfg`` as a :class:`RuleCheck`, in configuration order."""
    out: list[RuleCheck] = []
    for mg in cfg.metrics.values():
        for rule in mg.rules:
            out.append(RuleCheck(mg.name, rule.kind, rule.severity, float(rule.limit), rule.when))
    return out


def check_specs(cfg: "GateConfig", asset: str = EVALUATION_ASSET) -> list[dg.AssetCheckSpec]:
    """The asset-check specs of the evaluation asset for configuration ``cfg``."""
    specs = [dg.AssetCheckSpec(
        DECISION_CHECK, asset=asset, blocking=True,
        description=("privgate gate decision: fails (ERROR, blocking) when the release is blocked "
                     "for any reason, including metrics or inputs that could not be evaluated."),
    )]
    seen = {DECISION_CHECK}
    for rc in rule_checks(cfg):
        if rc.name in seen:  # cannot happen for a valid config; guard against name clashes
            raise ValueError(f"two gate rules map to the asset check name {rc.name!r}")
        seen.add(rc.name)
        specs.append(dg.AssetCheckSpec(rc.name, asset=asset, blocking=rc.blocking,
                                       description=rc.description()))
    return specs


def check_results(
    cfg: "GateConfig", outcome: "GateOutcome", asset: str = EVALUATION_ASSET
) -> list[dg.AssetCheckResult]:
    """One :class:`dagster.AssetCheckResult` per spec of :func:`check_specs`, from ``outcome``."""
    results = [_decision_result(outcome, asset)]
    checks = list(outcome.checks)
    global_errors = [c for c in checks if c.rule == "error" and c.metric.startswith("(")
                     and c.verdict == "block"]
    for rc in rule_checks(cfg):
        results.append(_rule_result(rc, checks, global_errors, outcome, asset))
    return results


# ---------------------------------------------------------------------------------------------


def _decision_result(outcome: "GateOutcome", asset: str) -> dg.AssetCheckResult:
    decision = str(outcome.decision)
    fired = [c for c in outcome.checks if c.verdict != "pass"]
    errors = [c for c in outcome.checks if c.rule == "error" and c.verdict == "block"]
    md = {
        "decision": dg.MetadataValue.text(decision),
        "decision_code": dg.MetadataValue.int(DECISION_CODES.get(decision, 2)),
        "exit_code": dg.MetadataValue.int(int(outcome.exit_code)),
        "rules_fired": dg.MetadataValue.int(len(fired)),
        "errors": dg.MetadataValue.int(len(errors)),
        "privgate_run_id": dg.MetadataValue.text(str(outcome.run_id)),
    }
    if errors:
        md["error_messages"] = dg.MetadataValue.md(
            "\n".join(f"- `{c.metric}`: {_md_escape(c.message)}" for c in errors))
    return dg.AssetCheckResult(
        check_name=DECISION_CHECK, asset_key=asset, passed=decision != "block",
        severity=dg.AssetCheckSeverity.ERROR, metadata=md,
        description=f"gate decision: {decision}",
    )


def _rule_result(rc: RuleCheck, checks: list["GateCheck"], global_errors: list["GateCheck"],
                 outcome: "GateOutcome", asset: str) -> dg.AssetCheckResult:
    match = next((c for c in checks if c.metric == rc.metric and c.rule == rc.kind
                  and c.severity == rc.severity), None)
    metric_errors = [c for c in checks if c.metric == rc.metric and c.rule == "error"]
    md: dict[str, Any] = {
        "metric": dg.MetadataValue.text(rc.metric),
        "rule": dg.MetadataValue.text(rc.kind),
        "severity": dg.MetadataValue.text(rc.severity),
        "threshold": dg.MetadataValue.float(rc.limit),
    }
    result = outcome.results.get(rc.metric) if hasattr(outcome, "results") else None
    _put_float(md, rc.metric, getattr(result, "value", None))
    _put_float(md, "value", getattr(result, "value", None))
    _put_float(md, "raw", getattr(result, "raw", None))
    if match is not None:
        passed = match.verdict == "pass"
        status = "skipped" if match.skipped else ("fired" if not passed else "passed")
        _put_float(md, "compared", match.compared)
        _put_float(md, "baseline", match.baseline)
        _put_float(md, "previous", match.previous)
        message = match.message
    elif metric_errors:
        err = metric_errors[0]
        passed = err.verdict == "pass"  # an optional metric's failure is ignored by the gate
        status = "metric_failed_optional" if passed else "metric_failed"
        message = err.message
    elif global_errors:
        passed = False
        status = "not_evaluated"
        message = "not evaluated: " + "; ".join(f"{c.metric} {c.message}" for c in global_errors)
    else:
        passed = True
        status = "not_applicable"
        message = (f"rule not applied in this run (when: {rc.when}; has holdout: "
                   f"{bool(getattr(outcome, 'has_holdout', False))})")
    md["verdict"] = dg.MetadataValue.text("pass" if passed else rc.severity)
    md["status"] = dg.MetadataValue.text(status)
    md["message"] = dg.MetadataValue.text(message)
    return dg.AssetCheckResult(
        check_name=rc.name, asset_key=asset, passed=passed, severity=rc.dagster_severity,
        metadata=md, description=message,
    )


def _put_float(md: dict[str, Any], key: str, x: Any) -> None:
    f = finite(x)
    if f is not None:
        md[key] = dg.MetadataValue.float(f)


def finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None (metadata floats must be finite)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
