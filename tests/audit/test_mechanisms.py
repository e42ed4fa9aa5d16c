"""Reference mechanisms of known ε: noise scale, seeding, dtypes, the public domain and its
broken (private-domain) version."""

import math
import pickle

import numpy as np
import polars as pl
import pytest

from privgate.audit.mechanisms import LaplaceHistogram
from privgate.errors import ParameterError


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "city": ["a", "b", "a", None, "zz", "b"],
            "age": [3, 15, 27, 40, -5, 99],
            "score": [0.5, 1.5, 2.5, 0.1, 9.0, float("nan")],
            "flag": [True, False, True, True, None, False],
        },
        schema={"city": pl.Categorical, "age": pl.Int32, "score": pl.Float64, "flag": pl.Boolean},
    )


DOMAIN = {"city": ["a", "b", None], "age": [0, 20, 40, 60], "score": [0.0, 1.0, 2.0, 3.0], "flag": [False, True, None]}


def test_counts_are_exact_when_noise_vanishes_with_out_of_domain_rows_dropped_and_clipping():
    m = LaplaceHistogram(1e12, DOMAIN)
    counts = m.noisy_counts(_frame(), seed=0).reshape(3, 3, 3, 3)
    assert np.allclose(counts, np.rint(counts), atol=1e-6)
    want = np.zeros((3, 3, 3, 3))
    # row 0: a, age 3 → bin 0, score 0.5 → bin 0, True → 1
    want[0, 0, 0, 1] += 1
    # row 1: b, 15 → bin 0, 1.5 → bin 1, False
    want[1, 0, 1, 0] += 1
    # row 2: a, 27 → bin 1, 2.5 → bin 2, True
    want[0, 1, 2, 1] += 1
    # row 3: null city is a level (2), 40 → bin 2 ([40, 60] is the last, closed bin), 0.1 → 0, True
    want[2, 2, 0, 1] += 1
    # row 4: "zz" is not a level → dropped (despite clipping −5 and 9.0 into edge bins)
    # row 5: b, 99 clips into the last age bin, but a NaN score is in no bin → dropped
    assert np.allclose(counts, want, atol=1e-6)
    # clipping on its own: drop the unknown level and the NaN and both extremes land in edge bins
    f = _frame().with_columns(
        pl.col("city").cast(pl.String).replace("zz", "a").cast(pl.Categorical), pl.col("score").fill_nan(9.0)
    )
    c2 = m.noisy_counts(f, seed=0).reshape(3, 3, 3, 3)
    assert round(c2[0, 0, 2, 2]) == 1  # row 4: age −5 → first bin, score 9 → last bin, flag null
    assert round(c2[1, 2, 2, 0]) == 1  # row 5: age 99 → last bin, score 9 → last bin
    assert round(c2.sum()) == 6


def test_noise_is_laplace_at_scale_noise_factor_over_epsilon():
    frame = pl.DataFrame({"k": [f"l{i % 50}" for i in range(500)]})
    domain = {"k": [f"l{i}" for i in range(50)]}
    for eps, factor in ((1.0, 1.0), (0.5, 1.0), (1.0, 0.1)):
        m = LaplaceHistogram(eps, domain, noise_factor=factor)
        noise = np.stack([m.noisy_counts(frame, seed=s) - 10.0 for s in range(400)])  # 20,000 draws
        b = factor / eps
        assert m.scale == pytest.approx(b)
        # one cell over 400 seeds: variance 2b² (loose), all cells: variance and E|X| = b (tight;
        # a Gaussian of the same variance has E|X| = 1.128 b)
        assert np.var(noise[:, 7]) == pytest.approx(2 * b * b, rel=0.3)
        assert np.var(noise) == pytest.approx(2 * b * b, rel=0.08)
        assert np.mean(np.abs(noise)) == pytest.approx(b, rel=0.03)
        assert abs(np.mean(noise)) < 0.05 * b


def test_true_and_claimed_epsilon():
    assert LaplaceHistogram(1.0, DOMAIN).true_epsilon == 1.0
    broken = LaplaceHistogram(1.0, DOMAIN, noise_factor=0.1)
    assert broken.true_epsilon == pytest.approx(10.0) and broken.claimed_epsilon == 1.0
    leaky = LaplaceHistogram(2.0, None, domain_from_data=True)
    assert leaky.true_epsilon == math.inf and leaky.claimed_epsilon == 2.0


@pytest.mark.parametrize("release", ["sampled", "rounded"])
def test_columns_and_dtypes_preserved_and_values_stay_in_the_domain(release):
    frame = _frame()
    out = LaplaceHistogram(1.0, DOMAIN, release=release)(frame, 300, seed=4)
    assert out.schema == frame.schema
    if release == "sampled":
        assert out.height == 300
    assert set(out.get_column("city").cast(pl.String).to_list()) <= {"a", "b", None}
    age = out.get_column("age").to_numpy()
    assert age.min() >= 0 and age.max() <= 60
    score = out.get_column("score").to_numpy()
    assert score.min() >= 0.0 and score.max() <= 3.0


