"""Validating a gate configuration document (the parsed YAML / TOML / dict) into a
:class:`~privgate.gates.config_model.GateConfig`: every error a
:class:`~privgate.errors.ConfigError` whose message starts with the dotted path of the offending
key. Metric names and parameters are checked against the registry.

The file format is described in :mod:`privgate.gates.config`; what each key may hold is
:mod:`privgate.gates.config_model`.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Mapping

from ..errors import ConfigError, bounded_number
from ..errors import type_name as _tname
from ..options import FILE_KEYS, MAX_SEED, parse_options
from .config_model import (
    CONFIG_VERSION,
    CONTEXT_PARAMS,
    SEVERITIES,
    TOP_KEYS,
    WHEN,
    GateConfig,
    MetricGate,
    Rule,
    _check_name,
    metric_keys,
)
from .rule_kinds import RuleKind, kind_names, kinds


def parse_gate_config(data: Any, *, check_metrics: bool = True) -> GateConfig:
    """Validate a configuration given as a dict (the parsed YAML/TOML document).

    ``check_metrics`` checks metric names against the registry and parameter names against each
    metric's signature.
    """
    if data is None:
        raise ConfigError("config: the configuration is empty")
    if not isinstance(data, Mapping):
        raise ConfigError(f"config: the top level must be a mapping, got {_tname(data)}")
    _refuse_unknown_keys("", data, TOP_KEYS, "allowed top-level keys")
    if isinstance(data.get("options"), Mapping):
        _refuse_unknown_keys("options.", data["options"], FILE_KEYS)
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
        raise ConfigError(
            f"version: unsupported configuration version {version!r}; this privgate reads version {CONFIG_VERSION}"
        )
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
    return dict(
        dataset=dataset,
        version=version,
        seed=seed,
        keys=keys,
        sensitive=sensitive,
        schema=schema,
        require_holdout=require_holdout,
        description=description,
        allow_unchecked=allow_unchecked,
    )


def _parse_metric(name: str, body: Any, known: dict[str, Any] | None) -> MetricGate:
    where = f"metrics.{name}"
    if known is not None and name not in known:
        from ..suggest import did_you_mean

        raise ConfigError(
            f"{where}: unknown metric {name!r}{did_you_mean(name, known)}; known metrics: {', '.join(sorted(known))}"
        )
    if body is None:
        body = {}
    if not isinstance(body, Mapping):
        raise ConfigError(
            f"{where}: must be a mapping with params/optional/{'/'.join(kind_names())}, got {_tname(body)}"
        )
    _refuse_unknown_keys(f"{where}.", body, metric_keys())
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
    for kind in kinds():
        if kind.name in body:
            rules.extend(_parse_rules(f"{where}.{kind.name}", kind, body[kind.name]))
    if not rules:
        raise ConfigError(f"{where}: no rule; give at least one of {', '.join(kind_names())}")
    return MetricGate(name=name, params=params, optional=optional, rules=tuple(rules), description=description)


def _parse_rules(where: str, kind: RuleKind, spec: Any) -> list[Rule]:
    lo, hi = kind.limits
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return [Rule(kind.name, _rule_limit(where, kind, spec, lo, hi), "block")]
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"{where}: must be a number (a block limit) or a mapping "
            f"{{warn: x, block: y}} / {{max: x, severity: warn|block}}, got {_tname(spec)}"
        )
    # YAML 1.1 (PyYAML) reads the bare key `on` as the boolean true
    spec = {("on" if k is True else k): v for k, v in spec.items()}
    when = spec.get("when", "always")
    if when not in WHEN:
        raise ConfigError(f"{where}.when: must be one of {', '.join(WHEN)}, got {when!r}")
    allowed_on = kind.ons
    on = spec.get("on", kind.default_on)
    if on not in allowed_on:
        hint = (
            f"; on applies to {' and '.join(k.name for k in kinds() if k.has_interval)} rules"
            if not kind.has_interval
            else ""
        )
        raise ConfigError(f"{where}.on: must be one of {', '.join(allowed_on)}, got {on!r}{hint}")
    if "max" in spec or "severity" in spec:
        _refuse_unknown_keys(f"{where}.", spec, ("max", "severity", "when", "on"), "with 'max' use only")
        if "max" not in spec:
            what = f"the {kind.words} must not fall below" if kind.fires_below else f"the {kind.name} must not exceed"
            raise ConfigError(f"{where}.max: missing; give the limit {what}")
        sev = spec.get("severity", "block")
        if sev not in SEVERITIES:
            raise ConfigError(f"{where}.severity: must be 'warn' or 'block', got {sev!r}")
        return [Rule(kind.name, _rule_limit(f"{where}.max", kind, spec["max"], lo, hi), sev, when, on)]
    _refuse_unknown_keys(
        f"{where}.",
        spec,
        SEVERITIES + ("when", "on", "max", "severity"),
        listing="allowed: warn, block, when, on (or max, severity, when, on)",
    )
    rules = [
        Rule(kind.name, _rule_limit(f"{where}.{sev}", kind, spec[sev], lo, hi), sev, when, on)
        for sev in SEVERITIES
        if sev in spec
    ]
    if not rules:
        raise ConfigError(f"{where}: give a warn and/or block limit")
    if len(rules) == 2:
        warn, block = rules
        if kind.fires_below and warn.limit < block.limit:
            raise ConfigError(
                f"{where}.warn: the warn {kind.words} limit {warn.limit} is below the block limit "
                f"{block.limit}; a {kind.name} warns at a larger {kind.words} than it blocks "
                "(warn ≥ block)"
            )
        if not kind.fires_below and warn.limit > block.limit:
            raise ConfigError(
                f"{where}.warn: the warn limit {warn.limit} is above the block limit "
                f"{block.limit}; warn must be ≤ block"
            )
    return rules


def _refuse_unknown_keys(
    prefix: str,
    mapping: Mapping[Any, Any],
    allowed: tuple[str, ...],
    lead: str = "allowed",
    *,
    listing: str | None = None,
) -> None:
    """Refuse the first key of ``mapping`` not in ``allowed``: a :class:`ConfigError` naming its
    dotted path (``prefix`` + key), the closest allowed key ("did you mean") and the allowed ones
    (``lead: a, b, c``, or ``listing`` as given)."""
    from ..suggest import did_you_mean

    for key in mapping:
        if key not in allowed:
            raise ConfigError(
                f"{prefix}{key}: unknown key{did_you_mean(str(key), allowed)}; "
                f"{listing or lead + ': ' + ', '.join(allowed)}"
            )


def _rule_limit(where: str, kind: RuleKind, x: Any, lo: float, hi: float) -> float:
    v = bounded_number(where, x, lo, hi, name="the limit")
    if kind.fires_below and v <= 0:
        raise ConfigError(
            f"{where}: a {kind.words} limit must be above 0 (a {kind.words} is never below 0, "
            f"so the rule could never fire), got {x!r}"
        )
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


def _known_metrics() -> dict[str, Any]:
    from ..catalogue import get_metric, metric_names

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
            from ..suggest import did_you_mean

            raise ConfigError(
                f"{where}.params.{pname}: metric {spec.name!r} has no parameter "
                f"{pname!r}{did_you_mean(pname, accepted)}; it takes: "
                f"{', '.join(sorted(accepted)) or 'none'}"
            )
