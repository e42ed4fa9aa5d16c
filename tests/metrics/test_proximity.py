"""proximity_score (TTPR/TSPR): hand-computed pieces, a brute-force reference of the whole
protocol (docs/metrics.md, proximity_score), the subset search, copy ≈ 0.82 (documented), parameters, the
baseline order on the bundled Adult sample."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate import baselines
from privgate.context import EvaluationContext
from privgate.errors import ParameterError, TooFewRowsError
from privgate.metrics import proximity_score
from privgate.metrics.proximity import (
    SUBSET_FIRST_CANDIDATES,
    nearest_in_subset,
    proximity_from_ratios,
    proximity_ratio,
    subset_candidates,
)
from privgate.neighbours import knn


def test_ratio_rules():
    # 0/0 → 1, x/0 → ∞, otherwise the quotient
    out = proximity_ratio(np.array([0.0, 2.0, 3.0, 0.0]), np.array([0.0, 0.0, 2.0, 4.0]))
    assert out.tolist() == [1.0, np.inf, 1.5, 0.0]


def test_score_from_ratios_hand_computed():
    # TTPR = 1..10; α = 0.1 → linear quantile at position 0.9 → t = 1 + 0.9·(2 − 1) = 1.9
    # share(TTPR < 1.9) = 1/10; TSPR has 3 of 10 below 1.9 → score = 100 · (0.1 / 0.3) = 33.3
    ttpr = np.arange(1.0, 11.0)
    tspr = np.array([0.5, 1.0, 1.5, 5, 5, 5, 5, 5, 5, 5])
    score, info = proximity_from_ratios(ttpr, tspr, 0.1)
    assert info["threshold"] == pytest.approx(1.9)
    assert info["share_ttpr_below"] == pytest.approx(0.1)
    assert info["share_tspr_below"] == pytest.approx(0.3)
    assert score == pytest.approx(100 / 3)
    # no TSPR below t → 100; fewer TSPR than TTPR below t → capped at 100
    assert proximity_from_ratios(ttpr, np.full(10, 2.0), 0.1)[0] == 100.0
    assert proximity_from_ratios(ttpr, np.r_[1.5, np.full(9, 9.0)], 0.1)[0] == 100.0
    # a value equal to t (within 1e-9 relative) is not below it
    assert proximity_from_ratios(ttpr, np.r_[1.9 * (1 - 1e-12), np.full(9, 9.0)], 0.1)[1]["share_tspr_below"] == 0.0


def _reference(real: np.ndarray, syn: np.ndarray, alpha: float, seed: int, reps: int = 10) -> float:
    """The protocol of proximity_score (docs/metrics.md) with full distance matrices (test only)."""

    def dmat(a, b):
        return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))

    def ratio(num, den):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den == 0, np.where(num == 0, 1.0, np.inf), num / np.where(den == 0, 1, den))

    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(real))
    h = len(real) // 2
    r1, r2 = real[perm[:h]], real[perm[h:]]
    own = dmat(r1, r1)
    np.fill_diagonal(own, np.inf)
    d_own = own.min(1)
    size = min(len(r2), len(syn))
    scores = []
    for _ in range(reps if len(r2) != len(syn) else 1):
        a, b = r2, syn
        if len(r2) > len(syn):
            a = r2[np.sort(rng.choice(len(r2), size, replace=False))]
        elif len(syn) > len(r2):
            b = syn[np.sort(rng.choice(len(syn), size, replace=False))]
        tt = ratio(dmat(r1, a).min(1), d_own)
        ts = ratio(dmat(r1, b).min(1), d_own)
        t = np.quantile(tt, alpha)
        s_tt, s_ts = (tt < t).mean(), (ts < t).mean()
        scores.append(100.0 if s_ts == 0 else 100 * min(1.0, s_tt / s_ts))
    return float(np.mean(scores))


@pytest.mark.parametrize("m", [20, 30, 12])
def test_matches_brute_force_protocol(m):
    # one numeric column: the mixed space is (x − mean)/std of the real data; the synthetic set
    # is the same size as R2 (20), larger (30: synthetic subsampled) or smaller (12: R2 subsampled)
    rng = np.random.default_rng(7)
    x_real = rng.normal(size=40)
    x_syn = np.r_[x_real[: m // 2] + rng.normal(scale=0.01, size=m // 2), rng.normal(size=m - m // 2)]
    mean, std = x_real.mean(), x_real.std()
    expected = _reference(((x_real - mean) / std)[:, None], ((x_syn - mean) / std)[:, None], 0.1, seed=3)
    res = proximity_score(pl.DataFrame({"x": x_real}), pl.DataFrame({"x": x_syn}), seed=3)
    assert res.raw == pytest.approx(expected)
    assert res.value == pytest.approx(1 - expected / 100)
    assert res.details["subsampled"] == {20: None, 30: "synthetic", 12: "real_half"}[m]
    assert res.params["repetitions"] == (1 if m == 20 else 10)


def test_nearest_in_subset_equals_search_on_subset():
    # categorical-like coordinates with many exact ties, and a subset rarely containing the
    # candidates (forces the fallback search)
    rng = np.random.default_rng(0)
    q = rng.integers(0, 3, (200, 4)).astype(float)
    t = rng.integers(0, 3, (300, 4)).astype(float)
    for k, size in ((16, 150), (1, 10)):
        cand = knn(q, t, k)
        pick = np.sort(rng.choice(300, size, replace=False))
        np.testing.assert_array_equal(nearest_in_subset(q, t, pick, cand), knn(q, t[pick], 1).dist[:, 0])


@pytest.mark.parametrize("near_ties", [False, True])
def test_short_then_long_candidates_give_the_distances_of_one_long_list(near_ties):
    """subset_candidates' lists (short for every row, long for the rows whose short list misses
    some subset) read by nearest_in_subset give, bit for bit, the distances of one long list for
    every row (the short list is the long one's first columns, and the same rows are searched
    again) — and on data of exact ties (integer coordinates) those of a search of each subset.
    Also with ties broken only in the last bits, short lists of 1 and 2 (most rows need the long
    list, some the search again) and a long list as long as the target."""
    rng = np.random.default_rng(11)
    q = rng.integers(0, 3, (150, 4)).astype(float)
    t = rng.integers(0, 3, (120, 4)).astype(float)
    if near_ties:
        t *= 1.0 + rng.integers(-2, 3, t.shape) * 1e-15
    picks = [np.sort(rng.choice(120, size, replace=False)) for size in (60, 60, 10, 119)]
    calls = []

    def search(query, target, k=1, rows=None):
        calls.append((k, query.shape[0] if rows is None else len(rows)))
        return knn(query if rows is None else query[rows], target, k)

    for first, wide in ((1, 4), (2, 16), (3, 200), (5, 5)):
        calls.clear()
        cand = subset_candidates(q, t, picks, search, first, wide)
        assert cand.k == min(max(first, wide), 120)
        assert calls[0] == (first, 150) and all(k == cand.k and n <= 150 for k, n in calls[1:])
        one_list = knn(q, t, cand.k)
        for pick in picks:
            got = nearest_in_subset(q, t, pick, cand)
            np.testing.assert_array_equal(got, nearest_in_subset(q, t, pick, one_list))
            if not near_ties:
                np.testing.assert_array_equal(got, knn(q, t[pick], 1).dist[:, 0])


def test_subset_candidates_hand_checked():
    # queries at 0 and 0.9 on a line of targets at 1, 2, 3, 4 (indices 0..3): both 1-lists are [0];
    # subset {0, 2} holds it, subset {1, 3} does not, so both rows get the 3-list [0, 1, 2] (with
    # {0, 2} alone: the 1-list padded); nearest in {1, 3}: target 1 at 2 and 1.1; in {3} (no listed
    # candidate: searched again) target 3 at 4 and 3.1
    q = np.array([[0.0], [0.9]])
    t = np.array([[1.0], [2.0], [3.0], [4.0]])
    picks = [np.array([0, 2]), np.array([1, 3])]
    cand = subset_candidates(q, t, picks, first=1, wide=3)
    np.testing.assert_array_equal(cand.idx, [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_allclose(cand.dist, [[1.0, 2.0, 3.0], [0.1, 1.1, 2.1]])
    only_first = subset_candidates(q, t, [np.array([0, 2])], first=1, wide=3)
    np.testing.assert_array_equal(only_first.idx, [[0, 0, 0], [0, 0, 0]])  # padded short lists
    np.testing.assert_allclose(nearest_in_subset(q, t, picks[1], cand), [2.0, 1.1])
    np.testing.assert_allclose(nearest_in_subset(q, t, np.array([3]), cand), [4.0, 3.1])


def test_parameters_and_determinism():
    rng = np.random.default_rng(1)
    real = pl.DataFrame({"x": rng.normal(size=60), "c": rng.choice(["a", "b"], 60)})
    syn = pl.DataFrame({"x": rng.normal(size=50), "c": rng.choice(["a", "b"], 50)})
    a = proximity_score(real, syn, seed=5)
    assert proximity_score(real, syn, seed=5).raw == a.raw
    ctx = EvaluationContext(real, syn, seed=5)
    assert proximity_score(ctx).raw == a.raw  # the context's seed is the default
    assert proximity_score(ctx, alpha=0.3).params["alpha"] == 0.3
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ParameterError, match="alpha"):
            proximity_score(ctx, alpha=bad)
    with pytest.raises(ParameterError, match="repetitions"):
        proximity_score(ctx, repetitions=0)
    with pytest.raises(ParameterError, match="seed"):
        proximity_score(ctx, seed="x")
    with pytest.raises(TooFewRowsError, match="at least 4 real rows"):
        proximity_score(real.head(3), syn)


@pytest.fixture(scope="module")
def adult_values():
    from privgate.data import load_example

    real = load_example("adult_sample")
    return {name: proximity_score(real, fn(real, seed=0), seed=0) for name, fn in baselines.BASELINES.items()}


def test_copy_scores_about_point_eight(adult_values):
    # documented maximum: a copy size-matched to R2 contains about half of R1 (TSPR = 0), so
    # share(TSPR < t) ≈ ½ + ½α and the value ≈ 1 − α/(½ + ½α) = 1 − 0.1/0.55 ≈ 0.82
    assert 0.75 < adult_values["copy"].value < 0.88


def test_adult_baseline_order(adult_values):
    v = {name: r.value for name, r in adult_values.items()}
    assert v["uniform_random"] <= v["independent_marginals"] <= v["noisy_copy"] <= v["copy"], v


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_halves_read_from_the_real_search_equal_searches_on_the_halves(seed):
    """nearest_in_part on the k = 3 lists of a set's search against itself gives, for the first
    half's records, exactly the distances of a search on each half (own half excluding the record,
    other half) — on integer data full of exact duplicates and ties, where many rows are not
    decided by their lists and are searched again."""
    from privgate.metrics.proximity import nearest_in_part
    from privgate.neighbours import knn_rows

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(600, 3)).astype(float)
    x[::2] += rng.normal(0, 0.3, size=(300, 3))  # half the rows unique, half exact duplicates and ties
    perm = rng.permutation(600)
    h = 300
    r1, r2 = x[perm[:h]], x[perm[h:]]
    lists = knn(x, x, 3, exclude_self=True)
    half = np.zeros(600, dtype=np.int64)
    half[perm[h:]] = 1
    pos = np.empty(600, dtype=np.int64)
    pos[perm[:h]], pos[perm[h:]] = np.arange(h), np.arange(600 - h)
    own, again_own = nearest_in_part(
        lists, perm[:h], np.where(half == 0, pos, -1), lambda rest: knn_rows(r1, rest, 1).dist[:, 0]
    )
    other, again_other = nearest_in_part(
        lists, perm[:h], np.where(half == 1, pos, -1), lambda rest: knn(r1[rest], r2, 1).dist[:, 0]
    )
    np.testing.assert_array_equal(own, knn(r1, r1, 1, exclude_self=True).dist[:, 0])
    np.testing.assert_array_equal(other, knn(r1, r2, 1).dist[:, 0])
    assert 0 < again_own < h and 0 < again_other < h  # both ways of deciding a row were exercised


def test_proximity_score_with_and_without_the_shared_real_search_is_identical(monkeypatch):
    """The score and interval are the same whether the halves' distances come from the context's
    real → real search or from searches on the halves (the previous implementation)."""
    import privgate.neighbours.settings as settings_mod

    real = baselines.noisy_copy(
        pl.DataFrame({"a": np.repeat(np.arange(40.0), 5), "c": np.tile(["x", "y", "z", "w", "v"], 40)}), seed=3
    )
    release = baselines.noisy_copy(pl.concat([real, real]), seed=4)
    shared = proximity_score(EvaluationContext(real, release, seed=0))
    assert shared.details["halves_from_real_search"]
    ctx = EvaluationContext(real, release, seed=0)
    # no real → real lists: the halves are searched directly
    monkeypatch.setattr(settings_mod, "DEFAULT_SETTINGS", settings_mod.SearchSettings(jackknife_k=10**9))
    direct = proximity_score(ctx)
    assert not direct.details["halves_from_real_search"]
    assert shared.value == direct.value and shared.ci == direct.ci


@pytest.mark.parametrize("n_syn", [900, 1000, 300])  # release subsampled / none / real half subsampled
def test_scored_sample_of_the_whole_half_is_the_unsampled_value_and_a_sample_stays_in_its_interval(monkeypatch, n_syn):
    rng = np.random.default_rng(4)
    real = pl.DataFrame({"x": rng.normal(size=1000), "y": rng.normal(size=1000), "c": rng.choice(list("ab"), 1000)})
    syn = pl.DataFrame({"x": rng.normal(size=n_syn), "y": rng.normal(size=n_syn), "c": rng.choice(list("ab"), n_syn)})
    full = proximity_score(real, syn, seed=2, max_rows=None)
    same = proximity_score(real, syn, seed=2, max_rows=500)  # R1 has 500 records: all scored
    assert same.raw == full.raw and same.ci == full.ci and "sampled" not in same.details
    # every search of the metric's own (the candidate lists too) is made for the scored records only
    sizes = []
    original = EvaluationContext.search

    def counting(self, q, t, k=1, **kw):
        rows = kw.get("rows")
        sizes.append((q.shape[0] if rows is None else len(rows), k))
        return original(self, q, t, k, **kw)

    monkeypatch.setattr(EvaluationContext, "search", counting)
    part = proximity_score(real, syn, seed=2, max_rows=200)
    assert part.details["n_scored"] == 200
    assert part.details["sampled"]["n"] == 200 and part.details["sampled"]["of"] == 500
    assert (200, SUBSET_FIRST_CANDIDATES) in sizes and all(rows <= 200 for rows, _ in sizes)
    assert part.ci[0] <= full.value <= part.ci[1]
    assert part.ci[1] - part.ci[0] > full.ci[1] - full.ci[0]  # fewer records, wider
    with pytest.raises(ParameterError, match="max_rows"):
        proximity_score(real, syn, max_rows=1)


def test_a_sampled_score_searches_the_scored_rows_only_and_equals_the_shared_searches(monkeypatch):
    """With max_rows below R1's size, proximity_score alone searches the release and the real
    records for its scored rows only (so its cost is linear in the data), and gives the same
    value and interval as when the whole searches of the distance metrics are cached."""
    rng = np.random.default_rng(3)

    def frame(n):
        return pl.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.choice(list("xyz"), n)})

    real, syn = frame(600), frame(500)
    ctx = EvaluationContext(real, syn, seed=2)
    made = []
    search_space = ctx._search_space

    def recording(key, query, target, k, rows, target_rows):
        made.append((query, target, rows is None))
        return search_space(key, query, target, k, rows, target_rows)

    monkeypatch.setattr(ctx, "_search_space", recording)
    alone = proximity_score(ctx, max_rows=60)
    assert made and not any(whole for _, _, whole in made), made
    shared = EvaluationContext(real, syn, seed=2)
    shared.neighbours("mixed", "real", "synthetic", 1)
    shared.neighbours("mixed", "real", "real", 3)
    again = proximity_score(shared, max_rows=60)
    assert (again.value, again.ci) == (alone.value, alone.ci)


@pytest.mark.parametrize("n_syn", [600, 200, 60])  # release subsampled / none / real half subsampled
def test_short_candidate_lists_leave_every_value_and_detail_unchanged(monkeypatch, n_syn):
    """proximity_score with short candidate lists first (the default) equals the one search of
    SUBSET_CANDIDATES for every row, bit for bit: value, raw, interval and every detail but the
    report of the searches made — on records with many exact ties (integer and categorical
    columns), where rows need the long lists and the search again."""
    import privgate.metrics.proximity as prox

    rng = np.random.default_rng(8)

    def frame(n):
        return pl.DataFrame(
            {
                "a": rng.integers(0, 3, n).astype(float),
                "b": rng.integers(0, 2, n).astype(float),
                "c": rng.choice(list("xyz"), n),
            }
        )

    real, syn = frame(400), frame(n_syn)
    short = proximity_score(EvaluationContext(real, syn, seed=1))
    monkeypatch.setattr(prox, "SUBSET_FIRST_CANDIDATES", prox.SUBSET_CANDIDATES)
    one = proximity_score(EvaluationContext(real, syn, seed=1))
    assert (short.value, short.raw, short.ci) == (one.value, one.raw, one.ci)
    assert {k: v for k, v in short.details.items() if k != "neighbour_search"} == {
        k: v for k, v in one.details.items() if k != "neighbour_search"
    }
    if short.details["subsampled"]:
        searches = short.details["neighbour_search"]["searches"]
        assert any(name.endswith("long candidates") for name in searches), searches


def test_a_sample_reads_the_whole_real_search_another_metric_made(monkeypatch):
    """A sample too large for its own exact real → real rows search (the sizes above
    exact_below_pairs) reads the whole search when it is already made, instead of searching
    on the halves: the same value and interval either way."""
    import privgate.metrics.proximity as prox
    from privgate.neighbours.settings import SearchSettings

    monkeypatch.setattr(prox, "resolve_settings", lambda _s=None: SearchSettings(exact_below_pairs=0))
    rng = np.random.default_rng(6)
    real = pl.DataFrame({"x": rng.normal(size=300).round(1), "c": rng.choice(list("ab"), 300)})
    syn = pl.DataFrame({"x": rng.normal(size=260).round(1), "c": rng.choice(list("ab"), 260)})
    alone = proximity_score(EvaluationContext(real, syn, seed=4), max_rows=80)
    assert not alone.details["halves_from_real_search"]
    ctx = EvaluationContext(real, syn, seed=4)
    ctx.neighbours("mixed", "real", "real", 3)
    shared = proximity_score(ctx, max_rows=80)
    assert shared.details["halves_from_real_search"]
    assert (shared.value, shared.raw, shared.ci) == (alone.value, alone.raw, alone.ci)
    assert shared.details["score_per_repetition"] == alone.details["score_per_repetition"]


def test_subsample_searches_again_with_or_without_the_grouped_search_are_identical(monkeypatch):
    """The rows a subsample's candidate lists miss are searched again on the subsample; below
    GROUPED_FROM_ROWS rows without the grouped search (a small search's blocked path is cheaper
    than the subsample's category codes): the same value, interval and details either way."""
    import privgate.metrics.proximity as prox

    rng = np.random.default_rng(2)
    real = pl.DataFrame({"a": rng.normal(size=400).round(1), "c": rng.choice(list("xyz"), 400)})
    syn = pl.DataFrame({"a": rng.normal(size=20).round(1), "c": rng.choice(list("xyz"), 20)})
    results = {}
    for grouped_from in (0, 10**9):
        monkeypatch.setattr(prox, "GROUPED_FROM_ROWS", grouped_from)
        res = proximity_score(EvaluationContext(real, syn, seed=3))
        searches = res.details["neighbour_search"]["searches"]
        again = searches["proximity_score mixed first half→real_half subsample"]["settled_by"]
        assert ("grouped" in again) == (grouped_from == 0), again
        results[grouped_from] = (
            res.value,
            res.raw,
            res.ci,
            {k: v for k, v in res.details.items() if k != "neighbour_search"},
        )
    assert results[0] == results[10**9]


def test_ranked_shares_below_thresholds_equal_the_tolerant_comparison():
    """The bootstrap's shares of resampled ratios below thresholds, by sorted positions, equal
    lt(ratios[idx], t).mean() bit for bit — with zeros, ∞, ties, and thresholds equal to a
    ratio, within its tolerance (1e-9 relative) or just beyond it, 0 and ∞."""
    from privgate.metrics.proximity import _RankedRatios
    from privgate.ties import lt

    rng = np.random.default_rng(5)
    r = rng.choice([0.0, 0.5, 1.0, 1.0 + 5e-10, 1.0 + 3e-9, 2.0, np.inf], 300)
    r[:100] = rng.lognormal(size=100)
    ranked = _RankedRatios(r)
    idx = rng.integers(0, 300, (40, 300))
    t = np.r_[
        r[rng.integers(0, 300, 20)],
        1.0,
        1.0 - 5e-10,
        1.0 + 1e-9,
        1.0 - 2.5e-9,
        2.0 * (1 + 1e-12),
        0.0,
        np.inf,
        r[:100][:13] * (1 + 1e-9),
    ]
    assert t.size == 40
    np.testing.assert_array_equal(ranked.share_below(idx, t), lt(r[idx], t[:, None]).mean(axis=1))
    np.testing.assert_array_equal(ranked.count_below(t), lt(r[None, :], t[:, None]).sum(axis=1))
