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


def test_share_interval_rule_exact_near_the_edges_wilson_elsewhere():
    assert stats.share_interval(0, 200)[0] == stats.clopper_pearson(0, 200)
    assert stats.share_interval(9, 200)[0] == stats.clopper_pearson(9, 200)
    assert stats.share_interval(195, 200)[0] == stats.clopper_pearson(195, 200)
    ci, method = stats.share_interval(10, 200)
    assert ci == stats.wilson(10, 200) and method.startswith("Wilson")
    assert stats.share_interval(0, 200)[1].startswith("Clopper")


def test_delong_auc_and_variance_by_hand():
    # positives 0.9, 0.4; negatives 0.5, 0.1: pairs won 1, 1, 0, 1 → AUC 3/4
    # per positive [1, 1/2], per negative [1/2, 1]: S10 = S01 = 1/8 → var = 1/16 + 1/16
    auc, var = stats.delong_auc([1, 1, 0, 0], [0.9, 0.4, 0.5, 0.1])
    assert auc == pytest.approx(0.75) and var == pytest.approx(0.125)
    # a tie counts half: positives 0.5, 0.9 vs negatives 0.5, 0.1 → (0.5 + 1 + 1 + 1)/4
    # per positive [3/4, 1], per negative [3/4, 1]: var = 2 · (1/32)/2
    auc, var = stats.delong_auc([1, 0, 1, 0], [0.5, 0.5, 0.9, 0.1])
    assert auc == pytest.approx(0.875) and var == pytest.approx(0.03125)


def test_delong_auc_matches_scikit_learn_and_hanley_mcneil_scale():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    s = rng.normal(size=600) + 0.8 * y
    auc, var = stats.delong_auc(y, s)
    assert auc == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    # Hanley & McNeil (1982) approximate the same variance from AUC and the class sizes
    m, n = int(y.sum()), int((1 - y).sum())
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    hm = (auc * (1 - auc) + (m - 1) * (q1 - auc**2) + (n - 1) * (q2 - auc**2)) / (m * n)
    assert var == pytest.approx(hm, rel=0.2)


def test_normal_interval_by_hand_and_clipped():
    assert stats.normal_interval(0.7, 0.0025) == pytest.approx((0.7 - 1.959964 * 0.05, 0.7 + 1.959964 * 0.05))
    assert stats.normal_interval(0.98, 0.01) == pytest.approx((0.98 - 1.959964 * 0.1, 1.0))


def test_bootstrap_weighted_mean():
    x = np.random.default_rng(2).normal(size=500)
    # equal weights: the plain mean's interval, replicate for replicate
    assert stats.bootstrap_mean_ci(x, seed=1, weights=np.full(500, 3.0)) == pytest.approx(
        stats.bootstrap_mean_ci(x, seed=1)
    )
    # all weight on one record: every replicate that draws it gives its value
    w = np.zeros(500)
    w[7] = 1.0
    assert stats.bootstrap_mean_ci(x, seed=1, weights=w) == pytest.approx((x[7], x[7]))


def test_bootstrap_means_of_two_samples_half_width():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=800), rng.normal(scale=2.0, size=400)
    lo, hi = stats.bootstrap_means_ci([a, b], [0.5, 0.5], seed=2, n_boot=2000)
    # Var(½ā + ½b̄) = ¼(σa²/na + σb²/nb)
    half = 1.96 * 0.5 * math.sqrt(a.var() / 800 + b.var() / 400)
    assert (hi - lo) / 2 == pytest.approx(half, rel=0.1)
    assert lo < 0.5 * a.mean() + 0.5 * b.mean() < hi
    # drawing only 100 values per replicate from a pool: the half-width of a 100-record mean
    lo, hi = stats.bootstrap_means_ci([a], [1.0], seed=2, sizes=[100], n_boot=2000)
    assert (hi - lo) / 2 == pytest.approx(1.96 * a.std() / 10, rel=0.1)


def test_bootstrap_ci_batched_equals_one_at_a_time():
    x = np.random.default_rng(5).exponential(size=300)
    one = stats.bootstrap_ci(lambda idx: np.median(x[idx]), x.size, seed=8, n_boot=200)
    block = stats.bootstrap_ci(lambda idx: np.median(x[idx], axis=1), x.size, seed=8, n_boot=200, batched=True)
    assert one == block
    with pytest.raises(ValueError, match="one value per replicate"):
        stats.bootstrap_ci(lambda idx: np.median(x[idx]), x.size, n_boot=10, batched=True)


