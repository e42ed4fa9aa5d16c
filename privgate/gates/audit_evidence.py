"""What a stored generator audit proves, read back before a release gate's ``require_audit``
trusts it.

A row of ``privgate_audits`` is evidence only when its numbers carry its decision:
:func:`stored_audit_problem` checks every cell the decision rests on (kind, finiteness, range),
re-derives each attack's ε lower bound from its error counts (Clopper–Pearson,
:func:`privgate.stats.dp_audit.epsilon_lower_bound`, at the α the audit's design spent on it),
the audit's bound and AUC lower bound as the largest of them, the number of audited targets, and
finally the decision itself with the audit rules stored with the row (their sha256 must be the
row's ``config_hash``). Any disagreement refuses the row, naming the field — never a value.

:func:`largest_showable_bound` is the audit's power: the ε lower bound its test runs would give
an attack that never errs. An audit whose runs could not show a bound above the claim could not
have found a violation of it, so it is no evidence that the claim holds.

Orientation: a refused row blocks (the gate cannot decide, exit 3); a row that passes these
checks is consistent, not authentic — whoever can write the history can write a consistent row,
so the history store's write access is part of the gate's trust.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from ..errors import ConfigError

_TOL = 1e-9
DECISIONS = ("pass", "warn", "block", "error")


class Refused(Exception):
    """A stored audit that is not evidence; the message names the field."""


def _kind(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return f"not a number ({type(x).__name__})"
    v = float(x)
    return "NaN" if math.isnan(v) else "infinite" if math.isinf(v) else "out of range"


def number(
    field: str, x: Any, lo: float, hi: float, *, optional: bool = False, lo_open: bool = False, hi_open: bool = False
) -> float | None:
    """A stored number, checked as the trend rules check theirs: a finite int or float (never a
    bool or text) in [lo, hi]; None only when ``optional``."""
    if x is None and optional:
        return None
    if x is None:
        raise Refused(f"its {field} is missing")
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise Refused(f"its {field} is {_kind(x)}")
    v = float(x)
    if v < lo or v > hi or (lo_open and v == lo) or (hi_open and v == hi):
        raise Refused(f"its {field} is out of range")
    return v


def count(field: str, x: Any, lo: int = 0) -> int:
    """A stored count: a whole number ≥ ``lo`` (an int, or a float with no fraction)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)) or float(x) != int(x):
        raise Refused(f"its {field} is {'missing' if x is None else 'not a whole number'}")
    if int(x) < lo:
        raise Refused(f"its {field} is out of range")
    return int(x)


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL * (1.0 + max(abs(a), abs(b)))


def _boolean(field: str, x: Any) -> bool:
    """A stored flag: a bool, or SQLite's 0 / 1."""
    if isinstance(x, bool):
        return x
    if isinstance(x, int) and x in (0, 1):
        return bool(x)
    raise Refused(f"its {field} is not a boolean ({type(x).__name__})")


def stored_decision(row: Mapping[str, Any]) -> str:
    """The row's decision once its decision, exit code and accepted flag agree."""
    from .audit_rules import EXIT_CODES

    decision = row.get("decision")
    if not isinstance(decision, str) or decision not in DECISIONS:
        raise Refused("its decision is not one of pass, warn, block, error")
    if count("exit_code", row.get("exit_code")) != EXIT_CODES[decision]:
        raise Refused("its exit_code disagrees with its decision")
    if _boolean("accepted", row.get("accepted")) != (decision in ("pass", "warn")):
        raise Refused("its accepted flag disagrees with its decision")
    return decision


def stored_audit_problem(row: Mapping[str, Any]) -> tuple[Any, Any]:
    """(the audit's result, its re-decided outcome) from a stored row whose decision is
    accepted; raises :class:`Refused` naming the field that is not evidence."""
    from ..audit.result import AuditResult
    from .audit_rules import decide_audit

    result = _json("result_json", row.get("result_json"))
    config = _stored_config(row)
    numbers = _result_numbers(result)
    _columns_agree(row, numbers)
    _bounds_follow(result, numbers)
    try:
        res = AuditResult.from_dict(result)
    except TypeError:
        raise Refused("its result_json is not an audit result") from None
    outcome = decide_audit(res, config)
    _decision_follows(row, outcome, numbers["claimed_epsilon"])
    return res, outcome


def _stored_config(row: Mapping[str, Any]) -> Any:
    """The audit rules a row was decided under, from its config_json checked against its
    config_hash."""
    from .audit_rules import AuditConfig, default_audit_config, parse_audit_config

    config_text = row.get("config_json")
    if config_text is None:
        raise Refused(
            "its config_json is missing (recorded by a privgate that did not store the audit rules: re-run the audit)"
        )
    config_data = _json("config_json", config_text)
    if config_data == default_audit_config().to_dict():
        config = default_audit_config()
    else:
        try:
            config = parse_audit_config(config_data, where="config_json")
        except ConfigError:
            raise Refused("its config_json is not a valid audit configuration") from None
    if (
        not isinstance(row.get("config_hash"), str)
        or AuditConfig(**{**config.__dict__, "source": None}).hash != row["config_hash"]
    ):
        raise Refused("its config_hash is not the sha256 of its config_json")
    return config


