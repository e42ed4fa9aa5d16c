"""Gate configuration: which metrics run, with which parameters, and the rules that decide.

A configuration is a YAML (``.yaml`` / ``.yml``) or TOML (``.toml``) file, or the equivalent
dict, validated here; every error is a :class:`~privgate.errors.ConfigError` whose message
starts with the dotted path of the offending key (``metrics.common_rows.threshold.block``)::

    version: 1
    dataset: adult-census
    seed: 0
    keys: [age, sex, race]          # optional, passed to every metric that uses keys
    sensitive: [income]             # optional
    require_holdout: false          # true: a missing holdout blocks the release
    allow_unchecked: false          # true: a run in which no rule could be evaluated may pass
    options:                        # optional run options (the CLI / Dagster resource override them)
      threads: 2                    # thread budget (default: $PRIVGATE_THREADS or the free cores)
      exact: false                  # true: exact neighbour searches at every size
      sample_real: 100000           # estimate per-real-record means on a sample of this many records
      sample: auto                  # query-record sampling of both sides: auto (default: only a side of
                                    # more than 200,000 rows, 50,000 sampled), off, or N per side
      deadline: 21600               # seconds before the run is stopped and blocked (default 6 hours)
    metrics:
      common_rows:
        threshold: {warn: 0.0, block: 0.01}       # value > limit fires
      memorisation:
        threshold: {on: lower, warn: 0.0, block: 0.01}   # the interval's lower bound > limit
        test: {warn: 0.01}                         # p-value < limit fires
      authenticity:
        baseline: {warn: 0.05, block: 0.10}       # value − holdout baseline > limit fires
        trend: {warn: 0.05}                        # value − last accepted release's value > limit
      disclosure_identity:
        optional: true                             # an error here does not block
        params: {keys: [age, sex]}
        threshold: {max: 0.2, severity: warn, when: no_holdout}

Rule kinds (each a mapping of severity → limit, or ``{max, severity, when, on}``, or a bare number
meaning a ``block`` limit):

- ``threshold``: the metric's ``value`` (risk in [0, 1]) must not exceed the limit.
- ``baseline``: ``excess`` = value − the same metric computed with a holdout sample of the
  release's size in place of the synthetic set must not exceed the limit (needs a holdout; skipped
  without one unless ``require_holdout`` is true).
- ``trend``: value − the value of the last accepted release of the same dataset must not exceed
  the limit (needs a history store; skipped for the first release).
- ``test``: the metric's ``p_value`` (a metric that is a hypothesis test, e.g. memorisation) must
  not fall strictly below the limit, e.g. ``memorisation: {test: {block: 0.01}}``; a warn limit
  is ≥ the block limit.

``on`` (threshold and baseline rules) says what is compared: ``estimate`` (default: the value,
or the excess), ``lower`` or ``upper`` (that end of the 95 % interval: ``ci`` for threshold rules,
``excess_ci`` for baseline rules). ``on: lower`` fires only when the evidence puts the quantity
above the limit; a rule asking for an interval or p-value the result does not have blocks (fails
closed).

``when`` restricts a rule to runs ``with_holdout`` or ``no_holdout`` (default ``always``), so a
configuration can use raw thresholds when no holdout exists and holdout-relative rules when one
is given (see ``docs/gates.md`` and ``docs/validity.md``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from ..errors import type_name as _tname
from ..names import identifier
from ..options import DEFAULTS, FILE_KEYS, MAX_SEED, RunOptions, parse_options

CONFIG_VERSION = 1
SEVERITIES = ("warn", "block")
RULE_KINDS = ("threshold", "baseline", "trend", "test")
WHEN = ("always", "with_holdout", "no_holdout")
# what a threshold or baseline rule compares: the point value (excess), or an end of its interval
ON = ("estimate", "lower", "upper")
DEFAULT_ON = "estimate"
# the quantity each rule kind may compare (`on`), and the range of its limits
ON_BY_KIND = {"threshold": ON, "baseline": ON, "trend": ("estimate",), "test": ("p_value",)}
LIMITS_BY_KIND = {"threshold": (0.0, 1.0), "baseline": (-1.0, 1.0), "trend": (-1.0, 1.0), "test": (0.0, 1.0)}
TOP_KEYS = ("version", "dataset", "description", "seed", "keys", "sensitive", "schema",
            "require_holdout", "allow_unchecked", "options", "metrics", "audit", "require_audit")
METRIC_KEYS = ("params", "optional", "description") + RULE_KINDS
# parameters every metric accepts through the evaluation context
CONTEXT_PARAMS = ("keys", "sensitive")


@dataclass(frozen=True)
class Rule:
    """One limit of one metric: ``kind`` compares a quantity with ``limit`` at ``severity``
    (what it compares and when it fires: :mod:`privgate.gates.rules`). ``metric`` is the
    metric the rule belongs to (set when a configuration is parsed)."""

    kind: str          # "threshold" | "baseline" | "trend" | "test"
    limit: float
    severity: str      # "warn" | "block"
    when: str = "always"
    on: str = ""       # "estimate" | "lower" | "upper" ("p_value" for test rules); "" = the kind's default
    metric: str = field(default="", compare=False)  # a rule decides alike whichever metric holds it

    def __post_init__(self) -> None:
        if not self.on:
            object.__setattr__(self, "on", "p_value" if self.kind == "test" else DEFAULT_ON)

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
        return {"kind": self.kind, "limit": self.limit, "severity": self.severity, "when": self.when,
                "on": self.on}


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
        object.__setattr__(self, "rules", tuple(r if r.metric == self.name else replace(r, metric=self.name)
                                                for r in self.rules))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": self.params, "optional": self.optional,
                "rules": [r.to_dict() for r in self.rules], "description": self.description}


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
        return bool(self.rules("baseline"))

    @property
    def needs_history(self) -> bool:
        return bool(self.rules("trend"))

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
        thread budget is left out (scores do not depend on it, docs/performance.md); exact
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


# ---------------------------------------------------------------------------------------------
# loading


def load_gate_config(path: str | Path, *, check_metrics: bool = True) -> GateConfig:
    """Read and validate a YAML or TOML gate configuration file.

    Raises :class:`ConfigError` when the file is missing, cannot be parsed, sets a key twice (merge
    keys included: :mod:`privgate.config_files`) or any key is invalid (the message names the key).
    """
    from ..config_files import read_config_file

    p = Path(path)
    data = read_config_file(p, what="config")
    cfg = parse_gate_config(data, check_metrics=check_metrics)
    return GateConfig(**{**cfg.__dict__, "source": str(p)})


def resolve_gate_config(cfg: Any, dataset: str | None = None) -> GateConfig:
    """The gate configuration ``cfg`` — a :class:`GateConfig`, a path to a YAML / TOML file or the
    parsed dict — with ``dataset`` (when given) in place of its own. The one way every caller
    (the gate run, the GX suite, the Dagster resource) turns what it was given into a
    configuration; raises :class:`ConfigError` naming the offending key."""
    if isinstance(cfg, GateConfig):
        config = cfg
    elif isinstance(cfg, (str, os.PathLike)):
        config = load_gate_config(cfg)
    else:
        config = parse_gate_config(cfg)
    return config.with_dataset(dataset) if dataset else config


def parse_gate_config(data: Any, *, check_metrics: bool = True) -> GateConfig:
    """Validate a configuration given as a dict (the parsed YAML/TOML document).

    ``check_metrics`` checks metric names against the registry and parameter names against each
    metric's signature.
    """
    if data is None:
        raise ConfigError("config: the configuration is empty")
    if not isinstance(data, Mapping):
        raise ConfigError(f"config: the top level must be a mapping, got {_tname(data)}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown key; allowed top-level keys: {', '.join(TOP_KEYS)}")
    top = _parse_top(data)
    options = parse_options(data.get("options")).with_defaults()

    raw_metrics = data.get("metrics")
    if raw_metrics is None:
        raise ConfigError("metrics: missing; the configuration must list at least one metric")
    if not isinstance(raw_metrics, Mapping) or not raw_metrics:
        raise ConfigError("metrics: must be a non-empty mapping metric name → rules")
    known = _known_metrics() if check_metrics else None
    metrics: dict[str, MetricGate] = {}
    for name, body in raw_metrics.items():
        metrics[str(name)] = _parse_metric(str(name), body, known)

    from .audit_rules import parse_audit_config, parse_requirement

    audit = parse_audit_config(data["audit"]) if data.get("audit") is not None else None
    require_audit = parse_requirement(data["require_audit"]) if data.get("require_audit") is not None else None
    return GateConfig(metrics=metrics, options=options, audit=audit, require_audit=require_audit, **top)


def _parse_top(data: Mapping[str, Any]) -> dict[str, Any]:
    """The top-level settings of a configuration other than its options, metrics and audits,
    validated (GateConfig fields)."""
    version = data.get("version", CONFIG_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version != CONFIG_VERSION:
        raise ConfigError(f"version: unsupported configuration version {version!r}; this privgate reads version {CONFIG_VERSION}")
    dataset = data.get("dataset", "default")
    _check_name("dataset", dataset)
    description = data.get("description", "") or ""
    if not isinstance(description, str):
        raise ConfigError(f"description: must be a string, got {_tname(description)}")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed: must be an integer in [0, {MAX_SEED}], got {seed!r}")
    keys = _column_list("keys", data.get("keys"))
    sensitive = _column_list("sensitive", data.get("sensitive"))
    if keys and sensitive:
        both = sorted(set(keys) & set(sensitive))
        if both:
            raise ConfigError(f"sensitive: columns {both} are also listed in keys")
    schema = data.get("schema")
    if schema is not None:
        if not isinstance(schema, Mapping):
            raise ConfigError(f"schema: must be a mapping column → 'numeric' | 'categorical', got {_tname(schema)}")
        for col, kind in schema.items():
            if kind not in ("numeric", "categorical"):
                raise ConfigError(f"schema.{col}: must be 'numeric' or 'categorical', got {kind!r}")
        schema = {str(c): str(k) for c, k in schema.items()}
    require_holdout = data.get("require_holdout", False)
    if not isinstance(require_holdout, bool):
        raise ConfigError(f"require_holdout: must be true or false, got {require_holdout!r}")

    allow_unchecked = data.get("allow_unchecked", False)
    if not isinstance(allow_unchecked, bool):
        raise ConfigError(f"allow_unchecked: must be true or false, got {allow_unchecked!r}")
    return dict(dataset=dataset, version=version, seed=seed, keys=keys, sensitive=sensitive, schema=schema,
                require_holdout=require_holdout, description=description, allow_unchecked=allow_unchecked)


def _parse_metric(name: str, body: Any, known: dict[str, Any] | None) -> MetricGate:
    where = f"metrics.{name}"
    if known is not None and name not in known:
        from ..suggest import did_you_mean

        raise ConfigError(f"{where}: unknown metric {name!r}{did_you_mean(name, known)}; known metrics: "
                          f"{', '.join(sorted(known))}")
    if body is None:
        body = {}
    if not isinstance(body, Mapping):
        raise ConfigError(f"{where}: must be a mapping with params/optional/{'/'.join(RULE_KINDS)}, got {_tname(body)}")
    unknown = [k for k in body if k not in METRIC_KEYS]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(METRIC_KEYS)}")
    optional = body.get("optional", False)
    if not isinstance(optional, bool):
        raise ConfigError(f"{where}.optional: must be true or false, got {optional!r}")
    description = body.get("description", "") or ""
    if not isinstance(description, str):
        raise ConfigError(f"{where}.description: must be a string, got {_tname(description)}")
    params = body.get("params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"{where}.params: must be a mapping parameter → value, got {_tname(params)}")
    params = dict(params)
    for key, value in params.items():
        _check_finite(f"{where}.params.{key}", value)
    if known is not None:
        _check_params(where, known[name], params)
    for col_param in CONTEXT_PARAMS:
        if col_param in params:
            params[col_param] = _column_list(f"{where}.params.{col_param}", params[col_param])
    rules: list[Rule] = []
    for kind in RULE_KINDS:
        if kind in body:
            rules.extend(_parse_rules(f"{where}.{kind}", kind, body[kind]))
    if not rules:
        raise ConfigError(f"{where}: no rule; give at least one of {', '.join(RULE_KINDS)}")
    return MetricGate(name=name, params=params, optional=optional, rules=tuple(rules), description=description)


def _parse_rules(where: str, kind: str, spec: Any) -> list[Rule]:
    lo, hi = LIMITS_BY_KIND[kind]
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return [Rule(kind, _rule_limit(where, kind, spec, lo, hi), "block")]
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: must be a number (a block limit) or a mapping "
                          f"{{warn: x, block: y}} / {{max: x, severity: warn|block}}, got {_tname(spec)}")
    # YAML 1.1 (PyYAML) reads the bare key `on` as the boolean true
    spec = {("on" if k is True else k): v for k, v in spec.items()}
    when = spec.get("when", "always")
    if when not in WHEN:
        raise ConfigError(f"{where}.when: must be one of {', '.join(WHEN)}, got {when!r}")
    allowed_on = ON_BY_KIND[kind]
    on = spec.get("on", allowed_on[0])
    if on not in allowed_on:
        hint = ("; on applies to threshold and baseline rules" if kind in ("trend", "test") else "")
        raise ConfigError(f"{where}.on: must be one of {', '.join(allowed_on)}, got {on!r}{hint}")
    if "max" in spec or "severity" in spec:
        unknown = [k for k in spec if k not in ("max", "severity", "when", "on")]
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}: unknown key; with 'max' use only max, severity, when, on")
        if "max" not in spec:
            what = "the p-value must not fall below" if kind == "test" else f"the {kind} must not exceed"
            raise ConfigError(f"{where}.max: missing; give the limit {what}")
        sev = spec.get("severity", "block")
        if sev not in SEVERITIES:
            raise ConfigError(f"{where}.severity: must be 'warn' or 'block', got {sev!r}")
        return [Rule(kind, _rule_limit(f"{where}.max", kind, spec["max"], lo, hi), sev, when, on)]
    unknown = [k for k in spec if k not in SEVERITIES + ("when", "on")]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed: warn, block, when, on (or max, severity, when, on)")
    rules = [Rule(kind, _rule_limit(f"{where}.{sev}", kind, spec[sev], lo, hi), sev, when, on)
             for sev in SEVERITIES if sev in spec]
    if not rules:
        raise ConfigError(f"{where}: give a warn and/or block limit")
    if len(rules) == 2:
        warn, block = rules
        if kind == "test" and warn.limit < block.limit:
            raise ConfigError(f"{where}.warn: the warn p-value limit {warn.limit} is below the block limit "
                              f"{block.limit}; a test warns at a larger p-value than it blocks (warn ≥ block)")
        if kind != "test" and warn.limit > block.limit:
            raise ConfigError(f"{where}.warn: the warn limit {warn.limit} is above the block limit "
                              f"{block.limit}; warn must be ≤ block")
    return rules


def _rule_limit(where: str, kind: str, x: Any, lo: float, hi: float) -> float:
    v = _limit(where, x, lo, hi)
    if kind == "test" and v <= 0:
        raise ConfigError(f"{where}: a p-value limit must be above 0 (a p-value is never below 0, so the "
                          f"rule could never fire), got {x!r}")
    return v


def _limit(where: str, x: Any, lo: float, hi: float) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ConfigError(f"{where}: the limit must be a number, got {_tname(x)} {x!r}")
    v = float(x)
    if not math.isfinite(v) or v < lo or v > hi:
        raise ConfigError(f"{where}: the limit must be a finite number in [{lo:g}, {hi:g}], got {x!r}")
    return v


# the largest magnitude a metric parameter may have: beyond it a number is a typo or an attack
# (a count no run can reach, a limit that is no limit), never a setting
MAX_PARAM = 1e15


def _check_finite(where: str, value: Any) -> None:
    """Refuse a parameter holding .inf, .nan or a number beyond ``MAX_PARAM`` (at any depth of a
    list or mapping), naming its key."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if not (isinstance(value, int) or math.isfinite(value)) or abs(value) > MAX_PARAM:
            raise ConfigError(f"{where}: must be a finite number of magnitude at most {MAX_PARAM:g}, got {value!r}")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_finite(f"{where}.{k}", v)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(f"{where}.{i}", v)


