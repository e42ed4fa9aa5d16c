"""The grouped (delete-a-group) jackknife of privgate.stats.jackknife and the neighbour look-up
that deletes groups of reference records (privgate.neighbours.nearest_outside_groups),
against values computed by hand on tiny arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgate import stats
from privgate.neighbours import SearchSettings, knn, nearest_outside_groups


def test_default_groups_and_partition():
    assert [stats.default_groups(n) for n in (24, 25, 500, 2000, 25_000)] == [4, 5, 22, 44, 50]
    lab = stats.group_labels(10, 3, groups=3)
    assert sorted(np.bincount(lab).tolist()) == [3, 3, 4]  # sizes differ by at most one
    assert np.array_equal(lab, stats.group_labels(10, 3, groups=3))  # seeded
    assert not np.array_equal(lab, stats.group_labels(10, 4, groups=3))
    with pytest.raises(ValueError, match="2 ≤ groups ≤ n"):
        stats.group_labels(3, 0, groups=4)


def test_variance_of_replicates_by_hand():
    # θ̄ = 2.5, Σ(θ − θ̄)² = 2.25 + 0.25 + 0.25 + 2.25 = 5, (G − 1)/G = 3/4
    assert stats.jackknife_variance(np.array([1.0, 2.0, 3.0, 4.0])) == (pytest.approx(3.75), 3)
    with pytest.raises(ValueError, match="at least 2"):
        stats.jackknife_variance(np.array([1.0]))


def test_leave_group_out_means_by_hand():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    lab = np.array([0, 1, 2, 0, 1, 2])
    # without group 0: mean(2, 3, 5, 6) = 4; group 1: mean(1, 3, 4, 6) = 3.5; group 2: mean(1, 2, 4, 5) = 3
    assert stats.leave_group_out_means(x, lab, 3).tolist() == pytest.approx([4.0, 3.5, 3.0])
    # weights 1, 1, 1, 1, 1, 2: without group 2 → (1 + 2 + 4 + 5)/4 = 3; without 0 → (2 + 3 + 5 + 12)/5
    w = np.array([1.0, 1, 1, 1, 1, 2])
    assert stats.leave_group_out_means(x, lab, 3, w).tolist() == pytest.approx([22 / 5, (1 + 3 + 4 + 12) / 5, 3.0])
    # several statistics at once
    assert stats.leave_group_out_means(np.stack([x, 2 * x]), lab, 3).shape == (2, 3)


def test_jackknife_of_a_mean_is_the_variance_of_the_group_means():
    # for a plain mean with equal groups, (G − 1)/G Σ(θ₍g₎ − θ̄)² = var(group means, ddof 1)/G
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    lab = stats.group_labels(60, 1, groups=6)
    var, df = stats.jackknife_variance(stats.leave_group_out_means(x, lab, 6))
    gm = np.array([x[lab == g].mean() for g in range(6)])
    assert var == pytest.approx(gm.var(ddof=1) / 6) and df == 5


def test_group_deleted_means_ignores_the_deleted_records_entries():
    lab = np.array([0, 0, 1, 1])
    vals = np.array(
        [
            [99.0, 99.0, 1.0, 3.0],  # group 0 deleted: mean(1, 3) = 2
            [5.0, 7.0, -99.0, np.nan],
        ]
    )  # group 1 deleted: mean(5, 7) = 6
    assert stats.group_deleted_means(vals, lab).tolist() == [2.0, 6.0]
    assert stats.group_deleted_means(vals, lab, np.array([1.0, 3.0, 1.0, 1.0])).tolist() == [2.0, (5 + 21) / 4]


def test_combined_variances_and_t_interval_by_hand():
    # Satterthwaite: (1 + 3)² / (1²/4 + 3²/9) = 16 / 1.25 = 12.8
    assert stats.combine_variances([(1.0, 4), (3.0, 9), (0.0, 2)]) == (4.0, pytest.approx(12.8))
    assert stats.combine_variances([(0.0, 3)]) == (0.0, math.inf)
    t10 = 2.2281388519649385  # Student t, 10 df, 97.5 %
    assert stats.t_interval(0.5, 0.01, 10) == pytest.approx((0.5 - t10 * 0.1, 0.5 + t10 * 0.1))
    assert stats.t_interval(0.95, 0.01, 10) == pytest.approx((0.95 - t10 * 0.1, 1.0))  # clipped
    ci, var, df = stats.jackknife_interval(0.3, {"a": np.array([1.0, 2.0, 3.0, 4.0])}, bounds=(-10, 10))
    assert var == pytest.approx(3.75) and df == 3
    assert ci == pytest.approx((0.3 - 3.182446305284263 * math.sqrt(3.75), 0.3 + 3.182446305284263 * math.sqrt(3.75)))


def test_effective_share_interval_by_hand():
    # 30/100 with twice the binomial variance and infinite df: n* = 0.21/0.0042 = 50 → Wilson 15/50
    ci, method, n_eff = stats.effective_share_interval(30, 100, 2 * 0.21 / 100, math.inf)
    assert n_eff == pytest.approx(50.0) and ci == pytest.approx(stats.wilson(15, 50))
    assert method.startswith("Wilson")
    # finite df shrinks n* by (z/t)²
    z, t10 = 1.959963984540054, 2.2281388519649385
    assert stats.effective_share_interval(30, 100, 0.0042, 10)[2] == pytest.approx(50 * (z / t10) ** 2)
    # less than binomial variance never gives more than n records; 0 of n keeps n (Clopper–Pearson)
    assert stats.effective_share_interval(30, 100, 1e-6, 10)[2] == 100
    ci0, method0, n0 = stats.effective_share_interval(0, 100, 0.0, 10)
    assert n0 == 100 and ci0 == stats.clopper_pearson(0, 100) and method0.startswith("Clopper")


def test_nearest_outside_groups_by_hand():
    # 1-D real points; groups 0 = {0, 6}, 1 = {1, 10}, 2 = {3}
    x = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])
    lab = np.array([0, 1, 2, 0, 1])
    nb = knn(x, x, 2, exclude_self=True)  # nearest other: 0→1 (1), 1→0 (1), 3→1 (2), 6→3 (3), 10→6 (4)
    d, i = nearest_outside_groups(nb, lab, x, x, same=True)
    nan = np.nan
    # group 0 deleted (points 0 and 6): 1→3 (2), 3→1 (2), 10→3 (7: both listed neighbours 6 and 3... 6 deleted → 3)
    assert np.allclose(d[0], [nan, 2, 2, nan, 7], equal_nan=True) and i[0].tolist() == [-1, 2, 1, -1, 2]
    # group 1 deleted (1 and 10): 0→3 (3; its list is 1, 3), 3→6 (3; list 1, 0 → 0 at 3, tie with 6 → lowest index 0)
    assert np.allclose(d[1], [3, nan, 3, 3, nan], equal_nan=True) and i[1].tolist() == [2, -1, 0, 2, -1]
    # group 2 deleted (3): 6→10 is not listed (6's list: 3 at 3, 10 at 4) → 10 at 4
    assert np.allclose(d[2], [1, 1, nan, 4, 4], equal_nan=True) and i[2].tolist() == [1, 0, -1, 4, 3]
    # a row whose listed neighbours are all in the group is searched again: with k = 1 lists
    d1, i1 = nearest_outside_groups(knn(x, x, 1, exclude_self=True), lab, x, x, same=True)
    assert np.allclose(d1, d, equal_nan=True) and np.array_equal(i1, i)
    # query and target different sets: every query kept
    q = np.array([[0.4], [9.0]])
    dq, iq = nearest_outside_groups(knn(q, x, 1), lab, q, x, same=False)
    assert iq.tolist() == [[1, 4], [0, 3], [0, 4]] and dq[1].tolist() == pytest.approx([0.4, 3.0])


def test_nearest_outside_groups_exact_search_when_the_refill_is_all_deleted():
    # a refill of one neighbour cannot leave the deleted group either: the exact search decides
    one = SearchSettings(refill_k=1)
    x = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])
    lab = np.array([0, 1, 2, 0, 1])
    d, i = nearest_outside_groups(knn(x, x, 1, exclude_self=True), lab, x, x, same=True, settings=one)
    full = nearest_outside_groups(knn(x, x, 3, exclude_self=True), lab, x, x, same=True)
    assert np.allclose(d, full[0], equal_nan=True) and np.array_equal(i, full[1])
    q = np.array([[0.4], [9.0]])
    dq, iq = nearest_outside_groups(knn(q, x, 1), lab, q, x, same=False, settings=one)
    assert iq.tolist() == [[1, 4], [0, 3], [0, 4]]


def test_counts_without_groups_by_hand():
    from privgate.stats import counts_without_groups

    # records' cells 0,1,1,2,0 and a 3rd id out of range (dropped); groups 0,1,0,1,1,0
    ids = np.array([0, 1, 1, 2, 0, 7])
    labels = np.array([0, 1, 0, 1, 1, 0])
    out = counts_without_groups(ids, labels, 3)
    # full counts (cells 0,1,2) = (2, 2, 1); group 0 holds cells 0,1 (+ the dropped one),
    # group 1 holds cells 1,2,0
    np.testing.assert_array_equal(out, [[1, 1, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match="one entry per record"):
        counts_without_groups(ids[:3], labels, 3)
