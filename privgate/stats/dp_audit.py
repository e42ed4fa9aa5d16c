"""Empirical lower bounds on a mechanism's differential privacy from a distinguishing game.

An audit runs a mechanism many times on neighbouring datasets (with and without a target
record), lets an attack guess "target in" or "target out" for each release, and counts its
errors on runs it was not tuned on: ``fp`` false positives among ``negatives`` runs without the
target, ``fn`` false negatives among ``positives`` runs with it.

**Why the counts bound ε.** By the hypothesis-testing characterisation of differential privacy
(Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015; also
Wasserman & Zhou 2010), every test against an (ε, δ)-DP mechanism satisfies

    FPR + e^ε · FNR ≥ 1 − δ    and    FNR + e^ε · FPR ≥ 1 − δ,

so ε ≥ ln((1 − δ − FPR) / FNR) and ε ≥ ln((1 − δ − FNR) / FPR) for the attack's TRUE rates.
Replacing each true rate by a one-sided Clopper–Pearson upper bound (each at level α/2, so both
hold together with probability ≥ 1 − α by the union bound) only makes the right-hand sides
smaller, so the resulting ε is a lower bound that exceeds the true ε with probability ≤ α
(Jagielski, Ullman & Oprea, "Auditing differentially private machine learning: how private is
private SGD?", NeurIPS 2020; Nasr, Song, Thakurta, Papernot & Carlini, "Adversary instantiation:
lower bounds for differentially private machine learning", IEEE S&P 2021). The threshold that
turns scores into guesses must be chosen on runs disjoint from those counted here, or the
counts are not binomial and the bound is not sound.

**Gaussian DP.** A μ-GDP mechanism (Dong, Roth & Su, "Gaussian differential privacy", JRSS-B
2022) has trade-off function FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ), hence μ ≥ Φ⁻¹(1 − FPR) − Φ⁻¹(FNR); with
the same upper bounds this is a sound lower bound on μ (the view Annamalai, Ganev & De Cristofaro,
"What do you want from theory alone?", USENIX Security 2024, and later GDP audits report), and
``gdp_delta`` / ``gdp_epsilon`` convert μ to the (ε, δ) curve it implies (Dong et al., Cor. 2.13).
"""

from __future__ import annotations

import math

from .._lazy import lazy_module

_opt = lazy_module("scipy.optimize")
_sp = lazy_module("scipy.special")
_st = lazy_module("scipy.stats")


def _check_alpha(alpha: float) -> None:
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")


def _check_delta(delta: float) -> None:
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1); got {delta!r}")


def _check_count(k: int, n: int, what: str) -> None:
    if int(k) != k or int(n) != n:
        # rounding a fractional error count down would overstate the bound: refuse it
        raise ValueError(f"{what}: counts must be whole numbers of runs; got k={k!r}, n={n!r}")
    if n < 0:
        raise ValueError(f"{what}: the number of runs must be ≥ 0; got n={n!r}")
    if k < 0 or k > n:
        raise ValueError(f"{what}: errors must be within [0, n={n}]; got {k!r}")


