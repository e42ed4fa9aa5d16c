"""A gate run's result, :class:`GateOutcome`: the checks it decided (:mod:`privgate.gates.checks`:
``GateCheck``, ``Decision``, ``EXIT_CODES``, ``decision_of``, ``safe_message`` …), the decision,
the exit code, the report and the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..results import MetricResult, _jsonable
from .checks import Decision, GateCheck, _check_dict, decision_of, error_check
from .config_model import GateConfig


@dataclass
class GateOutcome:
    """Everything one gate run decided; ``to_dict()`` is the JSON report's core."""

    run_id: str
    dataset: str
    release_id: str
    decision: Decision
    checks: list[GateCheck]
    exit_code: int
    report: Any = None  # privgate Report, None when evaluation did not run
    config: GateConfig | None = None
    config_hash: str | None = None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    seconds: float = 0.0
    privgate_version: str = ""
    has_holdout: bool = False
    previous_release_id: str | None = None
    recorded: bool = False
    worker: Any = None  # a stopped run's worker thread still inside native code

    @property
    def accepted(self) -> bool:
        """A release is accepted (may be published) when the decision is pass or warn."""
        return self.decision != Decision.BLOCK

    @property
    def results(self) -> dict[str, MetricResult]:
        return dict(getattr(self.report, "results", {}) or {})

    @property
    def errors(self) -> dict[str, str]:
        return {c.metric: c.message for c in self.checks if c.rule == "error"}

    def to_dict(self) -> dict[str, Any]:
        results = {n: r.to_dict() for n, r in self.results.items()}
        return _jsonable(
            {
                "run_id": self.run_id,
                "dataset": self.dataset,
                "release_id": self.release_id,
                "decision": str(self.decision),
                "exit_code": self.exit_code,
                "accepted": self.accepted,
                "created_at": self.created_at.isoformat(),
                "seconds": self.seconds,
                "privgate_version": self.privgate_version,
                "config_hash": self.config_hash,
                "config": self.config.to_dict() if self.config else None,
                "has_holdout": self.has_holdout,
                "previous_release_id": self.previous_release_id,
                "fingerprint": self.fingerprint,
                "checks": [_check_dict(c) for c in self.checks],
                "results": results,
            }
        )

    def table(self, compact: bool = False) -> str:
        """The decision table as plain text (what ``privgate gate`` prints: ``compact=True``, the
        100-column view; ``privgate gate --wide``: every column)."""
        from .present import format_checks

        return format_checks(self, compact=compact)


def add_error(outcome: GateOutcome, where: str, message: str) -> GateOutcome:
    """Add a blocking error check to ``outcome`` (a step after the decision failed, e.g. a report
    that cannot be written) and re-decide: block, exit code 3."""
    outcome.checks.append(error_check(where, message))
    outcome.decision, outcome.exit_code = decision_of(outcome.checks)
    return outcome