def _result_numbers(result: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of a stored result that the rest is checked against, each in its range, and
    the error level of each test (which must follow from the confidence, targets and attacks)."""
    numbers: dict[str, Any] = {
        "delta": number("delta", result.get("delta"), 0.0, 1.0, hi_open=True),
        "confidence": number("confidence", result.get("confidence"), 0.5, 1.0, hi_open=True),
        "claimed_epsilon": number("claimed_epsilon", result.get("claimed_epsilon"), 0.0, 1e6, optional=True),
        "epsilon_lower": number("epsilon_lower", result.get("epsilon_lower"), 0.0, 1e6),
        "auc_lower": number("auc_lower", result.get("auc_lower"), 0.0, 1.0),
    }
    targets = result.get("targets")
    design = result.get("design")
    if not isinstance(targets, list) or not isinstance(design, dict):
        raise Refused("its result_json lacks the targets or the design")
    numbers["n_audited"] = count("n_audited", result.get("n_audited"), 1)
    numbers["runs"] = count("runs", design.get("total_runs"), 1)
    attacks = design.get("attacks")
    if not isinstance(attacks, list) or not attacks:
        raise Refused("its design names no attack")
    numbers["alpha"] = _alpha_spent(design, numbers["confidence"])
    pooled = result.get("pooled") or []
    if not isinstance(pooled, list):
        raise Refused("its pooled evidence is not a list")
    per_target = sum(1 for t in targets if isinstance(t, dict) and t.get("status") == "audited")
    alpha_each = number("alpha_per_test", design.get("alpha_per_test"), 0.0, 1.0, lo_open=True)
    if not _same(alpha_each, numbers["alpha"] / 2 / max(per_target * len(attacks) + len(pooled), 1)):
        raise Refused("its alpha_per_test does not follow from its confidence, targets and attacks")
    numbers["alpha_each"] = alpha_each
    numbers["n_targets"] = len(targets)
    return numbers


def _columns_agree(row: Mapping[str, Any], numbers: Mapping[str, Any]) -> None:
    """The columns the listing shows are the result's own numbers."""
    for col in ("epsilon_lower", "auc_lower", "delta", "confidence"):
        if not _same(number(col, row.get(col), -1e6, 1e6), numbers[col]):
            raise Refused(f"its {col} column disagrees with its result_json")
    for col in ("runs", "n_audited", "n_targets"):
        if count(col, row.get(col), 1) != numbers[col]:
            raise Refused(f"its {col} column disagrees with its result_json")


def _bounds_follow(result: Mapping[str, Any], numbers: Mapping[str, Any]) -> None:
    """The ε and AUC lower bounds are the largest that the stored error counts give."""
    targets, design, alpha_each = result["targets"], result["design"], numbers["alpha_each"]
    bounds, aucs, audited = _rederive(targets, numbers["delta"], alpha_each)
    bounds += [_pooled_bound("pooled", p, alpha_each) for p in result.get("pooled") or []]
    if design.get("design") == "canaries":  # its targets are audited through their pooled groups
        audited = sum(1 for t in targets if isinstance(t, dict) and t.get("status") == "pooled")
    if audited != numbers["n_audited"]:
        raise Refused("its n_audited disagrees with its targets")
    best = result.get("best")
    if isinstance(best, dict) and best.get("epsilon_lower") is not None:
        half = numbers["alpha"] / 2
        best_eps = (
            _pooled_bound("best", best, half) if best.get("pooled") else _bound("best", best, numbers["delta"], half)
        )
        if not _same(best_eps, number("best.epsilon_lower", best.get("epsilon_lower"), 0.0, 1e6)):
            raise Refused("its best pair's ε lower bound does not follow from its error counts")
        bounds.append(best_eps)
    if not _same(numbers["epsilon_lower"], max(bounds, default=0.0)):
        raise Refused("its epsilon_lower is not the largest bound its error counts give")
    if not _same(numbers["auc_lower"], max(aucs, default=0.0)):
        raise Refused("its auc_lower is not the largest of its attacks' corrected AUC lower bounds")


def _decision_follows(row: Mapping[str, Any], outcome: Any, claimed: float | None) -> None:
    """The stored claim and decision are what the rules give for the stored result."""
    stored_claim = number("claimed_epsilon column", row.get("claimed_epsilon"), 0.0, 1e6, optional=True)
    if (stored_claim is None) != (outcome.claimed_epsilon is None) or (
        stored_claim is not None and not _same(stored_claim, float(outcome.claimed_epsilon))
    ):
        raise Refused("its claimed_epsilon column disagrees with its result and rules")
    if claimed is not None and outcome.claimed_epsilon is not None and not _same(claimed, outcome.claimed_epsilon):
        raise Refused("its claimed_epsilon disagrees with its rules")
    if outcome.decision != row.get("decision"):
        raise Refused("its decision does not follow from its numbers under its rules")


def _json(field: str, text: Any) -> dict[str, Any]:
    try:
        x = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        x = None
    if not isinstance(x, dict):
        raise Refused(f"its {field} is {'missing' if text is None else 'not a JSON object'}")
    return x


def _bound(where: str, a: Mapping[str, Any], delta: float, alpha: float) -> float:
    from ..stats.dp_audit import epsilon_lower_bound

    n_out = count(f"{where} runs_without", a.get("runs_without"), 1)
    n_in = count(f"{where} runs_with", a.get("runs_with"), 1)
    fp = count(f"{where} false_positives", a.get("false_positives"))
    fn = count(f"{where} false_negatives", a.get("false_negatives"))
    if fp > n_out or fn > n_in:
        raise Refused(f"its {where} error counts exceed its runs")
    return float(epsilon_lower_bound(fp, n_out, fn, n_in, delta=delta, alpha=alpha))


def _alpha_spent(design: Mapping[str, Any], confidence: float) -> float:
    """The α the audit's analysis spent: 1 − confidence, or for a sequential audit the α of the
    look it stopped at (never more than 1 − confidence)."""
    alpha = 1.0 - confidence
    seq = design.get("sequential")
    if seq is None:
        return alpha
    if not isinstance(seq, dict):
        raise Refused("its sequential record is not a mapping")
    at = seq.get("alpha_at_stop", seq.get("alpha_per_look"))
    look = number("sequential alpha_at_stop", at, 0.0, 1.0, lo_open=True)
    if look > alpha * (1 + _TOL):
        raise Refused("its sequential alpha_at_stop exceeds 1 − its confidence")
    return look


def _pooled_bound(where: str, p: Any, alpha: float) -> float:
    """A pooled group's ε bound re-derived from its right guesses and guesses (Steinke et al.'s
    binomial tail), checked against the stored one."""
    from ..stats.one_run import canary_epsilon_lower_bound

    if not isinstance(p, dict):
        raise Refused(f"its {where} evidence is not a mapping")
    guesses = count(f"{where} guesses", p.get("guesses"))
    right = count(f"{where} correct", p.get("correct"))
    if right > guesses:
        raise Refused(f"its {where} right guesses exceed its guesses")
    b = float(canary_epsilon_lower_bound(right, guesses, alpha=alpha))
    if not _same(b, number(f"{where} epsilon_lower", p.get("epsilon_lower"), 0.0, 1e6)):
        raise Refused(f"its {where} ε lower bound does not follow from its guesses")
    return b


def _rederive(targets: list[Any], delta: float, alpha_each: float) -> tuple[list[float], list[float], int]:
    """Each attack's ε bound re-derived from its counts (checked against the stored one), each
    attack's corrected AUC lower bound (checked in range), and the number of audited targets."""
    bounds, aucs, audited = [], [], 0
    for t in targets:
        if not isinstance(t, dict):
            raise Refused("its result_json holds a target that is not a mapping")
        attacks = t.get("attacks") or {}
        if t.get("status") != "audited":
            if attacks:
                raise Refused("its result_json holds attacks on a target that was not audited")
            continue
        if not isinstance(attacks, dict) or not attacks:
            raise Refused("its result_json holds an audited target without attacks")
        audited += 1
        for a in attacks.values():
            if not isinstance(a, dict):
                raise Refused("its result_json holds an attack that is not a mapping")
            b = _bound("attack's", a, delta, alpha_each)
            if not _same(b, number("attack's epsilon_lower", a.get("epsilon_lower"), 0.0, 1e6)):
                raise Refused("an attack's stored ε lower bound does not follow from its error counts")
            bounds.append(b)
            aucs.append(number("attack's auc_lower_corrected", a.get("auc_lower_corrected"), 0.0, 1.0))
    return bounds, aucs, audited


def largest_showable_bound(result: Mapping[str, Any] | Any) -> float:
    """The largest ε lower bound the audit's test runs could have shown (an attack that never
    errs on them), at the α its design spent: the audit's power against a claim."""
    from ..stats.dp_audit import epsilon_lower_bound
    from ..stats.one_run import largest_canary_bound

    d = result.to_dict() if hasattr(result, "to_dict") else result
    delta, conf = float(d["delta"]), float(d["confidence"])
    alpha_each = float(d["design"]["alpha_per_test"])
    try:
        half = _alpha_spent(d["design"], conf) / 2
    except Refused:
        half = (1.0 - conf) / 2
    best = 0.0
    pairs = [(a, alpha_each) for t in d["targets"] for a in (t.get("attacks") or {}).values()]
    groups = [(p, alpha_each) for p in d.get("pooled") or []]
    if isinstance(d.get("best"), dict):
        (groups if d["best"].get("pooled") else pairs).append((d["best"], half))
    for p, alpha in groups:  # every guess right (a pooled best carries its guesses too)
        n = int(p.get("observations", p.get("guesses", 0)) or 0)
        best = max(best, float(largest_canary_bound(n, alpha=alpha)) if n else 0.0)
    for a, alpha in pairs:
        best = max(
            best,
            float(epsilon_lower_bound(0, int(a["runs_without"]), 0, int(a["runs_with"]), delta=delta, alpha=alpha)),
        )
    return best