def rate_upper_bound(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper–Pearson upper bound of a rate from k events in n trials: the true rate
    is below it with probability ≥ 1 − alpha (Clopper & Pearson, Biometrika 1934; the beta
    quantile ``Beta(1 − alpha; k + 1, n − k)``). 1.0 when k == n, and when n == 0 (no runs: the
    rate is unknown, so only the trivial bound holds). For k == 0 it is 1 − alpha^(1/n)."""
    _check_alpha(alpha)
    _check_count(k, n, "rate_upper_bound")
    k, n = int(k), int(n)
    if n == 0 or k == n:
        return 1.0
    return float(_st.beta.ppf(1.0 - alpha, k + 1, n - k))


def _epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """max(0, ln((1 − δ − fpr)/fnr), ln((1 − δ − fnr)/fpr)); a term with a non-positive numerator
    is ignored, a positive numerator over a zero rate gives +inf."""
    best = 0.0
    for num, den in ((1.0 - delta - fpr, fnr), (1.0 - delta - fnr, fpr)):
        if num <= 0.0:
            continue
        if den <= 0.0:
            return math.inf
        best = max(best, math.log(num / den))
    return best


def epsilon_lower_bound(
    fp: int, negatives: int, fn: int, positives: int, *, delta: float = 0.0, alpha: float = 0.05
) -> float:
    """The empirical ε lower bound at ``delta`` that holds with confidence 1 − ``alpha``.

    ``fp`` of ``negatives`` runs without the target were guessed "in", ``fn`` of ``positives``
    runs with it were guessed "out" (by a rule fixed before these runs were seen). With
    FPR_hi, FNR_hi the one-sided Clopper–Pearson upper bounds at alpha/2 each (jointly valid at
    1 − alpha by the union bound), returns

        max(0, ln((1 − δ − FPR_hi) / FNR_hi), ln((1 − δ − FNR_hi) / FPR_hi)),

    ignoring a term whose numerator is ≤ 0. Sound by the hypothesis-testing characterisation of
    (ε, δ)-DP (Kairouz, Oh & Viswanath, ICML 2015: FPR + e^ε·FNR ≥ 1 − δ and FNR + e^ε·FPR ≥
    1 − δ): for a mechanism that is (ε, δ)-DP the result exceeds ε with probability ≤ alpha
    (Jagielski et al., NeurIPS 2020). Always finite: an upper bound from n > 0 runs is > 0."""
    _check_alpha(alpha)
    _check_delta(delta)
    _check_count(fp, negatives, "false positives")
    _check_count(fn, positives, "false negatives")
    fpr_hi = rate_upper_bound(fp, negatives, alpha / 2.0)
    fnr_hi = rate_upper_bound(fn, positives, alpha / 2.0)
    return _epsilon_from_rates(fpr_hi, fnr_hi, delta)


def epsilon_estimate(fpr: float, fnr: float, delta: float = 0.0) -> float:
    """The same formula on point rates, with no confidence: max(0, ln((1 − δ − fpr)/fnr),
    ln((1 − δ − fnr)/fpr)). For CHOOSING an attack's threshold on fit runs only — it is not a
    bound (it overshoots the true ε about half the time). +inf when a rate is 0 and the other
    term's numerator is positive (a perfect separation on the fit runs); callers that rank
    thresholds should prefer finite values or smooth the rates."""
    _check_delta(delta)
    for name, r in (("fpr", fpr), ("fnr", fnr)):
        if not (0.0 <= r <= 1.0):
            raise ValueError(f"{name} must be in [0, 1]; got {r!r}")
    return _epsilon_from_rates(float(fpr), float(fnr), delta)


def gdp_mu_lower_bound(fp: int, negatives: int, fn: int, positives: int, *, alpha: float = 0.05) -> float:
    """Lower bound on the Gaussian-DP parameter μ that holds with confidence 1 − ``alpha``:
    max(0, Φ⁻¹(1 − FPR_hi) − Φ⁻¹(FNR_hi)), with the same one-sided Clopper–Pearson upper bounds
    at alpha/2 each as ``epsilon_lower_bound``. Sound because a μ-GDP mechanism's every test has
    FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ) (Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022),
    and the expression decreases in both rates; the trade-off curve is symmetric, so one term
    covers both directions. Finite for n > 0 runs on each side."""
    _check_alpha(alpha)
    _check_count(fp, negatives, "false positives")
    _check_count(fn, positives, "false negatives")
    fpr_hi = rate_upper_bound(fp, negatives, alpha / 2.0)
    fnr_hi = rate_upper_bound(fn, positives, alpha / 2.0)
    if fpr_hi >= 1.0 or fnr_hi >= 1.0:
        return 0.0
    mu = float(_sp.ndtri(1.0 - fpr_hi) - _sp.ndtri(fnr_hi))
    return max(0.0, mu)


def gdp_delta(mu: float, epsilon: float) -> float:
    """The δ at which a μ-GDP mechanism is (ε, δ)-DP (Dong, Roth & Su 2022, Corollary 2.13):
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε · Φ(−ε/μ − μ/2). The second term is computed in log space (no
    overflow for large ε). μ = 0 gives 0 (perfect privacy)."""
    if not (mu >= 0.0) or math.isinf(mu):
        raise ValueError(f"mu must be finite and ≥ 0; got {mu!r}")
    if not (epsilon >= 0.0):
        raise ValueError(f"epsilon must be ≥ 0; got {epsilon!r}")
    if mu == 0.0 or math.isinf(epsilon):
        return 0.0
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    first = float(_sp.ndtr(a))
    second = math.exp(epsilon + float(_sp.log_ndtr(b)))
    return max(0.0, first - second)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest ε ≥ 0 at which a μ-GDP mechanism is (ε, δ)-DP: the root of
    ``gdp_delta(mu, ε) = delta`` (δ(ε) strictly decreases in ε, so the root is unique; Brent's
    method on a bracket doubled until it holds). 0 when delta ≥ δ(0) = 2Φ(μ/2) − 1 (or μ = 0);
    +inf when delta == 0 and μ > 0 (no finite pure-ε guarantee)."""
    if not (mu >= 0.0) or math.isinf(mu):
        raise ValueError(f"mu must be finite and ≥ 0; got {mu!r}")
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1); got {delta!r}")
    if mu == 0.0 or delta >= gdp_delta(mu, 0.0):
        return 0.0
    if delta == 0.0:
        return math.inf
    hi = max(1.0, mu * mu)
    while gdp_delta(mu, hi) > delta:
        hi *= 2.0
        if hi > 1e6:  # δ underflows long before this for any usable μ
            return math.inf
    return float(_opt.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


def bonferroni_alpha(alpha: float, tests: int) -> float:
    """The per-test level that keeps the family-wise error ≤ ``alpha`` over ``tests`` bounds
    under any dependence: alpha / tests (Bonferroni; the union bound). An audit reporting the
    largest of several ε lower bounds (targets × attacks) computes each at this level so that
    the maximum is sound at 1 − alpha. (``bonferroni`` in :mod:`.testing` adjusts p-values;
    this is the same correction applied to the level.)"""
    _check_alpha(alpha)
    if int(tests) != tests or tests < 1:
        raise ValueError(f"tests must be a positive integer; got {tests!r}")
    return alpha / int(tests)
