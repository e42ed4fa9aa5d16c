"""Release gates: a configuration of metrics and rules, and the run that decides
pass / warn / block for one synthetic release (fails closed). See ``docs/gates.md``."""

from pathlib import Path

from .config import GateConfig, MetricGate, Rule, check_name, load_gate_config, parse_gate_config
from .engine import (
    EXIT_CODES,
    Decision,
    GateCheck,
    GateOutcome,
    decide,
    decision_of,
    evaluate_for_gate,
    evaluation_plan,
    format_checks,
    merged_checks,
    run_gate,
    safe_message,
)
from .fingerprint import frame_fingerprint, inputs_fingerprint

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "configs" / "default_gate.yaml"


def default_gate_config(dataset: str | None = None) -> GateConfig:
    """The shipped default configuration (``privgate/configs/default_gate.yaml``)."""
    cfg = load_gate_config(DEFAULT_CONFIG_PATH)
    return cfg.with_dataset(dataset) if dataset else cfg


__all__ = [
    "DEFAULT_CONFIG_PATH", "EXIT_CODES", "check_name", "Decision", "GateCheck", "GateConfig", "GateOutcome",
    "MetricGate", "Rule", "decide", "decision_of", "default_gate_config", "evaluate_for_gate",
    "evaluation_plan", "format_checks",
    "frame_fingerprint", "inputs_fingerprint", "load_gate_config", "merged_checks",
    "parse_gate_config", "run_gate", "safe_message",
]
