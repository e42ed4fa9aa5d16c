"""Metrics estimated on a seeded sample of real records (EvaluationContext(sample_real=N)) and
intervals widened for the approximate neighbour search (docs/performance.md, "Sampling" and
"Exact searches and the neighbour search settings")."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate.metrics as m
from privgate import evaluate
from privgate.catalogue import get_metric, metric_names
from privgate.context import EvaluationContext

# the metrics whose per-record terms follow sample_real on the real side only (their registry
# declaration's `sampled`)
SAMPLED = [n for n in metric_names() if get_metric(n).sampled == ("real",)]


def _data(n: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Real records and a release that copies a third of them (some exactly), mixed types."""
    rng = np.random.default_rng(seed)
    real = pl.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(float),
            "income": np.round(rng.lognormal(10, 0.5, n), -2),
            "score": rng.normal(size=n),
            "sex": rng.choice(["f", "m"], n),
            "region": rng.choice(list("abcde"), n),
            "label": rng.choice(["lo", "hi"], n, p=[0.7, 0.3]),
        }
    )
    syn = real.with_columns(
        pl.col("score") + rng.normal(scale=0.3, size=n), pl.col("age") + rng.integers(-2, 3, n).astype(float)
    )
    copied = rng.random(n) < 0.15
    syn = pl.concat([real.filter(pl.Series(copied)), syn.filter(~pl.Series(copied))]).select(real.columns)
    return real, syn


def _ctx(real, syn, **kw) -> EvaluationContext:
    return EvaluationContext(
        real, syn, sensitive=["label"], keys=["age", "sex", "region"], pairing=np.arange(real.height), **kw
    )


def _run(name, ctx):
    return getattr(m, name)(ctx)


@pytest.mark.parametrize("name", SAMPLED)
def test_a_sample_of_every_record_gives_the_unsampled_value(name, monkeypatch):
    real, syn = _data(600, 1)
    full = _run(name, _ctx(real, syn))
    # sample_real ≥ n: nothing is sampled
    same = _run(name, _ctx(real, syn, sample_real=600))
    assert same.value == full.value and same.ci == full.ci and "sampled" not in same.details
    # the sampled code path with every row as the "sample" computes exactly the full value
    ctx = _ctx(real, syn, sample_real=10)
    monkeypatch.setattr(ctx, "real_sample", lambda auto=True: np.arange(real.height))
    monkeypatch.setattr(
        ctx, "sample_description", lambda role="real": {"n": 600, "of": 600, "seed": 0, "method": "all"}
    )
    every = _run(name, ctx)
    assert every.value == pytest.approx(full.value, abs=1e-12)
    if "jackknife" in full.details.get("ci_method", ""):
        # a full evaluation's interval also carries the real records' role as reference points
        # (grouped jackknife); a sampled one is the share / bootstrap rule over the sample's terms
        assert "jackknife" not in every.details["ci_method"]
        assert every.ci[0] <= every.value <= every.ci[1]
    else:
        np.testing.assert_allclose(every.ci, full.ci, atol=1e-12)
    if full.per_record is not None:  # median_dcr reports its median only
        np.testing.assert_allclose(every.per_record, full.per_record, atol=1e-12)
    assert every.details["sampled"]["n"] == 600


@pytest.mark.parametrize("name", SAMPLED)
def test_a_sampled_estimate_is_within_its_interval_of_the_full_value(name):
    real, syn = _data(3000, 2)
    full = _run(name, _ctx(real, syn))
    part = _run(name, _ctx(real, syn, sample_real=500, seed=4))
    assert part.details["sampled"] == {
        "n": 500,
        "of": 3000,
        "seed": 4,
        "side": "real",
        "method": "simple random sample without replacement",
        "rule": "explicit sample size",
    }
    assert part.per_record is None or part.per_record.shape == (500,)
    lo, hi = part.ci
    assert lo <= full.value <= hi, (name, full.value, part.ci)
    assert "sample of 500 of 3000 real records" in part.details["ci_method"]
    # fewer records, wider interval — than the same rule over every record (a full evaluation's
    # jackknife interval also carries the real records' role as reference points and FAMD axes)
    full_ctx = _ctx(real, syn, sample_real=10)
    full_ctx.real_sample = lambda auto=True: np.arange(real.height)
    full_ctx.sample_description = lambda role="real": {"n": 3000, "of": 3000, "seed": 0, "method": "all"}
    full_rule = _run(name, full_ctx)
    assert hi - lo > (full_rule.ci[1] - full_rule.ci[0])


def test_sampled_share_intervals_cover_the_full_value():
    """Over 60 seeds the 95 % interval of a sampled share contains the full-data share about 95 %
    of the time (the finite-population correction ignored: at least that often)."""
    real, syn = _data(2000, 3)
    full = m.authenticity(_ctx(real, syn)).value
    full_hr = m.hitting_rate(_ctx(real, syn)).value
    hits = []
    for seed in range(60):
        ctx = _ctx(real, syn, sample_real=200, seed=seed)
        for res, truth in ((m.authenticity(ctx), full), (m.hitting_rate(ctx), full_hr)):
            hits.append(res.ci[0] <= truth <= res.ci[1])
    assert np.mean(hits) >= 0.9


