"""memorisation: hand-computed distances, half-counted ties, distinct counting, ratio-ordered tails,
equal-size parts of the larger side (p-values and shares by hand); copies flagged, non-members,
tie-heavy and unequal-size null releases not; determinism; errors that name the sizes."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as st

from privgate import baselines
from privgate.catalogue import get_metric
from privgate.data import load_example
from privgate.errors import NotApplicableError, ParameterError, SchemaMismatchError, TooFewRowsError
from privgate.metrics import memorisation
from privgate.metrics.memorisation import _sets, distance_ratio, distinct_count, set_weights, side_counts, tail_key


def frame(xs) -> pl.DataFrame:
    return pl.DataFrame({"x": np.asarray(xs, dtype=np.float64)})


def binom_sf(k: int, n: int) -> float:
    """P(Bin(n, 1/2) ≥ k) by counting."""
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n


# training records at 100·i; holdout records at the midpoints 100·i + 50, except the last one,
# which repeats the training record 4900 (a record present on both sides)
TRAIN = frame(100.0 * np.arange(50))
HOLD = frame(np.r_[100.0 * np.arange(49) + 50, 4900.0])


def test_side_counts_half_count_ties():
    d_t = np.array([0.0, 0.0, 1.0, 1.0, 0.5, 1.0, 2.0])
    d_h = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 2.0, 1.0])
    a, b = side_counts(d_t, d_h, 0.5)
    # (0,0) is on both boundaries: half to each side; 0.5 vs 1 is on the training boundary
    assert a.tolist() == [0.5, 1.0, 0.0, 0.0, 0.5, 0.5, 0.0]
    assert b.tolist() == [0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5]
    a1, b1 = side_counts(d_t, d_h, 1.0)  # ratio 1: the plain nearer-side test, ties half
    assert a1.tolist() == [0.5, 1.0, 0.0, 0.5, 1.0, 1.0, 0.0]
    assert (a1 + b1).tolist() == [1.0] * 7


def test_hand_computed_whole_release():
    # 10 exact training copies (d_T 0, d_H 50: training side), 1 copy of the record present on both
    # sides (d_T = d_H = 0: half each), 5 at +10 (d_T 10 < 0.5·40), 4 at +40 (holdout side),
    # 2 at +50/3 (d_T = 0.5·d_H exactly: half to the training side), 28 at +25 (neither)
    xs = np.r_[
        100.0 * np.arange(10),
        4900.0,
        100.0 * np.arange(10, 15) + 10,
        100.0 * np.arange(15, 19) + 40,
        100.0 * np.arange(19, 21) + 50 / 3,
        100.0 * np.arange(21, 49) + 25,
    ]
    res = memorisation(TRAIN, frame(xs), holdout=HOLD, tails=[1.0])
    a, b, m = 10 + 0.5 + 5 + 1.0, 4 + 0.5, 50
    assert res.details["training_side"] == pytest.approx(a)
    assert res.details["holdout_side"] == pytest.approx(b)
    tail = res.details["tails"][0]
    assert tail["ties"] == 1 and tail["size"] == 50
    # exact test on the half-up rounded counts: 17 of 21
    assert res.p_value == pytest.approx(binom_sf(17, 21)) == pytest.approx(7547 / 2**21)
    assert res.value == pytest.approx((a - b) / m) == pytest.approx(0.24)
    assert res.raw == pytest.approx(0.24)
    lo = st.beta.ppf(0.025, 17, 21 - 17 + 1)
    hi = st.beta.ppf(0.975, 18, 21 - 17)
    assert res.ci == pytest.approx((21 * (2 * lo - 1) / m, 21 * (2 * hi - 1) / m))
    assert "Clopper" in res.details["ci_method"] and "Holm" in res.details["p_value_correction"]
    # flags by row position: the copies, the +10 and the boundary records; not the shared one
    assert res.details["flagged_rows"] == list(range(10)) + list(range(11, 16)) + [20, 21]
    assert res.per_record[10] == 0 and res.per_record[20] == 0.5 and res.per_record.size == 50
    assert res.n_holdout == 50 and res.details["parts"] is None


def test_hand_computed_tail_scan_with_holm():
    # 100 training at 100·i, 100 holdout at 100·i + 50; release: 5 exact copies (closest: 0),
    # 10 training-side at +10, 10 holdout-side at +40, 75 at +25
    train = frame(100.0 * np.arange(100))
    hold = frame(100.0 * np.arange(100) + 50)
    xs = np.r_[
        100.0 * np.arange(5),
        100.0 * np.arange(5, 15) + 10,
        100.0 * np.arange(15, 25) + 40,
        100.0 * np.arange(25, 100) + 25,
    ]
    res = memorisation(train, frame(xs), holdout=hold, tails=[0.05, 1.0])
    t5, whole = res.details["tails"]
    assert (t5["size"], t5["training_side"], t5["holdout_side"]) == (5, 5.0, 0.0)
    assert (whole["training_side"], whole["holdout_side"]) == (15.0, 10.0)
    p5, p_all = 0.5**5, binom_sf(15, 25)
    assert t5["p"] == pytest.approx(p5) and whole["p"] == pytest.approx(p_all)
    # Holm: the smaller p times 2, the larger times 1, made monotone
    assert t5["p_holm"] == pytest.approx(2 * p5)
    assert whole["p_holm"] == pytest.approx(max(2 * p5, p_all))
    assert res.p_value == pytest.approx(2 * p5)
    # one-sided Clopper–Pearson lower bounds at 0.05 / (2·2): 5 of 5 → 0.0125^(1/5)
    lo5 = 0.0125 ** (1 / 5)
    assert t5["lower"] == pytest.approx(5 * (2 * lo5 - 1) / 100)
    assert whole["lower"] == pytest.approx(25 * (2 * st.beta.ppf(0.0125, 15, 11) - 1) / 100)
    # the tail with the highest lower bound decides the estimate; both bounds are below 0
    assert res.details["selected_tail"] == 0.05
    assert res.value == pytest.approx(0.05) and res.ci[0] == 0.0
    assert res.ci[1] == pytest.approx(25 * (2 * st.beta.ppf(0.975, 16, 10) - 1) / 100)
    assert res.details["flagged_rows"] == [0, 1, 2, 3, 4]


@pytest.fixture(scope="module")
def adult():
    real = load_example("adult_sample")[:1500]
    hold = load_example("adult_holdout")
    return real, hold[:1500], hold[1500:]


def test_ten_percent_exact_copies_are_flagged(adult):
    real, hold, _ = adult
    rel = baselines.independent_marginals(real, seed=1)
    pos = np.sort(np.random.default_rng(0).choice(rel.height, 150, replace=False))
    rel = pl.concat([rel.with_row_index("__i").filter(~pl.col("__i").is_in(pos)).drop("__i"), real[:150]])
    res = memorisation(real, rel, holdout=hold)
    assert res.p_value < 1e-20
    assert 0.09 <= res.value <= 0.11 and res.ci[0] > 0.08 and res.ci[0] <= res.value <= res.ci[1]
    assert set(range(rel.height - 150, rel.height)) <= set(res.details["flagged_rows"])
    assert get_metric("memorisation").self_controlled and get_metric("memorisation").family == "tracing"


def test_non_members_and_the_holdout_itself_are_not_flagged(adult):
    real, hold, fresh = adult
    as_release = memorisation(real, hold, holdout=hold)  # every record is a holdout record
    assert as_release.value == 0.0 and as_release.ci[0] == 0.0 and as_release.p_value == 1.0
    assert as_release.details["n_flagged"] == 0
    others = memorisation(real, fresh, holdout=hold)  # real people in neither set
    assert others.ci[0] == 0.0 and others.p_value > 0.01 and others.value < 0.01


def test_unequal_sizes_split_the_larger_side_into_parts(adult):
    real, hold, fresh = adult
    res = memorisation(real, fresh, holdout=hold[:700], seed=3)
    assert "training split at random into 2 parts of 700" in res.details["parts"]
    assert "100 training records left out" in res.details["parts"]
    assert res.details["sizes"] == {"training": 1500, "holdout": 700, "release": 1500}
    # two training parts and one holdout: under the null a training part wins 2/3 of the records;
    # copies of the 100 left-out records cannot be counted: shares scaled by 1500 / 1400
    assert res.details["null_training_share"] == pytest.approx(2 / 3)
    assert res.details["share_scale"] == pytest.approx(1500 / 1400)
    t = res.details["tails"][-1]
    assert t["share"] == pytest.approx(1500 / 1400 * (t["training_side"] - 2 * t["holdout_side"]) / 1500)
    assert res.ci[0] == 0.0
    res2 = memorisation(real[:600], fresh, holdout=hold, seed=3)
    assert (
        res2.details["parts"]
        == "holdout split at random into 2 parts of 600 records (the training set's size); 300 holdout records left out"
    )
    assert res2.details["null_training_share"] == pytest.approx(1 / 3) and res2.details["share_scale"] == 1.0
    assert res2.ci[0] == 0.0


def test_copies_are_counted_with_a_smaller_holdout(adult):
    # 10 % copies, holdout half the training set's size: the training set is split into two parts
    # of the holdout's size, so every copy is counted (its part wins), not only half of them
    real, hold, _ = adult
    rel = baselines.independent_marginals(real, seed=2)
    rel = pl.concat([rel[150:], real[:150]])
    res = memorisation(real, rel, holdout=hold[:750], seed=1)
    assert res.details["share_scale"] == pytest.approx(1.0)
    assert res.p_value < 1e-20 and res.ci[0] > 0.08 and 0.09 <= res.value <= 0.11


def test_hand_computed_three_sets():
    # training 0..99 at 100·i split into two parts of 50; holdout 50 records at 100·i + 50.
    train = frame(100.0 * np.arange(100))
    hold = frame(100.0 * np.arange(50) + 50)
    # release: 20 exact copies of distinct training records, 10 exact copies of distinct holdout
    # records, 20 records between them (+25 from a training and a holdout record: neither side)
    xs = np.r_[100.0 * np.arange(20), 100.0 * np.arange(20, 30) + 50, 100.0 * np.arange(30, 50) + 25]
    res = memorisation(train, frame(xs), holdout=hold, tails=[1.0], seed=0)
    assert res.details["null_training_share"] == pytest.approx(2 / 3) and res.details["share_scale"] == 1.0
    t = res.details["tails"][0]
    assert (t["training_side"], t["holdout_side"]) == (20.0, 10.0)
    # A = 20 of n = 30 against Bin(30, 2/3): P(X ≥ 20) = 1 − P(X ≤ 19)
    assert res.p_value == pytest.approx(st.binom.sf(19, 30, 2 / 3))
    assert res.value == pytest.approx((20 - 2 * 10) / 50) == 0.0
    lo = st.beta.ppf(0.025, 20, 11)
    assert t["lower"] == pytest.approx(30 * (lo - 2 / 3) / (1 / 3 * 50))


def test_set_weights_with_three_sets_by_hand():
    # columns: set 0 alone at 0; sets 0 and 1 both at 0 (boundary: half each); set 2 at 1 vs 2 and
    # 3 (1 < 0.5·2 false, equal: boundary half); nobody within the ratio
    d = np.array([[0.0, 0.0, 2.0, 1.0], [5.0, 0.0, 3.0, 1.5], [4.0, 7.0, 1.0, 1.2]])
    w = set_weights(d, 0.5)
    assert w.tolist() == [[1.0, 0.5, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.0]]
    assert distance_ratio(d).tolist() == pytest.approx([0.0, 1.0, 0.5, 1 / 1.2])
    a, b = side_counts(np.array([0.0, 0.0]), np.array([0.0, 3.0]), 0.5)
    assert a.tolist() == [0.5, 1.0] and b.tolist() == [0.5, 0.0]


def test_distinct_count_by_hand():
    w = np.array([1.0, 1.0, 0.5, 0.5, 0.0, 1.0])
    nearest = np.array([7, 7, 3, 3, 9, 3])
    # record 7: max 1; record 3: max(0.5, 0.5, 1) = 1; record 9 has weight 0 only
    assert distinct_count(w, nearest) == 2.0
    assert distinct_count(np.array([0.5, 0.5]), np.array([4, 4])) == 0.5
    assert distinct_count(np.zeros(3), np.arange(3)) == 0.0


def test_repeated_copies_of_one_record_count_once():
    # 30 copies of the same training record: one distinct training record, not 30
    train = frame(100.0 * np.arange(60))
    hold = frame(100.0 * np.arange(60) + 50)
    xs = np.r_[np.zeros(30), 100.0 * np.arange(30, 60) + 25]
    res = memorisation(train, frame(xs), holdout=hold, tails=[1.0])
    assert res.details["training_side"] == 1.0 and res.details["holdout_side"] == 0.0
    assert res.value == pytest.approx(1 / 60) and res.ci[0] == 0.0
    assert res.details["n_flagged"] == 30  # every copy is still flagged per record


def test_outliers_sharing_one_extreme_record_are_not_flagged():
    # an honest generator's far outliers all have the most extreme real record as their nearest
    # neighbour; here it is a training record (the split put it there), so counted per synthetic
    # record all 40 outliers would be training-side. Counted once, they add 1 to the count.
    rng = np.random.default_rng(0)
    train = frame(np.r_[rng.normal(0, 1, 199), 30.0])
    hold = frame(rng.normal(0, 1, 200))
    bulk = rng.normal(0, 1, 160)
    xs = np.r_[bulk, 40.0 + rng.normal(0, 1, 40)]
    res = memorisation(train, frame(xs), holdout=hold)
    alone = memorisation(train, frame(np.r_[bulk, bulk[:40]]), holdout=hold)  # the bulk, 40 repeated
    assert np.all(res.per_record[160:] == 1.0)  # each outlier alone is training-side
    assert res.details["tails"][-1]["training_side"] == alone.details["tails"][-1]["training_side"] + 1
    assert res.ci[0] == 0.0 and res.p_value > 0.01


def test_tie_heavy_null_release_is_not_flagged():
    # categorical data with few combinations: most release records equal records present in both
    # sets (d_T = d_H = 0, half each); a release drawn from the same population is not flagged
    rng = np.random.default_rng(1)

    def draw(n):
        return pl.DataFrame(
            {
                "a": rng.choice(["x", "y", "z"], n),
                "b": rng.choice(["p", "q"], n),
                "c": rng.choice(["u", "v", "w", "t"], n, p=[0.7, 0.1, 0.1, 0.1]),
            }
        )

    train, hold, rel = draw(400), draw(400), draw(400)
    res = memorisation(train, rel, holdout=hold)
    assert res.details["tails"][-1]["ties"] > 300
    assert res.ci[0] == 0.0 and res.p_value > 0.05


def test_ratio_tails_pick_the_most_lopsided_records():
    # training at 100·i, holdout at 100·i + 50: 3 records at +1 (ratio 1/49), 3 at −1 from a
    # holdout record (holdout side, ratio 1/49), 44 at +20 (ratio 20/30): the 6 lopsided records
    # form the smallest-ratio tail, whatever their absolute distance
    train = frame(100.0 * np.arange(50))
    hold = frame(100.0 * np.arange(50) + 50)
    xs = np.r_[100.0 * np.arange(3) + 1, 100.0 * np.arange(3, 6) + 49, 100.0 * np.arange(6, 50) + 20]
    res = memorisation(train, frame(xs), holdout=hold, tails=[0.12, 1.0])
    t12 = res.details["tails"][0]
    assert t12["size"] == 6 and (t12["training_side"], t12["holdout_side"]) == (3.0, 3.0)
    assert res.details["tail_order"].startswith("distance ratio")


def test_deterministic(adult):
    real, hold, fresh = adult
    a = memorisation(real, fresh, holdout=hold[:700], seed=5)
    b = memorisation(real, fresh, holdout=hold[:700], seed=5)
    assert (a.value, a.ci, a.p_value, a.details["tails"]) == (b.value, b.ci, b.p_value, b.details["tails"])
    assert np.array_equal(a.per_record, b.per_record)


def test_errors_name_the_sizes():
    with pytest.raises(TooFewRowsError, match=r"at least 50 holdout rows.*holdout 49"):
        memorisation(TRAIN, TRAIN, holdout=HOLD[:49])
    with pytest.raises(TooFewRowsError, match=r"at least 50 release rows.*release 10"):
        memorisation(TRAIN, TRAIN[:10], holdout=HOLD)
    with pytest.raises(TooFewRowsError, match=r"at least 50 training rows.*training 20"):
        memorisation(TRAIN[:20], TRAIN, holdout=HOLD)
    with pytest.raises(NotApplicableError, match="holdout"):
        memorisation(TRAIN, TRAIN)
    with pytest.raises(SchemaMismatchError):
        memorisation(TRAIN, TRAIN, holdout=HOLD.rename({"x": "y"}))
    for bad in ({"ratio": 0}, {"ratio": 1.5}, {"tails": []}, {"tails": [0.0, 1.0]}, {"tails": ["a"]}):
        with pytest.raises(ParameterError):
            memorisation(TRAIN, TRAIN, holdout=HOLD, **bad)


def test_subsampled_side_is_searched_through_the_context(adult):
    """Unequal sizes: each size-matched part is searched by the context's engine (cached,
    reported in details["neighbour_search"]) and gives the brute-force nearest distances."""
    from privgate.context import EvaluationContext

    real, hold, fresh = adult
    real, hold, syn = real[:400], hold[:200], fresh[:300]
    ctx = EvaluationContext(real, syn, holdout=hold, seed=5)
    res = memorisation(ctx)
    assert set(res.details["neighbour_search"]["searches"]) == {
        "mixed synthetic→real",
        "mixed synthetic→holdout",
        "mixed real→real",
        "mixed holdout→holdout",
    }
    from privgate.metrics.memorisation import _parts

    parts = _parts(400, 200, 5)
    assert len(parts) == 2 and np.intersect1d(parts[0], parts[1]).size == 0
    rows = parts[1]
    sp = ctx.mixed()
    brute = np.sqrt(((sp.synthetic[:, None, :] - sp.real[rows][None, :, :]) ** 2).sum(-1)).min(axis=1)
    got = ctx.neighbours("mixed", "synthetic", "real", 1, target_rows=rows)
    assert np.allclose(got.dist[:, 0], brute)
    assert set(got.idx[:, 0]) <= set(range(200))  # positions within the subsample
    # the local scale: each part's records against the other records of the same part only
    within = ctx.neighbours("mixed", "real", "real", 1, target_rows=rows)
    pair = np.sqrt(((sp.real[rows][:, None, :] - sp.real[rows][None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(pair, np.inf)
    assert np.allclose(within.dist[:, 0], pair.min(axis=1))
    _, idx, local, is_tr, _, _ = _sets(ctx)
    assert is_tr.tolist() == [True, True, False]
    g = 1  # the second training part: the local scale of each release record's nearest part record
    assert np.allclose(local[g], pair.min(axis=1)[np.searchsorted(rows, idx[g])])


def test_tail_key_by_hand():
    dist = np.array([[1.0, 2.0, 0.0, 0.0, 3.0, 4.0], [4.0, 1.0, 5.0, 0.0, 3.0, 1.0]])
    scale = np.array([[2.0, 8.0, 1.0, 1.0, 1.0, 1.0], [1.0, 4.0, 1.0, 1.0, 2.0, 0.0]])
    # ratio 1/4, nearest set 0 with u = 1/2; ratio 1/2, set 1, u = 1/4; an exact copy of one side's
    # record (0); an exact copy on both sides (∞, a tie); equal distances: ratio 1, the smaller u
    # of the tied sets, 3/2; nearest record with a twin in its set (local scale 0): ∞
    expected = [0.25 * math.sqrt(0.5), 0.5 * 0.5, 0.0, math.inf, math.sqrt(1.5), math.inf]
    assert tail_key(dist, scale).tolist() == pytest.approx(expected)
    # symmetric: swapping the sets' labels leaves every key unchanged
    assert tail_key(dist[::-1], scale[::-1]).tolist() == pytest.approx(expected)


def test_local_scale_orders_an_isolated_noisy_copy_before_a_dense_region_record():
    # training at 100·i except 4900, which moves to 1001 (a twin of 1000: local scale 1); holdout
    # at 100·i + 50 (local scale 100). Release: A at 1000.5 (d_T 0.5, d_H 49.5, u 0.5), B at 2002
    # (a noisy copy of the isolated 2000: d_T 2, d_H 48, u 2/100), 48 records at 100·i + 25.
    # A has the smaller ratio (1/99 < 1/24) but B the smaller key: (1/24)·√0.02 < (1/99)·√0.5
    from privgate.context import EvaluationContext

    train = frame(np.r_[100.0 * np.arange(49), 1001.0])
    hold = frame(100.0 * np.arange(50) + 50)
    fill = [100.0 * i + 25 for i in range(50) if i not in (10, 20)]
    ctx = EvaluationContext(train, frame(np.r_[1000.5, 2002.0, fill]), holdout=hold, seed=0)
    dist, _, local, _, _, _ = _sets(ctx)
    unit = dist[1, 0] / 49.5  # the mixed space's scale of one unit of x
    assert dist[:, :2] / unit == pytest.approx(np.array([[0.5, 2.0], [49.5, 48.0]]))
    assert local[:, :2] / unit == pytest.approx(np.array([[1.0, 100.0], [100.0, 100.0]]))
    key = tail_key(dist, local)
    assert key[:2] == pytest.approx([(1 / 99) * math.sqrt(0.5), (1 / 24) * math.sqrt(0.02)])
    assert distance_ratio(dist)[0] < distance_ratio(dist)[1] and key[1] < key[0]
    res = memorisation(ctx, tails=[0.02, 1.0])
    first = res.details["tails"][0]
    assert first["size"] == 1 and first["training_side"] == 1.0
    assert res.details["tail_order"].startswith("distance ratio")


def test_interval_widens_for_an_approximate_search(monkeypatch):
    """With a screened (approximate) search whose uncertain rows are left unresolved (a lowered
    ``ivf_resolve_share``) the lower bound the gate decides on moves down by the share of release
    rows whose nearest record may be wrong; exact searches change nothing."""
    import polars as pl

    import privgate.neighbours.settings as settings_mod
    from privgate.context import EvaluationContext
    from privgate.metrics import memorisation

    rng = np.random.default_rng(3)
    train = pl.DataFrame({f"x{c}": rng.normal(size=1500) for c in range(14)})
    hold = pl.DataFrame({f"x{c}": rng.normal(size=1500) for c in range(14)})
    syn = pl.concat([train.head(150), pl.DataFrame({f"x{c}": rng.normal(size=1350) for c in range(14)})])
    exact = memorisation(EvaluationContext(train, syn, holdout=hold, exact=True))
    assert "search_error" not in exact.details
    monkeypatch.setattr(
        settings_mod,
        "DEFAULT_SETTINGS",
        settings_mod.SearchSettings(
            exact_below_pairs=1000, ivf_max_probe_share=1.0, ivf_max_uncertain_share=1.0, ivf_resolve_share=0.0
        ),
    )
    approx = memorisation(EvaluationContext(train, syn, holdout=hold))
    err = approx.details["search_error"]
    assert err["share_rows_possibly_wrong"] > 0
    assert err["lower_by"] == pytest.approx(err["share_rows_possibly_wrong"]) or approx.ci[0] == 0.0
    assert approx.ci[0] <= approx.details["lower_bound"] and approx.ci[0] <= exact.value
