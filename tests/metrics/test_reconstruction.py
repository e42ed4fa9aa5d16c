"""zero_cap, generalized_cap and attribute_inference: hand-computed cases, ties, several
sensitive columns, invalid keys/sensitive, the baseline order on the bundled Adult sample."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from privgate import baselines
from privgate.context import EvaluationContext
from privgate.errors import ParameterError
from privgate.metrics import attribute_inference, generalized_cap, zero_cap

# Tiny case used by several tests.
#   real:  r0 (x, 1,    p)   r1 (x, 2, q)   r2 (y, 1, p)   r3 (y, null, q)
#   synth: s0 (x, 1,    p)   s1 (x, 1, q)   s2 (y, 5, q)   s3 (z, null, q)
# keys a, b; sensitive s.
REAL = pl.DataFrame({"a": ["x", "x", "y", "y"], "b": [1.0, 2.0, 1.0, None], "s": ["p", "q", "p", "q"]})
SYN = pl.DataFrame({"a": ["x", "x", "y", "z"], "b": [1.0, 1.0, 5.0, None], "s": ["p", "q", "q", "q"]})


def test_zero_cap_hand_computed():
    # r0 matches s0, s1 on (a, b) = (x, 1): 1 of 2 has s = p → 0.5
    # r1 (x, 2), r2 (y, 1), r3 (y, null): no synthetic record with the same keys → 0
    # (a numeric null matches only a null: s3 has b null but a = z)
    res = zero_cap(REAL, SYN, sensitive="s")
    assert res.per_record.tolist() == [0.5, 0.0, 0.0, 0.0]
    assert res.value == pytest.approx(0.125)
    assert res.raw == res.value
    assert res.per_attribute == {"s": pytest.approx(0.125)}
    assert res.details["share_real_with_key_match"] == pytest.approx(0.25)
    assert res.params["keys"] == ["a", "b"]


def test_generalized_cap_hand_computed_with_ties():
    # Hamming distances (number of differing keys) to the distinct synthetic combinations
    # (x,1)×2 [s0 p, s1 q], (y,5) [s2 q], (z,null) [s3 q]:
    #   r0 (x,1,p):    0, 2, 2  → {s0, s1}: 1/2 p            → 0.5
    #   r1 (x,2,q):    1, 2, 2  → {s0, s1}: 1/2 q            → 0.5
    #   r2 (y,1,p):    1, 1, 2  → {s0, s1, s2} tied: 1/3 p   → 1/3
    #   r3 (y,null,q): 2, 1, 1  → {s2, s3} tied: 2/2 q       → 1
    res = generalized_cap(REAL, SYN, sensitive="s")
    np.testing.assert_allclose(res.per_record, [0.5, 0.5, 1 / 3, 1.0])
    assert res.value == pytest.approx((0.5 + 0.5 + 1 / 3 + 1.0) / 4)
    assert res.details["mean_min_hamming_distance"] == pytest.approx((0 + 1 + 1 + 1) / 4)
    assert res.details["mean_tied_synthetic_records"] == pytest.approx((2 + 2 + 3 + 2) / 4)


def test_generalized_cap_uses_all_tied_records_with_multiplicity():
    # one real record (k1=a, k2=a, s=1); no exact key match; six synthetic records at Hamming
    # distance 1: (a,b)×3 with s = 1, 2, 2 and (b,a)×3 with s = 1, 1, 1 → 4 of 6 share s → 2/3.
    # A record at distance 2 (b,b,s=1) must be ignored.
    real = pl.DataFrame({"k1": ["a"], "k2": ["a"], "s": ["1"]})
    syn = pl.DataFrame(
        {
            "k1": ["a", "a", "a", "b", "b", "b", "b"],
            "k2": ["b", "b", "b", "a", "a", "a", "b"],
            "s": ["1", "2", "2", "1", "1", "1", "1"],
        }
    )
    res = generalized_cap(real, syn, sensitive="s")
    assert res.value == pytest.approx(4 / 6)
    assert zero_cap(real, syn, sensitive="s").value == 0.0


def test_generalized_cap_duplicated_real_combinations_and_blocks(monkeypatch):
    # the blocked scan must give the same answer with a tiny block size
    from privgate.metrics import reconstruction

    rng = np.random.default_rng(3)
    real = pl.DataFrame(
        {
            "k1": rng.integers(0, 4, 60).astype(str),
            "k2": rng.integers(0, 3, 60).astype(str),
            "k3": rng.integers(0, 5, 60).astype(float),
            "s": rng.integers(0, 3, 60).astype(str),
        }
    )
    syn = pl.DataFrame(
        {
            "k1": rng.integers(0, 4, 40).astype(str),
            "k2": rng.integers(0, 3, 40).astype(str),
            "k3": rng.integers(0, 5, 40).astype(float),
            "s": rng.integers(0, 3, 40).astype(str),
        }
    )
    expected = _gcap_brute_force(real, syn, ["k1", "k2", "k3"], "s")
    res = generalized_cap(real, syn, sensitive="s")
    np.testing.assert_allclose(res.per_record, expected)
    monkeypatch.setattr(reconstruction, "_HAMMING_BLOCK_CELLS", 7)
    np.testing.assert_allclose(generalized_cap(real, syn, sensitive="s").per_record, expected)


def _gcap_brute_force(real: pl.DataFrame, syn: pl.DataFrame, keys: list[str], s: str) -> np.ndarray:
    """Record-by-record reference (test only): all synthetic records at the minimum Hamming distance."""
    rk = real.select(keys).rows()
    sk = syn.select(keys).rows()
    out = []
    for i, r in enumerate(rk):
        d = np.array([sum(a != b for a, b in zip(r, z)) for z in sk])
        tied = np.flatnonzero(d == d.min())
        out.append(np.mean([syn[s][int(j)] == real[s][i] for j in tied]))
    return np.array(out)


def test_attribute_inference_hand_computed():
    # key k numeric, standardised with the real mean 2 and std sqrt(2/3); the nearest synthetic
    # record on k (ties → lowest synthetic index) predicts the sensitive values.
    #   real k: 1, 2, 3, 2 ; synth k: 1.1, 2.9, 1.9, 2.1
    #   r0 k=1 → s0 (1.1)   r1 k=2 → s2 (1.9; 2.1 is as close → lowest index s2)
    #   r2 k=3 → s1 (2.9)   r3 k=2 → s2
    # categorical c: real A, B, A, B; synth A, A, A, B → predictions A, A, A, A
    #   correct: r0 yes, r1 no, r2 yes, r3 no
    # numeric v (within 10 % of the synthetic value): real 100, 50, 10, 50; synth 109, 12, 200, 0
    #   r0: |100−109| = 9 ≤ 10.9 yes; r1: |50−200| no; r2: |10−12| = 2 ≤ 1.2 no; r3: same as r1 no
    # distinct real records (all columns): r1 and r3 are identical (k=2, B, 50) → c = 2
    #   P = 1/4, 1/2, 1/4; H = −(2·¼ln¼ + ½ln½) = 1.5·ln 2
    #   weights per distinct record: w = −P ln P / H: ¼ln4/H = 1/3 each for r0, r2; ½ln2/H = 1/3 for {r1, r3}
    #   c: correct r0, r2 → 2/3; v: correct r0 → 1/3
    real = pl.DataFrame({"k": [1.0, 2.0, 3.0, 2.0], "c": ["A", "B", "A", "B"], "v": [100.0, 50.0, 10.0, 50.0]})
    syn = pl.DataFrame({"k": [1.1, 2.9, 1.9, 2.1], "c": ["A", "A", "A", "B"], "v": [109.0, 200.0, 200.0, 0.0]})
    res = attribute_inference(real, syn, keys=["k"], sensitive=["c", "v"])
    assert res.per_attribute == {"c": pytest.approx(2 / 3), "v": pytest.approx(1 / 3)}
    assert res.value == pytest.approx(2 / 3)
    assert res.details["worst_sensitive"] == "c"
    assert res.details["per_sensitive"]["c"]["accuracy"] == pytest.approx(0.5)
    assert res.details["per_sensitive"]["v"]["accuracy"] == pytest.approx(0.25)
    assert res.details["entropy_real_records"] == pytest.approx(1.5 * math.log(2))
    assert res.per_record.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_attribute_inference_weights_favour_rare_records():
    # 3 identical real records u1 (k=0, s=a) and one rare record u2 (k=10, s=b); the release
    # gets only the rare one right. P(u1)=3/4, P(u2)=1/4; H = −(¾ln¾ + ¼ln¼)
    # value = w(u2) = ¼ln4 / H  (> the unweighted accuracy ¼)
    real = pl.DataFrame({"k": [0.0, 0.0, 0.0, 10.0], "s": ["a", "a", "a", "b"]})
    syn = pl.DataFrame({"k": [0.0, 10.0], "s": ["z", "b"]})
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    res = attribute_inference(real, syn, sensitive="s")
    assert res.value == pytest.approx(0.25 * math.log(4) / h)
    assert res.details["per_sensitive"]["s"]["accuracy"] == pytest.approx(0.25)


def test_attribute_inference_single_distinct_record():
    # H = 0 (all real records identical) → that record has weight 1 (generalized_cap, docs/metrics.md);
    # nearest synthetic record on k is s0: |3 − 3.2| = 0.2 ≤ 0.1·3.2 → correct → 1;
    # with s0 = 4: |3 − 4| = 1 > 0.4 → 0
    real = pl.DataFrame({"k": ["a", "a"], "v": [3.0, 3.0]})
    assert attribute_inference(real, pl.DataFrame({"k": ["a", "b"], "v": [3.2, 9.0]}), sensitive="v").value == 1.0
    assert attribute_inference(real, pl.DataFrame({"k": ["a", "b"], "v": [4.0, 3.0]}), sensitive="v").value == 0.0


def test_attribute_inference_null_sensitive_matches_only_null():
    real = pl.DataFrame({"k": ["a", "b"], "v": [None, 2.0]}, schema={"k": pl.String, "v": pl.Float64})
    syn = pl.DataFrame({"k": ["a", "b"], "v": [None, None]}, schema={"k": pl.String, "v": pl.Float64})
    assert attribute_inference(real, syn, sensitive="v").per_record.tolist() == [1.0, 0.0]
    syn2 = pl.DataFrame({"k": ["a", "b"], "v": [0.0, 2.0]})
    assert attribute_inference(real, syn2, sensitive="v").per_record.tolist() == [0.0, 1.0]


def test_key_bins_discretise_numeric_keys():
    # real age 20..29 (10 values) → 2 quantile bins with edges 20, 24.5, 29: [20, 24.5) and [24.5, 29]
    # synth ages 21.5 (s=x) and 27.5 (s=y); exact matching finds nothing, binned matching puts 21.5 with
    # real 20..24 (5 × x: all right) and 27.5 with real 25..29 (y, y, y, y right, x wrong) → 9/10
    real = pl.DataFrame({"age": [float(a) for a in range(20, 30)], "s": ["x"] * 5 + ["y", "y", "y", "y", "x"]})
    syn = pl.DataFrame({"age": [21.5, 27.5], "s": ["x", "y"]})
    assert zero_cap(real, syn, sensitive="s").value == 0.0
    res = zero_cap(real, syn, sensitive="s", key_bins=2)
    assert res.value == pytest.approx(9 / 10)
    assert res.params["key_bins"] == 2
    assert generalized_cap(real, syn, sensitive="s", key_bins=2).value == pytest.approx(9 / 10)


def test_several_sensitive_columns_value_is_worst():
    real = pl.DataFrame({"k": ["a", "b", "c", "d"], "s1": ["1", "1", "2", "2"], "s2": ["u", "v", "u", "v"]})
    syn = pl.DataFrame({"k": ["a", "b", "c", "d"], "s1": ["1", "1", "2", "1"], "s2": ["v", "v", "v", "v"]})
    # s1 correct for a, b, c → 3/4 ; s2 correct for b, d → 1/2
    for metric in (zero_cap, generalized_cap, attribute_inference):
        res = metric(real, syn, keys=["k"], sensitive=["s1", "s2"])
        assert res.per_attribute == {"s1": pytest.approx(0.75), "s2": pytest.approx(0.5)}, metric
        assert res.value == pytest.approx(0.75)
        assert res.details["worst_sensitive"] == "s1"
        assert res.per_record.tolist() == [1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("metric", [zero_cap, generalized_cap, attribute_inference])
def test_invalid_keys_and_sensitive(metric):
    with pytest.raises(ParameterError, match="needs sensitive"):
        metric(REAL, SYN)
    with pytest.raises(ParameterError, match=r"sensitive.*not in the data: \['nope'\]"):
        metric(REAL, SYN, sensitive="nope")
    ctx = EvaluationContext(REAL, SYN)
    with pytest.raises(ParameterError, match=r"key columns not in the data: \['zz'\]"):
        metric(ctx, keys=["zz"], sensitive="s")
    with pytest.raises(ParameterError, match=r"both keys and sensitive: \['s'\]"):
        metric(ctx, keys=["a", "s"], sensitive="s")
    with pytest.raises(ParameterError, match="at least one key"):
        metric(ctx, sensitive=["a", "b", "s"])


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_invalid_key_bins(bad):
    with pytest.raises(ParameterError, match="key_bins"):
        zero_cap(REAL, SYN, sensitive="s", key_bins=bad)


# ----------------------------------------------------------------- Adult sample baselines
@pytest.fixture(scope="module")
def adult():
    from privgate.data import EXAMPLE_KEYS, EXAMPLE_SENSITIVE, load_example

    real = load_example("adult_sample")
    sets = {name: fn(real, seed=0) for name, fn in baselines.BASELINES.items()}
    ctxs = {
        name: EvaluationContext(real, syn, keys=EXAMPLE_KEYS, sensitive=EXAMPLE_SENSITIVE, seed=0)
        for name, syn in sets.items()
    }
    return real, ctxs


def _copy_cap(real: pl.DataFrame, keys: list[str], s: str) -> float:
    """For a copy, each real record's CAP is the share of real records in its key class with its
    sensitive value (an upper bound below 1 when a key class mixes sensitive values)."""
    per = real.select((pl.len().over(keys + [s]) / pl.len().over(keys)).alias("p"))["p"]
    return float(per.mean())


@pytest.mark.parametrize("metric", [zero_cap, generalized_cap, attribute_inference])
def test_adult_baseline_order(adult, metric):
    _, ctxs = adult
    v = {name: metric(ctx).value for name, ctx in ctxs.items()}
    assert v["uniform_random"] <= v["independent_marginals"] <= v["noisy_copy"] <= v["copy"], v


def test_adult_copy_reaches_the_documented_maximum(adult):
    # copy: the CAP metrics reach the in-class share of the sensitive value (their maximum for
    # this data), and 1 when every key combination determines the sensitive value
    real, ctxs = adult
    from privgate.data import EXAMPLE_KEYS

    expected = _copy_cap(real, EXAMPLE_KEYS, "income")
    assert zero_cap(ctxs["copy"]).value == pytest.approx(expected)
    assert generalized_cap(ctxs["copy"]).value == pytest.approx(expected)
    # all non-sensitive columns as keys: every key combination is unique → exactly 1
    all_keys = [c for c in real.columns if c != "income"]
    assert real.select(all_keys).n_unique() == real.height  # the premise, checked rather than skipped
    assert zero_cap(ctxs["copy"], keys=all_keys).value == 1.0
    assert generalized_cap(ctxs["copy"], keys=all_keys).value == 1.0
    assert attribute_inference(ctxs["copy"], keys=all_keys).value == 1.0


def test_adult_copy_attribute_inference_lowest_index_of_key_class(adult):
    # copy with the 5 example keys (1,562 key classes for 3,000 records — the search runs on
    # distinct points): each real record's nearest synthetic records on the keys are its key class
    # at distance 0, and the tie goes to the lowest row, so the guess is the income of the first
    # record of the class. Weighted as the paper writes it, over distinct records u (all columns):
    # value = Σ_u w(u)·acc(u), w(u) = −P(u)ln P(u)/H, H = −Σ_u P(u)ln P(u).
    real, ctxs = adult
    from privgate.data import EXAMPLE_KEYS

    assert real.select(EXAMPLE_KEYS).null_count().sum_horizontal().item() == 0  # no imputed keys
    guessed = real.with_columns(pl.col("income").first().over(EXAMPLE_KEYS).alias("__guess"))
    guessed = guessed.with_columns(pl.col("income").eq_missing(pl.col("__guess")).cast(pl.Float64).alias("__ok"))
    per_u = guessed.group_by(real.columns).agg(pl.len().alias("c"), pl.col("__ok").mean().alias("acc"))
    p = per_u["c"].to_numpy() / real.height
    w = -p * np.log(p) / -(p * np.log(p)).sum()
    expected = float((w * per_u["acc"].to_numpy()).sum())
    res = attribute_inference(ctxs["copy"])
    assert res.value == pytest.approx(expected, rel=1e-12)
    assert res.per_record.tolist() == guessed["__ok"].to_list()
    assert res.value < 1.0  # some key classes mix incomes
