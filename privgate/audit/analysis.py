"""From membership scores to evidence: per target and attack, a threshold chosen on the fit runs,
error counts on the disjoint test runs, and what they prove.

- **ε lower bound** (Jagielski et al., NeurIPS 2020; Nasr et al., IEEE S&P 2021): the attack's
  guess "member iff score ≥ τ" (or ≤ τ; the direction and τ chosen on the fit runs to maximise
  the bound those runs would give) is applied to the test runs; their false-positive and
  false-negative counts give Clopper–Pearson upper bounds on the error rates, and every
  (ε, δ)-DP generator keeps FPR + e^ε·FNR ≥ 1 − δ (and the reverse), so
  :func:`privgate.stats.dp_audit.epsilon_lower_bound` holds. The audit spends its error
  probability α in two halves (a union bound): the (target, attack) pair whose fit runs promise
  the most is tested alone on the test runs at α/2 — chosen without looking at the test runs, it
  needs no correction for the number of pairs — and every pair's own bound is computed at
  α/(2 × targets × attacks) (Bonferroni). The audit's bound is the largest of these, so it holds
  with confidence 1 − α whatever the dependence between targets and attacks.
- **Gaussian DP** (Dong, Roth, Su, JRSS-B 2022): the same counts bound μ from below; reported,
  not used in the ε decision.
- **AUC** of the test runs' scores with Hoeffding's distribution-free interval (valid at any
  number of runs; :func:`privgate.stats.hoeffding_auc_interval`), its lower end for the gate's
  ``auc_lower`` rule one-sided at the pair's Bonferroni share; **TPR at a fixed FPR** (1 %, 0.1 %):
  the threshold is the fit runs' out-scores' (1 − FPR) point, the TPR and the FPR it reaches on
  the test runs with Clopper–Pearson intervals. With fewer than 1/FPR test runs without the
  target, that FPR cannot be resolved; ``fpr_resolution`` says what can.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from ..stats import clopper_pearson, delong_auc, hoeffding_auc_interval
from ..stats.dp_audit import epsilon_lower_bound, gdp_mu_lower_bound

LEVEL = 0.95


@lru_cache(maxsize=65536)
def _epsilon_lower(fp: int, n_out: int, fn: int, n_in: int, delta: float, alpha: float) -> float:
    # the threshold search meets the same counts many times
    return epsilon_lower_bound(fp, n_out, fn, n_in, delta=delta, alpha=alpha)


FIXED_FPRS = (0.01, 0.001)


def choose_threshold(
    scores: np.ndarray, labels: np.ndarray, *, delta: float, alpha: float, with_score: bool = False
) -> tuple:
    """(direction, τ) for the guess "member iff direction·score ≥ τ", chosen on fit runs to
    maximise the ε lower bound their own counts would give (ties: the larger TPR − FPR, then the
    first found). τ = +inf (never guess member) when nothing separates. ``with_score``: also
    (that bound, that TPR − FPR), by which the audit picks its most promising attack."""
    y = np.asarray(labels, dtype=bool)
    best: tuple[float, float, int, float] = (-1.0, -2.0, 1, math.inf)
    n_in, n_out = int(y.sum()), int((~y).sum())
    for direction in (1, -1):
        s = direction * np.asarray(scores, dtype=np.float64)
        for tau in np.unique(s):
            guess = s >= tau
            fp = int((guess & ~y).sum())
            fn = int((~guess & y).sum())
            eps = _epsilon_lower(fp, n_out, fn, n_in, delta, alpha)
            youden = (n_in - fn) / max(n_in, 1) - fp / max(n_out, 1)
            if (eps, youden) > best[:2]:
                best = (eps, youden, direction, float(tau))
    if with_score:
        return best[2], best[3], (best[0], best[1])
    return best[2], best[3]


def errors_at(scores: np.ndarray, labels: np.ndarray, direction: int, tau: float) -> tuple[int, int, int, int]:
    """(false positives, runs without the target, false negatives, runs with it)."""
    y = np.asarray(labels, dtype=bool)
    guess = direction * np.asarray(scores, dtype=np.float64) >= tau
    return int((guess & ~y).sum()), int((~y).sum()), int((~guess & y).sum()), int(y.sum())


def tpr_at_fpr(
    fit_scores: np.ndarray, fit_labels: np.ndarray, test_scores: np.ndarray, test_labels: np.ndarray, fpr: float
) -> dict[str, Any]:
    """The test TPR and FPR of the threshold that keeps the fit runs' FPR at most ``fpr``."""
    out = np.sort(np.asarray(fit_scores)[~np.asarray(fit_labels, dtype=bool)])
    allowed = int(math.floor(fpr * out.size))  # fit out-scores allowed at or above τ
    tau = float(np.nextafter(out[out.size - 1 - allowed], np.inf)) if allowed < out.size else -math.inf
    fp, n_out, fn, n_in = errors_at(test_scores, test_labels, 1, tau)
    tp = n_in - fn
    return {
        "fpr_target": fpr,
        "tpr": tp / n_in,
        "tpr_ci": list(clopper_pearson(tp, n_in, LEVEL)),
        "fpr": fp / n_out,
        "fpr_ci": list(clopper_pearson(fp, n_out, LEVEL)),
        "fpr_resolution": 1.0 / n_out,
    }


