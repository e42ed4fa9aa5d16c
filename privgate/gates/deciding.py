"""Deciding a gate run: metric results and the configuration's rules → checks (pure, no I/O).

What each rule compares and when it fires is :mod:`privgate.gates.rules`; this module adds
what the gate does around it: a rule that does not apply is left out, one that cannot be
evaluated yet (no holdout, no earlier accepted release) is skipped, a result that lacks what a
rule compares fails closed, and a run in which no rule was evaluated does not pass
(:func:`unchecked_checks`). :func:`result_problem` says which results a gate may compare at
all (the GX adapter uses it too).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..results import MetricResult
from . import rules
from .checks import GateCheck, error_check, missing_check, safe_message
from .config_model import GateConfig, Rule
from .rule_kinds import END_WORDS, is_rule, rule_kind


def decide(
    cfg: GateConfig,
    results: Mapping[str, MetricResult],
    errors: Mapping[str, str],
    *,
    has_holdout: bool,
    previous: Mapping[str, float] | None = None,
    previous_note: str = "",
    trend_note: str = "",
) -> list[GateCheck]:
    """Compare metric results with the configuration's rules; pure (no I/O).

    ``previous`` maps metric → value of the last accepted release (``None``: no trend
    comparison possible, ``previous_note`` says why); ``trend_note`` is appended to evaluated
    trend checks' messages (e.g. that the real data changed since that release).
    """
    checks: list[GateCheck] = []
    for name, mg in cfg.metrics.items():
        res = results.get(name)
        if res is None and name not in errors and not any(r.applies(has_holdout) for r in mg.rules):
            continue  # not evaluated because no rule applies (e.g. a holdout-only metric, no holdout)
        if res is None or name in errors:
            msg = safe_message(errors.get(name, "no result was produced"))
            checks.append(error_check(name, f"metric failed: {msg}", optional=mg.optional))
            continue
        for rule in mg.rules:
            if not rule.applies(has_holdout):
                continue
            check = rule_check(name, res, rule, mg.optional, has_holdout, previous, previous_note)
            if trend_note and check.rule == rule.kind and rule_kind(rule.kind).needs_history and not check.skipped:
                check.message = f"{check.message} ({trend_note})"
            checks.append(check)
    return checks


def unchecked_checks(config: GateConfig, checks: list[GateCheck]) -> list[GateCheck]:
    """What to add when no rule was evaluated in a run (every rule skipped or not applying, every
    metric optional and failed): a blocking error "nothing was checked" (exit 3) — a gate that
    checked nothing must not pass — or, when the configuration says ``allow_unchecked: true``, a
    passing note saying in words that the release passes unchecked. Empty when a rule was
    evaluated or the run already failed."""
    # only the rules about the release itself count; require_audit's "audit" check is about the
    # generator and never makes a run count as checked
    if any(is_rule(c.rule) and not c.skipped for c in checks):
        return []
    if any(c.rule == "error" and c.verdict == "block" for c in checks):
        return []
    why = (
        "; ".join(dict.fromkeys(f"{c.metric} {c.rule}: {c.message}" for c in checks if c.skipped))
        or "no rule of the configuration applies to this run (e.g. every rule `when: with_holdout` and no holdout)"
    )
    text = f"nothing was checked: no rule could be evaluated ({safe_message(why, 300)})"
    if config.allow_unchecked:
        return [
            GateCheck(
                metric="(gate)",
                rule="unchecked",
                value=None,
                raw=None,
                threshold=None,
                severity="warn",
                verdict="pass",
                skipped=True,
                message=f"{text}; the release passes UNCHECKED because the configuration says allow_unchecked: true",
            )
        ]
    return [
        error_check(
            "(gate)",
            f"{text}; a gate that checked nothing does not pass — give what the "
            "rules need (a holdout, an earlier accepted release) or add a rule that "
            "applies, or set allow_unchecked: true to let such a release pass",
        )
    ]


def rule_check(
    name: str,
    res: MetricResult,
    rule: Rule,
    optional: bool,
    has_holdout: bool,
    previous: Mapping[str, float] | None,
    previous_note: str,
) -> GateCheck:
    """One rule of metric ``name`` evaluated on its result ``res`` (see :func:`decide`)."""
    base = dict(
        metric=name,
        rule=rule.kind,
        value=res.value,
        raw=res.raw,
        threshold=rule.limit,
        severity=rule.severity,
        seconds=res.seconds,
        optional=optional,
        baseline=res.baseline,
        on=rule.on,
        p_value=res.p_value,
    )
    kind = rule_kind(rule.kind)
    prev = None
    if kind.needs_holdout and not has_holdout:
        return GateCheck(
            **base, verdict="pass", skipped=True, message=f"no holdout given; {kind.name} rule not evaluated"
        )
    if kind.needs_holdout and (res.excess is None or res.baseline is None):
        return missing_check(base, optional, "holdout baseline could not be computed")
    if kind.needs_history:
        skip = _trend_skip(name, previous, previous_note)
        if skip:
            return GateCheck(**base, verdict="pass", skipped=True, message=skip)
        prev = history_number(previous[name])
        if prev is None:  # +inf would open the rule (1 − inf), NaN would pass it: never decide on it
            return missing_check(base, optional, history_problem(name, previous[name]))
        base["previous"] = prev
    c = rules.compare(rule.kind, rule.on, res, previous=prev)
    base["interval"] = c.interval
    if c.missing is not None:
        return missing_check(base, optional, _missing_text(name, rule, c))
    fired = rules.fires(rule.kind, c.number, rule.limit)
    return GateCheck(
        **base,
        verdict=rule.severity if fired else "pass",
        compared=c.number,
        message=_message(c, res, prev, rule.limit, fired),
    )


def _trend_skip(name: str, previous: Mapping[str, float] | None, previous_note: str) -> str:
    """Why a trend rule is not evaluated on this run ("" when it is)."""
    if previous is None:
        return previous_note or "no accepted release to compare with"
    if name not in previous or previous[name] is None:
        return "metric absent from the last accepted release"
    return ""


def _missing_text(name: str, rule: Rule, c: rules.Comparison) -> str:
    kind = rule_kind(rule.kind)
    if not kind.has_interval:
        return f"the {kind.name} rule needs a {kind.words} and {name} reports none"
    return (
        f"the rule compares the {END_WORDS[rule.on]} of the {c.quantity}'s interval and {name} reports no {c.missing}"
    )


def _message(c: rules.Comparison, res: MetricResult, prev: float | None, limit: float, fired: bool) -> str:
    """The check's message: what was compared with the limit (the kind's ``message``), and
    whether it fired."""
    kind = rule_kind(c.kind)
    what = kind.message.format(estimate=c.estimate, number=c.number, baseline=res.baseline, previous=prev)
    if c.on in END_WORDS:
        fmt = "{:+.4f}" if kind.signed else "{:.4f}"
        what = (
            f"{END_WORDS[c.on]} {fmt.format(c.number)} of {what} (95 % interval "
            f"{fmt.format(c.interval[0])} to {fmt.format(c.interval[1])})"
        )
    fired_op, held_op = ("<", "≥") if kind.fires_below else (">", "≤")
    note = _view_note(res) if fired and kind.explains_view else ""
    return f"{what} {fired_op if fired else held_op} {limit:g}{note}"


def _view_note(res: MetricResult) -> str:
    """Why a label-free metric saw what the plain one did not: the view's counts (positions and
    counts only), when the release's labels or scales differ from the real data's."""
    view = (res.details or {}).get("label_free") if isinstance(res.details, dict) else None
    if not isinstance(view, dict) or view.get("identity", True):
        return ""
    records = (view.get("disguised_records") or {}).get("records", 0)
    far = (view.get("far_records") or {}).get("far_records", 0)
    parts = [
        f"{n} {what}"
        for n, what in (
            (len(view.get("recoded_columns") or []), "categorical column(s) with other labels"),
            (len(view.get("mapped_numeric_columns") or []), "numeric column(s) on another scale"),
            (records, "record(s) disguised one by one"),
            (far, "record(s) far beyond the real range mapped back"),
            (len(view.get("left_out_columns") or []), "numeric column(s) far beyond the real range left out"),
        )
        if n
    ]
    return f" (the release differs from the real data: {', '.join(parts)})" if parts else ""


def history_number(x: Any) -> float | None:
    """A value read back from the history as a number a trend rule may compare with: a finite
    number in [0, 1] (a metric value), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        return None
    v = float(x)
    return v if math.isfinite(v) and 0.0 <= v <= 1.0 else None


