"""Gate rules for generator audits: decide pass / warn / block on an
:class:`~privgate.audit.AuditResult`, and the release gate's requirement of a passing audit.

An audit configuration is an ``audit:`` block in a gate configuration file, or a file of its own
(YAML or TOML; either the block's keys at the top level or under ``audit:``)::

    audit:
      claimed_epsilon: 1.0          # the generator's DP claim (default: the one the audit carries)
      delta: 0.0                    # the claim's δ (default: the audit's)
      rules:
        epsilon: {block: claimed}   # ε lower bound > the claimed ε: a proven DP violation
        auc_lower: {warn: 0.6, block: 0.8}   # a target's corrected AUC lower bound > limit

Rules (each a mapping severity → limit, or a bare number meaning a ``block`` limit):

- ``epsilon``: the audit's empirical ε lower bound (``epsilon_lower``, at the audit's δ and
  confidence for the whole audit: the most promising target and attack tested alone at
  half the error probability, every pair corrected for their number with the other half) must not exceed the limit. A limit
  is a number ≥ 0 or the word ``claimed`` (the claimed ε). The bound exceeds a true ε in at most
  1 − confidence of audits (Jagielski et al., NeurIPS 2020; Nasr et al., IEEE S&P 2021), so a
  ``block: claimed`` rule fires on a proven violation, never on a generator that keeps its claim
  except with that small probability.
- ``auc_lower``: the largest lower end of a target's membership-AUC interval (Bonferroni-corrected
  over targets and attacks) must not exceed the limit, a number in [0, 1]: with it above 0.5 some
  attack tells with the stated confidence whether a target was in the training data (Meeus et al.,
  "Achilles' Heels", ESORICS 2023; Stadler et al., USENIX Security 2022).

Without a configuration the default applies: ``epsilon: {block: claimed}`` (not evaluated when
neither the configuration nor the audit states a claim) and ``auc_lower: {warn: 0.6, block: 0.8}``.

Audits fail closed (exit code 3, decision ``error``, never accepted): an audit that checked
nothing (no target could be audited), a compared number that is not finite, a ``claimed`` limit
with no claim to compare with, or a configuration claim / δ that differs from the one the audit
was computed at.

A release gate requires a passing audit with ``require_audit`` in its configuration::

    require_audit:
      generator: my-generator       # the name the audit was recorded under
      version: "2.1"                # a string (a YAML number is refused); optional: else given at
                                    # run time (run_gate(generator_version=), --generator-version)
      digest: <64 hex>              # optional: else run_gate(generator_digest=), --generator-digest,
                                    # or privgate gate --generator module:name
      dataset: adult                # optional: the dataset the audit ran on (default: the gate's)
      min_runs: 100                 # optional: the fewest generator runs (DEFAULT_MIN_RUNS)
      claimed_epsilon: 1.0          # optional: the claim held to (default: the audit's)
      rules: {auc_lower: {block: 0.8}}   # optional: limits on the audit's numbers (default rules)

:func:`privgate.gates.require_audit.requirement_check` reads the most recent audit of that
generator version on that dataset and passes only when its stored row is evidence
(:mod:`privgate.gates.audit_evidence`: the decision re-derived from its error counts and rules;
else exit 3), its generator digest
(:mod:`privgate.audit.identity`) is the one required, it made at least ``min_runs`` runs whose
test runs could show a bound above the claim, and its ε / AUC lower bounds pass the
requirement's rules; else the release blocks (exit 2). It cannot decide (exit 3) without a
history store, a version, a digest or a dataset, or when the history cannot be read. The check is
about the generator: it never makes a run count as having checked the release.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, bounded_number
from ..errors import type_name as _tname
from ..finite import finite_or_none

AUDIT_RULE_KINDS = ("epsilon", "auc_lower")
# the largest DP claim an audit configuration states: far beyond any bound an audit can show
MAX_CLAIMED_EPSILON = 1000.0
AUDIT_KEYS = ("claimed_epsilon", "delta", "rules", "description")
REQUIRE_KEYS = ("generator", "version", "digest", "dataset", "min_runs", "claimed_epsilon", "rules")
#: the fewest generator runs an audit must have made to satisfy ``require_audit`` by default
#: (half an audit of the default size, :data:`privgate.audit.plan.DEFAULT_RUNS`)
DEFAULT_MIN_RUNS = 100
SEVERITIES = ("warn", "block")
EXIT_CODES: dict[str, int] = {"pass": 0, "warn": 1, "block": 2, "error": 3}
_RANK = {"pass": 0, "warn": 1, "block": 2, "error": 3}
_EPS = 1e-12
CLAIMED = "claimed"
_WORDS = {"epsilon": "ε lower bound", "auc_lower": "largest corrected AUC lower bound"}


@dataclass(frozen=True)
class AuditRule:
    """One limit on one audit quantity: ``kind`` (epsilon | auc_lower) compared with ``limit``
    (None with ``claimed``: the claimed ε) at ``severity``. ``needs_claim``: a ``claimed`` limit
    without a claim fails closed (True) or is not evaluated (False, the default configuration)."""

    kind: str
    severity: str
    limit: float | None = None
    claimed: bool = False
    needs_claim: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "limit": CLAIMED if self.claimed else self.limit}


@dataclass(frozen=True)
class AuditConfig:
    """A validated audit configuration (see the module docstring)."""

    rules: tuple[AuditRule, ...]
    claimed_epsilon: float | None = None
    delta: float | None = None
    description: str = ""
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        rules: dict[str, dict[str, Any]] = {}
        for r in self.rules:
            rules.setdefault(r.kind, {})[r.severity] = CLAIMED if r.claimed else r.limit
        return {
            "claimed_epsilon": self.claimed_epsilon,
            "delta": self.delta,
            "rules": rules,
            "description": self.description,
        }

    @property
    def hash(self) -> str:
        """sha256 of the canonical JSON form."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AuditRequirement:
    """A release gate's requirement (see the module docstring): the most recent audit of
    ``generator`` at ``version`` (or the version given at run time) on ``dataset`` (default: the
    gate's) holds evidence — its stored decision re-derived from its numbers — of the generator
    whose digest is ``digest`` (or the one given at run time), made with at least ``min_runs``
    runs that could show a bound above the claim (``claimed_epsilon``, default: the audit's),
    and its numbers pass ``rules`` (default: the default audit rules)."""

    generator: str
    version: str | None = None
    digest: str | None = None
    dataset: str | None = None
    min_runs: int = DEFAULT_MIN_RUNS
    claimed_epsilon: float | None = None
    rules: tuple[AuditRule, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"generator": self.generator, "version": self.version}
        for k in ("digest", "dataset", "claimed_epsilon"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        out["min_runs"] = self.min_runs
        if self.rules is not None:
            out["rules"] = AuditConfig(rules=self.rules).to_dict()["rules"]
        return out

    def gate_rules(self) -> AuditConfig:
        """The rules the audit's stored numbers must pass, with the requirement's claim."""
        rules = self.rules if self.rules is not None else default_audit_config().rules
        return AuditConfig(rules=rules, claimed_epsilon=self.claimed_epsilon)


def default_audit_config() -> AuditConfig:
    """``epsilon: {block: claimed}`` (skipped without a claim) and ``auc_lower: {warn: 0.6,
    block: 0.8}``."""
    return AuditConfig(
        rules=(
            AuditRule("epsilon", "block", None, claimed=True, needs_claim=False),
            AuditRule("auc_lower", "warn", 0.6),
            AuditRule("auc_lower", "block", 0.8),
        )
    )


# ---------------------------------------------------------------------------------------------
# parsing


def parse_audit_config(data: Any, *, where: str = "audit") -> AuditConfig:
    """Validate an audit block (a mapping; a document with an ``audit:`` key is read from it).
    Errors are :class:`ConfigError` naming the key (``audit.rules.epsilon.block``)."""
    if isinstance(data, AuditConfig):
        return data
    if data is None:
        raise ConfigError(f"{where}: the audit configuration is empty")
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: must be a mapping with {', '.join(AUDIT_KEYS)}, got {_tname(data)}")
    if "audit" in data:
        return parse_audit_config(data["audit"], where=where)
    unknown = [k for k in data if k not in AUDIT_KEYS]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(AUDIT_KEYS)}")
    claimed = data.get("claimed_epsilon")
    if claimed is not None:
        claimed = bounded_number(f"{where}.claimed_epsilon", claimed, 0.0, MAX_CLAIMED_EPSILON)
    delta = data.get("delta")
    if delta is not None:
        delta = bounded_number(f"{where}.delta", delta, 0.0, 1.0)
        if delta >= 1.0:
            raise ConfigError(f"{where}.delta: must be in [0, 1), got {data.get('delta')!r}")
    description = data.get("description", "") or ""
    if not isinstance(description, str):
        raise ConfigError(f"{where}.description: must be a string, got {_tname(description)}")
    raw = data.get("rules")
    # a block giving only the claim (and δ) keeps the default rules: the claim is what it adds
    rules = default_audit_config().rules if raw is None else _parse_rules(where, raw)
    return AuditConfig(rules=rules, claimed_epsilon=claimed, delta=delta, description=description)


