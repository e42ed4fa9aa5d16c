"""The mirrored-count test (privgate.stats.mirrored), checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from privgate.stats import mirrored_share, mirrored_tail_test, sampled_share_halfwidth, tail_quantiles


def test_tail_test_without_trials_and_by_hand():
    assert mirrored_tail_test(0.0, 0.0, 100, 5) == {"p": 1.0, "share": 0.0, "lower": 0.0, "upper": 0.0}
    t = mirrored_tail_test(3.0, 1.0, 10, 1)
    assert t["p"] == pytest.approx(5 / 16) and t["share"] == pytest.approx(0.2)
    # 4 trials, one-sided Clopper–Pearson bounds of 3/4 mapped to shares n·(π − ½)/(½·m)
    lo = st.beta.ppf(0.025, 3, 2)
    hi = st.beta.ppf(0.975, 4, 1)
    assert t["lower"] == pytest.approx(4 * (lo - 0.5) / (0.5 * 10))
    assert t["upper"] == pytest.approx(4 * (hi - 0.5) / (0.5 * 10))


def test_half_counts_round_half_up_and_the_null_share_weighs_the_mirror():
    # 2.5 + 1.5 → 3 of 4 trials, the same test as whole counts 3 and 1
    assert mirrored_tail_test(2.5, 1.5, 10, 1)["p"] == pytest.approx(5 / 16)
    # two training sets against one holdout set: B counts twice
    assert mirrored_share(5.0, 2.0, 10, p0=2 / 3) == pytest.approx((5 - 2 * 2) / 10)
    assert mirrored_share(5.0, 2.0, 10, scale=1.5) == pytest.approx(1.5 * 3 / 10)


def test_sampling_halfwidth_and_quantiles_by_hand():
    d = np.array([1.0, 0.0, 0.0, -0.5])
    assert sampled_share_halfwidth(d, 2.0, 0.5) == pytest.approx(2.0 * 0.5 * np.std(d, ddof=1) / 2.0)
    assert sampled_share_halfwidth(np.array([1.0]), 2.0) == 0.0
    z_lo, z_hi = tail_quantiles(0.05, 5)
    assert z_lo == pytest.approx(st.norm.ppf(1 - 0.005)) and z_hi == pytest.approx(st.norm.ppf(0.975))
    assert math.isclose(tail_quantiles(0.05, 1)[0], tail_quantiles(0.05, 1)[1])