def test_numeric_values_fall_within_their_bins():
    frame = pl.DataFrame(
        {"x": [0.2] * 200 + [2.7] * 200, "i": [1] * 200 + [7] * 200}, schema={"x": pl.Float32, "i": pl.Int64}
    )
    m = LaplaceHistogram(1e9, {"x": [0.0, 1.0, 2.0, 3.0], "i": [0, 2.5, 5, 7.5]})
    out = m(frame, 2000, seed=1)
    x, i = out.get_column("x").to_numpy(), out.get_column("i").to_numpy()
    low = x < 1.0
    assert np.all(((x >= 0) & (x < 1)) | ((x >= 2) & (x <= 3)))
    assert 0.4 < low.mean() < 0.6
    # integer column: integers inside [0, 2.5) are 0, 1, 2; inside [5, 7.5] are 5, 6, 7 — all drawn
    assert set(i[low]) == {0, 1, 2} and set(i[~low]) == {5, 6, 7}
    assert x.std() > 0.5  # uniform within the bin, not a constant midpoint


def test_same_seed_same_release_and_picklable():
    frame = _frame()
    m = LaplaceHistogram(1.0, DOMAIN)
    a = m(frame, 50, seed=11)
    assert a.equals(m(frame, 50, seed=11))
    assert not a.equals(m(frame, 50, seed=12))
    clone = pickle.loads(pickle.dumps(m))
    assert clone(frame, 50, seed=11).equals(a)
    r = LaplaceHistogram(1.0, DOMAIN, release="rounded")
    assert r(frame, 0, seed=3).equals(r(frame, 999, seed=3))  # n_rows is ignored when rounding


def test_sampled_follows_the_noisy_histogram():
    frame = pl.DataFrame({"k": ["a"] * 700 + ["b"] * 300})
    out = LaplaceHistogram(100.0, {"k": ["a", "b", "c"]})(frame, 5000, seed=2)
    share = out.get_column("k").value_counts().sort("k")
    got = dict(zip(share.get_column("k").to_list(), share.get_column("count").to_list()))
    assert abs(got["a"] / 5000 - 0.7) < 0.03 and abs(got["b"] / 5000 - 0.3) < 0.03
    assert got.get("c", 0) < 5  # noise scale 0.01: the empty cell gets (almost) no mass


def test_sampled_is_uniform_when_every_noisy_count_is_non_positive():
    empty = pl.DataFrame({"k": []}, schema={"k": pl.String})
    m = LaplaceHistogram(1.0, {"k": ["a", "b"]})
    # a seed whose noise is negative on both (empty) cells: probability 1/4 each
    seed = next(s for s in range(100) if m.noisy_counts(empty, s).max() <= 0)
    out = m(empty, 2000, seed=seed)
    assert out.height == 2000
    assert 0.45 < (out.get_column("k") == "a").mean() < 0.55


def test_rounded_total_is_close_to_the_number_of_records():
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"k": rng.choice(["a", "b", "c", "d", "e", "f"], 1000).tolist()})
    m = LaplaceHistogram(1.0, {"k": ["a", "b", "c", "d", "e", "f"]}, release="rounded")
    totals = np.array([m(frame, 0, seed=s).height for s in range(50)])
    # each of 6 cells: round(count + Laplace(1)); sd of the total ≈ √(6·2) ≈ 3.5
    assert abs(totals.mean() - 1000) < 2.0
    assert np.all(np.abs(totals - 1000) <= 20)
    exact = LaplaceHistogram(1e9, {"k": ["a", "b", "c", "d", "e", "f"]}, release="rounded")
    assert exact(frame, 0, seed=1).height == 1000


def test_the_cell_cap_is_refused_with_the_sizes():
    frame = pl.DataFrame({"a": ["x"], "b": ["y"], "c": [1.0]})
    domain = {
        "a": [f"a{i}" for i in range(200)],
        "b": [f"b{i}" for i in range(200)],
        "c": np.linspace(0, 1, 101).tolist(),
    }
    with pytest.raises(ParameterError, match=r"4,000,000 cells.*a=200, b=200, c=100.*2,000,000"):
        LaplaceHistogram(1.0, domain)(frame, 10, seed=0)


