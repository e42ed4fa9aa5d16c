"""Linkability (WP29 Opinion 05/2014; Giomi et al., PoPETs 2023 — anonymeter's
LinkabilityEvaluator).

The attacker holds two partial records of the same person — columns ``cols_a`` in one data set,
``cols_b`` in another — and uses the release to join them: each part is matched to its nearest
synthetic records on its own columns, and the two parts are linked when they share a synthetic
neighbour. Success on training records in excess of success on holdout records is the residual
risk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..registry import register_metric
from ..results import MetricResult
from ._control import (
    REFERENCE,
    as_column_pair,
    attack_result,
    check_columns,
    check_n_attacks,
    require_holdout,
    sample_rows,
)


def default_split(columns: list[str]) -> tuple[list[str], list[str]]:
    """Without ``aux_cols``: the first half of the columns (real frame order) against the rest."""
    if len(columns) < 2:
        raise ParameterError(
            f"linkability needs at least two columns to split into two partial records; the data has {len(columns)}"
        )
    half = (len(columns) + 1) // 2
    return columns[:half], columns[half:]


def naive_link_probability(n_synthetic: int, k: int) -> float:
    """Chance that two independent uniform draws of k distinct synthetic records share one:
    1 − C(m − k, k)/C(m, k) (anonymeter simulates this random-link baseline; the exact value
    needs no sample)."""
    m = n_synthetic
    if 2 * k > m:
        return 1.0
    i = np.arange(k)
    return float(1.0 - np.prod((m - k - i) / (m - i)))


def _linked(
    ctx, rows: dict[str, np.ndarray], cols_a: tuple[str, ...], cols_b: tuple[str, ...], k: int
) -> dict[str, np.ndarray]:
    """Per role, whether each sampled record's two parts share a synthetic neighbour; each column
    set's targets and controls are searched together, with only those rows encoded."""
    a = ctx.neighbours_of_rows(("mixed", cols_a), rows, "synthetic", k)
    b = ctx.neighbours_of_rows(("mixed", cols_b), rows, "synthetic", k)
    return {r: (a[r].idx[:, :, None] == b[r].idx[:, None, :]).any(axis=(1, 2)) for r in rows}


@register_metric(
    family="gdpr-attack",
    attack="link two partial records of a training person through their nearest synthetic records",
    reference=REFERENCE,
    orientation="value = residual risk (attack − control)/(1 − control) clipped to [0, 1]; 0 = training records "
    "are linked no more often than holdout records",
    needs=("holdout",),
    self_controlled=True,
    spaces=(),
    memory_cost=2.0,
)
def linkability(
    ctx, *, aux_cols: Any = None, n_neighbors: int = 1, n_attacks: int | None = 2000, seed: int | None = None
) -> MetricResult:
    """Linkability risk (WP29; Giomi et al. 2023 — anonymeter's LinkabilityEvaluator): for
    ``n_attacks`` training records (seeded sample; ``None``: every record, as in anonymeter), the
    ``n_neighbors`` nearest synthetic records
    of the part ``cols_a`` and of the part ``cols_b`` of ``aux_cols=(cols_a, cols_b)``; the
    attack succeeds when the two neighbour sets share a record. The same on a sample of holdout
    records is the control; value = (attack − control)/(1 − control) clipped to [0, 1].

    Neighbours come from privgate's engine in the mixed space of each column set (numerics
    standardised, nulls imputed with the real mean; levels one-hot, null a level; Euclidean),
    where anonymeter uses a Gower-like L1 distance on range-scaled numerics (docs/attacks.md).
    The two column sets must be disjoint; without ``aux_cols`` the columns are split in half in
    the real frame's order. The naive baseline (two random sets of k synthetic records sharing
    one) is reported as its exact probability. Orientation: risk; raw = unclipped residual risk.
    """
    require_holdout(ctx, "linkability")
    n_attacks = check_n_attacks(n_attacks, allow_all=True)
    seed = ctx.seed if seed is None else int(seed)
    if aux_cols is None:
        cols_a, cols_b = default_split(ctx.schema.columns)
    else:
        first, second = as_column_pair(aux_cols)
        cols_a, cols_b = check_columns(ctx, first, "aux_cols[0]"), check_columns(ctx, second, "aux_cols[1]")
    both = sorted(set(cols_a) & set(cols_b))
    if both:
        raise ParameterError(f"aux_cols: the two partial records must have disjoint columns; both have {both}")
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)) or n_neighbors < 1:
        raise ParameterError(f"n_neighbors must be a positive integer; got {n_neighbors!r}")
    k = int(n_neighbors)
    if k > ctx.n_synthetic:
        raise ParameterError(f"n_neighbors={k} exceeds the {ctx.n_synthetic} synthetic records")
    targets = sample_rows(ctx.n_real, n_attacks, seed, "attack.targets")
    controls = sample_rows(ctx.n_holdout, n_attacks, seed, "attack.controls")
    ta, tb = tuple(cols_a), tuple(cols_b)
    found = _linked(ctx, {"real": targets, "holdout": controls}, ta, tb, k)
    linked, control_linked = found["real"], found["holdout"]
    per_record = np.zeros(ctx.n_real)
    per_record[targets[linked]] = 1.0
    details = {
        "aux_cols": [list(cols_a), list(cols_b)],
        "n_neighbors": k,
        "distance": "Euclidean in privgate's mixed space of each column set",
        "linked_rows": targets[linked].tolist(),
    }
    return attack_result(
        ctx,
        "linkability",
        n_success=int(linked.sum()),
        n_attacks=targets.size,
        n_control_success=int(control_linked.sum()),
        n_control=controls.size,
        n_baseline_success=0,
        n_baseline=targets.size,
        baseline_exact=naive_link_probability(ctx.n_synthetic, k),
        params={"aux_cols": [list(cols_a), list(cols_b)], "n_neighbors": k, "n_attacks": n_attacks, "seed": seed},
        details=details,
        per_record=per_record,
        per_record_description="1 = this training record (row position) was attacked and its two parts were "
        "linked through a shared synthetic neighbour; 0 = not linked or not attacked",
    )