def history_problem(name: str, x: Any) -> str:
    """Why a stored value of ``name`` cannot be compared (its kind only, never the value) and the fix."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        kind = f"not a number ({type(x).__name__})"
    elif math.isnan(float(x)):
        kind = "NaN"
    elif math.isinf(float(x)):
        kind = "infinite"
    else:
        kind = "outside [0, 1]"
    return (
        f"the history's value of {name} for the last accepted release is {kind}: metric values are "
        "finite numbers in [0, 1], so the history was altered or corrupted; the trend rule cannot "
        "compare with it — correct or delete that run's score row"
    )


def result_problem(res: Any) -> str | None:
    """Why a metric result cannot be gated (None when it can): the value must be a finite number
    in [0, 1]; a baseline, excess, interval or p-value, when present, must be finite and in
    range. Junk from a custom metric, or a result changed after it was built, fails closed
    instead of passing every rule (NaN compares false with every limit). Only types and metric
    values are named, never a value of any other kind (it could be a record's)."""
    if not isinstance(res, MetricResult):
        return f"returned {type(res).__name__}, not a MetricResult"
    checks = [
        ("value", res.value, 0.0, 1.0),
        ("baseline", res.baseline, 0.0, 1.0),
        ("excess", res.excess, -1.0, 1.0),
        ("p_value", res.p_value, 0.0, 1.0),
    ]
    for field_name, lo, hi in (("ci", 0.0, 1.0), ("baseline_ci", 0.0, 1.0), ("excess_ci", -1.0, 1.0)):
        ci = getattr(res, field_name, None)
        if ci is None:
            continue
        if not isinstance(ci, (tuple, list)) or len(ci) != 2:
            return f"has {field_name} of type {type(ci).__name__}; expected (lower, upper)"
        checks += [(f"{field_name} lower", ci[0], lo, hi), (f"{field_name} upper", ci[1], lo, hi)]
    for what, x, lo, hi in checks:
        if x is None and what != "value":
            continue
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            return f"has {what} of type {type(x).__name__}; expected a finite number in [{lo:g}, {hi:g}]"
        v = float(x)
        tol = rules.EPS if what == "value" else 1e-9  # rounding in an interval's end is not junk
        if not math.isfinite(v) or v < lo - tol or v > hi + tol:
            return f"has {what} {v!r}; expected a finite number in [{lo:g}, {hi:g}]"
    if res.ci is not None and res.ci[0] > res.ci[1] + rules.EPS:
        return "has an interval whose lower end is above its upper end"
    if not isinstance(res.raw, (int, float, np.integer, np.floating)) or isinstance(res.raw, bool):
        return f"has raw of type {type(res.raw).__name__}; expected a number"
    return None
