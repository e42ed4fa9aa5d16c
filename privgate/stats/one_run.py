"""ε lower bounds from many canaries guessed at once (Steinke, Nasr & Jagielski, "Privacy auditing
with one (1) training run", NeurIPS 2023), and the largest bound a given number of audit runs can
show.

**The many-canary game.** m canaries are each included in the mechanism's input independently
with probability 1/2 (S ∈ {−1, +1}^m uniform); the auditor sees the output, guesses "in" or "out"
for some canaries and abstains on the rest (the guesses may depend on the output in any way).
Their Theorem 3.1 (pure ε-DP, δ = 0): conditional on any set of r guesses, the number of correct
guesses W is stochastically dominated by Binomial(r, e^ε / (1 + e^ε)). Hence, for W = c correct
among r, the ε of every ε-DP mechanism satisfies P[W ≥ c] ≤ P[Binomial(r, p_ε) ≥ c]; the largest
p with that tail ≤ α is the one-sided Clopper–Pearson lower bound p⁻ = Beta(α; c, r − c + 1),
and ε ≥ logit(p⁻) holds with probability ≥ 1 − α. This is their exact tail bound for (ε, 0),
not an asymptotic one. Many independent runs of the mechanism, each with its own inclusion bits,
are one mechanism of the same kind: changing one (canary, run) bit changes one run's input by one
record, so the theorem holds for the bits of all runs together.

Orientation: the bound is a LOWER bound on ε; a mechanism whose claim is below it is proven not
ε-DP (at confidence 1 − α), a bound below the claim proves nothing.
"""

from __future__ import annotations

import math

from .._lazy import lazy_module
from .dp_audit import _check_alpha, _check_count, _check_delta, rate_upper_bound

_st = lazy_module("scipy.stats")


def guess_accuracy_lower(correct: int, guesses: int, alpha: float) -> float:
    """One-sided Clopper–Pearson lower bound on the accuracy of ``guesses`` guesses of which
    ``correct`` were right: the p with P[Binomial(guesses, p) ≥ correct] = ``alpha``
    (``Beta(alpha; correct, guesses − correct + 1)``); 0 when nothing was right or guessed."""
    _check_alpha(alpha)
    _check_count(correct, guesses, "correct guesses")
    c, r = int(correct), int(guesses)
    if c == 0 or r == 0:
        return 0.0
    if c == r:  # closed form: p^r = alpha
        return float(alpha ** (1.0 / r))
    return float(_st.beta.ppf(alpha, c, r - c + 1))


def canary_epsilon_lower_bound(correct: int, guesses: int, *, alpha: float = 0.05) -> float:
    """The pure-DP ε lower bound of Steinke, Nasr & Jagielski (NeurIPS 2023, Theorem 3.1) from
    ``correct`` right guesses among ``guesses`` (abstentions not counted), holding with
    probability ≥ 1 − ``alpha``: max(0, ln(p⁻ / (1 − p⁻))) with p⁻ the exact one-sided binomial
    lower bound of :func:`guess_accuracy_lower`. Finite for any finite counts."""
    p = guess_accuracy_lower(correct, guesses, alpha)
    if p <= 0.5:
        return 0.0
    return math.log(p / (1.0 - p))


def largest_canary_bound(guesses: int, *, alpha: float = 0.05) -> float:
    """The largest bound ``guesses`` guesses can show: all of them right."""
    return canary_epsilon_lower_bound(int(guesses), int(guesses), alpha=alpha)


def largest_provable_epsilon(negatives: int, positives: int, *, delta: float = 0.0, alpha: float = 0.05) -> float:
    """The largest ε lower bound :func:`privgate.stats.dp_audit.epsilon_lower_bound` can give
    with ``negatives`` runs without the target and ``positives`` with it: the bound with no error
    at all, ln((1 − δ − h₊) / h₋) with h the Clopper–Pearson upper bounds of 0 errors
    (1 − (α/2)^(1/n)). An audit whose bound is near this value is limited by its run count, not
    by its attack."""
    _check_alpha(alpha)
    _check_delta(delta)
    _check_count(0, negatives, "runs without the target")
    _check_count(0, positives, "runs with the target")
    fpr_hi = rate_upper_bound(0, int(negatives), alpha / 2.0)
    fnr_hi = rate_upper_bound(0, int(positives), alpha / 2.0)
    best = 0.0
    for num, den in ((1.0 - delta - fpr_hi, fnr_hi), (1.0 - delta - fnr_hi, fpr_hi)):
        if num > 0.0 and den > 0.0:
            best = max(best, math.log(num / den))
    return best
