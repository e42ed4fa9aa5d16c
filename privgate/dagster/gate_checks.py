"""Gate rules as Dagster asset checks.

Every rule of the gate configuration -- one metric, one rule kind (``threshold``, ``baseline``,
``trend``, ``test``), one severity -- becomes one asset check on the release asset, named
``<metric>__<kind>_<severity>`` (e.g. ``common_rows__threshold_block``). Its description says
what the rule compares (the estimate, or with ``on: lower`` / ``upper`` that end of its 95 %
interval; for a test rule the p-value, which must not fall below the limit), and the spec's and
every result's metadata carry the rule (``rule_kind``, ``decided_on``, ``limit``):

- a ``block`` rule is a **blocking** check whose failure has severity ERROR, so Dagster does not
  materialise anything downstream of the release (e.g. ``published_release``) in that run;
- a ``warn`` rule is a non-blocking check whose failure has severity WARN.

One more blocking ERROR check, ``gate_decision``, carries the gate's overall decision. It catches
what no single rule names: an input that cannot be loaded, a non-optional metric that failed with
only ``warn`` rules, a history store that cannot be written. The gate fails closed, and so does
this mapping: a rule whose metric failed, or that could not be evaluated because the run failed
as a whole, is a failed check. A rule that does not apply to a release yields no result (Dagster
shows it as skipped / not evaluated, not as a success).
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
EVALUATION_ASSET = "synthetic_release"  # the bundled release asset (default target of the specs)
DECISION_CODES = {"pass": 0, "warn": 1, "block": 2}


@dataclass(frozen=True)
class RuleCheck:
    """One configured rule and the asset check it is reported as."""

    metric: str
    kind: str
    severity: str
    limit: float
    when: str = "always"
    on: str = ""  # "estimate" | "lower" | "upper"; "p_value" for test rules ("" = the kind's default)

    def __post_init__(self) -> None:
        if not self.on:
            object.__setattr__(self, "on", "p_value" if self.kind == "test" else "estimate")

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
        cond = "" if self.when == "always" else f" (only {self.when.replace('_', ' ')})"
        effect = "blocks publication" if self.blocking else "warns"
        if self.kind == "test":
            requirement = (f"its test's p-value must be ≥ {self.limit:g} (a smaller p-value is "
                           "evidence of the leak)")
        else:
            quantity = {"threshold": "risk value",
                        "baseline": "excess over the holdout baseline",
                        "trend": "increase over the last accepted release"}.get(self.kind, self.kind)
            if self.on in ("lower", "upper"):
                quantity = f"the {self.on} end of the 95 % interval of the {quantity}"
            requirement = f"{quantity} must be ≤ {self.limit:g}"
        missing = {"lower": "that interval", "upper": "that interval", "p_value": "a p-value"}
        closed = (f"; a result without {missing[self.on]} fails the check (fails closed)"
                  if self.on in missing else "")
        return (f"privgate {self.kind} rule on {self.metric}: {requirement}; otherwise the "
                f"release {effect}{cond}{closed}.")

    def metadata(self) -> dict[str, Any]:
        """The rule itself, as spec and result metadata (filterable in the Dagster UI)."""
        return {"rule_kind": dg.MetadataValue.text(self.kind),
                "decided_on": dg.MetadataValue.text(self.on),
                "rule_severity": dg.MetadataValue.text(self.severity),
                "rule_when": dg.MetadataValue.text(self.when),
                "limit": dg.MetadataValue.float(float(self.limit))}


def check_name(metric: str, kind: str, severity: str) -> str:
    """The stable asset-check name of one rule (the name GX suites built from the same gate
    configuration use too)."""
    return gate_check_name(metric, kind, severity)


def rule_checks(cfg: "GateConfig") -> list[RuleCheck]:
    """Every rule of ``cfg`` as a :class:`RuleCheck`, in configuration order."""
    out: list[RuleCheck] = []
    for mg in cfg.metrics.values():
        for rule in mg.rules:
            out.append(RuleCheck(mg.name, rule.kind, rule.severity, float(rule.limit), rule.when,
                                 rule.on))
    return out


def check_specs(cfg: "GateConfig", asset: Any = EVALUATION_ASSET, *,
                partitions_def: "dg.PartitionsDefinition | None" = None) -> list[dg.AssetCheckSpec]:
    """The asset-check specs of one release asset for configuration ``cfg``: ``gate_decision``
    and one per rule; tied to ``partitions_def`` (a check result per release partition)."""
    import warnings

    def spec(name: str, blocking: bool, description: str,
             metadata: dict[str, Any] | None = None) -> dg.AssetCheckSpec:
        with warnings.catch_warnings():
            # partitioned check specs are a Dagster "preview" API (1.13): results carry the partition
            warnings.filterwarnings("ignore", message=".*partitions_def.*AssetCheckSpec.*")
            warnings.filterwarnings("ignore", category=Warning, module="dagster.*")
            return dg.AssetCheckSpec(name, asset=asset, blocking=blocking, description=description,
                                     metadata=metadata, partitions_def=partitions_def)

    specs = [spec(DECISION_CHECK, True,
                  "privgate gate decision: fails (ERROR, blocking) when the release is blocked "
                  "for any reason, including metrics or inputs that could not be evaluated.")]
    seen = {DECISION_CHECK}
    for rc in rule_checks(cfg):
        if rc.name in seen:  # cannot happen for a valid config; guard against name clashes
            raise ValueError(f"two gate rules map to the asset check name {rc.name!r}")
        seen.add(rc.name)
        specs.append(spec(rc.name, rc.blocking, rc.description(), rc.metadata()))
    return specs


def check_results(
    cfg: "GateConfig", outcome: "GateOutcome", asset: Any = EVALUATION_ASSET, *,
    decision_metadata: dict[str, Any] | None = None,
) -> list[dg.AssetCheckResult]:
    """The check results of ``outcome``: ``gate_decision`` and every rule the run evaluated.

    A rule the run did not apply (``when: with_holdout`` without a holdout, a trend rule with no
    earlier accepted release) yields **no** result, so Dagster shows the check as skipped /
    not evaluated for this release instead of a green success.
    """
    results = [_decision_result(outcome, asset, decision_metadata or {})]
    checks = list(outcome.checks)
    global_errors = [c for c in checks if c.rule == "error" and c.metric.startswith("(")
                     and c.verdict == "block"]
    for rc in rule_checks(cfg):
        r = _rule_result(rc, checks, global_errors, outcome, asset)
        if r is not None:
            results.append(r)
    return results


# ---------------------------------------------------------------------------------------------


def _decision_result(outcome: "GateOutcome", asset: Any,
                     extra: dict[str, Any]) -> dg.AssetCheckResult:
    from .metadata import summary_markdown

    decision = str(outcome.decision)
    fired = [c for c in outcome.checks if c.verdict != "pass"]
    errors = [c for c in outcome.checks if c.rule == "error" and c.verdict == "block"]
    md: dict[str, Any] = {
        "release": dg.MetadataValue.text(str(outcome.release_id)),
        "decision": dg.MetadataValue.text(decision),
        "decision_code": dg.MetadataValue.int(DECISION_CODES.get(decision, 2)),
        "rules_fired": dg.MetadataValue.int(len(fired)),
        "privgate_run_id": dg.MetadataValue.text(str(outcome.run_id)),
    }
    if outcome.previous_release_id:
        md["compared_with_release"] = dg.MetadataValue.text(str(outcome.previous_release_id))
    if errors:
        md["error_messages"] = dg.MetadataValue.md(
            "\n".join(f"- `{c.metric}`: {_md_escape(c.message)}" for c in errors))
    md["summary"] = dg.MetadataValue.md(summary_markdown(outcome))
    md.update(extra)
    n_fired = len(fired)
    return dg.AssetCheckResult(
        check_name=DECISION_CHECK, asset_key=asset, passed=decision != "block",
        severity=dg.AssetCheckSeverity.ERROR, metadata=md,
        description=(f"release {outcome.release_id}: gate decision {decision.upper()} "
                     f"({n_fired} rule{'s' if n_fired != 1 else ''} fired)"),
    )


def _rule_result(rc: RuleCheck, checks: list["GateCheck"], global_errors: list["GateCheck"],
                 outcome: "GateOutcome", asset: Any) -> dg.AssetCheckResult | None:
    match = next((c for c in checks if c.metric == rc.metric and c.rule == rc.kind
                  and c.severity == rc.severity), None)
    metric_errors = [c for c in checks if c.metric == rc.metric and c.rule == "error"]
    release = str(outcome.release_id)
    severity = rc.dagster_severity
    if match is not None and match.skipped:
        return None  # the rule did not apply to this release (e.g. first release: no trend)
    has_holdout = bool(getattr(outcome, "has_holdout", False))
    if match is None and rc.when != "always" and (rc.when == "with_holdout") != has_holdout:
        return None  # not applied in this run (when: with_holdout / no_holdout)
    md: dict[str, Any] = {"release": dg.MetadataValue.text(release), **rc.metadata()}
    result = outcome.results.get(rc.metric) if hasattr(outcome, "results") else None
    if match is not None:
        passed = match.verdict == "pass"
        _rule_numbers(md, rc, match, result)
        message = match.message
    elif metric_errors:
        err = metric_errors[0]
        passed = False
        if err.verdict == "pass":  # an optional metric's failure: shown, but it does not block
            severity = dg.AssetCheckSeverity.WARN
        message = f"metric could not be computed: {err.message}"
    elif global_errors:
        passed = False
        message = "not evaluated: " + "; ".join(f"{c.metric} {c.message}" for c in global_errors)
    else:
        return None  # not applied in this run (when: with_holdout / no_holdout)
    return dg.AssetCheckResult(
        check_name=rc.name, asset_key=asset, passed=passed, severity=severity,
        metadata=md, description=f"release {release}: {message}",
    )


def _rule_numbers(md: dict[str, Any], rc: RuleCheck, match: "GateCheck", result: Any) -> None:
    """The numbers a person plots for one rule: the metric's value and interval, the holdout
    baseline and the excess with its interval (baseline rules), the previous accepted value
    (trend rules), the quantity compared with the limit (and its interval when the rule decided
    on a bound), the p-value -- never more."""
    value = match.value if match.value is not None else getattr(result, "value", None)
    _put_float(md, "value", value)
    _put_interval(md, "value", getattr(result, "ci", None))
    if rc.kind == "baseline":
        _put_float(md, "baseline", match.baseline if match.baseline is not None
                   else getattr(result, "baseline", None))
        _put_float(md, "excess", getattr(result, "excess", None))
        _put_interval(md, "excess", getattr(result, "excess_ci", None))
    if rc.kind == "trend":
        _put_float(md, "previous", match.previous)
    _put_float(md, "compared", match.compared)
    _put_interval(md, "compared", getattr(match, "interval", None))
    p = getattr(match, "p_value", None)
    _put_float(md, "p_value", p if p is not None else getattr(result, "p_value", None))
    on = getattr(match, "on", None)
    if on:  # what the gate decided on (the configured rule's `on` otherwise)
        md["decided_on"] = dg.MetadataValue.text(str(on))


def _put_interval(md: dict[str, Any], key: str, ci: Any) -> None:
    try:
        lo, hi = ci
    except (TypeError, ValueError):
        return
    _put_float(md, f"{key}_lower", lo)
    _put_float(md, f"{key}_upper", hi)


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
