"""Singling out (WP29 Opinion 05/2014; Cohen & Nissim, "Towards formalizing the GDPR's notion of
singling out", PNAS 2020; Giomi et al., PoPETs 2023 — anonymeter's SinglingOutEvaluator).

The attacker reads the release and writes predicates that isolate exactly one synthetic record,
betting that each also isolates exactly one real person of the training data. Success rate on
the training records minus the success of the same predicates on the holdout (people who were
not trained on) is the residual risk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import seeds
from .._lazy import lazy_module
from ..errors import ParameterError
from ..registry import register_metric
from ..results import MetricResult
from ._control import REFERENCE, attack_result, check_n_attacks, require_holdout
from .predicates import (
    EQ,
    GE,
    GT,
    ISNULL,
    LE,
    LT,
    NE,
    NOTNULL,
    CodedFrames,
    ConjunctionCounter,
    Predicates,
    code_frames,
    match_counts,
)

_special = lazy_module("scipy.special")  # imported on first use (import time)

MODES = ("univariate", "multivariate")
_BATCH = 4096
_ATTEMPTS_PER_ATTACK = 100
# work bounds: n_attacks at most the release's distinct records (each predicate is built to
# isolate one; never fewer than the default), max_attempts at most this many per attack
MAX_ATTEMPTS_PER_ATTACK = 1000
MIN_ATTEMPTS_LIMIT = 100_000
DEFAULT_N_ATTACKS = 500


def _check_params(mode: Any, n_cols: Any, max_attempts: Any, n_columns: int) -> int:
    if mode not in MODES:
        raise ParameterError(f"mode must be 'univariate' or 'multivariate'; got {mode!r}")
    if isinstance(n_cols, bool) or not isinstance(n_cols, (int, np.integer)) or n_cols < 1:
        raise ParameterError(f"n_cols must be a positive integer (columns per predicate); got {n_cols!r}")
    if max_attempts is not None and (
        isinstance(max_attempts, bool) or not isinstance(max_attempts, (int, np.integer)) or max_attempts < 1
    ):
        raise ParameterError(f"max_attempts must be a positive integer or None; got {max_attempts!r}")
    return 1 if mode == "univariate" else int(min(n_cols, n_columns))


# ------------------------------------------------------------------------- attacker predicates
def univariate_predicates(coded: CodedFrames, n_attacks: int, rng: np.random.Generator) -> Predicates:
    """One-condition predicates that isolate one distinct synthetic record: a value held by
    exactly one record (``col == v``), the minimum or maximum when held by one record
    (``col <= min``, ``col >= max``), a numeric null held by one record (``col is null``).

    Candidates are taken round-robin over the columns (each column's candidates in a seeded
    random order, the columns in a seeded random order), so a column in which every value is
    unique — a noised continuous column — cannot fill the whole budget with predicates that no
    real record can match (anonymeter issue #44: a noisy copy then looks safe).
    """
    x = coded["synthetic"]
    cols, ops, vals, ranks = [], [], [], []
    for j in range(x.shape[1]):
        v = x[:, j]
        nulls = np.isnan(v)
        cand_ops: list[np.ndarray] = []
        cand_vals: list[np.ndarray] = []
        if coded.numeric[j] and nulls.sum() == 1:
            cand_ops.append(np.array([ISNULL]))
            cand_vals.append(np.array([0.0]))
        u, counts = np.unique(v[~nulls], return_counts=True)
        if u.size:
            if coded.numeric[j]:
                for op, at in ((LE, 0), (GE, -1)):
                    if counts[at] == 1:
                        cand_ops.append(np.array([op]))
                        cand_vals.append(u[[at]])
            rare = u[counts == 1]
            cand_ops.append(np.full(rare.size, EQ))
            cand_vals.append(rare)
        if not cand_ops:
            continue
        o = np.concatenate(cand_ops)
        val = np.concatenate(cand_vals)
        order = rng.permutation(o.size)
        cols.append(np.full(o.size, j))
        ops.append(o[order])
        vals.append(val[order])
        ranks.append(np.arange(o.size))
    if not cols:
        return Predicates.concat([], 1)
    col = np.concatenate(cols)
    priority = rng.permutation(x.shape[1])
    take = np.lexsort((priority[col], np.concatenate(ranks)))[:n_attacks]
    return Predicates(
        col[take, None], np.concatenate(ops)[take, None].astype(np.int8), np.concatenate(vals)[take, None]
    )


def multivariate_predicates(
    coded: CodedFrames, n_attacks: int, n_cols: int, max_attempts: int, rng: np.random.Generator
) -> tuple[Predicates, int]:
    """Conjunctions over ``n_cols`` random columns built from a random synthetic record — a
    numeric value v becomes ``col >= v`` above the column's synthetic median and ``col <= v``
    otherwise, a level ``col == level``, a null ``col is null`` — kept when they isolate exactly
    one distinct synthetic record and are new, until ``n_attacks`` are found or ``max_attempts``
    were tried. Candidates are drawn in batches and counted with bitsets
    (:class:`~privgate.attacks.predicates.ConjunctionCounter`). Returns (predicates, attempts)."""
    x = coded["synthetic"]
    m, d = x.shape
    with np.errstate(all="ignore"):
        med = np.array(
            [np.nanmedian(x[:, j]) if coded.numeric[j] and not np.isnan(x[:, j]).all() else np.nan for j in range(d)]
        )
    counter = ConjunctionCounter(x, coded.numeric)
    found = Predicates.concat([], n_cols)
    attempts = 0
    while len(found) < n_attacks and attempts < max_attempts:
        b = int(min(_BATCH, max_attempts - attempts))
        attempts += b
        rec = rng.integers(0, m, size=b)
        cols = np.sort(np.argsort(rng.random((b, d)), axis=1)[:, :n_cols], axis=1)
        vals = x[rec[:, None], cols]
        numeric = coded.numeric[cols]
        ops = np.where(~numeric, EQ, np.where(np.isnan(vals), ISNULL, np.where(vals > med[cols], GE, LE)))
        batch = Predicates(cols, ops.astype(np.int8), np.where(np.isnan(vals), 0.0, vals))
        counts = counter.counts(batch)
        found = _first_unique(Predicates.concat([found, batch.take(np.flatnonzero(counts == 1))], n_cols))
    return found.take(np.arange(min(len(found), n_attacks))), attempts


def _first_unique(preds: Predicates) -> Predicates:
    """Drop repeated predicates, keeping first occurrences in order."""
    if len(preds) == 0:
        return preds
    _, first = np.unique(preds.keys(), axis=0, return_index=True)
    return preds.take(np.sort(first))


def random_predicates(coded: CodedFrames, n: int, n_cols: int, rng: np.random.Generator) -> Predicates:
    """The naive attacker: ``n_cols`` random columns, each with a random value of the synthetic
    column (null included) and a random operator (``==``/``!=`` for levels and nulls, any
    comparison for numbers)."""
    x = coded["synthetic"]
    d = x.shape[1]
    uniques = [np.unique(x[:, j]) for j in range(d)]  # a numeric null is one NaN, sorted last
    width = max(u.size for u in uniques)
    table = np.full((d, width), np.nan)
    for j, u in enumerate(uniques):
        table[j, : u.size] = u
    sizes = np.array([u.size for u in uniques])
    cols = np.sort(np.argsort(rng.random((n, d)), axis=1)[:, :n_cols], axis=1)
    vals = table[cols, (rng.random(cols.shape) * sizes[cols]).astype(np.int64)]
    numeric = coded.numeric[cols]
    pick = rng.random(cols.shape)
    comparisons = np.array([EQ, NE, LE, GE, LT, GT])
    ops = np.where(
        ~numeric,
        np.where(pick < 0.5, EQ, NE),
        np.where(
            np.isnan(vals),
            np.where(pick < 0.5, ISNULL, NOTNULL),
            comparisons[np.minimum((pick * 6).astype(np.int64), 5)],
        ),
    )
    return Predicates(cols, ops.astype(np.int8), np.where(np.isnan(vals), 0.0, vals))


# ------------------------------------------------------------------------- control-size correction
def size_correction(holdout_counts: np.ndarray, n_holdout: int, n_real: int) -> float:
    """Factor that scales the number of predicates isolating one holdout record to a control
    set of the training set's size (1 when both have the same size).

    A predicate matching a share w of the population isolates one record of a set of n with
    probability n·w·(1 − w)^(n−1) (Cohen & Nissim 2020). With w ~ Beta(m + ½, n_h − m + ½)
    given its m matches among the n_h holdout records, the expectation is
    n·B(a + 1, b + n − 1)/B(a, b); the factor is the sum of these over the predicates at
    n = n_real divided by the same at n = n_holdout. anonymeter fits a curve to repeated
    subsamples of the control set for the same purpose.
    """
    if n_holdout == n_real or holdout_counts.size == 0:
        return 1.0
    a = holdout_counts.astype(np.float64) + 0.5
    b = n_holdout - holdout_counts.astype(np.float64) + 0.5

    def expected(n: int) -> float:
        return float(np.exp(np.log(n) + _special.betaln(a + 1.0, b + n - 1.0) - _special.betaln(a, b)).sum())

    at_holdout = expected(n_holdout)
    return expected(n_real) / at_holdout if at_holdout > 0 else 1.0


# ------------------------------------------------------------------------- the metric
def _attempts(n_attacks: int, max_attempts: int | None, n_distinct: int) -> int:
    """The number of candidate predicates to try: ``max_attempts`` (default
    ``_ATTEMPTS_PER_ATTACK`` × n_attacks), after refusing an n_attacks above
    max(DEFAULT_N_ATTACKS, distinct synthetic records) and a max_attempts above
    max(MAX_ATTEMPTS_PER_ATTACK × n_attacks, MIN_ATTEMPTS_LIMIT): the work stays bounded by the data."""
    limit = max(DEFAULT_N_ATTACKS, n_distinct)
    if n_attacks > limit:  # attempts are 100 × n_attacks: the work must stay bounded by the data
        raise ParameterError(
            f"singling_out n_attacks={n_attacks} is more than the release's {n_distinct} distinct records "
            f"(the limit is max({DEFAULT_N_ATTACKS}, distinct synthetic records) = {limit}): each predicate "
            "isolates one synthetic record, and the unfound ones would count as failed attacks"
        )
    attempts_limit = max(MAX_ATTEMPTS_PER_ATTACK * n_attacks, MIN_ATTEMPTS_LIMIT)
    if max_attempts is not None and max_attempts > attempts_limit:
        raise ParameterError(
            f"singling_out max_attempts={max_attempts} is above the limit of max({MAX_ATTEMPTS_PER_ATTACK} × "
            f"n_attacks, {MIN_ATTEMPTS_LIMIT:,}) = {attempts_limit:,} candidate predicates"
        )
    return _ATTEMPTS_PER_ATTACK * n_attacks if max_attempts is None else int(max_attempts)


def _shortfall(n_found: int, n_attacks: int) -> dict[str, str]:
    """A note when fewer predicates than attacks were found (empty otherwise)."""
    if n_found >= n_attacks:
        return {}
    return {
        "note": (
            f"only {n_found} of {n_attacks} predicates isolating one synthetic record were "
            "found; the missing ones count as failed attacks (as in anonymeter)"
        )
    }


@register_metric(
    family="gdpr-attack",
    attack="single out one training record with a predicate that isolates one synthetic record",
    reference=REFERENCE + "; Cohen & Nissim, PNAS 2020",
    orientation="value = residual risk (attack − control)/(1 − control) clipped to [0, 1]; 0 = the predicates "
    "isolate training records no more often than holdout records",
    needs=("holdout",),
    self_controlled=True,
    spaces=(),
    memory_cost=2.0,
)
def singling_out(
    ctx,
    *,
    mode: str = "multivariate",
    n_cols: int = 3,
    n_attacks: int = 500,
    max_attempts: int | None = None,
    seed: int | None = None,
) -> MetricResult:
    """Singling-out risk (WP29; Giomi et al. 2023 — anonymeter's SinglingOutEvaluator): the share
    of attacker predicates, each isolating exactly one synthetic record, that isolate exactly one
    training record, in excess of the share that isolate exactly one holdout record.

    ``mode="multivariate"`` (default, as anonymeter) builds each predicate from a random
    synthetic record over ``n_cols`` random columns; ``"univariate"`` uses rare values and the
    extremes of single columns. ``n_attacks`` predicates are sought (at most ``max_attempts``
    candidates, default 100 × n_attacks, at most max(1000 × n_attacks, 100,000); n_attacks is
    refused above max(500, distinct synthetic records), so the work stays bounded by the data);
    success rates are over ``n_attacks`` as in anonymeter, so a release that yields fewer
    isolating predicates scores lower. A naive baseline of random predicates is reported in
    details.

    Differences from anonymeter 1.1 (docs/attacks.md): training and holdout records are NOT
    de-duplicated (a predicate matching two identical people isolates nobody); univariate
    candidates are taken round-robin over columns (a noised continuous column cannot crowd out
    the others); a holdout of another size than the training set is corrected in closed form
    (:func:`size_correction`) instead of by a curve fit; nulls are a value like any other;
    seeded. Orientation: risk, 1 = every predicate singles out a training person and none a
    holdout one; raw = the unclipped residual risk.
    """
    require_holdout(ctx, "singling_out")
    n_attacks = check_n_attacks(n_attacks)
    n_cols_used = _check_params(mode, n_cols, max_attempts, len(ctx.schema.columns))
    seed = ctx.seed if seed is None else int(seed)
    distinct = ctx.synthetic.unique(maintain_order=True)
    max_attempts = _attempts(n_attacks, max_attempts, distinct.height)
    coded = code_frames({"synthetic": distinct, "real": ctx.real, "holdout": ctx.holdout}, ctx.schema)
    rng = seeds.rng(seed, "attack.predicates")
    if mode == "univariate":
        preds, attempts = univariate_predicates(coded, n_attacks, rng), None
    else:
        preds, attempts = multivariate_predicates(coded, n_attacks, n_cols_used, max_attempts, rng)
    real_counts, real_first = match_counts(coded["real"], preds)
    hold_counts, _ = match_counts(coded["holdout"], preds)
    success = real_counts == 1
    correction = size_correction(hold_counts, ctx.n_holdout, ctx.n_real)
    n_control_raw = int((hold_counts == 1).sum())
    n_control = min(float(n_attacks), n_control_raw * correction)
    baseline = random_predicates(coded, n_attacks, n_cols_used, seeds.rng(seed, "attack.baseline"))
    base_counts, _ = match_counts(coded["real"], baseline)
    per_record = np.zeros(ctx.n_real)
    per_record[real_first[success]] = 1.0
    details = {
        "mode": mode,
        "n_cols": n_cols_used,
        "n_predicates": len(preds),
        "n_candidates_tried": attempts,
        "n_control_success_uncorrected": n_control_raw,
        "control_size_correction": correction,
        "n_distinct_synthetic": distinct.height,
        "n_real_singled_out": int(per_record.sum()),
        "singled_out_rows": np.flatnonzero(per_record).tolist(),
        **_shortfall(len(preds), n_attacks),
    }
    return attack_result(
        ctx,
        "singling_out",
        n_success=int(success.sum()),
        n_attacks=n_attacks,
        n_control_success=n_control,
        n_control=n_attacks,
        n_baseline_success=int((base_counts == 1).sum()),
        n_baseline=n_attacks,
        params={"mode": mode, "n_cols": n_cols, "n_attacks": n_attacks, "max_attempts": max_attempts, "seed": seed},
        details=details,
        per_record=per_record,
        per_record_description="1 = a predicate built from the release isolates this training record "
        "(row position), 0 = not singled out by any predicate",
    )
