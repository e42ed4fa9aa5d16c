"""The many-canary ε bound (Steinke, Nasr, Jagielski 2023) and the largest provable bound, against
values computed here independently (binomial sums by hand, bisection)."""

from __future__ import annotations

import math

import pytest

from privgate.stats.dp_audit import epsilon_lower_bound
from privgate.stats.one_run import (
    canary_epsilon_lower_bound,
    guess_accuracy_lower,
    largest_canary_bound,
    largest_provable_epsilon,
)


def tail(r: int, c: int, p: float) -> float:
    """P[Binomial(r, p) ≥ c] by direct summation."""
    return sum(math.comb(r, i) * p**i * (1 - p) ** (r - i) for i in range(c, r + 1))


def bisect_p(r: int, c: int, alpha: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if tail(r, c, mid) > alpha:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def test_all_correct_closed_form():
    # 10 of 10 right at α = 0.05: p⁻ = 0.05^(1/10) = 0.741134, ε = ln(0.741134 / 0.258866) = 1.05190
    assert guess_accuracy_lower(10, 10, 0.05) == pytest.approx(0.7411344, abs=1e-6)
    assert canary_epsilon_lower_bound(10, 10, alpha=0.05) == pytest.approx(1.05190, abs=1e-4)
    # 3 of 3 at α = 1/8: p⁻ = 0.5 exactly, so nothing is proven
    assert canary_epsilon_lower_bound(3, 3, alpha=0.125) == 0.0
    assert largest_canary_bound(10, alpha=0.05) == canary_epsilon_lower_bound(10, 10, alpha=0.05)


@pytest.mark.parametrize("r,c,alpha", [(4, 3, 0.05), (20, 17, 0.05), (50, 40, 0.01), (100, 90, 0.0025)])
def test_matches_binomial_tail_by_bisection(r, c, alpha):
    p = bisect_p(r, c, alpha)
    assert guess_accuracy_lower(c, r, alpha) == pytest.approx(p, abs=1e-7)
    want = max(0.0, math.log(p / (1 - p)))
    assert canary_epsilon_lower_bound(c, r, alpha=alpha) == pytest.approx(want, abs=1e-5)


def test_hand_values():
    # 4 guesses, 3 right, α = 0.05: 4p³(1 − p) + p⁴ = 0.05 at p = 0.248605 (< 1/2): nothing proven
    assert guess_accuracy_lower(3, 4, 0.05) == pytest.approx(0.2486046, abs=1e-6)
    assert canary_epsilon_lower_bound(3, 4, alpha=0.05) == 0.0
    assert canary_epsilon_lower_bound(0, 5, alpha=0.05) == 0.0
    assert canary_epsilon_lower_bound(0, 0, alpha=0.05) == 0.0


def test_bad_counts_refused():
    with pytest.raises(ValueError):
        canary_epsilon_lower_bound(5, 4)
    with pytest.raises(ValueError):
        canary_epsilon_lower_bound(1.5, 4)


def test_largest_provable_is_the_zero_error_bound():
    # 300 runs a side, α = 0.025: h = 1 − 0.0125^(1/300) = 0.0144997; ln((1 − h)/h) = 4.2191
    h = 1 - 0.0125 ** (1 / 300)
    assert largest_provable_epsilon(300, 300, alpha=0.025) == pytest.approx(math.log((1 - h) / h), abs=1e-9)
    assert largest_provable_epsilon(300, 300, alpha=0.025) == pytest.approx(4.2191, abs=1e-3)
    assert largest_provable_epsilon(60, 60, alpha=0.025) == epsilon_lower_bound(0, 60, 0, 60, alpha=0.025)
    assert largest_provable_epsilon(0, 60, alpha=0.05) == 0.0
