"""The twelve distance-based metrics: hand-computed tiny cases (derivations in the comments),
the copy baseline, the sanity order on the Adult sample, and properties."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import privgate
import privgate.metrics as m
from privgate.errors import NotApplicableError, ParameterError

# One numeric column: real a = 0..4 (mean 2, population std √2). Distances are |Δa|/√2, and every
# metric below uses ratios or comparisons, so we reason in units of a.
R1 = pl.DataFrame({"a": [0.0, 1, 2, 3, 4]})
S1 = pl.DataFrame({"a": [0.0, 1.5, 10]})
# real → nearest synthetic: 0→0: 0; 1→1.5: .5; 2→1.5: .5; 3→1.5: 1.5; 4→1.5: 2.5
# min–max normalised: [0, .2, .2, .6, 1]
# real → nearest other real: 1 for every record


def test_common_rows_counts_multiplicity_and_null_equals_null():
    r = pl.DataFrame({"a": [1, 1, 2, 3], "b": ["x", "x", "y", None]})
    s = pl.DataFrame({"a": [1.0, 3.0, 5.0], "b": ["x", None, "z"]})
    # rows 0 and 1 (duplicates) match (1 == 1.0), row 3 matches through null == null, row 2 not
    res = m.common_rows(r, s)
    assert res.value == 0.75 and res.raw == 0.75
    assert res.per_record.tolist() == [1, 1, 0, 1]
    assert res.details == {
        "n_real_copied": 3,
        "n_distinct_real_copied": 2,
        "ci_method": "Clopper–Pearson exact interval of 3/4 records",
        "ci_per_record_mean": True,
    }
    # 3 of 4 (fewer than 10 on a side → Clopper–Pearson): upper = Beta⁻¹(0.975; 4, 1) = 0.975^(1/4)
    assert res.ci[1] == pytest.approx(0.975**0.25, abs=1e-12)


def test_close_values_is_inclusive_at_02():
    # normalised [0, .2, .2, .6, 1] → three are ≤ 0.2 (0.2 itself counts, within 1e-9)
    res = m.close_values(R1, S1)
    assert res.value == pytest.approx(3 / 5)
    assert res.per_record.tolist() == [1, 1, 1, 0, 0]


def test_distant_values():
    # only the last normalised distance (1.0) is ≥ 0.8 → raw 1/5, value 1 − 1/5
    res = m.distant_values(R1, S1)
    assert res.raw == pytest.approx(0.2) and res.value == pytest.approx(0.8)


def test_nsnd():
    # mean normalised distance = (0 + .2 + .2 + .6 + 1)/5 = 0.4 → value 0.6
    res = m.nsnd(R1, S1)
    assert res.raw == pytest.approx(0.4) and res.value == pytest.approx(0.6)


def test_degenerate_normalisation_gives_all_zero():
    # every real record at the same distance (1) from the release → normalised 0 → all close
    r = pl.DataFrame({"a": [0.0, 2.0]})
    s = pl.DataFrame({"a": [1.0]})
    assert m.close_values(r, s).value == 1.0
    assert m.nsnd(r, s).value == 1.0
    assert m.close_values(r, s).details["degenerate_normalisation"] is True


def test_authenticity():
    # authentic when the nearest other real (1) is strictly closer than the release:
    # d_rs = [0, .5, .5, 1.5, 2.5] → records 3 and 4 → raw 0.4, value 0.6
    res = m.authenticity(R1, S1)
    assert res.raw == pytest.approx(0.4) and res.value == pytest.approx(0.6)
    # a tie (d_rs == d_rr) is not authentic: real 0..2, synthetic 1 → record 0: d_rs = 1 = d_rr
    res = m.authenticity(pl.DataFrame({"a": [0.0, 1, 2]}), pl.DataFrame({"a": [1.0]}))
    assert res.raw == 0.0


def test_identifiability_weights_by_inverse_entropy():
    # c1 = a,b,c,d (H1 = ln 4), c2 = x,x,x,y (H2 = −(.75 ln .75 + .25 ln .25) ≈ 0.562).
    # A mismatch in column j adds (1/H_j)² to the squared distance.
    # record 0 (a,x): nearest real differs in c1 → 1/H1² = 0.52; release (a,y) differs in c2 →
    #   1/H2² = 3.16 → real strictly closer → not identifiable
    # records 1, 2: nearest real 1/H1²; release differs in both → not identifiable
    # record 3 (d,y): nearest real differs in both; release differs in c1 only → identifiable
    # → 1/4. (Unweighted, record 0 is a tie → identifiable → 1/2; weighting by H instead of 1/H
    # also gives 1/2: the test tells the directions apart.)
    r = pl.DataFrame({"c1": ["a", "b", "c", "d"], "c2": ["x", "x", "x", "y"]})
    s = pl.DataFrame({"c1": ["a"], "c2": ["y"]})
    res = m.identifiability(r, s)
    assert res.value == pytest.approx(0.25)
    assert res.details["entropy"]["c2"] == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))


def test_identifiability_zero_entropy_column_has_no_weight():
    # c is constant in the real data (H = 0): weight 0, so the synthetic "zz" costs nothing.
    # On a alone (nearest other real at 5 for each record): record 0 → synthetic 0 (0 ≤ 5) and
    # record 1 → synthetic 4 (1 ≤ 5) are identifiable; record 2 → synthetic 4 is 6 > 5 → 2/3
    r = pl.DataFrame({"a": [0.0, 5, 10], "c": ["k", "k", "k"]})
    s = pl.DataFrame({"a": [0.0, 4], "c": ["zz", "zz"]})
    assert m.identifiability(r, s).value == pytest.approx(2 / 3)


def test_median_dcr():
    # r = median(0, .5, .5, 1.5, 2.5) / median(1, 1, 1, 1, 1) = 0.5 → 2(1 − σ(0.5))
    res = m.median_dcr(R1, S1)
    assert res.raw == pytest.approx(0.5)
    assert res.value == pytest.approx(2 * (1 - 1 / (1 + math.exp(-0.5))))
    # even count: median = mean of the two middle values; real 0,1,3,4 → d_rr = 1,1,1,1;
    # synthetic 0, 2 → d_rs = 0, 1, 1, 2 → median 1 → r = 1
    assert m.median_dcr(pl.DataFrame({"a": [0.0, 1, 3, 4]}), pl.DataFrame({"a": [0.0, 2]})).raw == pytest.approx(1.0)


def test_median_dcr_degenerate_medians():
    dup = pl.DataFrame({"a": [1.0, 1.0, 5.0, 5.0]})
    # both medians 0 (copy of data whose records all have a duplicate) → value 1
    assert m.median_dcr(dup, dup).value == 1.0
    # real–real median 0, real–synthetic median 2 → r = ∞ → value 0
    res = m.median_dcr(dup, pl.DataFrame({"a": [3.0]}))
    assert res.value == 0.0 and res.raw == math.inf


def test_nnaa_equal_sizes():
    s = pl.DataFrame({"a": [0.0, 1.5, 10, 11, 12]})
    # d_RS = [0, .5, .5, 1.5, 2.5], d_RR = 1 → P(d_RS > d_RR) = 2/5
    # d_SR = [0, .5, 6, 7, 8], d_SS = [1.5, 1.5, 1, 1, 1] → P(d_SR > d_SS) = 3/5
    # AA = ½(0.4 + 0.6) = 0.5 → value 0.5
    res = m.nnaa(R1, s)
    assert res.raw == pytest.approx(0.5) and res.value == pytest.approx(0.5)


def test_nnaa_subsamples_the_larger_set():
    # ten identical far-away synthetic records: any subsample of five gives d_RS > d_RR and
    # d_SR > d_SS = 0 for every record → AA = 1 → value 0, in each of the 10 repetitions
    res = m.nnaa(R1, pl.DataFrame({"a": [100.0] * 10}))
    assert res.value == 0.0 and res.details["subsampled"] == "synthetic"
    assert len(res.details["aa_per_repetition"]) == 10


def test_dcr_in_the_projected_space():
    # one numeric column: the FAMD projection is the standardised column itself (1 component),
    # so distances are |Δa|/√2: m̄ = mean(0, .5, .5, 1.5, 2.5)/√2 = 1/√2 → value 1/(1 + 1/√2)
    res = m.dcr(R1, S1)
    assert res.raw == pytest.approx(1 / math.sqrt(2))
    assert res.value == pytest.approx(1 / (1 + 1 / math.sqrt(2)))


def test_nndr():
    # per synthetic record, d1/d2 to its two nearest real records:
    # 0 → (0, 1): 0; 1.5 → (.5, .5): 1; 10 → (6, 7): 6/7 → mean = (1 + 6/7)/3
    res = m.nndr(R1, S1)
    assert res.raw == pytest.approx((1 + 6 / 7) / 3)
    assert res.value == pytest.approx(1 - (1 + 6 / 7) / 3)
    # 0/0 counts 1: two identical real records and a synthetic record on them
    res = m.nndr(pl.DataFrame({"a": [0.0, 0.0, 3.0]}), pl.DataFrame({"a": [0.0]}))
    assert res.raw == 1.0


def test_hidden_rate():
    s = pl.DataFrame({"a": [0.2, 5, 2.1, 2.9, 3.9]})
    # real 0 → nearest synthetic 0.2 (its own) hit; real 1 → nearest is 0.2 (row 0), not its own
    # (5) → miss; real 2, 3, 4 → 2.1, 2.9, 3.9 are their own → hits → 4/5
    res = m.hidden_rate(R1, s, paired=True)
    assert res.value == pytest.approx(0.8)
    assert res.per_record.tolist() == [1, 0, 1, 1, 1]
    # a tie between the own record and another counts as a hit: real 0, 1 and synthetic 0.5, 0.5
    res = m.hidden_rate(pl.DataFrame({"a": [0.0, 1.0]}), pl.DataFrame({"a": [0.5, 0.5]}), paired=True)
    assert res.value == 1.0
    # an explicit pairing: synthetic rows 0 and 1 both come from real row 4
    res = m.hidden_rate(R1, pl.DataFrame({"a": [3.9, 10.0]}), pairing=np.array([4, 4]))
    assert res.per_record.tolist() == [0, 0, 0, 0, 1]


def test_hidden_rate_needs_a_pairing():
    with pytest.raises(NotApplicableError, match="pairing"):
        m.hidden_rate(R1, S1)
    with pytest.raises(ParameterError, match="5 synthetic .* 3|as many synthetic rows"):
        m.hidden_rate(R1, S1, paired=True)
    with pytest.raises(ParameterError, match=r"\[0, 5\)"):
        m.hidden_rate(R1, S1, pairing=np.array([0, 1, 7]))


def test_hitting_rate():
    # h = (60 − 0)/30 = 2. real (0,x) hit by (2,x): |2 − 0| = 2 ≤ 2 (inclusive);
    # real (30,y) not hit by (33,x): category differs; real (60,x) hit by (61,x);
    # real (null,y) hit by (null,y): a null matches only a null → 3/4
    r = pl.DataFrame({"a": [0.0, 30, 60, None], "b": ["x", "y", "x", "y"]})
    s = pl.DataFrame({"a": [2.0, 33, 61, None], "b": ["x", "x", "x", "y"]})
    res = m.hitting_rate(r, s)
    assert res.value == pytest.approx(0.75)
    assert res.per_record.tolist() == [1, 0, 1, 1]
    # just outside the tolerance: 2.0001 > 2
    assert m.hitting_rate(r, s.with_columns(pl.Series("a", [2.0001, 33, 70, 5.0]))).value == 0.0


ALL = [
    "common_rows",
    "close_values",
    "distant_values",
    "nsnd",
    "authenticity",
    "identifiability",
    "median_dcr",
    "nnaa",
    "nndr",
    "dcr",
    "hidden_rate",
    "hitting_rate",
]


def test_copy_scores_one_on_adult(adult, adult_baselines):
    rep = privgate.evaluate(adult, adult_baselines["copy"], ALL, pairing=True)
    assert rep.values() == {name: 1.0 for name in ALL}


@pytest.fixture(scope="module")
def baseline_scores(adult, adult_baselines):
    out = {}
    for name, syn in adult_baselines.items():
        paired = name in ("noisy_copy", "copy")
        metrics = ALL if paired else [a for a in ALL if a != "hidden_rate"]
        out[name] = privgate.evaluate(adult, syn, metrics, pairing=True if paired else None).values()
    return out


# Where the definition cannot give the full order, the exception is documented (measured values
# on the Adult sample in docs/metrics.md):
# - dcr and nndr live in a 2-D FAMD projection; uniform draws over the numeric ranges land
#   mostly in the projection's crowded centre, so uniform_random can score above
#   independent_marginals there (docs/validity.md: nndr barely moves between releases).
# - distant_values is ≈ 1 for every data-like release (docs/validity.md), so noisy_copy and
#   independent_marginals are only ordered up to that saturation.
# - common_rows is 0 for every baseline but copy: noise touches every record's numerics.
EXCEPTIONS = {
    ("dcr", "uniform_random", "independent_marginals"),
    ("nndr", "uniform_random", "independent_marginals"),
    ("distant_values", "independent_marginals", "noisy_copy"),
}
ORDER = ["uniform_random", "independent_marginals", "noisy_copy", "copy"]


@pytest.mark.parametrize("metric", [a for a in ALL if a != "hidden_rate"])
def test_sanity_order_on_adult(metric, baseline_scores):
    for lo, hi in zip(ORDER, ORDER[1:]):
        a, b = baseline_scores[lo][metric], baseline_scores[hi][metric]
        if (metric, lo, hi) in EXCEPTIONS:
            assert abs(a - b) < 0.1, f"{metric}: documented near-saturation exception grew: {lo}={a} {hi}={b}"
            continue
        assert a <= b + 1e-12, f"{metric}: {lo}={a} > {hi}={b}"


def test_hidden_rate_order(baseline_scores):
    assert baseline_scores["noisy_copy"]["hidden_rate"] < baseline_scores["copy"]["hidden_rate"] == 1.0


# ----------------------------------------------------------------------------- properties
@st.composite
def frames(draw):
    n = draw(st.integers(4, 25))
    m_ = draw(st.integers(4, 25))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def make(k):
        return pl.DataFrame(
            {
                "x": np.round(rng.normal(size=k), 1),
                "y": rng.integers(0, 4, k).astype(float),
                "c": rng.choice(["p", "q", "r"], k).tolist(),
            }
        )

    return make(n), make(m_), seed


METRICS_NO_PAIRING = [a for a in ALL if a != "hidden_rate"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_values_in_unit_interval_and_invariant_to_row_and_column_order(data):
    r, s, seed = data
    rep = privgate.evaluate(r, s, METRICS_NO_PAIRING, seed=seed)
    base = rep.values()
    assert all(0.0 <= v <= 1.0 for v in base.values())
    # tied singular values at the FAMD cut make the 2-D projection undefined (reported in the
    # details); only then may dcr/nndr depend on order, so such draws are skipped
    assume(not rep.results["nndr"].details["famd"]["degenerate_projection"])
    rng = np.random.default_rng(seed)
    r2 = r[rng.permutation(r.height)].select(["c", "y", "x"])
    s2 = s[rng.permutation(s.height)].select(["y", "x", "c"])
    # nnaa subsamples by row position when sizes differ, so row order matters there by design
    names = METRICS_NO_PAIRING if r.height == s.height else [a for a in METRICS_NO_PAIRING if a != "nnaa"]
    perm = privgate.evaluate(r2, s2, names, seed=seed).values()
    for name in names:
        assert perm[name] == pytest.approx(base[name], abs=1e-9), name


@settings(max_examples=4, deadline=None)
@given(frames())
def test_same_seed_same_result(data):
    r, s, seed = data
    a = privgate.evaluate(r, s, METRICS_NO_PAIRING, seed=seed).values()
    b = privgate.evaluate(r, s, METRICS_NO_PAIRING, seed=seed).values()
    assert a == b