def _column_list(where: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: must be a list of column names, got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"{where}: column names repeat in {value!r}")
    return list(value)


def _check_name(where: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise ConfigError(f"{where}: must be a non-empty string of at most 200 characters, got {value!r}")




def _known_metrics() -> dict[str, Any]:
    from ..registry import get_metric, metric_names

    return {n: get_metric(n) for n in metric_names()}


def _check_params(where: str, spec: Any, params: dict[str, Any]) -> None:
    """Parameter names must be ones the metric function takes."""
    try:
        sig = inspect.signature(spec.func)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return
    accepted: set[str] = set()
    for i, (pname, p) in enumerate(sig.parameters.items()):
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return
        if i == 0:  # the context
            continue
        accepted.add(pname)
    for pname in params:
        if pname not in accepted:
            raise ConfigError(f"{where}.params.{pname}: metric {spec.name!r} has no parameter "
                              f"{pname!r}; it takes: {', '.join(sorted(accepted)) or 'none'}")


def check_name(metric: str, kind: str, severity: str) -> str:
    """The stable name of one gate rule as a check, shared by every adapter (Dagster asset checks,
    GX expectations built from a gate config): ``<metric>__<kind>_<severity>``, e.g.
    ``common_rows__threshold_block``; the double underscore separates the metric's own name."""
    return f"{identifier(metric)}__{kind}_{severity}"
