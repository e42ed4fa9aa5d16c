"""Hand-made gate outcomes for the history tests (a module, not conftest, so spawned writer
processes can import it)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from privgate.gates import GateOutcome, decide, decision_of, parse_gate_config
from privgate.results import MetricResult

CFG = parse_gate_config(
    {
        "dataset": "adult",
        "metrics": {
            "common_rows": {"threshold": {"warn": 0.0, "block": 0.01}},
            "authenticity": {"trend": {"warn": 0.05}},
            "nnaa": {"optional": True, "threshold": {"block": 0.9}},
        },
    }
)


@dataclass
class FakeReport:
    results: dict
    errors: dict = field(default_factory=dict)


def make_outcome(
    values: dict[str, float], *, dataset="adult", release_id="r1", errors=None, previous=None, cfg=CFG
) -> GateOutcome:
    """A GateOutcome built through the real decision code from hand-made results."""
    results = {n: MetricResult(name=n, value=v, raw=v, seconds=0.5) for n, v in values.items()}
    checks = decide(cfg, results, errors or {}, has_holdout=False, previous=previous)
    decision, code = decision_of(checks)
    return GateOutcome(
        run_id=uuid.uuid4().hex,
        dataset=dataset,
        release_id=release_id,
        decision=decision,
        checks=checks,
        exit_code=code,
        report=FakeReport(results, errors or {}),
        config=cfg,
        config_hash=cfg.hash,
        fingerprint={"real": {"rows": 3, "content_sha256": "ab"}},
        privgate_version="test",
    )
