"""What the three attacks share: the holdout as control set, seeded target samples, parameter
checks, and one result builder around :func:`privgate.stats.control_risk` (anonymeter's residual
risk ``(attack − control) / (1 − control)`` on Wilson rates with propagated error)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import seeds
from ..errors import NotApplicableError, ParameterError
from ..results import MetricResult
from ..stats import control_risk, wilson_rate

CI_METHOD = "anonymeter residual-risk interval (Wilson rates, propagated error)"
RAW_DESCRIPTION = (
    "residual risk (attack rate − control rate) / (1 − control rate) on Wilson-centred rates, "
    "unclipped (Giomi et al. 2023; anonymeter's risk before clipping)"
)
REFERENCE = (
    "Giomi et al., 'A Unified Framework for Quantifying Privacy Risk in Synthetic Data', PoPETs 2023 "
    "(anonymeter); Article 29 Working Party, Opinion 05/2014 on anonymisation techniques (WP216)"
)


def require_holdout(ctx: Any, metric: str) -> None:
    """The control set is the holdout: without one the attack's success cannot be told apart from
    what the release teaches about anybody in the population."""
    if ctx.holdout is None:
        raise NotApplicableError(
            f"{metric} needs a holdout: real records that were NOT used to train the generator, the "
            "control set the attack is repeated on (pass holdout=... / --holdout)"
        )


def check_n_attacks(n_attacks: Any, *, allow_all: bool = False) -> int | None:
    """``n_attacks`` as an int; with ``allow_all``, ``None`` (anonymeter's "attack every record")
    is kept as None, which :func:`sample_rows` reads as every row."""
    if n_attacks is None and allow_all:
        return None
    if isinstance(n_attacks, bool) or not isinstance(n_attacks, (int, np.integer)) or n_attacks < 1:
        every = " or None (every record)" if allow_all else ""
        raise ParameterError(f"n_attacks must be a positive integer{every}; got {n_attacks!r}")
    return int(n_attacks)


def check_columns(ctx: Any, cols: Any, label: str) -> list[str]:
    """A non-empty list of distinct column names of the data."""
    if isinstance(cols, str):
        cols = [cols]
    try:
        out = list(cols)
    except TypeError:
        raise ParameterError(f"{label} must be a list of column names; got {cols!r}") from None
    if not out or not all(isinstance(c, str) for c in out):
        raise ParameterError(f"{label} must be a non-empty list of column names; got {out!r}")
    missing = [c for c in out if c not in ctx.schema.kinds]
    if missing:
        raise ParameterError(f"{label}: columns not in the data: {missing}; columns are {ctx.schema.columns}")
    if len(set(out)) != len(out):
        raise ParameterError(f"{label} names a column twice: {out}")
    return out


def sample_rows(n_rows: int, n_attacks: int | None, seed: int, stream: str) -> np.ndarray:
    """min(n_attacks, n_rows) distinct row positions, drawn without replacement from the random
    stream ``stream`` (:data:`privgate.seeds.STREAMS`), sorted (``n_attacks=None``: every row)."""
    size = n_rows if n_attacks is None else min(n_attacks, n_rows)
    return np.sort(seeds.rng(seed, stream).choice(n_rows, size, replace=False))


def attack_result(
    ctx: Any,
    name: str,
    *,
    n_success: float,
    n_attacks: int,
    n_control_success: float,
    n_control: int,
    n_baseline_success: float,
    n_baseline: int,
    params: dict[str, Any],
    details: dict[str, Any],
    per_record: np.ndarray,
    per_record_description: str,
    per_attribute: dict[str, float] | None = None,
    baseline_exact: float | None = None,
) -> MetricResult:
    """The metric result of one attack: value = the residual risk clipped to [0, 1], raw = the
    unclipped residual risk, ci = risk ± propagated error clipped to [0, 1]. The naive baseline is
    a simulated count (``n_baseline_success`` of ``n_baseline``) or, when it has a closed form,
    its exact success probability ``baseline_exact`` (error 0)."""
    cr = control_risk(n_success, n_attacks, n_control_success, n_control)
    if baseline_exact is not None:
        base_rate, base_err = float(baseline_exact), 0.0
    else:
        base_rate, base_err = wilson_rate(n_baseline_success, n_baseline)
    out = {
        "attack_rate": cr.attack_rate,
        "attack_rate_error": cr.attack_error,
        "control_rate": cr.control_rate,
        "control_rate_error": cr.control_error,
        "baseline_rate": base_rate,
        "baseline_rate_error": base_err,
        "n_attacks": int(n_attacks),
        "n_success": float(n_success),
        "n_control_attacks": int(n_control),
        "n_control_success": float(n_control_success),
        "n_baseline_attacks": int(n_baseline),
        "n_baseline_success": float(n_baseline_success),
        "risk_unclipped": cr.risk,
    }
    warnings = []
    if base_rate >= cr.attack_rate:
        warnings.append(
            "the attack did no better than the naive (random-guess) baseline: the risk "
            "estimate cannot be trusted to reflect this release"
        )
    if cr.control_rate >= 1.0:
        warnings.append("the control attack always succeeds: no residual risk can be measured")
    out.update(details)
    if warnings:
        out["warnings"] = warnings
    lo, hi = cr.ci
    res = MetricResult.from_context(
        ctx,
        name,
        min(1.0, max(0.0, cr.risk)),
        cr.risk,
        RAW_DESCRIPTION,
        params=params,
        details=out,
        per_record=per_record,
        per_record_description=per_record_description,
        per_attribute=per_attribute,
    )
    return res.set_ci((lo, max(lo, hi)), CI_METHOD)


def as_column_pair(aux_cols: Any) -> tuple[Sequence[str], Sequence[str]]:
    """anonymeter's ``aux_cols=(cols_a, cols_b)`` (a list of two lists from a YAML config too)."""
    if isinstance(aux_cols, str) or not isinstance(aux_cols, (tuple, list)) or len(aux_cols) != 2:
        raise ParameterError(
            "aux_cols must be two lists of column names (cols_a, cols_b): the two "
            f"partial records the attacker links; got {aux_cols!r}"
        )
    return aux_cols[0], aux_cols[1]