def analyse_attack(
    fit_scores: np.ndarray,
    fit_labels: np.ndarray,
    test_scores: np.ndarray,
    test_labels: np.ndarray,
    *,
    delta: float,
    alpha_each: float,
) -> dict[str, Any]:
    """Everything one attack proves about one target (see the module docstring)."""
    direction, tau, fit_score = choose_threshold(fit_scores, fit_labels, delta=delta, alpha=alpha_each, with_score=True)
    fp, n_out, fn, n_in = errors_at(test_scores, test_labels, direction, tau)
    eps = epsilon_lower_bound(fp, n_out, fn, n_in, delta=delta, alpha=alpha_each)
    mu = gdp_mu_lower_bound(fp, n_out, fn, n_in, alpha=alpha_each)
    auc, _ = delong_auc(test_labels, test_scores)
    # Hoeffding's interval, not DeLong's: with the handful of test runs an audit may have, a
    # chance perfect split has DeLong variance 0 and an interval of [1, 1]
    auc_ci = list(hoeffding_auc_interval(auc, n_in, n_out, LEVEL))
    auc_lower = hoeffding_auc_interval(auc, n_in, n_out, 1.0 - alpha_each, one_sided=True)[0]
    return {
        "epsilon_lower": float(eps),
        "mu_lower": float(mu),
        "direction": int(direction),
        "threshold": tau,
        "fit_score": list(fit_score),
        "false_positives": fp,
        "runs_without": n_out,
        "false_negatives": fn,
        "runs_with": n_in,
        "auc": float(auc),
        "auc_ci": auc_ci,
        "auc_lower_corrected": float(auc_lower),
        "tpr_at_fpr": [tpr_at_fpr(fit_scores, fit_labels, test_scores, test_labels, f) for f in FIXED_FPRS],
    }


#: thresholds tried per direction when pooling guesses over targets (quantiles of the fit scores)
POOLED_THRESHOLDS = 64


def _beta_lower(correct: np.ndarray, guesses: np.ndarray, alpha: float) -> np.ndarray:
    """Vectorised one-sided Clopper–Pearson lower bound of an accuracy (0 where nothing is right)."""
    from scipy.stats import beta

    c = np.asarray(correct, dtype=np.float64)
    k = np.asarray(guesses, dtype=np.float64)
    ok = c > 0
    out = np.zeros(np.broadcast(c, k).shape)
    with np.errstate(all="ignore"):
        out[ok] = beta.ppf(alpha, c[ok], (k - c)[ok] + 1.0)
    return np.nan_to_num(out)


def _logit_bound(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0.5, np.log(p / np.maximum(1.0 - p, 1e-300)), 0.0)


def rank_within(fit: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Each column of ``other`` as mid-ranks (in [0, 1]) among the same column of ``fit``: a
    transform fixed by the fit runs alone that puts targets whose raw scores differ in scale on
    one scale."""
    out = np.empty(other.shape, dtype=np.float64)
    n = max(fit.shape[0], 1)
    for g in range(fit.shape[1]):
        s = np.sort(fit[:, g])
        out[:, g] = (np.searchsorted(s, other[:, g], "left") + np.searchsorted(s, other[:, g], "right")) / (2.0 * n)
    return out


def center_within(fit: np.ndarray, fit_labels: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Each column of ``other`` minus the (lower) median of the same column's fit scores in runs
    WITHOUT that target (of every column's out-scores where a column has none, 0 when no column
    has any): a shift fixed by the fit runs alone that puts every target's "out" level at
    0. A cell canary that shares its cell with background records scores that cell's count; the
    shift takes the background's part away, so one threshold serves canaries in empty and in
    populated cells alike (for noisy counts the likelihood ratio depends on the count minus the
    background's, not on the count).

    Soundness: the fit runs are disjoint from the test runs and their inclusions are drawn
    independently, so given the fit runs the shift is a constant and each test guess is a
    function of that run's release alone — what Steinke, Nasr & Jagielski's Theorem 3.1 (NeurIPS
    2023) asks of the guesses; the bound keeps its confidence."""
    y = np.asarray(fit_labels, dtype=bool)
    fit = np.asarray(fit, dtype=np.float64)
    shift = np.zeros(fit.shape[1])
    if (~y).any():  # the lower median: a score observed, so integer counts stay integers
        everyone = float(np.quantile(fit[~y], 0.5, method="lower"))
        for g in range(fit.shape[1]):
            own = fit[~y[:, g], g]
            shift[g] = float(np.quantile(own, 0.5, method="lower")) if own.size else everyone
    return other - shift[None, :]


def _guess_counts(scores: np.ndarray, labels: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, ...]:
    """For every threshold τ: right and total "in" guesses (score ≥ τ) and "out" guesses (< τ)."""
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], labels[order]
    n = s.size
    below = np.searchsorted(s, taus, "left")  # observations with score < τ
    cum_in = np.concatenate([[0], np.cumsum(y)])
    cum_out = np.concatenate([[0], np.cumsum(~y)])
    k_out = below
    c_out = cum_out[below]
    k_in = n - below
    c_in = cum_in[n] - cum_in[below]
    return c_in, k_in, c_out, k_out