def test_delong_variance_undefined_with_one_record_of_a_class():
    auc, var = stats.delong_auc([1, 0, 0], [0.9, 0.1, 0.5])
    assert auc == 1.0 and math.isnan(var)
    with pytest.raises(ValueError, match="one positive and one negative"):
        stats.delong_auc([1, 1], [0.2, 0.3])


def test_a_large_mean_of_few_values_is_bootstrapped_by_counts(monkeypatch):
    """Above COUNTS_ABOVE records with few distinct values the replicates are multinomial counts
    of the values: the same distribution as resampled positions (compared here with the
    positions path forced), seeded, and the paired difference of two flag arrays included."""
    from privgate.stats import bootstrap as boot

    rng = np.random.default_rng(7)
    n = boot.COUNTS_ABOVE + 1
    flags = (rng.random(n) < 0.03).astype(np.float64)
    other = (rng.random(n) < 0.02).astype(np.float64)
    by_counts = stats.bootstrap_mean_ci(flags, seed=2, paired=other)
    assert by_counts == stats.bootstrap_mean_ci(flags, seed=2, paired=other)  # seeded
    d = flags - other
    se = d.std() / np.sqrt(n)
    assert by_counts[0] < d.mean() < by_counts[1]
    assert by_counts[1] - by_counts[0] == pytest.approx(2 * 1.96 * se, rel=0.1)
    monkeypatch.setattr(boot, "COUNTS_ABOVE", 10**9)  # the positions path on the same data
    by_positions = stats.bootstrap_mean_ci(flags, seed=2, paired=other)
    assert by_counts == pytest.approx(by_positions, abs=0.15 * se)
    assert by_counts != by_positions  # a different path was taken


def test_a_large_mean_of_many_values_keeps_resampled_positions(monkeypatch):
    from privgate.stats import bootstrap as boot

    x = np.random.default_rng(8).normal(size=boot.COUNTS_ABOVE + 1)
    a = stats.bootstrap_mean_ci(x, seed=1, n_boot=50)
    monkeypatch.setattr(boot, "COUNTS_ABOVE", 10**9)
    assert stats.bootstrap_mean_ci(x, seed=1, n_boot=50) == a  # the same path: positions


def test_hoeffding_auc_interval_by_hand():
    from privgate.stats import hoeffding_auc_interval

    # k = min(4, 6) = 4; two-sided 95 %: half-width sqrt(ln(1 / 0.025) / 8)
    half = math.sqrt(math.log(40.0) / 8.0)
    assert hoeffding_auc_interval(0.9, 4, 6) == pytest.approx((0.9 - half, 1.0))
    assert hoeffding_auc_interval(0.5, 400, 100) == pytest.approx(
        (0.5 - math.sqrt(math.log(40.0) / 200.0), 0.5 + math.sqrt(math.log(40.0) / 200.0))
    )
    lo, hi = hoeffding_auc_interval(1.0, 3, 3, 0.99, one_sided=True)
    assert lo == pytest.approx(1.0 - math.sqrt(math.log(100.0) / 6.0)) and hi == 1.0
    with pytest.raises(ValueError, match="at least one positive"):
        hoeffding_auc_interval(0.5, 0, 3)


def test_hoeffding_auc_lower_end_is_sound_where_delongs_is_not():
    """Scores of runs with and without a target drawn from one distribution (AUC 0.5): a perfect
    split of 3 against 3 happens by chance (1 in 20) and DeLong's interval is then [1, 1], while
    Hoeffding's one-sided 95 % lower end exceeds 0.5 in at most 5 % of draws, with 30 against 30
    (where it is not trivially 0: an interval as narrow as an n·m-pair average would be fails)."""
    from privgate.stats import delong_auc, hoeffding_auc_interval

    auc, var = delong_auc([1, 1, 1, 0, 0, 0], [3.0, 2.0, 1.0, 0.0, -1.0, -2.0])
    assert (auc, stats.normal_interval(auc, var, 0.95)) == (1.0, (1.0, 1.0))
    scores = np.random.default_rng(11).normal(size=(4000, 60))
    pos, neg = scores[:, :30, None], scores[:, None, 30:]
    aucs = ((pos > neg) + 0.5 * (pos == neg)).mean(axis=(1, 2))
    lower = np.array([hoeffding_auc_interval(a, 30, 30, 0.95, one_sided=True)[0] for a in aucs])
    assert (lower > 0.5).mean() <= 0.05
    assert (aucs - math.sqrt(math.log(20.0) / 1800.0) > 0.5).mean() > 0.05  # k = n·m would not hold