def test_sampled_searches_run_for_the_sample_only():
    real, syn = _data(2000, 5)
    ctx = _ctx(real, syn, sample_real=300)
    res = m.authenticity(ctx)
    searches = res.details["neighbour_search"]["searches"]
    assert set(searches) == {"mixed real→synthetic", "mixed real→real"}
    assert not any(k[1:3] == ("real", "synthetic") and len(k) == 3 for k in ctx._nn)  # no full search


def test_holdout_baseline_is_paired_on_the_same_sample():
    real, syn = _data(1500, 6)
    rng = np.random.default_rng(0)
    holdout = real.sample(fraction=1.0, shuffle=True, seed=1).with_columns(
        pl.col("score") + rng.normal(scale=1.0, size=real.height)
    )
    rep = evaluate(real, syn, ["authenticity", "common_rows"], holdout=holdout, baseline=True, sample_real=400)
    for name in ("authenticity", "common_rows"):
        res = rep.results[name]
        assert res.details["sampled"]["n"] == 400 and res.per_record.shape == (400,)
        assert res.details["excess_ci_method"].startswith("paired percentile bootstrap")
    assert rep.params["options"]["sample_real"] == 400


# ----------------------------------------------------------- the search's own error
@pytest.fixture
def approximate(monkeypatch):
    import privgate.neighbours.settings as settings_mod

    # screened above 1000 pairs, never declined and nothing re-searched: these small, 14-D searches
    # would need most lists to calibrate (and their certificate proves little), so they would be
    # searched exactly, leaving no search error to fold into the intervals
    monkeypatch.setattr(
        settings_mod,
        "DEFAULT_SETTINGS",
        settings_mod.SearchSettings(
            exact_below_pairs=1000, ivf_max_probe_share=1.0, ivf_max_uncertain_share=1.0, ivf_resolve_share=0.0
        ),
    )


def _numeric(n: int, seed: int):
    rng = np.random.default_rng(seed)
    r = pl.DataFrame({f"x{c}": rng.normal(size=n) for c in range(14)})
    s = pl.DataFrame({f"x{c}": rng.normal(size=n) for c in range(14)})
    return r, s


@pytest.mark.parametrize("name", ["authenticity", "identifiability", "nnaa"])
def test_share_intervals_widen_by_the_share_of_rows_possibly_wrong(name, approximate):
    r, s = _numeric(1500, 7)
    approx = getattr(m, name)(EvaluationContext(r, s))
    exact = getattr(m, name)(EvaluationContext(r, s, exact=True))
    err = approx.details["search_error"]
    # (an exact search — the jackknife's batched re-search of a few rows — reports no such share)
    bound = sum(
        x.get("share_rows_possibly_wrong", 0.0) for x in approx.details["neighbour_search"]["searches"].values()
    )
    assert err["share_rows_possibly_wrong"] == pytest.approx(bound) and bound > 0
    # each end moves out by the bound (less only where [0, 1] clips it)
    assert err["lower_by"] == pytest.approx(bound) or approx.ci[0] == 0.0
    assert err["upper_by"] == pytest.approx(bound) or approx.ci[1] == 1.0
    assert err["upper_by"] > 0 and "widened for the approximate neighbour search" in approx.details["ci_method"]
    assert approx.ci[0] <= exact.value <= approx.ci[1]
    assert "search_error" not in exact.details


def test_distance_mean_interval_widens_on_the_risk_side_only(approximate):
    r, s = _numeric(1500, 8)
    # (the default 2-D FAMD space is always searched exactly by a k-d tree; 10-D is screened)
    approx = m.dcr(EvaluationContext(r, s), n_components=10)
    assert approx.details["neighbour_search"]["exact"] is False
    err = approx.details["search_error"]
    assert err["lower_by"] == 0.0 and err["upper_by"] > 0  # only toward higher risk (smaller distances)
    exact = m.dcr(EvaluationContext(r, s, exact=True), n_components=10)
    assert approx.value <= exact.value + 1e-12  # the screen never finds a nearer neighbour than the truth
    assert approx.ci[0] <= exact.value <= approx.ci[1]


def test_excess_interval_carries_both_sides_search_error(approximate):
    r, s = _numeric(1200, 9)
    h, _ = _numeric(1200, 10)
    rep = evaluate(r, s, ["authenticity"], holdout=h, baseline=True)
    res = rep.results["authenticity"]
    plain = evaluate(r, s, ["authenticity"], holdout=h, baseline=True, exact=True).results["authenticity"]
    assert res.details["search_error"]["upper_by"] > 0
    width = res.excess_ci[1] - res.excess_ci[0]
    assert width > plain.excess_ci[1] - plain.excess_ci[0]


@pytest.mark.parametrize("beyond_chance", [False, True])
def test_hitting_rate_on_a_sample_hits_the_sampled_records_as_the_full_run_does(beyond_chance):
    """The sampled query records' coordinates, whether stacked alone or taken from every real
    record's: each sampled record is hit exactly when the unsampled run hits it."""
    real, syn = _data(600, 3)
    full = m.hitting_rate(_ctx(real, syn))
    ctx = _ctx(real, syn, sample_real=150)
    rows = ctx.real_sample()
    sampled = m.hitting_rate(ctx, beyond_chance=beyond_chance)
    assert rows is not None and rows.size == 150
    if beyond_chance:
        assert sampled.raw == pytest.approx(full.per_record[rows].mean(), abs=1e-12)
    else:
        np.testing.assert_array_equal(sampled.per_record, full.per_record[rows])
    assert 0 < full.per_record[rows].sum() < 150  # some hit, some not: a wrong row would show