def pooled_guesses(
    fit_scores: np.ndarray,
    fit_labels: np.ndarray,
    test_scores: np.ndarray,
    test_labels: np.ndarray,
    *,
    alpha_fit: float,
    alpha: float,
    rank: bool,
    center: bool = False,
) -> dict[str, Any]:
    """The many-canary evidence of one attack over several targets (Steinke, Nasr, Jagielski,
    NeurIPS 2023): every (run, target) of the test runs is one canary guess — "in" when its
    score is at or above τ_in, "out" below τ_out, abstain between — with τ_out ≤ τ_in and the
    direction chosen on the fit runs to maximise the bound they would give; the number right
    among the test runs' guesses bounds ε by
    :func:`privgate.stats.one_run.canary_epsilon_lower_bound` at ``alpha``. Valid when each
    target is included in each run independently with probability 1/2 (the audit's designs),
    whatever the dependence between targets in one run. Arrays are (runs, targets); ``rank``
    first maps each target's scores to mid-ranks among its own fit scores (targets of unlike
    scales); ``center`` first shifts each target's scores by the lower median of its own fit
    scores in runs without it (:func:`center_within`: targets crafted alike whose backgrounds differ). Both
    transforms are fixed by the fit runs alone, so the test runs' guesses stay a function of the
    release given the fit runs, as the theorem asks."""
    from ..stats.one_run import canary_epsilon_lower_bound, largest_canary_bound

    fs = np.asarray(fit_scores, dtype=np.float64)
    ts = np.asarray(test_scores, dtype=np.float64)
    if rank:
        fs, ts = rank_within(fs, fs), rank_within(fs, ts)
    elif center:
        fy2 = np.asarray(fit_labels, dtype=bool)
        fs, ts = center_within(fs, fy2, fs), center_within(fs, fy2, ts)
    fy, ty = np.asarray(fit_labels, dtype=bool).ravel(), np.asarray(test_labels, dtype=bool).ravel()
    fs, ts = fs.ravel(), ts.ravel()
    best = (-1.0, -1, 1, math.inf, math.inf)
    for direction in (1, -1):
        s = direction * fs
        uniq = np.unique(s)
        if uniq.size > POOLED_THRESHOLDS:
            uniq = np.unique(np.quantile(uniq, np.linspace(0.0, 1.0, POOLED_THRESHOLDS), method="lower"))
        taus = np.concatenate([uniq, [math.inf]])
        c_in, k_in, c_out, k_out = _guess_counts(s, fy, taus)
        # pair (i = τ_in, j = τ_out) with τ_out ≤ τ_in: "out" below taus[j], "in" at or above taus[i]
        c = c_in[:, None] + c_out[None, :]
        k = k_in[:, None] + k_out[None, :]
        valid = np.arange(taus.size)[None, :] <= np.arange(taus.size)[:, None]
        eps = np.where(valid, _logit_bound(_beta_lower(c, k, alpha_fit)), -1.0)
        i, j = np.unravel_index(int(np.argmax(eps + 1e-12 * k)), eps.shape)
        if (eps[i, j], k[i, j]) > best[:2]:
            best = (float(eps[i, j]), int(k[i, j]), direction, float(taus[i]), float(taus[j]))
    _, _, direction, tau_in, tau_out = best
    s = direction * ts
    guess_in, guess_out = s >= tau_in, s < tau_out
    right = int((guess_in & ty).sum() + (guess_out & ~ty).sum())
    guesses = int(guess_in.sum() + guess_out.sum())
    return {
        "epsilon_lower": float(canary_epsilon_lower_bound(right, guesses, alpha=alpha)),
        "fit_score": [best[0], float(best[1])],
        "direction": int(direction),
        "threshold_in": tau_in,
        "threshold_out": tau_out,
        "correct": right,
        "guesses": guesses,
        "observations": int(ts.size),
        "epsilon_provable": float(largest_canary_bound(int(ts.size), alpha=alpha)),
        "ranked": bool(rank),
        "centered": bool(center and not rank),
    }