def _parse_rules(where: str, raw: Any) -> tuple[AuditRule, ...]:
    """A ``rules`` block: a non-empty mapping rule kind → limits, each kind one privgate knows."""
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(
            f"{where}.rules: must be a non-empty mapping rule → limits "
            f"({', '.join(AUDIT_RULE_KINDS)}), got {_tname(raw)}"
        )
    rules: list[AuditRule] = []
    for kind, spec in raw.items():
        if kind not in AUDIT_RULE_KINDS:
            raise ConfigError(f"{where}.rules.{kind}: unknown rule; allowed: {', '.join(AUDIT_RULE_KINDS)}")
        rules.extend(_parse_rule(f"{where}.rules.{kind}", kind, spec))
    return tuple(rules)


def _parse_rule(where: str, kind: str, spec: Any) -> list[AuditRule]:
    if not isinstance(spec, Mapping):
        spec = {"block": spec}
    unknown = [k for k in spec if k not in SEVERITIES]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed: warn, block")
    out = []
    for sev in SEVERITIES:
        if sev not in spec:
            continue
        x = spec[sev]
        if kind == "epsilon" and x == CLAIMED:
            out.append(AuditRule(kind, sev, None, claimed=True))
            continue
        hi = math.inf if kind == "epsilon" else 1.0
        what = "a number ≥ 0 or 'claimed'" if kind == "epsilon" else "a number in [0, 1]"
        if isinstance(x, str):
            raise ConfigError(f"{where}.{sev}: the limit must be {what}, got {x!r}")
        out.append(AuditRule(kind, sev, bounded_number(f"{where}.{sev}", x, 0.0, hi, what)))
    if not out:
        raise ConfigError(f"{where}: give a warn and/or block limit")
    if len(out) == 2 and not any(r.claimed for r in out) and out[0].limit > out[1].limit:
        raise ConfigError(
            f"{where}.warn: the warn limit {out[0].limit:g} is above the block limit "
            f"{out[1].limit:g}; warn must be ≤ block"
        )
    return out


