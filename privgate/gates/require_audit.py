"""A release gate's ``require_audit``: the check that the history holds evidence that the
generator which made the release passed its audit (:func:`requirement_check`).

It sits above both modules it reads: :mod:`privgate.gates.audit_rules` (what a requirement says,
how an audit's numbers are compared with rules) and :mod:`privgate.gates.audit_evidence` (whether
a stored audit row is evidence, re-derived from its numbers), so neither of those imports the
other back. See :mod:`privgate.gates.audit_rules` for what the check decides.
"""

from __future__ import annotations

import types
from typing import Any, Mapping

from ..audit.identity import is_digest
from ..errors import type_name as _tname
from .audit_evidence import Refused, largest_showable_bound, stored_audit_problem, stored_decision
from .audit_rules import _EPS, _RANK, AuditRequirement, _num, _rule_check


class _Answer(Exception):
    """A requirement check decided before its end: ``rule`` "error" (cannot be decided, exit 3)
    or "audit" (a block), with its message."""

    def __init__(self, rule: str, text: str) -> None:
        super().__init__(text)
        self.rule = rule
        self.text = text


def _error(text: str) -> _Answer:
    return _Answer("error", text)


def _block(text: str) -> _Answer:
    return _Answer("audit", text)


def requirement_check(
    req: AuditRequirement, history: Any, version: str | None, *, digest: str | None = None, dataset: str | None = None
) -> dict[str, Any]:
    """Whether the history holds evidence that the generator passed its audit (the keyword
    arguments of a :class:`~privgate.gates.checks.GateCheck` of rule ``audit``: verdict pass or
    block; a check that cannot be decided, or a stored audit that is not evidence, is marked
    ``rule="error"``, exit 3). ``version`` and ``digest`` are the ones given at run time;
    ``dataset`` the gate's (``req.dataset`` wins). See the module docstring."""
    base = {"metric": "(audit)", "rule": "audit", "value": None, "raw": None, "threshold": None, "severity": "block"}
    try:
        want, want_digest, on = _wanted(req, version, digest, dataset)
        who = f"generator {req.generator!r} version {want!r} on dataset {on!r}"
        row, decision, result = _last_audit(req, history, want, on, who)
        run = f"run {str(row.get('run_id'))[:64]}"
        claim, runs = _audit_strength(req, row, result, want_digest, f"the last audit of {who} ({run})")
    except _Answer as answer:
        if answer.rule == "error":
            return {
                **base,
                "rule": "error",
                "verdict": "block",
                "message": f"require_audit: {answer.text} (fails closed)",
            }
        return {**base, "verdict": "block", "message": answer.text}
    return {
        **base,
        "verdict": "pass",
        "message": f"the last audit of {who} ({run}) decided {decision}, re-derived from its numbers: "
        f"ε lower bound {_num(result.epsilon_lower)}"
        + ("" if claim is None else f" ≤ claimed {float(claim):g}")
        + f", {runs} runs",
    }


def _wanted(
    req: AuditRequirement, version: str | None, digest: str | None, dataset: str | None
) -> tuple[str, str, str]:
    """(the generator version, its digest, the dataset) the evidence must be for: the
    configuration's and the run's, which must agree."""
    if version is not None and not isinstance(version, str):
        raise _error(f"the generator version given at run time must be a string, got {_tname(version)}")
    want = req.version
    if version is not None and want is not None and version != want:
        raise _error(
            f"the configuration requires version {want!r} of generator {req.generator!r} but the "
            f"release names version {version!r}"
        )
    want = want if want is not None else version
    if want is None:
        raise _error(
            f"no version of generator {req.generator!r} to check; give require_audit.version or the "
            "generator version at run time"
        )
    if digest is not None and not is_digest(digest):
        raise _error("the generator digest given at run time is not a digest (64 lowercase hex characters)")
    if digest is not None and req.digest is not None and digest != req.digest:
        raise _error("the configuration's require_audit.digest differs from the generator digest given at run time")
    want_digest = req.digest or digest
    if want_digest is None:
        raise _error(
            f"no identity of generator {req.generator!r} to match; give require_audit.digest, "
            "--generator-digest, or --generator module:function (the digest privgate audit records)"
        )
    on = req.dataset or dataset
    if not on:
        raise _error("no dataset to match the audit with; give require_audit.dataset or the gate's dataset")
    return want, want_digest, on


def _last_audit(req: AuditRequirement, history: Any, want: str, on: str, who: str) -> tuple[dict, str, Any]:
    """(the stored row, its decision, its re-derived result) of the last audit of ``who``, which
    must have passed and be evidence."""
    if history is None:
        raise _error("no history store to look the audit up in")
    try:
        last = history.last_audit(req.generator, want, dataset=on)
    except Exception as exc:  # noqa: BLE001 - fails closed
        raise _error(f"cannot read the audit history: {type(exc).__name__}") from None
    if last is None:
        raise _block(f"no audit of {who} in the history")
    row = getattr(last, "row", None) or {}
    run = f"run {str(row.get('run_id'))[:64]}"
    try:
        decision = stored_decision(row)
        if decision not in ("pass", "warn"):
            raise _block(f"the last audit of {who} ({run}) decided {decision}")
        result, _ = stored_audit_problem(row)
    except Refused as exc:
        raise _error(
            f"the last audit of {who} ({run}) is not evidence: {exc}; the history was altered or "
            "corrupted — re-run the audit"
        ) from None
    return row, decision, result


def _audit_strength(
    req: AuditRequirement, row: Mapping[str, Any], result: Any, want_digest: str, what: str
) -> tuple[Any, int]:
    """(the claim checked, the runs made) once the audit is shown to be of this generator, strong
    enough to have shown a violation, and within the gate's audit rules."""
    if row.get("generator_digest") != want_digest:
        raise _block(
            f"{what} audited another generator: its digest differs from "
            "the one required (different source, arguments, or adapter settings)"
        )
    runs = int(result.design["total_runs"])
    if runs < req.min_runs:
        raise _block(f"{what} made {runs} generator runs, fewer than the {req.min_runs} require_audit.min_runs asks")
    gate_rules = req.gate_rules()
    claim = gate_rules.claimed_epsilon if gate_rules.claimed_epsilon is not None else result.claimed_epsilon
    if claim is not None:
        power = largest_showable_bound(result)
        if power <= float(claim) + _EPS:
            raise _block(
                f"{what} could not have shown a violation of the claim "
                f"ε = {float(claim):g}: its test runs show at most ε ≥ {power:.3f} even for an attack "
                "that never errs — audit with more runs"
            )
    numbers = types.SimpleNamespace(epsilon_lower=result.epsilon_lower, auc_lower=result.auc_lower)
    checks = [_rule_check(numbers, r, None if claim is None else float(claim)) for r in gate_rules.rules]
    worst = max((c.verdict for c in checks), key=_RANK.__getitem__, default="pass")
    if worst in ("block", "error"):
        why = "; ".join(c.message for c in checks if c.verdict in ("block", "error"))
        raise _block(f"{what} does not pass the gate's audit rules: {why}")
    return claim, runs
