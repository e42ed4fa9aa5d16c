"""What a gate configuration may say: its keys, severities and ``when`` values (each rule kind's
``on`` values and limits are its declaration, :mod:`privgate.gates.rule_kinds`), and the
validated form — :class:`GateConfig`, :class:`MetricGate`, :class:`Rule` — with each rule's
stable check name (:func:`check_name`).

The file format is described in :mod:`privgate.gates.config`; validating a document is
:mod:`privgate.gates.config_validate`. This module imports neither the registry nor any metric, so everything that only reads a configuration (the deciding, the plan,
the outcome, the adapters' check names) sits below them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ConfigError
from ..names import identifier
from ..options import DEFAULTS, FILE_KEYS, RunOptions, parse_options
from .rule_kinds import kind_names, rule_kind

CONFIG_VERSION = 1
SEVERITIES = ("warn", "block")
WHEN = ("always", "with_holdout", "no_holdout")
TOP_KEYS = (
    "version",
    "dataset",
    "description",
    "seed",
    "keys",
    "sensitive",
    "schema",
    "require_holdout",
    "allow_unchecked",
    "options",
    "metrics",
    "audit",
    "require_audit",
)
# a metric's own keys; the rest of its keys are rule kinds (metric_keys)
METRIC_SETTINGS = ("params", "optional", "description")
# parameters every metric accepts through the evaluation context
CONTEXT_PARAMS = ("keys", "sensitive")


@dataclass(frozen=True)
class Rule:
    """One limit of one metric: ``kind`` compares a quantity with ``limit`` at ``severity``
    (what it compares and when it fires: :mod:`privgate.gates.rules`). ``metric`` is the
    metric the rule belongs to (set when a configuration is parsed)."""

    kind: str  # a declared rule kind (privgate.gates.rule_kinds): "threshold", "baseline", …
    limit: float
    severity: str  # "warn" | "block"
    when: str = "always"
    on: str = ""  # "estimate" | "lower" | "upper" ("p_value" for test rules); "" = the kind's default
    metric: str = field(default="", compare=False)  # a rule decides alike whichever metric holds it

    def __post_init__(self) -> None:
        kind = rule_kind(self.kind)  # an unknown kind raises here, naming the known ones
        if not self.on:
            object.__setattr__(self, "on", kind.default_on)

    @property
    def name(self) -> str:
        """The rule's stable check name (:func:`check_name`), shared by every adapter."""
        return check_name(self.metric, self.kind, self.severity)

    @property
    def blocking(self) -> bool:
        return self.severity == "block"

    def applies(self, has_holdout: bool | None) -> bool:
        """Whether the rule applies to a run with / without a holdout (None: not known, every rule)."""
        from .rules import applies

        return applies(self.when, has_holdout)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "limit": self.limit, "severity": self.severity, "when": self.when, "on": self.on}


