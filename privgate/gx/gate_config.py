"""A GX suite equivalent to a privgate gate configuration (docs/gates.md).

For teams that run GX checkpoints instead of ``privgate gate``: every ``threshold``,
``baseline`` and ``test`` rule of the configuration that applies to the run (``when:
with_holdout`` / ``no_holdout``) becomes one expectation:

* ``threshold`` → the risk value, ``baseline`` → ``compare_to="excess"`` over the holdout, both
  with the rule's ``on`` (``estimate`` / ``lower`` / ``upper`` end of the 95 % interval);
* ``test`` → :class:`~privgate.gx.core.ExpectSyntheticPrivacyTestPValueToBeAbove` on the
  metric's p-value;
* the rule's limit is the expectation's ``threshold`` — the gate fires when the quantity is
  strictly above its limit (a test rule: the p-value strictly below), the expectation passes
  otherwise (:func:`privgate.gates.rules.fires` decides both); a result without the
  interval or p-value a rule compares blocks the gate and errors the expectation;
* ``block`` → GX severity ``critical`` (a blocking ERROR check through the Dagster bridge),
  ``warn`` → ``warning`` (a WARN check);
* the configuration's ``keys`` / ``sensitive`` / ``seed`` / ``schema`` and the metric's
  ``params`` (its own ``keys`` / ``sensitive`` win) are carried over;
* ``optional: true`` is kept in ``meta["privgate_optional"]``; the bridge then reports an
  errored optional metric as a WARN check instead of a blocking one, as the gate does.

``trend`` rules need the score history and have no GX equivalent: they are listed in the
suite's ``meta["privgate_skipped_rules"]``. ``require_holdout: true`` without a holdout raises
:class:`~privgate.errors.ConfigError` (the gate would block such a run).
"""

from __future__ import annotations

from typing import Any

from privgate.errors import ConfigError
from privgate.gates.config import resolve_gate_config
from privgate.gates.config_model import GateConfig, MetricGate, Rule, check_name
from privgate.gates.rule_kinds import rule_kind

from .core import (
    NAMED,
    ExpectSyntheticPrivacyRiskToBeBelow,
    ExpectSyntheticPrivacyTestPValueToBeAbove,
)

_CONTEXT_PARAMS = ("keys", "sensitive")


def suite_from_gate_config(
    config: Any,
    *,
    real: Any,
    holdout: Any = None,
    name: str | None = None,
):
    """Build an (unsaved) GX ``ExpectationSuite`` from a gate configuration.

    Args:
        config: a :class:`privgate.gates.config_model.GateConfig`, a path to a YAML/TOML gate file,
            or the parsed dict.
        real: reference of the real data (path, ``"registry:<name>"`` or a ``$PARAMETER``).
        holdout: reference of the holdout, or None; decides which rules apply, as in the gate.
        name: suite name (default ``privgate_<dataset>``).
    """
    import great_expectations as gx

    cfg = resolve_gate_config(config)
    has_holdout = holdout is not None
    if cfg.require_holdout and not has_holdout:
        raise ConfigError(f"gate config {cfg.source or cfg.dataset!r} has require_holdout: true; pass holdout=")
    expectations: list[Any] = []
    skipped: list[dict[str, Any]] = []
    for gate in cfg.metrics.values():
        for rule in gate.rules:
            kind = rule_kind(rule.kind)
            if kind.gx is None:  # no GX form (a trend rule needs the history)
                skipped.append({"metric": gate.name, **rule.to_dict(), "why": kind.gx_skipped})
            elif rule.applies(has_holdout):
                expectations.append(_expectation(cfg, gate, rule, real=real, holdout=holdout))
    # built with the constructor: add_expectation would need an active data context
    return gx.ExpectationSuite(
        name=name or f"privgate_{cfg.dataset}",
        expectations=expectations,
        meta={
            "privgate_gate_dataset": cfg.dataset,
            "privgate_gate_source": cfg.source,
            "privgate_skipped_rules": skipped,
        },
    )


def _expectation(cfg: GateConfig, gate: MetricGate, rule: Rule, *, real: Any, holdout: Any) -> Any:
    """The expectation of one threshold, baseline or test rule that applies to the run."""
    kwargs = _rule_kwargs(cfg, gate, rule, real=real, holdout=holdout)
    if rule_kind(rule.kind).gx.expectation == "p_value":
        return ExpectSyntheticPrivacyTestPValueToBeAbove(metric=gate.name, **kwargs)
    cls = NAMED.get(gate.name)
    if cls is None:
        return ExpectSyntheticPrivacyRiskToBeBelow(metric=gate.name, **kwargs)
    return cls(**kwargs)


def _rule_kwargs(cfg: GateConfig, gate: MetricGate, rule: Rule, *, real: Any, holdout: Any) -> dict[str, Any]:
    """The expectation's fields: the rule's limit, quantity and severity, and the configuration's
    data settings (the metric's own ``keys`` / ``sensitive`` win)."""
    kind = rule_kind(rule.kind)
    kwargs: dict[str, Any] = {
        "real": real,
        "threshold": float(rule.limit),
        "seed": cfg.seed,
        "compare_to": kind.gx.compare_to,
        "on": rule.on if kind.has_interval else "estimate",
        "severity": "critical" if rule.severity == "block" else "warning",
        "meta": {
            "check_name": check_name(gate.name, rule.kind, rule.severity),
            "privgate_rule": rule.to_dict(),
            "privgate_optional": bool(gate.optional),
        },
    }
    params = {k: v for k, v in gate.params.items() if k not in _CONTEXT_PARAMS}
    keys = gate.params.get("keys", cfg.keys)
    sensitive = gate.params.get("sensitive", cfg.sensitive)
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    optional = {
        "notes": gate.description,
        "holdout": holdout,
        "params": params,
        "keys": list(keys) if keys else None,
        "sensitive": list(sensitive) if sensitive else None,
        "column_kinds": dict(cfg.schema) if cfg.schema else None,
    }
    kwargs.update({k: v for k, v in optional.items() if v})
    return kwargs
