"""Attribute inference (WP29 Opinion 05/2014; Giomi et al., PoPETs 2023 — anonymeter's
InferenceEvaluator).

The attacker knows some attributes of a person (``aux_cols``) and guesses a ``secret`` one from
the nearest synthetic record on those attributes. Success on training records in excess of
success on holdout records is the residual risk: what the release teaches about the people it
was trained on beyond what it teaches about anybody from the same population.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import seeds
from ..errors import ParameterError
from ..registry import register_metric
from ..results import MetricResult
from ..schema import NUMERIC
from ..spaces import category_codes
from ..ties import le
from ._control import REFERENCE, attack_result, check_columns, check_n_attacks, require_holdout, sample_rows


def correct_guesses(guess: np.ndarray, truth: np.ndarray, numeric: bool, tolerance: float) -> np.ndarray:
    """Whether each guess equals the secret: numbers within ``tolerance`` relative to the guess,
    |guess − secret| ≤ tolerance·|guess| (anonymeter's rule, with the absolute value anonymeter
    omits — its check divides by the signed guess, so every negative guess counts as correct);
    level codes exactly. Two nulls agree; a null and a value do not.

    The edge is inclusive with a stated floating-point slack: the two sides are compared with
    :func:`privgate.ties.le` (equal within 1e-9·(1 + max)), so a guess of 1.0 for a secret of
    1.05 is right at tolerance 0.05 although 1.05 − 1.0 = 0.050000000000000044 in float64
    (anonymeter gets the same by dividing by guess + 1e-12)."""
    both_null = np.isnan(guess) & np.isnan(truth)
    if numeric:
        with np.errstate(invalid="ignore"):
            hit = le(np.abs(guess - truth), tolerance * np.abs(guess))
    else:
        hit = guess == truth
    return both_null | hit


def _secret_values(ctx, secret: str, numeric: bool, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The secret of the attacked rows (role → row positions; every synthetic record) as numbers
    (NaN = null) or level codes (null a level; codes comparable across the frames)."""
    frames = {r: (f[rows[r]] if r in rows else f) for r, f in ctx.frames.items()}
    if numeric:
        return {r: f[secret].to_numpy().astype(np.float64, copy=False) for r, f in frames.items()}
    codes, _ = category_codes(frames, secret)
    return {r: c.astype(np.float64) for r, c in codes.items()}


def _resolve_columns(ctx, secret: Any, aux_cols: Any) -> tuple[list[str], list[str] | None]:
    if secret is None:
        if not ctx.sensitive:
            raise ParameterError(
                "inference needs secret='column' (the attribute the attacker guesses), or "
                "sensitive=[...] on the evaluation"
            )
        secrets = list(ctx.sensitive)
    else:
        secrets = check_columns(ctx, secret, "secret")
    aux = None if aux_cols is None else check_columns(ctx, aux_cols, "aux_cols")
    # a secret among aux_cols is allowed, as in anonymeter: the attacker then knows it, and the
    # nearest synthetic record on columns that include it usually carries it (details say so)
    return secrets, aux


def _one_secret(
    ctx,
    secret: str,
    aux: list[str],
    regression: bool | None,
    tolerance: float,
    targets: np.ndarray,
    controls: np.ndarray,
    seed: int,
) -> dict[str, Any]:
    is_numeric = ctx.schema.kind(secret) == NUMERIC
    numeric = is_numeric if regression is None else bool(regression)
    if numeric and not is_numeric:
        raise ParameterError(f"regression=True needs a numeric secret; {secret!r} is categorical")
    # values["real"][i] is the secret of training row targets[i], values["holdout"][i] of controls[i]
    values = _secret_values(ctx, secret, is_numeric, {"real": targets, "holdout": controls})
    # both sampled sets searched together, with only their rows (and the release) encoded
    nb = ctx.neighbours_of_rows(("mixed", tuple(aux)), {"real": targets, "holdout": controls}, "synthetic", 1)
    guess_t = values["synthetic"][nb["real"].idx[:, 0]]
    guess_c = values["synthetic"][nb["holdout"].idx[:, 0]]
    ok_t = correct_guesses(guess_t, values["real"], numeric, tolerance)
    ok_c = correct_guesses(guess_c, values["holdout"], numeric, tolerance)
    # naive baseline: a random synthetic record's secret, compared with the SAME target's secret
    # (position by position; anonymeter's inference baseline misaligned the two)
    donors = seeds.rng(seed, "attack.baseline").integers(0, ctx.n_synthetic, size=targets.size)
    ok_b = correct_guesses(values["synthetic"][donors], values["real"], numeric, tolerance)
    return {
        "ok": ok_t,
        "n_success": int(ok_t.sum()),
        "n_control_success": int(ok_c.sum()),
        "n_baseline_success": int(ok_b.sum()),
        "numeric": numeric,
    }


