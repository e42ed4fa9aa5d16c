"""A release gate's ``require_audit``: the check that the history holds evidence that the
generator which made the release passed its audit (:func:`requirement_check`).

It sits above both modules it reads: :mod:`privgate.gates.audit_rules` (what a requirement says,
how an audit's numbers are compared with rules) and :mod:`privgate.gates.audit_evidence` (whether
a stored audit row is evidence, re-derived from its numbers), so neither of those imports the
other back. See :mod:`privgate.gates.audit_rules` for what the check decides.
"""

from __future__ import annotations

import types
from typing import Any

from ..audit.identity import is_digest
from ..errors import type_name as _tname
from .audit_evidence import Refused, largest_showable_bound, stored_audit_problem, stored_decision
from .audit_rules import _EPS, _RANK, AuditRequirement, _num, _rule_check



def requirement_check(req: AuditRequirement, history: Any, version: str | None, *,
                      digest: str | None = None, dataset: str | None = None) -> dict[str, Any]:
    """Whether the history holds evidence that the generator passed its audit (the keyword
    arguments of a :class:`~privgate.gates.checks.GateCheck` of rule ``audit``: verdict pass or
    block; a check that cannot be decided, or a stored audit that is not evidence, is marked
    ``rule="error"``, exit 3). ``version`` and ``digest`` are the ones given at run time;
    ``dataset`` the gate's (``req.dataset`` wins). See the module docstring."""
    base = {"metric": "(audit)", "rule": "audit", "value": None, "raw": None, "threshold": None,
            "severity": "block"}

    def error(text: str) -> dict[str, Any]:
        return {**base, "rule": "error", "verdict": "block", "message": f"require_audit: {text} (fails closed)"}

    def block(text: str) -> dict[str, Any]:
        return {**base, "verdict": "block", "message": text}

    if version is not None and not isinstance(version, str):
        return error(f"the generator version given at run time must be a string, got {_tname(version)}")
    want = req.version
    if version is not None and want is not None and version != want:
        return error(f"the configuration requires version {want!r} of generator {req.generator!r} but the "
                     f"release names version {version!r}")
    want = want if want is not None else version
    if want is None:
        return error(f"no version of generator {req.generator!r} to check; give require_audit.version or the "
                     "generator version at run time")
    if digest is not None and not is_digest(digest):
        return error("the generator digest given at run time is not a digest (64 lowercase hex characters)")
    if digest is not None and req.digest is not None and digest != req.digest:
        return error("the configuration's require_audit.digest differs from the generator digest given at "
                     "run time")
    want_digest = req.digest or digest
    if want_digest is None:
        return error(f"no identity of generator {req.generator!r} to match; give require_audit.digest, "
                     "--generator-digest, or --generator module:function (the digest privgate audit records)")
    on = req.dataset or dataset
    if not on:
        return error("no dataset to match the audit with; give require_audit.dataset or the gate's dataset")
    if history is None:
        return error("no history store to look the audit up in")
    try:
        last = history.last_audit(req.generator, want, dataset=on)
    except Exception as exc:  # noqa: BLE001 - fails closed
        return error(f"cannot read the audit history: {type(exc).__name__}")
    who = f"generator {req.generator!r} version {want!r} on dataset {on!r}"
    if last is None:
        return block(f"no audit of {who} in the history")
    row = getattr(last, "row", None) or {}
    run = f"run {str(row.get('run_id'))[:64]}"
    try:
        decision = stored_decision(row)
        if decision not in ("pass", "warn"):
            return block(f"the last audit of {who} ({run}) decided {decision}")
        result, _ = stored_audit_problem(row)
    except Refused as exc:
        return error(f"the last audit of {who} ({run}) is not evidence: {exc}; the history was altered or "
                     "corrupted — re-run the audit")
    if row.get("generator_digest") != want_digest:
        return block(f"the last audit of {who} ({run}) audited another generator: its digest differs from "
                     "the one required (different source, arguments, or adapter settings)")
    runs = int(result.design["total_runs"])
    if runs < req.min_runs:
        return block(f"the last audit of {who} ({run}) made {runs} generator runs, fewer than the "
                     f"{req.min_runs} require_audit.min_runs asks")
    gate_rules = req.gate_rules()
    claim = gate_rules.claimed_epsilon if gate_rules.claimed_epsilon is not None else result.claimed_epsilon
    if claim is not None:
        power = largest_showable_bound(result)
        if power <= float(claim) + _EPS:
            return block(f"the last audit of {who} ({run}) could not have shown a violation of the claim "
                         f"ε = {float(claim):g}: its test runs show at most ε ≥ {power:.3f} even for an attack "
                         "that never errs — audit with more runs")
    numbers = types.SimpleNamespace(epsilon_lower=result.epsilon_lower, auc_lower=result.auc_lower)
    checks = [_rule_check(numbers, r, None if claim is None else float(claim)) for r in gate_rules.rules]
    worst = max((c.verdict for c in checks), key=_RANK.__getitem__, default="pass")
    if worst in ("block", "error"):
        why = "; ".join(c.message for c in checks if c.verdict in ("block", "error"))
        return block(f"the last audit of {who} ({run}) does not pass the gate's audit rules: {why}")
    return {**base, "verdict": "pass",
            "message": f"the last audit of {who} ({run}) decided {decision}, re-derived from its numbers: "
                       f"ε lower bound {_num(result.epsilon_lower)}"
                       + ("" if claim is None else f" ≤ claimed {float(claim):g}") + f", {runs} runs"}
