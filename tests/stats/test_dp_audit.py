"""privgate.stats.dp_audit: hand-computed values, the algebra of the bounds, and a fast seeded
soundness simulation (the large one is benchmarks/audit_bounds.py)."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from privgate import stats
from privgate.stats import dp_audit

PHI = NormalDist()


def _cdf(x: float) -> float:
    # the standard normal CDF written independently of scipy
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


# ---------------------------------------------------------------- rate_upper_bound


def test_rate_upper_bound_closed_forms():
    # 0 of n: (1 − p)^n = alpha  →  p = 1 − alpha^(1/n)
    assert stats.rate_upper_bound(0, 50, 0.05) == pytest.approx(1 - 0.05 ** (1 / 50), rel=1e-12)
    assert round(stats.rate_upper_bound(0, 50, 0.05), 6) == 0.058155
    # n − 1 of n: P(X ≥ n−1 | p)… the beta quantile Beta(1 − alpha; n, 1) = (1 − alpha)^(1/n)
    assert stats.rate_upper_bound(19, 20, 0.05) == pytest.approx(0.95 ** (1 / 20), rel=1e-12)
    assert stats.rate_upper_bound(7, 7, 0.05) == 1.0
    assert stats.rate_upper_bound(0, 0, 0.05) == 1.0


def test_rate_upper_bound_is_one_sided_and_matches_the_binomial_tail():
    # the bound p solves P(Binomial(n, p) ≤ k) = alpha (exact definition, checked by summation)
    k, n, alpha = 3, 40, 0.1
    p = stats.rate_upper_bound(k, n, alpha)
    tail = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
    assert tail == pytest.approx(alpha, abs=1e-10)
    # one-sided at alpha equals the upper end of the two-sided interval at level 1 − 2·alpha
    assert p == pytest.approx(stats.clopper_pearson(k, n, level=1 - 2 * alpha)[1], rel=1e-12)


def test_rate_upper_bound_monotone():
    ups = [stats.rate_upper_bound(k, 100, 0.05) for k in range(0, 101, 5)]
    assert all(a < b for a, b in zip(ups, ups[1:]))
    assert stats.rate_upper_bound(2, 100, 0.01) > stats.rate_upper_bound(2, 100, 0.05)
    assert stats.rate_upper_bound(0, 1000, 0.05) < stats.rate_upper_bound(0, 100, 0.05)


@pytest.mark.parametrize("args", [(-1, 10, 0.05), (11, 10, 0.05), (1, 10, 0.0), (1, 10, 1.0), (0, -1, 0.05)])
def test_rate_upper_bound_rejects_bad_input(args):
    with pytest.raises(ValueError):
        stats.rate_upper_bound(*args)


# ---------------------------------------------------------------- epsilon_lower_bound


def test_epsilon_lower_bound_hand_computed():
    # no errors in 100 + 100 runs: u = 1 − 0.025^(1/100) on both sides (alpha split in two)
    u = 1 - 0.025 ** (1 / 100)
    assert stats.epsilon_lower_bound(0, 100, 0, 100) == pytest.approx(math.log((1 - u) / u), rel=1e-12)
    assert round(stats.epsilon_lower_bound(0, 100, 0, 100), 4) == 3.2813
    # with delta: the numerator loses delta
    assert stats.epsilon_lower_bound(0, 100, 0, 100, delta=0.01) == pytest.approx(
        math.log((1 - 0.01 - u) / u), rel=1e-12
    )
    # asymmetric: 0 of 200 false positives, 30 of 100 false negatives → the first term wins
    f = 1 - 0.025 ** (1 / 200)
    g = dp_audit.rate_upper_bound(30, 100, 0.025)
    want = max(math.log((1 - f) / g), math.log((1 - g) / f))
    assert stats.epsilon_lower_bound(0, 200, 30, 100) == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(math.log((1 - g) / f))


def test_epsilon_lower_bound_zero_for_a_coin_flip_and_when_numerators_vanish():
    assert stats.epsilon_lower_bound(50, 100, 50, 100) == 0.0
    # n = 0 on a side: the trivial rate bound 1 leaves no positive term
    assert stats.epsilon_lower_bound(0, 0, 0, 100) == 0.0
    # always wrong: both upper bounds are 1, so both numerators vanish (the bound does not flip
    # the attack's guesses; choosing the direction belongs to the threshold, on fit runs)
    assert stats.epsilon_lower_bound(100, 100, 100, 100) == 0.0


def test_epsilon_lower_bound_symmetry_and_monotonicity():
    assert stats.epsilon_lower_bound(3, 120, 17, 80) == stats.epsilon_lower_bound(17, 80, 3, 120)
    base = stats.epsilon_lower_bound(3, 100, 10, 100)
    assert stats.epsilon_lower_bound(4, 100, 10, 100) < base
    assert stats.epsilon_lower_bound(3, 100, 11, 100) < base
    assert stats.epsilon_lower_bound(3, 100, 10, 100, alpha=0.2) > base
    assert stats.epsilon_lower_bound(3, 100, 10, 100, delta=1e-3) < base
    runs = [stats.epsilon_lower_bound(0, n, 0, n) for n in (10, 50, 100, 500, 1000)]
    assert all(a < b for a, b in zip(runs, runs[1:]))


def test_epsilon_lower_bound_rejects_bad_input():
    with pytest.raises(ValueError, match="false positives"):
        stats.epsilon_lower_bound(11, 10, 0, 10)
    with pytest.raises(ValueError, match="false negatives"):
        stats.epsilon_lower_bound(0, 10, -1, 10)
    with pytest.raises(ValueError, match="delta"):
        stats.epsilon_lower_bound(0, 10, 0, 10, delta=1.0)
    with pytest.raises(ValueError, match="alpha"):
        stats.epsilon_lower_bound(0, 10, 0, 10, alpha=0.0)
    with pytest.raises(ValueError, match="whole numbers"):
        stats.epsilon_lower_bound(2.5, 10, 0, 10)
    assert stats.epsilon_lower_bound(np.int64(0), np.int64(10), 0, 10) == stats.epsilon_lower_bound(0, 10, 0, 10)


# ---------------------------------------------------------------- epsilon_estimate


def test_epsilon_estimate_point_formula():
    assert stats.epsilon_estimate(0.1, 0.2) == pytest.approx(math.log(8.0))
    assert stats.epsilon_estimate(0.2, 0.1) == pytest.approx(math.log(8.0))
    assert stats.epsilon_estimate(0.1, 0.2, delta=0.1) == pytest.approx(math.log(7.0))
    assert stats.epsilon_estimate(0.5, 0.5) == 0.0
    assert stats.epsilon_estimate(0.0, 0.3) == math.inf
    assert stats.epsilon_estimate(0.0, 1.0) == 0.0  # never guesses "in": no evidence either way
    with pytest.raises(ValueError):
        stats.epsilon_estimate(1.2, 0.1)


# ---------------------------------------------------------------- Gaussian DP


def test_gdp_delta_known_value():
    # μ = 1, ε = 1: Φ(−0.5) − e·Φ(−1.5), with Φ from math.erfc
    want = _cdf(-0.5) - math.e * _cdf(-1.5)
    assert stats.gdp_delta(1.0, 1.0) == pytest.approx(want, rel=1e-12)
    assert round(want, 6) == 0.126937
    # ε = 0: δ = Φ(μ/2) − Φ(−μ/2)
    assert stats.gdp_delta(2.0, 0.0) == pytest.approx(_cdf(1.0) - _cdf(-1.0), rel=1e-12)
    assert stats.gdp_delta(0.0, 1.0) == 0.0
    # no overflow far out in the tail, and δ decreases in ε
    ds = [stats.gdp_delta(1.0, e) for e in (0.0, 0.5, 1, 2, 4, 8, 50, 800)]
    assert all(a > b for a, b in zip(ds[:-1], ds[1:])) or ds[-1] == 0.0
    assert all(0.0 <= d < 1.0 for d in ds)


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_gdp_epsilon_inverts_gdp_delta(mu, eps):
    d = stats.gdp_delta(mu, eps)
    if d == 0.0:
        pytest.skip("δ underflows")
    assert stats.gdp_epsilon(mu, d) == pytest.approx(eps, rel=1e-7)


def test_gdp_epsilon_edges():
    assert stats.gdp_epsilon(0.0, 1e-5) == 0.0
    assert stats.gdp_epsilon(1.0, 0.0) == math.inf
    assert stats.gdp_epsilon(1.0, 0.5) == 0.0  # δ(0) = 2Φ(1/2) − 1 ≈ 0.383 < 0.5
    e = stats.gdp_epsilon(1.0, 1e-5)
    assert stats.gdp_delta(1.0, e) == pytest.approx(1e-5, rel=1e-6)
    assert 4.0 < e < 5.0


def test_gdp_mu_lower_bound_hand_computed():
    u = 1 - 0.025 ** (1 / 1000)
    want = PHI.inv_cdf(1 - u) - PHI.inv_cdf(u)
    assert stats.gdp_mu_lower_bound(0, 1000, 0, 1000) == pytest.approx(want, rel=1e-9)
    f = dp_audit.rate_upper_bound(12, 300, 0.025)
    g = dp_audit.rate_upper_bound(40, 200, 0.025)
    assert stats.gdp_mu_lower_bound(12, 300, 40, 200) == pytest.approx(PHI.inv_cdf(1 - f) - PHI.inv_cdf(g), rel=1e-9)
    assert stats.gdp_mu_lower_bound(12, 300, 40, 200) == stats.gdp_mu_lower_bound(40, 200, 12, 300)
    assert stats.gdp_mu_lower_bound(50, 100, 50, 100) == 0.0
    assert stats.gdp_mu_lower_bound(0, 0, 0, 10) == 0.0


def test_bonferroni_alpha():
    assert stats.bonferroni_alpha(0.05, 10) == pytest.approx(0.005)
    assert stats.bonferroni_alpha(0.05, 1) == 0.05
    with pytest.raises(ValueError):
        stats.bonferroni_alpha(0.05, 0)
    with pytest.raises(ValueError):
        stats.bonferroni_alpha(1.5, 3)


# ---------------------------------------------------------------- soundness simulation

ALPHA = 0.05
REPS = 2000
# P(Binomial(2000, 0.05) > 2000·0.062) < 1 %: room for the simulation's own noise
LIMIT = ALPHA + 0.012


def _exceedance(bound, fpr: float, fnr: float, n: int, claim: float, seed: int) -> float:
    """Share of REPS simulated audits (n runs per side, error counts binomial at the attack's
    true rates) whose bound exceeds ``claim``; the bound is evaluated once per distinct pair."""
    rng = np.random.default_rng(seed)
    fp = rng.binomial(n, fpr, REPS)
    fn = rng.binomial(n, fnr, REPS)
    pairs, inverse = np.unique(np.stack([fp, fn], 1), axis=0, return_inverse=True)
    values = np.array([bound(int(a), n, int(b), n) for a, b in pairs])
    return float(np.mean(values[inverse.ravel()] > claim + 1e-12))


def _dp_boundary(eps: float, delta: float) -> list[tuple[float, float]]:
    """Attacks whose rates lie ON the (ε, δ)-DP trade-off curve (the tightest a truly (ε, δ)-DP
    mechanism allows): FNR = 1 − δ − e^ε·FPR, up to the corner FPR = FNR, plus the Laplace
    mechanism's threshold curve for counts 0 vs 1 at scale 1/ε (δ = 0), tight at thresholds in
    [0, 1]."""
    corner = (1 - delta) / (1 + math.exp(eps))
    pts = [(t, 1 - delta - math.exp(eps) * t) for t in (0.002, 0.01, 0.3 * corner, corner)]
    if delta == 0.0:
        for c in (0.25, 0.5, 0.9):
            pts.append((0.5 * math.exp(-eps * c), 0.5 * math.exp(eps * (c - 1))))
    return pts


@pytest.mark.parametrize("eps,delta", [(0.5, 0.0), (1.0, 0.0), (2.0, 0.0), (1.0, 1e-2)])
def test_epsilon_lower_bound_is_sound_on_the_dp_boundary(eps, delta):
    def bound(fp, neg, fn, pos):
        return stats.epsilon_lower_bound(fp, neg, fn, pos, delta=delta, alpha=ALPHA)

    for i, (fpr, fnr) in enumerate(_dp_boundary(eps, delta)):
        for n in (60, 400):
            freq = _exceedance(bound, fpr, fnr, n, eps, seed=1000 * i + n)
            assert freq <= LIMIT, (eps, delta, fpr, fnr, n, freq)


def test_the_soundness_check_catches_unsound_bounds():
    # the same harness must reject a bound without confidence (the point estimate) and one whose
    # rate bounds hold only at 70 % each (too loose a level)
    eps = 1.0
    fpr = fnr = 1 / (1 + math.exp(eps))  # the corner, where both rates matter

    def plug_in(fp, neg, fn, pos):
        return stats.epsilon_estimate(fp / neg, fn / pos)

    def loose_level(fp, neg, fn, pos):
        return dp_audit._epsilon_from_rates(
            dp_audit.rate_upper_bound(fp, neg, 0.3), dp_audit.rate_upper_bound(fn, pos, 0.3), 0.0
        )

    assert _exceedance(plug_in, fpr, fnr, 400, eps, seed=7) > 0.3
    assert _exceedance(loose_level, fpr, fnr, 400, eps, seed=7) > LIMIT


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gdp_mu_lower_bound_is_sound_on_the_gdp_curve(mu):
    def bound(fp, neg, fn, pos):
        return stats.gdp_mu_lower_bound(fp, neg, fn, pos, alpha=ALPHA)

    for i, t in enumerate((0.01, 0.1, 0.3, 1 - _cdf(mu / 2))):
        fnr = _cdf(PHI.inv_cdf(1 - t) - mu)
        freq = _exceedance(bound, t, fnr, 300, mu, seed=17 * i + 3)
        assert freq <= LIMIT, (mu, t, fnr, freq)

    def plug_in(fp, neg, fn, pos):
        a, b = min(max(fp / neg, 1e-9), 1 - 1e-9), min(max(fn / pos, 1e-9), 1 - 1e-9)
        return PHI.inv_cdf(1 - a) - PHI.inv_cdf(b)

    t = 1 - _cdf(mu / 2)
    assert _exceedance(plug_in, t, _cdf(PHI.inv_cdf(1 - t) - mu), 300, mu, seed=5) > 0.3
