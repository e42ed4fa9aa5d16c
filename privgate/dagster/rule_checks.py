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
as a whole, is a failed check. A ``warn`` rule that does not apply to a release yields no result
(Dagster shows it as not evaluated, not as a success); a ``block`` rule that does not apply (the
first release for a trend rule, a ``when:`` holdout condition the run does not meet) passes with
``applied: false`` and the reason in its description, so no blocking check is ever silent. With
``check_specs(..., has_holdout=...)`` the declared checks are the rules that apply to runs with
(or without) a holdout.

A result's metadata is what a person plots: the rule's quantity (``value``: the risk estimate,
the excess over the holdout baseline, the increase over the last accepted release, or the
p-value), the ends of its 95 % interval (``lower``, ``upper``) and the ``limit``, rounded to 4
significant digits, and the ``release`` id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

from privgate.finite import finite_or_none
from privgate.gates import rules
from privgate.gates.config_model import check_name as gate_check_name
from privgate.gates.rule_kinds import requirement_words, rule_kind

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateCheck, GateConfig, GateOutcome, Rule

DECISION_CHECK = "gate_decision"
EVALUATION_ASSET = "synthetic_release"  # the bundled release asset (default target of the specs)
DECISION_CODES = {"pass": 0, "warn": 1, "block": 2}


def check_name(metric: str, kind: str, severity: str) -> str:
    """The stable asset-check name of one rule (the name GX suites built from the same gate
    configuration use too)."""
    return gate_check_name(metric, kind, severity)


def rule_checks(cfg: "GateConfig") -> list["Rule"]:
    """Every rule of ``cfg``, in configuration order; each is one asset check named
    ``rule.name``."""
    return [rule for _, rule in cfg.rules()]


def dagster_severity(rule: "Rule") -> dg.AssetCheckSeverity:
    """ERROR for a block rule (a blocking check), WARN for a warn rule."""
    return dg.AssetCheckSeverity.ERROR if rule.blocking else dg.AssetCheckSeverity.WARN


def rule_description(rule: "Rule") -> str:
    """What the rule's check requires, in words."""
    cond = "" if rule.when == "always" else f" (only {rule.when.replace('_', ' ')})"
    effect = "blocks publication" if rule.blocking else "warns"
    requirement = requirement_words(rule_kind(rule.kind), rule.on, rule.limit)
    missing = {"lower": "that interval", "upper": "that interval", "p_value": "a p-value"}
    closed = f"; a result without {missing[rule.on]} fails the check (fails closed)" if rule.on in missing else ""
    return f"privgate {rule.kind} rule on {rule.metric}: {requirement}; otherwise the release {effect}{cond}{closed}."


def rule_metadata(rule: "Rule") -> dict[str, Any]:
    """The rule itself, as spec and result metadata (filterable in the Dagster UI)."""
    return {
        "rule_kind": dg.MetadataValue.text(rule.kind),
        "decided_on": dg.MetadataValue.text(rule.on),
        "rule_severity": dg.MetadataValue.text(rule.severity),
        "rule_when": dg.MetadataValue.text(rule.when),
        "limit": dg.MetadataValue.float(float(rule.limit)),
    }


def check_specs(
    cfg: "GateConfig",
    asset: Any = EVALUATION_ASSET,
    *,
    partitions_def: "dg.PartitionsDefinition | None" = None,
    has_holdout: bool | None = None,
) -> list[dg.AssetCheckSpec]:
    """The asset-check specs of one release asset for configuration ``cfg``: ``gate_decision``
    and one per rule (with ``has_holdout`` True / False: only the rules that apply to runs with /
    without a holdout); tied to ``partitions_def`` (a check result per release partition)."""
    import warnings

    def spec(name: str, blocking: bool, description: str, metadata: dict[str, Any] | None = None) -> dg.AssetCheckSpec:
        with warnings.catch_warnings():
            # partitioned check specs are a Dagster "preview" API (1.13): results carry the partition
            warnings.filterwarnings("ignore", message=".*partitions_def.*AssetCheckSpec.*")
            warnings.filterwarnings("ignore", category=Warning, module="dagster.*")
            return dg.AssetCheckSpec(
                name,
                asset=asset,
                blocking=blocking,
                description=description,
                metadata=metadata,
                partitions_def=partitions_def,
            )

    specs = [
        spec(
            DECISION_CHECK,
            True,
            "privgate gate decision: fails (ERROR, blocking) when the release is blocked "
            "for any reason, including metrics or inputs that could not be evaluated.",
        )
    ]
    seen = {DECISION_CHECK}
    for rc in rule_checks(cfg):
        if not rc.applies(has_holdout):
            continue
        if rc.name in seen:  # cannot happen for a valid config; guard against name clashes
            raise ValueError(f"two gate rules map to the asset check name {rc.name!r}")
        seen.add(rc.name)
        specs.append(spec(rc.name, rc.blocking, rule_description(rc), rule_metadata(rc)))
    return specs


