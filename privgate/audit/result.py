"""The result of a generator audit: the empirical ε lower bound and what each target showed."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl


@dataclass
class AuditResult:
    """What an audit proved about a generator.

    ``epsilon_lower``: the empirical ε lower bound at ``delta`` that holds with probability
    ``confidence`` for the whole audit (largest over targets and attacks, Bonferroni-corrected);
    an audit can prove a DP violation (``violation``: the bound exceeds ``claimed_epsilon``),
    never privacy. ``auc_lower``: the largest lower end of a target's membership AUC interval
    at the same corrected confidence. ``targets``: per target, its kind, its row in ``real``
    (outliers), whether it was audited, and per attack the AUC with its interval, TPR at FPR
    1 % and 0.1 %, the ε and μ lower bounds and the error counts behind them. ``roc``: the test
    runs' scores and labels per target and attack (numbers only). ``cost``: seconds per run in
    the generator and in the audit's own work. ``epsilon_provable``: the largest bound the
    strongest candidate's test runs could have shown (no error at all): a bound near it means
    the run count, not the attack, is the limit — raise ``runs``. ``pooled``: per target kind
    and fixed attack, the many-canary evidence (every target of the kind guessed at once,
    Steinke et al. 2023): right guesses among guesses, the bound, the largest bound possible."""

    epsilon_lower: float
    delta: float
    confidence: float
    claimed_epsilon: float | None
    violation: bool | None
    auc_lower: float
    max_auc: float | None
    mu_lower: float
    epsilon_from_mu: float | None
    best: dict[str, Any] | None
    n_audited: int
    targets: list[dict[str, Any]]
    design: dict[str, Any]
    cost: dict[str, Any]
    generator: dict[str, Any] = field(default_factory=dict)
    roc: dict[str, dict[str, dict[str, list]]] = field(default_factory=dict)
    failed_runs: list[dict[str, Any]] = field(default_factory=list)
    epsilon_provable: float | None = None
    pooled: list[dict[str, Any]] = field(default_factory=list)

    @property
    def checked_nothing(self) -> bool:
        """No target could be audited: the audit proves nothing either way."""
        return self.n_audited == 0

    def to_dict(self) -> dict[str, Any]:
        return _clean(asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AuditResult":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def to_polars(self) -> pl.DataFrame:
        """One row per (target, attack): the numbers a person compares."""
        rows = []
        for t in self.targets:
            for name, a in (t.get("attacks") or {}).items():
                one, tenth = a["tpr_at_fpr"]
                rows.append(
                    {
                        "target": t["target"],
                        "kind": t["kind"],
                        "attack": name,
                        "auc": a["auc"],
                        "auc_lower": a["auc_ci"][0],
                        "auc_upper": a["auc_ci"][1],
                        "tpr_at_fpr_1pct": one["tpr"],
                        "tpr_at_fpr_0_1pct": tenth["tpr"],
                        "epsilon_lower": a["epsilon_lower"],
                        "mu_lower": a["mu_lower"],
                        "runs_with": a["runs_with"],
                        "runs_without": a["runs_without"],
                    }
                )
        schema = {
            "target": pl.String,
            "kind": pl.String,
            "attack": pl.String,
            "auc": pl.Float64,
            "auc_lower": pl.Float64,
            "auc_upper": pl.Float64,
            "tpr_at_fpr_1pct": pl.Float64,
            "tpr_at_fpr_0_1pct": pl.Float64,
            "epsilon_lower": pl.Float64,
            "mu_lower": pl.Float64,
            "runs_with": pl.Int64,
            "runs_without": pl.Int64,
        }
        return pl.DataFrame(rows, schema=schema)

    def summary(self) -> str:
        """A few lines for a terminal or a log."""
        claim = "" if self.claimed_epsilon is None else f" (claimed ε = {self.claimed_epsilon:g})"
        verdict = (
            "no target could be audited: nothing proven"
            if self.checked_nothing
            else "DP VIOLATION proven"
            if self.violation
            else "no violation found (an audit cannot prove privacy)"
            if self.violation is False
            else "no claim to check"
        )
        lines = [
            f"empirical ε lower bound {self.epsilon_lower:.3f} at δ = {self.delta:g}, "
            f"{self.confidence:.0%} confidence{claim}: {verdict}",
            f"targets audited {self.n_audited} of {len(self.targets)}; largest AUC lower bound "
            f"{self.auc_lower:.3f}; runs {self.design.get('total_runs')} "
            f"({self.cost.get('runs_failed', 0)} failed)",
        ]
        if self.epsilon_provable is not None:
            limit = (
                "the run count is the limit: raise runs"
                if self.epsilon_lower >= 0.9 * self.epsilon_provable
                else "the attack, not the run count, is the limit"
            )
            lines.append(f"largest bound these runs could show: {self.epsilon_provable:.3f} ({limit})")
        if self.best:
            from .advice import evidence_label

            alone = self.best.get("epsilon_lower")
            lines.append(
                f"strongest evidence: {evidence_label(self.best)}"
                + ("" if alone is None else f", tested alone: ε ≥ {alone:.3f}")
            )
            lines.append(
                "(chosen on the fit runs and tested alone with half the error probability; every other "
                "bound is corrected for every candidate, so it can be smaller)"
            )
        seq = (self.design or {}).get("sequential")
        if seq:
            lines.append(
                f"sequential: looked after {', '.join(str(n) for n in seq['looks'])} runs; "
                + (
                    f"stopped after {seq['stopped_after_runs']} of {seq['planned_runs']} (the claim was disproved)"
                    if seq.get("stopped_early")
                    else f"made all {seq['planned_runs']}"
                )
            )
        from .advice import next_step

        lines.append(next_step(self))
        import textwrap

        return "\n".join(
            textwrap.fill(line, width=100, subsequent_indent="  ", break_on_hyphens=False) for line in lines
        )


def _clean(x: Any) -> Any:
    """JSON-safe: non-finite floats become None (strict JSON has no NaN or infinity)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x