def parse_requirement(data: Any, *, where: str = "require_audit") -> AuditRequirement:
    """Validate a ``require_audit`` block (a mapping of :data:`REQUIRE_KEYS`; only
    ``generator`` is required) or a bare generator name. ``version`` must be a string: a YAML
    number (``2.10`` read as 2.1) is refused."""
    if isinstance(data, AuditRequirement):
        return data
    if isinstance(data, str):
        data = {"generator": data}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: must be a mapping with generator (and version), got {_tname(data)}")
    unknown = [k for k in data if k not in REQUIRE_KEYS]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(REQUIRE_KEYS)}")
    gen = data.get("generator")
    if not isinstance(gen, str) or not gen.strip() or len(gen) > 200:
        raise ConfigError(
            f"{where}.generator: must be the generator's name (a non-empty string of at most "
            f"200 characters), got {_tname(gen)}"
        )
    version = data.get("version")
    if version is not None:
        _check_required_version(where, version)
    digest = data.get("digest")
    if digest is not None:
        _check_required_digest(where, digest)
    dataset = data.get("dataset")
    if dataset is not None and (not isinstance(dataset, str) or not dataset.strip() or len(dataset) > 200):
        raise ConfigError(
            f"{where}.dataset: must be a dataset name (a non-empty string of at most 200 "
            f"characters), got {_tname(dataset)}"
        )
    min_runs = data.get("min_runs", DEFAULT_MIN_RUNS)
    if isinstance(min_runs, bool) or not isinstance(min_runs, int) or not 1 <= min_runs <= 10**9:
        raise ConfigError(
            f"{where}.min_runs: must be a whole number of generator runs in [1, 10^9], got {_tname(min_runs)}"
        )
    claimed = data.get("claimed_epsilon")
    if claimed is not None:
        claimed = bounded_number(f"{where}.claimed_epsilon", claimed, 0.0, 1e6, "a finite number in [0, 1e6]")
    rules = None if data.get("rules") is None else _parse_rules(where, data["rules"])
    return AuditRequirement(
        generator=gen,
        version=version,
        digest=digest,
        dataset=dataset,
        min_runs=min_runs,
        claimed_epsilon=claimed,
        rules=rules,
    )