def test_domain_must_match_the_training_columns_and_parameters_are_checked():
    with pytest.raises(ParameterError, match="no domain"):
        LaplaceHistogram(1.0, {"city": ["a"]})(_frame(), 5, seed=0)
    with pytest.raises(ParameterError, match="edges"):
        LaplaceHistogram(1.0, {**DOMAIN, "age": [5, 1]})(_frame(), 5, seed=0)
    for bad in ({"epsilon": 0.0}, {"epsilon": math.inf}):
        with pytest.raises(ParameterError, match="epsilon"):
            LaplaceHistogram(bad["epsilon"], DOMAIN)
    with pytest.raises(ParameterError, match="release"):
        LaplaceHistogram(1.0, DOMAIN, release="exact")
    with pytest.raises(ParameterError, match="noise_factor"):
        LaplaceHistogram(1.0, DOMAIN, noise_factor=0)
    with pytest.raises(ParameterError, match="levels given for column 'city'"):
        LaplaceHistogram(1.0, {**DOMAIN, "city": [1, 2]})(_frame(), 5, seed=0)
    with pytest.raises(ParameterError, match="domain is required"):
        LaplaceHistogram(1.0, None)


def _has_level(out: pl.DataFrame, level: str) -> bool:
    return bool((out.get_column("k") == level).any())


def test_domain_from_data_leaks_a_unique_level_and_a_public_domain_does_not():
    background = pl.DataFrame({"k": ["a"] * 60 + ["b"] * 40, "v": np.linspace(0, 10, 100)})
    target = pl.DataFrame({"k": ["rare"], "v": [5.0]})
    with_target = pl.concat([background, target])
    leaky = LaplaceHistogram(1.0, {"k": None, "v": [0, 5, 10]}, domain_from_data=True, release="rounded")
    seeds = range(60)
    seen_in = sum(_has_level(leaky(with_target, 0, s), "rare") for s in seeds)
    seen_out = sum(_has_level(leaky(background, 0, s), "rare") for s in seeds)
    # the level exists only when its record is there: never seen without it, often with it
    # (P(round(1 + Laplace(1)) ≥ 1) = 1 − e^(−1/2)/2 ≈ 0.70)
    assert seen_out == 0
    assert seen_in >= 30
    # the same mechanism on a PUBLIC domain that lists the level: it appears without the record too
    public = LaplaceHistogram(1.0, LaplaceHistogram.public_domain(with_target, bins=2), release="rounded")
    assert sum(_has_level(public(background, 0, s), "rare") for s in seeds) >= 10


def test_domain_from_data_moves_numeric_edges_with_an_extreme_record():
    background = pl.DataFrame({"v": np.linspace(0.0, 1.0, 50)})
    canary = pl.concat([background, pl.DataFrame({"v": [1000.0]})])
    leaky = LaplaceHistogram(1.0, None, domain_from_data=True, bins=4)
    assert leaky(background, 200, seed=0).get_column("v").max() <= 1.0
    assert leaky(canary, 200, seed=0).get_column("v").max() > 1.0  # bins now span [0, 1000]


def test_public_domain_helper():
    frame = pl.DataFrame({"k": ["b", "a", None, "a"], "v": [1.0, 3.0, 2.0, None]})
    dom = LaplaceHistogram.public_domain(frame, bins=2)
    assert dom == {"k": ["a", "b", None], "v": [1.0, 2.0, 3.0]}


def test_training_copy_publishes_its_training_records():
    from privgate.audit.mechanisms import TrainingCopy

    train = pl.DataFrame({"a": [1, 2, 3, 4], "x": [0.5, 1.5, 2.5, 3.5], "c": ["p", "q", "p", "q"]})
    assert TrainingCopy()(train, 2, 0).equals(train)
    noisy = TrainingCopy(noise=0.1)(train, 2, 0)
    assert noisy.schema == train.schema and noisy["c"].equals(train["c"])
    assert not noisy["x"].equals(train["x"])
    assert (noisy["x"] - train["x"]).abs().max() < 1.0  # 0.1 sd ≈ 0.11: within 9 sd
    assert noisy.equals(TrainingCopy(noise=0.1)(train, 2, 0))


def test_randomized_response_reports_each_cell_bit_as_warner_does():
    """An occupied cell is reported with probability p = e^ε/(1+e^ε), an empty one with 1 − p, and
    a release with no cell reported is spread over every cell: on a two-cell domain (a occupied,
    b empty) a shows with p + (1 − p)·p and b with (1 − p) + (1 − p)·p, counted over 1,000 seeds
    (4 standard errors)."""
    import math

    import numpy as np
    import polars as pl

    from privgate.audit.mechanisms import RandomizedResponse

    gen = RandomizedResponse(1.0, {"c": ["a", "b"]})
    p = gen.keep_probability
    assert p == pytest.approx(math.e / (1 + math.e)) and gen.true_epsilon == 1.0
    training = pl.DataFrame({"c": ["a"] * 5})
    seen = np.array([[lv in set(gen(training, 10, s)["c"].to_list()) for lv in ("a", "b")] for s in range(1000)])
    for share, want in zip(seen.mean(axis=0), (p + (1 - p) * p, (1 - p) + (1 - p) * p)):
        assert abs(share - want) < 4 * math.sqrt(want * (1 - want) / 1000), (share, want)
    out = gen(training, 7, 3)
    assert out.height == 7 and out.schema == training.schema and out.equals(gen(training, 7, 3))