@register_metric(
    family="gdpr-attack",
    attack="guess a training person's secret attribute from the nearest synthetic record on known attributes",
    reference=REFERENCE,
    orientation="value = residual risk (attack − control)/(1 − control) clipped to [0, 1]; 0 = the secret is "
    "guessed no better for training records than for holdout records; worst secret",
    needs=("holdout", "sensitive"),
    self_controlled=True,
    spaces=(),
    memory_cost=2.0,
)
def inference(
    ctx,
    *,
    secret: str | list[str] | None = None,
    aux_cols: list[str] | None = None,
    regression: bool | None = None,
    tolerance: float = 0.05,
    n_attacks: int | None = 2000,
    seed: int | None = None,
) -> MetricResult:
    """Inference risk (WP29; Giomi et al. 2023 — anonymeter's InferenceEvaluator): for
    ``n_attacks`` training records (seeded sample; ``None``: every record, as in anonymeter), the
    secret is guessed as the ``secret`` of
    the nearest synthetic record on ``aux_cols`` (default: the evaluation's keys, else every
    other column); the same on holdout records is the control; value = (attack − control)/
    (1 − control) clipped to [0, 1]. A numeric secret (or ``regression=True``) is guessed right
    within ``tolerance`` relative to the guess, the edge included (within privgate's tie
    tolerance 1e-9·(1 + max), so |1.0 − 1.05| ≤ 0.05·1.0 holds in floating point); a
    categorical one exactly (null is a level). A secret that is also among ``aux_cols`` is
    attacked as anonymeter does (the attacker knows it; ``details["secret_in_aux"]``).
    Several secrets (``secret=[...]`` or the evaluation's sensitive columns) are attacked on the
    same targets; value = the worst, each in per_attribute.

    Differences from anonymeter 1.1 (docs/attacks.md): neighbours in privgate's mixed space
    (Euclidean; anonymeter: Gower-like L1); the naive baseline compares each random guess with the
    same target's secret; the numeric tolerance uses |guess|; nulls work; seeded.
    Orientation: risk; raw = the unclipped residual risk of the worst secret.
    """
    require_holdout(ctx, "inference")
    n_attacks = check_n_attacks(n_attacks, allow_all=True)
    seed = ctx.seed if seed is None else int(seed)
    _check_options(tolerance, regression)
    secrets, aux = _resolve_columns(ctx, secret, aux_cols)
    targets = sample_rows(ctx.n_real, n_attacks, seed, "attack.targets")
    controls = sample_rows(ctx.n_holdout, n_attacks, seed, "attack.controls")
    results = {}
    for s in secrets:
        cols = aux if aux is not None else [c for c in (ctx.keys or ctx.schema.columns) if c not in secrets]
        if not cols:
            raise ParameterError(
                f"inference of {s!r} needs at least one auxiliary column; the data has none besides the secret(s)"
            )
        out = _one_secret(ctx, s, cols, regression, float(tolerance), targets, controls, seed)
        params = {
            "secret": secrets if len(secrets) > 1 else secrets[0],
            "aux_cols": cols,
            "regression": regression,
            "tolerance": float(tolerance),
            "n_attacks": n_attacks,
            "seed": seed,
        }
        results[s] = _secret_result(ctx, s, cols, out, targets, controls, params)
    worst = max(results, key=lambda s: results[s].raw)
    res = results[worst]
    if len(results) > 1:
        res.per_attribute = {s: r.value for s, r in results.items()}
        res.details["per_secret"] = {
            s: {k: r.details[k] for k in ("attack_rate", "control_rate", "baseline_rate", "risk_unclipped")}
            | {"ci": list(r.ci)}
            for s, r in results.items()
        }
    return res


def _check_options(tolerance: Any, regression: Any) -> None:
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
        raise ParameterError(f"tolerance must be a number ≥ 0 (relative error of a numeric guess); got {tolerance!r}")
    if regression is not None and not isinstance(regression, bool):
        raise ParameterError(f"regression must be true, false or null; got {regression!r}")


def _secret_result(
    ctx, s: str, cols: list[str], out: dict[str, Any], targets: np.ndarray, controls: np.ndarray, params: dict[str, Any]
) -> MetricResult:
    """The attack's result for one secret column ``s`` from its counts ``out`` (:func:`_one_secret`)."""
    per_record = np.zeros(ctx.n_real)
    per_record[targets[out["ok"]]] = 1.0
    return attack_result(
        ctx,
        "inference",
        n_success=out["n_success"],
        n_attacks=targets.size,
        n_control_success=out["n_control_success"],
        n_control=controls.size,
        n_baseline_success=out["n_baseline_success"],
        n_baseline=targets.size,
        params=params,
        details={
            "secret": s,
            "aux_cols": cols,
            "secret_compared_as": "number" if out["numeric"] else "level",
            "secret_in_aux": s in cols,
            "distance": "Euclidean in privgate's mixed space of the auxiliary columns",
            "correct_rows": targets[out["ok"]].tolist(),
        },
        per_record=per_record,
        per_record_description=f"1 = the secret {s!r} of this training record (row position) was attacked and "
        "guessed right; 0 = guessed wrong or not attacked",
    )