def _check_required_version(where: str, version: Any) -> None:
    """Refuse a required version that is not a non-empty string of at most 100 characters."""
    if not isinstance(version, str):
        raise ConfigError(
            f"{where}.version: must be a version string, got {_tname(version)}"
            + (
                '; quote it ("2.10"): a YAML number loses digits (2.10 is read as 2.1)'
                if isinstance(version, (int, float)) and not isinstance(version, bool)
                else ""
            )
        )
    if not version.strip() or len(version) > 100:
        raise ConfigError(f"{where}.version: must be a non-empty string of at most 100 characters")


def _check_required_digest(where: str, digest: Any) -> None:
    """Refuse a required digest that is not a generator digest as privgate audit records it."""
    from ..audit.identity import is_digest

    if not is_digest(digest):
        raise ConfigError(
            f"{where}.digest: must be a generator digest (64 lowercase hex characters, as "
            f"privgate audit records it), got {_tname(digest)}"
        )


def load_audit_config(path: str | Path) -> AuditConfig:
    """Read the audit block of a YAML or TOML file (its own file, or a gate configuration with an
    ``audit:`` block)."""
    from ..config_files import read_config_file

    p = Path(path)
    data = read_config_file(p, what="audit config")
    if isinstance(data, Mapping) and "metrics" in data and "audit" not in data:
        raise ConfigError(f"audit: missing; {p} is a gate configuration without an audit block")
    cfg = parse_audit_config(data)
    return AuditConfig(**{**cfg.__dict__, "source": str(p)})


# ---------------------------------------------------------------------------------------------
# deciding