def check_results(
    cfg: "GateConfig",
    outcome: "GateOutcome",
    asset: Any = EVALUATION_ASSET,
    *,
    decision_metadata: dict[str, Any] | None = None,
) -> list[dg.AssetCheckResult]:
    """The check results of ``outcome``: ``gate_decision`` and every rule the run evaluated.

    A rule the run did not apply (``when: with_holdout`` without a holdout, a trend rule with no
    earlier accepted release) yields **no** result, so Dagster shows the check as skipped /
    not evaluated for this release instead of a green success.
    """
    results = [_decision_result(outcome, asset, decision_metadata or {})]
    checks = list(outcome.checks)
    global_errors = [c for c in checks if c.rule == "error" and c.metric.startswith("(") and c.verdict == "block"]
    for rc in rule_checks(cfg):
        r = _rule_result(rc, checks, global_errors, outcome, asset)
        if r is not None:
            results.append(r)
    return results


# ---------------------------------------------------------------------------------------------


def _decision_result(outcome: "GateOutcome", asset: Any, extra: dict[str, Any]) -> dg.AssetCheckResult:
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
            "\n".join(f"- `{c.metric}`: {_md_escape(c.message)}" for c in errors)
        )
    md["summary"] = dg.MetadataValue.md(summary_markdown(outcome))
    md.update(extra)
    n_fired = len(fired)
    return dg.AssetCheckResult(
        check_name=DECISION_CHECK,
        asset_key=asset,
        passed=decision != "block",
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=md,
        description=(
            f"release {outcome.release_id}: gate decision {decision.upper()} "
            f"({n_fired} rule{'s' if n_fired != 1 else ''} fired)"
        ),
    )


def _rule_result(
    rc: "Rule", checks: list["GateCheck"], global_errors: list["GateCheck"], outcome: "GateOutcome", asset: Any
) -> dg.AssetCheckResult | None:
    match = next((c for c in checks if c.metric == rc.metric and c.rule == rc.kind and c.severity == rc.severity), None)
    metric_errors = [c for c in checks if c.metric == rc.metric and c.rule == "error"]
    release = str(outcome.release_id)
    severity = dagster_severity(rc)
    if match is not None and match.skipped:
        # the rule did not apply to this release (e.g. first release: no trend)
        return _not_applied(rc, asset, release, match.message)
    has_holdout = bool(getattr(outcome, "has_holdout", False))
    if match is None and not rc.applies(has_holdout):
        return _not_applied(
            rc,
            asset,
            release,
            f"the rule applies only to runs {'with' if rc.when == 'with_holdout' else 'without'} a holdout",
        )
    md: dict[str, Any] = {"release": dg.MetadataValue.text(release)}
    _put_float(md, "limit", rc.limit)
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
        return _not_applied(rc, asset, release, "the run did not apply it")
    return dg.AssetCheckResult(
        check_name=rc.name,
        asset_key=asset,
        passed=passed,
        severity=severity,
        metadata=md,
        description=f"release {release}: {message}",
    )


def _not_applied(rc: "Rule", asset: Any, release: str, why: str) -> dg.AssetCheckResult | None:
    """A rule that did not apply to this release: no result for a ``warn`` rule (Dagster shows
    it as not evaluated); a passing result saying so for a ``block`` rule, which Dagster would
    otherwise report as a blocking check that emitted no result."""
    if not rc.blocking:
        return None
    md = {"release": dg.MetadataValue.text(release), "applied": dg.MetadataValue.bool(False)}
    return dg.AssetCheckResult(
        check_name=rc.name,
        asset_key=asset,
        passed=True,
        severity=dagster_severity(rc),
        metadata=md,
        description=f"release {release}: not applied: {why}",
    )


def _rule_numbers(md: dict[str, Any], rc: "Rule", match: "GateCheck", result: Any) -> None:
    """The numbers a person plots for one rule: the rule's quantity (``value``: the risk
    estimate for threshold rules, the excess over the holdout baseline for baseline rules, the
    increase over the last accepted release for trend rules, the p-value for test rules), the
    ends of its 95 % interval (``lower``, ``upper``: the rule's own interval, else the
    result's; :func:`privgate.gates.rules.check_quantity`), rounded to 4 significant digits."""
    value, interval = rules.check_quantity(match, result)
    _put_float(md, "value", value)
    _put_interval(md, interval)


def _put_interval(md: dict[str, Any], ci: Any) -> None:
    try:
        lo, hi = ci
    except (TypeError, ValueError):
        return
    _put_float(md, "lower", lo)
    _put_float(md, "upper", hi)


def _put_float(md: dict[str, Any], key: str, x: Any) -> None:
    f = finite_or_none(x)
    if f is not None:
        md[key] = dg.MetadataValue.float(significant(f))


def significant(x: float, digits: int = 4) -> float:
    """``x`` rounded to ``digits`` significant digits (-0.35050000000000003 → -0.3505)."""
    return float(f"{x:.{digits}g}") if x else 0.0


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
