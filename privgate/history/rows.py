"""A gate outcome as the history's rows: one ``privgate_runs`` row, one ``privgate_scores`` row
per metric and one ``privgate_checks`` row per evaluated rule — scores, aggregates and messages,
never a value of a record."""

from __future__ import annotations

import json
from datetime import timezone
from typing import Any

_RANK = {"pass": 0, "warn": 1, "block": 2}


def gate_rows(outcome: Any, dataset: str | None) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Flatten a GateOutcome into the three tables' rows (``dataset`` overrides the outcome's)."""
    return _run_row(outcome, dataset), _score_rows(outcome), _check_rows(outcome)


def _run_row(outcome: Any, dataset: str | None) -> dict[str, Any]:
    """The ``privgate_runs`` row: the decision, the configuration and the inputs' fingerprint."""
    fp = outcome.fingerprint or {}
    cfg = outcome.config
    created = outcome.created_at
    if created.tzinfo is not None:
        created = created.astimezone(timezone.utc)
    return {
        "run_id": outcome.run_id,
        "dataset": dataset or outcome.dataset,
        "release_id": outcome.release_id,
        "created_at": created,
        "decision": str(outcome.decision),
        "exit_code": int(outcome.exit_code),
        "accepted": str(outcome.decision) != "block",
        "config_hash": outcome.config_hash,
        "config_json": json.dumps(cfg.to_dict(), sort_keys=True, default=str) if cfg is not None else None,
        "fingerprint_json": json.dumps(fp, sort_keys=True, default=str),
        "privgate_version": outcome.privgate_version,
        "has_holdout": bool(outcome.has_holdout),
        "n_real": (fp.get("real") or {}).get("rows"),
        "n_synthetic": (fp.get("synthetic") or {}).get("rows"),
        "n_holdout": (fp.get("holdout") or {}).get("rows"),
        "seconds": float(outcome.seconds or 0.0),
    }


def _score_rows(outcome: Any) -> list[dict[str, Any]]:
    """One ``privgate_scores`` row per metric: the configured metrics in order, then any other
    metric with a result. A run that evaluated nothing (its configuration, an input or the
    history stopped it before the evaluation, or the evaluation itself failed) has no report and
    no score rows: its run row and its error checks say why (:func:`score_verdict`)."""
    cfg = outcome.config
    if getattr(outcome, "report", None) is None:
        return []
    results = outcome.results
    by_metric: dict[str, list[Any]] = {}
    for c in outcome.checks:
        by_metric.setdefault(c.metric, []).append(c)
    metric_names = list(cfg.metrics) if cfg is not None else []
    metric_names += [m for m in results if m not in metric_names]
    rows = []
    for name in metric_names:
        res = results.get(name)
        cs = by_metric.get(name, [])
        deciding = _deciding_check(cs)
        rows.append(
            {
                "run_id": outcome.run_id,
                "metric": name,
                "value": _f(res.value) if res is not None else None,
                "raw": _f(res.raw) if res is not None else None,
                "baseline": _f(res.baseline) if res is not None else None,
                "excess": _f(res.excess) if res is not None else None,
                "threshold": _f(deciding.threshold) if deciding is not None else None,
                "severity": deciding.severity if deciding is not None else None,
                "verdict": score_verdict(res, cs, deciding),
                "seconds": _f(res.seconds) if res is not None else None,
                "optional": bool(cfg.metrics[name].optional) if cfg is not None and name in cfg.metrics else False,
                "error": next((c.message for c in cs if c.rule == "error"), None),
                **_interval_cols("ci", getattr(res, "ci", None)),
                **_interval_cols("baseline_ci", getattr(res, "baseline_ci", None)),
                **_interval_cols("excess_ci", getattr(res, "excess_ci", None)),
                "p_value": _f(getattr(res, "p_value", None)),
            }
        )
    return rows


def score_verdict(result: Any, checks: list[Any], deciding: Any) -> str:
    """A metric's stored verdict: ``error`` when it has no result and one of its checks is an
    error (it failed, or its result was refused), ``not run`` when it has neither a result nor a
    check (it was never evaluated), else its deciding check's verdict (``pass`` / ``warn`` /
    ``block``; ``pass`` for a result no rule compared). So a stored ``pass`` always has a value."""
    if result is None:
        return "error" if any(c.rule == "error" for c in checks) else "not run"
    return deciding.verdict if deciding is not None else "pass"


def _deciding_check(checks: list[Any]) -> Any:
    """The check a metric's stored verdict, threshold and severity come from: the worst of the
    checks that were not skipped (of all when every one was), and for a pass the first such check
    with a threshold; None without checks."""
    live = [c for c in checks if not c.skipped] or checks
    deciding = max(live, key=lambda c: _RANK[c.verdict], default=None)
    if deciding is not None and deciding.verdict == "pass":
        deciding = next((c for c in live if c.threshold is not None), deciding)
    return deciding


def _check_rows(outcome: Any) -> list[dict[str, Any]]:
    """One ``privgate_checks`` row per evaluated rule (and per failure)."""
    return [
        {
            "run_id": outcome.run_id,
            "metric": c.metric,
            "rule": c.rule,
            "value": _f(c.value),
            "compared": _f(c.compared),
            "threshold": _f(c.threshold),
            "severity": c.severity,
            "verdict": c.verdict,
            "skipped": bool(c.skipped),
            "message": c.message,
            "decided_on": _on(getattr(c, "on", None)),
            **_interval_cols("interval", getattr(c, "interval", None)),
            "p_value": _f(getattr(c, "p_value", None)),
        }
        for c in outcome.checks
    ]


def _f(x: Any) -> float | None:
    """``x`` as a float a column can store: finite, else None."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None


def _interval_cols(prefix: str, ci: Any) -> dict[str, float | None]:
    """``{prefix}_low`` / ``{prefix}_high`` of an interval (None when absent or not two numbers)."""
    try:
        lo, hi = (None, None) if ci is None else (_f(ci[0]), _f(ci[1]))
    except (TypeError, IndexError, KeyError):
        lo, hi = None, None
    return {f"{prefix}_low": lo, f"{prefix}_high": hi}


def _on(value: Any) -> str | None:
    """Which end of its interval a rule decided on, as stored (at most ten characters)."""
    return None if value is None else str(value)[:10]