@dataclass
class AuditCheck:
    """One audit rule evaluated (or one reason the audit cannot be decided: ``rule="error"``):
    ``compared`` is the number compared with ``limit``."""

    rule: str  # "epsilon" | "auc_lower" | "error"
    severity: str
    verdict: str  # "pass" | "warn" | "block" | "error"
    compared: float | None = None
    limit: float | None = None
    limit_is_claim: bool = False
    skipped: bool = False
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class AuditOutcome:
    """An audit decided: the checks, the decision (pass / warn / block / error) and exit code
    (0 / 1 / 2 / 3), the audit's result and what it was recorded under."""

    decision: str
    exit_code: int
    checks: list[AuditCheck]
    result: Any
    config: AuditConfig
    claimed_epsilon: float | None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    dataset: str | None = None
    recorded: bool = False

    @property
    def accepted(self) -> bool:
        """A passing audit: pass or warn."""
        return self.decision in ("pass", "warn")

    @property
    def generator(self) -> str | None:
        return (getattr(self.result, "generator", None) or {}).get("name")

    @property
    def generator_version(self) -> str | None:
        v = (getattr(self.result, "generator", None) or {}).get("version")
        return None if v is None else str(v)

    @property
    def generator_digest(self) -> str | None:
        """The audited generator's digest (:mod:`privgate.audit.identity`), what a release gate's
        ``require_audit`` matches; None when the generator has none."""
        d = (getattr(self.result, "generator", None) or {}).get("digest")
        return d if isinstance(d, str) else None

    def to_dict(self, *, roc: bool = True) -> dict[str, Any]:
        res = self.result.to_dict() if hasattr(self.result, "to_dict") else None
        if res is not None and not roc:
            res.pop("roc", None)
        return _finite(
            {
                "run_id": self.run_id,
                "created_at": self.created_at.isoformat(),
                "dataset": self.dataset,
                "generator": self.generator,
                "generator_version": self.generator_version,
                "generator_digest": self.generator_digest,
                "decision": self.decision,
                "exit_code": self.exit_code,
                "accepted": self.accepted,
                "claimed_epsilon": self.claimed_epsilon,
                "config": self.config.to_dict(),
                "config_hash": self.config.hash,
                "checks": [c.to_dict() for c in self.checks],
                "result": res,
            }
        )

    def table(self) -> str:
        """The audit's checks as plain text (at most 100 characters wide; what a rule said in
        full below the table when it cannot decide), then the decision line."""
        from ..text_tables import format_table

        rows, notes = [], []
        for c in self.checks:
            if c.verdict == "error":
                note = "cannot decide: see below"
                notes.append(f"  {c.rule}: {c.message}")
            elif c.skipped:
                note = c.message[:48]
            elif c.verdict == "pass":
                note = ""
            else:
                note = "DP violation proven" if c.rule == "epsilon" and c.limit_is_claim else "above the limit"
            rows.append(
                (
                    c.rule,
                    _num(c.compared),
                    ("claimed " if c.limit_is_claim else "") + _num(c.limit),
                    c.severity,
                    c.verdict.upper() if c.verdict != "pass" else "pass",
                    note,
                )
            )
        lines = format_table(("rule", "compared", "limit", "severity", "verdict", "note"), rows).splitlines()
        label = {0: "PASS", 1: "WARN", 2: "BLOCK", 3: "ERROR (the audit cannot be decided; fails closed)"}
        lines += notes + [
            "",
            f"generator: {self.generator!r}, version {self.generator_version!r}"[:100],
            f"generator digest: {self.generator_digest or 'none (no require_audit can match it)'}",
            f"decision: {label[self.exit_code]}  (exit code {self.exit_code})",
        ]
        return "\n".join(line.rstrip() for line in lines)


