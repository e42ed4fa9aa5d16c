"""privgate.stats against hand-computed and published values."""

import math

import numpy as np
import pytest

from privgate import stats


def test_wilson_matches_hand_computation():
    # k=5, n=100, z=1.959964: centre (0.05 + z²/200)/(1 + z²/100), half-width as in Wilson (1927)
    z = 1.959963984540054
    p, n = 0.05, 100
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = stats.wilson(5, 100)
    assert lo == pytest.approx(centre - half, abs=1e-12)
    assert hi == pytest.approx(centre + half, abs=1e-12)
    assert (round(lo, 4), round(hi, 4)) == (0.0215, 0.1118)


def test_clopper_pearson_closed_forms_at_the_edges():
    # k = 0: upper = 1 − (α/2)^(1/n); k = n: lower = (α/2)^(1/n)
    lo, hi = stats.clopper_pearson(0, 5000)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 5000), rel=1e-9)
    lo, hi = stats.clopper_pearson(20, 20)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 20), rel=1e-9)


def test_wilson_rate_is_anonymeters_centre_and_half_width():
    rate, err = stats.wilson_rate(10, 500)
    lo, hi = stats.wilson(10, 500)
    assert rate == pytest.approx((lo + hi) / 2, abs=1e-12)
    assert err == pytest.approx((hi - lo) / 2, abs=1e-12)


def test_control_risk_formula_and_propagated_error():
    r = stats.control_risk(100, 500, 20, 500)
    a, da = stats.wilson_rate(100, 500)
    c, dc = stats.wilson_rate(20, 500)
    assert r.risk == pytest.approx((a - c) / (1 - c))
    err = math.hypot(da / (1 - c), dc * (a - 1) / (1 - c) ** 2)
    assert r.ci == pytest.approx((r.risk - err, r.risk + err))
    # an attack no better than its control: risk ≤ 0, clipped interval touches 0
    r0 = stats.control_risk(20, 500, 30, 500)
    assert r0.risk < 0 and r0.ci[0] == 0.0
    # far below its control: the whole interval is below 0, clipped to (0, 0), never (negative, 0)
    r1 = stats.control_risk(0, 500, 250, 500)
    assert r1.risk < 0 and r1.ci == (0.0, 0.0)


def test_difference_interval_reduces_to_root_sum_of_squares_for_symmetric_intervals():
    lo, hi = stats.difference_interval(0.3, (0.25, 0.35), 0.1, (0.08, 0.12))
    half = math.hypot(0.05, 0.02)
    assert (lo, hi) == pytest.approx((0.2 - half, 0.2 + half))


def test_holm_and_bonferroni_hand_computed():
    assert stats.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert stats.bonferroni([0.01, 0.5]).tolist() == pytest.approx([0.02, 1.0])


def test_binomial_test_exact_tail():
    # P(X ≥ 8 | n=10, p=0.5) = (45 + 10 + 1)/1024
    assert stats.binomial_test(8, 10) == pytest.approx(56 / 1024)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    x = np.random.default_rng(1).normal(size=400)
    a = stats.bootstrap_mean_ci(x, seed=3)
    b = stats.bootstrap_mean_ci(x, seed=3)
    assert a == b
    assert a[0] < x.mean() < a[1]
    # half-width ≈ 1.96·sd/√n
    assert (a[1] - a[0]) / 2 == pytest.approx(1.96 * x.std() / 20, rel=0.15)
    # the generic bootstrap gives the same kind of interval for a median
    m = stats.bootstrap_ci(lambda idx: np.median(x[idx]), x.size, seed=3, n_boot=300)
    assert m[0] < np.median(x) < m[1]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n > 0"):
        stats.wilson(0, 0)
    with pytest.raises(ValueError, match="within"):
        stats.clopper_pearson(6, 5)
