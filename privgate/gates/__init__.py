"""Release gates: a configuration of metrics and rules, and the run that decides
pass / warn / block for one synthetic release (fails closed). See ``docs/gates.md``.

``config`` (the configuration), ``rules`` (what a rule compares and when it fires), ``deciding``
(results → checks), ``outcome`` (checks → decision, exit code), ``run`` (evaluating, the
deadline worker, recording; ``plan``, ``deadline``), ``decision_table`` and ``present`` (the
decision table and the text ``privgate gate`` prints). Writing a run's reports and then its record is
:mod:`privgate.finalise`, above the gates and :mod:`privgate.render`."""

from pathlib import Path

from .checks import EXIT_CODES, Decision, GateCheck, decision_of, safe_message
from .config import load_gate_config, resolve_gate_config
from .config_model import GateConfig, MetricGate, Rule, check_name
from .config_validate import parse_gate_config
from .deciding import decide
from .decision_table import merged_checks
from .fingerprint import frame_fingerprint, inputs_fingerprint
from .outcome import GateOutcome
from .plan import evaluate_for_gate, evaluation_plan
from .present import format_checks
from .run import record_outcome, run_gate

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "configs" / "default_gate.yaml"


def default_gate_config(dataset: str | None = None) -> GateConfig:
    """The shipped default configuration (``privgate/configs/default_gate.yaml``)."""
    return resolve_gate_config(DEFAULT_CONFIG_PATH, dataset)


__all__ = [
    "DEFAULT_CONFIG_PATH",
    "EXIT_CODES",
    "check_name",
    "Decision",
    "GateCheck",
    "GateConfig",
    "GateOutcome",
    "MetricGate",
    "Rule",
    "decide",
    "decision_of",
    "default_gate_config",
    "evaluate_for_gate",
    "evaluation_plan",
    "format_checks",
    "frame_fingerprint",
    "inputs_fingerprint",
    "load_gate_config",
    "merged_checks",
    "parse_gate_config",
    "record_outcome",
    "resolve_gate_config",
    "run_gate",
    "safe_message",
]