def decide_audit(
    result: Any, config: AuditConfig | Mapping[str, Any] | None = None, *, dataset: str | None = None
) -> AuditOutcome:
    """Decide an audit: compare ``result`` (an :class:`~privgate.audit.AuditResult`) with the
    rules of ``config`` (default: :func:`default_audit_config`). Pure; fails closed (see the
    module docstring). An invalid ``config`` raises :class:`ConfigError`."""
    cfg = default_audit_config() if config is None else parse_audit_config(config)
    checks: list[AuditCheck] = []
    claim = _claim(result, cfg, checks)
    if not checks:
        if bool(getattr(result, "checked_nothing", True)):
            checks.append(_error("no target could be audited: the audit proves nothing either way"))
        if (
            cfg.delta is not None
            and finite_or_none(getattr(result, "delta", None)) is not None
            and abs(float(result.delta) - cfg.delta) > _EPS
        ):
            checks.append(
                _error(
                    f"the configuration's δ = {cfg.delta:g} differs from the δ the audit's bound "
                    f"holds at ({float(result.delta):g})"
                )
            )
    if not checks:
        for rule in cfg.rules:
            checks.append(_rule_check(result, rule, claim))
    worst = max((c.verdict for c in checks), key=_RANK.__getitem__, default="pass")
    return AuditOutcome(
        decision=worst,
        exit_code=EXIT_CODES[worst],
        checks=checks,
        result=result,
        config=cfg,
        claimed_epsilon=claim,
        dataset=dataset,
    )


def _claim(result: Any, cfg: AuditConfig, checks: list[AuditCheck]) -> float | None:
    if not hasattr(result, "epsilon_lower") or not hasattr(result, "targets"):
        checks.append(_error(f"not an audit result: {type(result).__name__}"))
        return cfg.claimed_epsilon
    theirs = getattr(result, "claimed_epsilon", None)
    if theirs is not None and finite_or_none(theirs) is None:
        checks.append(_error("the audit's claimed ε is not a finite number"))
        return None
    if cfg.claimed_epsilon is not None and theirs is not None and abs(float(theirs) - cfg.claimed_epsilon) > _EPS:
        checks.append(
            _error(
                f"claimed_epsilon: the configuration claims ε = {cfg.claimed_epsilon:g} but the "
                f"audit was run for a claim of {float(theirs):g} (--claimed-epsilon); give one claim"
            )
        )
    return cfg.claimed_epsilon if cfg.claimed_epsilon is not None else (None if theirs is None else float(theirs))


def _rule_check(result: Any, rule: AuditRule, claim: float | None) -> AuditCheck:
    name = "epsilon_lower" if rule.kind == "epsilon" else "auc_lower"
    value = finite_or_none(getattr(result, name, None))
    if rule.claimed:
        if claim is None:
            if not rule.needs_claim:
                return AuditCheck(
                    rule.kind,
                    rule.severity,
                    "pass",
                    compared=value,
                    limit_is_claim=True,
                    skipped=True,
                    message="no claimed ε given: the DP claim is not checked",
                )
            return _error(
                f"rules.{rule.kind}.{rule.severity} compares with the claimed ε and no claim was "
                "given (claimed_epsilon in the configuration or the audit)",
                rule,
            )
        limit = claim
    else:
        limit = float(rule.limit)
    if value is None:
        return _error(f"the audit's {_WORDS[rule.kind]} ({name}) is not a finite number", rule)
    fired = value > limit + _EPS
    verdict = rule.severity if fired else "pass"
    what = f"{_WORDS[rule.kind]} {value:.4f} {'>' if fired else '≤'} {'claimed ε ' if rule.claimed else ''}{limit:g}"
    if fired and rule.kind == "epsilon":
        what += (
            ": a DP violation (proven at the audit's confidence)"
            if rule.claimed
            else ": the generator leaks more than this limit allows"
        )
    return AuditCheck(
        rule.kind, rule.severity, verdict, compared=value, limit=limit, limit_is_claim=rule.claimed, message=what
    )


def _error(message: str, rule: AuditRule | None = None) -> AuditCheck:
    return AuditCheck("error" if rule is None else rule.kind, "block", "error", message=f"{message} (fails closed)")


# ---------------------------------------------------------------------------------------------


def _num(x: Any) -> str:
    v = finite_or_none(x)
    return "-" if v is None else f"{v:.4f}"


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x