@dataclass(frozen=True)
class MetricGate:
    """A metric the gate runs: its parameters, whether it is optional, and its rules."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    optional: bool = False
    rules: tuple[Rule, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        # every rule names its metric (its check name, the adapters' checks)
        object.__setattr__(
            self, "rules", tuple(r if r.metric == self.name else replace(r, metric=self.name) for r in self.rules)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "optional": self.optional,
            "rules": [r.to_dict() for r in self.rules],
            "description": self.description,
        }


@dataclass(frozen=True)
class GateConfig:
    """A validated gate configuration (see the module docstring for the file format)."""

    dataset: str
    metrics: dict[str, MetricGate]
    version: int = CONFIG_VERSION
    seed: int = 0
    keys: list[str] | None = None
    sensitive: list[str] | None = None
    schema: dict[str, str] | None = None
    require_holdout: bool = False
    description: str = ""
    source: str | None = None
    options: RunOptions = DEFAULTS  # as given in the options: block, over privgate's defaults
    allow_unchecked: bool = False
    # generator audits (privgate.gates.audit_rules): rules for audits, a passing audit required
    audit: Any = None
    require_audit: Any = None

    @property
    def metric_names(self) -> list[str]:
        return list(self.metrics)

    def rules(self, kind: str | None = None) -> list[tuple[MetricGate, Rule]]:
        return [(m, r) for m in self.metrics.values() for r in m.rules if kind is None or r.kind == kind]

    def metrics_for(self, has_holdout: bool) -> list[str]:
        """The metrics a run with / without a holdout evaluates: those with at least one rule that
        applies to it (a metric whose rules are all ``when: with_holdout`` is not run without a
        holdout, so a holdout-only metric such as memorisation does not fail there)."""
        return [n for n, m in self.metrics.items() if any(r.applies(has_holdout) for r in m.rules)]

    @property
    def needs_baseline(self) -> bool:
        """Whether a rule compares with the holdout baseline (the evaluation computes it)."""
        return any(rule_kind(r.kind).needs_holdout for _, r in self.rules())

    @property
    def needs_history(self) -> bool:
        """Whether a rule compares with the last accepted release in the history."""
        return any(rule_kind(r.kind).needs_history for _, r in self.rules())

    def params(self) -> dict[str, dict[str, Any]]:
        """Per-metric parameters in the form ``privgate.evaluate(params=...)`` takes."""
        return {n: dict(m.params) for n, m in self.metrics.items() if m.params}

    def to_dict(self) -> dict[str, Any]:
        """Canonical form (no source path); ``options`` only when some option is set."""
        out = {
            "version": self.version,
            "dataset": self.dataset,
            "description": self.description,
            "seed": self.seed,
            "keys": self.keys,
            "sensitive": self.sensitive,
            "schema": self.schema,
            "require_holdout": self.require_holdout,
            "metrics": {n: m.to_dict() for n, m in self.metrics.items()},
        }
        if self.allow_unchecked:  # only when set: configurations without it keep their hash
            out["allow_unchecked"] = True
        if self.options.to_dict() != DEFAULTS.to_dict():
            out["options"] = self.options.to_dict()
        if self.audit is not None:
            out["audit"] = self.audit.to_dict()
        if self.require_audit is not None:
            out["require_audit"] = self.require_audit.to_dict()
        return out

    @property
    def hash(self) -> str:
        """sha256 of the canonical JSON form: two configs that decide alike hash alike. The
        thread budget is left out (scores do not depend on it, docs/performance.md "Threads"); exact
        searches and a sample change scores, so they count when set (the default ``sample: auto``
        is left out: configurations written before it existed keep their hash)."""
        form = self.to_dict()
        opts = form.pop("options", None)
        if opts and (opts["exact"] or opts["sample_real"] is not None or opts["sample"] != "auto"):
            form["options"] = {"exact": opts["exact"], "sample_real": opts["sample_real"]}
            if opts["sample"] != "auto":
                form["options"]["sample"] = opts["sample"]
        text = json.dumps(form, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def with_dataset(self, dataset: str) -> "GateConfig":
        _check_name("dataset", dataset)
        return GateConfig(**{**self.__dict__, "dataset": dataset})

    def with_options(self, options: RunOptions | None = None, **overrides: Any) -> "GateConfig":
        """This configuration with the run options given in ``options`` and in ``overrides``
        (``threads``, ``exact``, ``sample_real``, ``sample``, ``deadline``, ``memory_limit``; None:
        keep) in place of its own — what ``privgate gate``'s flags, ``run_gate``'s arguments and
        the Dagster resource do. An invalid override raises ConfigError naming ``options.<key>``."""
        given = parse_options({k: v for k, v in overrides.items() if v is not None}, keys=FILE_KEYS)
        base = options.over(self.options) if options is not None else self.options
        return GateConfig(**{**self.__dict__, "options": given.over(base)})


def metric_keys() -> tuple[str, ...]:
    """The keys a metric's entry may hold: its settings and one per declared rule kind."""
    return METRIC_SETTINGS + kind_names()


def _check_name(where: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise ConfigError(f"{where}: must be a non-empty string of at most 200 characters, got {value!r}")


def check_name(metric: str, kind: str, severity: str) -> str:
    """The stable name of one gate rule as a check, shared by every adapter (Dagster asset checks,
    GX expectations built from a gate config): ``<metric>__<kind>_<severity>``, e.g.
    ``common_rows__threshold_block``; the double underscore separates the metric's own name."""
    return f"{identifier(metric)}__{kind}_{severity}"
