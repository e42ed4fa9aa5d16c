"""Every metric's 95 % interval (ci, details["ci_method"]) and the holdout excess interval:
hand-computed on tiny frames, present or explained for every registered metric, seeded."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest

import privgate
from privgate import catalogue, registry, stats
from privgate.context import EvaluationContext
from privgate.data import EXAMPLE_KEYS, EXAMPLE_SENSITIVE
from privgate.metrics import (
    authenticity,
    close_values,
    common_rows,
    dcr,
    distant_values,
    median_dcr,
    nnaa,
    nsnd,
    zero_cap,
)
from privgate.neighbours import knn
from privgate.spaces import famd_inputs
from privgate.stats.metric_intervals import BOOT, jackknife_labels, jackknife_sources, without_intervals

Z = 1.959963984540054


def _wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_share_metric_wilson_by_hand():
    # 40 distinct real records, 15 of them copied: 15/40 with ≥ 10 on each side → Wilson
    real = pl.DataFrame({"a": np.arange(40.0), "b": ["x", "y"] * 20})
    syn = pl.concat([real.head(15), real.tail(25).with_columns(pl.col("a") + 0.5)])
    res = common_rows(real, syn)
    assert res.value == pytest.approx(15 / 40)
    assert res.ci == pytest.approx(_wilson_by_hand(15, 40), abs=1e-12)
    assert res.details["ci_method"] == "Wilson score interval of 15/40 records"


def test_flipped_share_counts_the_value_side():
    # authenticity: value = 1 − raw (raw = share of authentic records); the interval counts the
    # records that are NOT authentic, so it is the value's interval. Real records 10 apart; 12
    # synthetic records 0.3 below the first 12 real ones, the rest far away: those 12 real records
    # have a synthetic record closer than their nearest real neighbour, the other 12 do not.
    # (24 records: fewer than 25, so no jackknife — the plain share rule)
    real = pl.DataFrame({"a": np.arange(24) * 10.0})
    syn = pl.DataFrame({"a": np.r_[np.arange(12) * 10.0 - 0.3, 1e4 + np.arange(12)]})
    res = authenticity(real, syn)
    assert res.raw == pytest.approx(12 / 24) and res.value == pytest.approx(12 / 24)
    assert res.ci == pytest.approx(_wilson_by_hand(12, 24), abs=1e-12)
    assert res.ci[0] <= res.value <= res.ci[1]


def test_bootstrap_mean_metric_uses_per_record_values_and_the_context_seed():
    rng = np.random.default_rng(1)
    real = pl.DataFrame({"k": rng.choice(["a", "b", "c"], 80), "s": rng.choice(["x", "y"], 80)})
    syn = pl.DataFrame({"k": rng.choice(["a", "b", "c"], 70), "s": rng.choice(["x", "y"], 70)})
    for seed in (0, 7):
        res = zero_cap(EvaluationContext(real, syn, seed=seed), keys=["k"], sensitive="s")
        assert res.ci == stats.bootstrap_mean_ci(res.per_record, seed, n_boot=BOOT)
        assert res.ci[0] <= res.value <= res.ci[1]
        assert res.details["ci_method"].startswith(f"percentile bootstrap ({BOOT} replicates, seed {seed})")
    # a copy where the key determines the sensitive value: every per-record value is 1
    det = pl.DataFrame({"k": ["a", "b", "c"] * 5, "s": ["x", "y", "x"] * 5})
    same = zero_cap(det, det, keys=["k"], sensitive="s")
    assert same.value == 1.0 and same.ci == (1.0, 1.0)


def test_min_max_normalised_metrics_say_why_they_have_no_interval():
    real = pl.DataFrame({"a": np.arange(30.0)})
    for metric in (close_values, distant_values, nsnd):
        res = metric(real, real.with_columns(pl.col("a") + 0.5))
        assert res.ci is None and res.details["ci_method"].startswith("none: the value depends on the sample's")


def test_transformed_mean_maps_the_endpoints_and_flips_their_order():
    # dcr: value = 1/(1 + m̄) is decreasing in the mean distance m̄: the value's lower bound comes
    # from m̄'s upper bound
    # (fewer than 25 real records: no jackknife, the bootstrap of the mean distance)
    rng = np.random.default_rng(3)
    real = pl.DataFrame({"a": rng.normal(size=24), "b": rng.normal(size=24)})
    syn = pl.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30)})
    ctx = EvaluationContext(real, syn, seed=5)
    res = dcr(ctx)
    d = ctx.neighbours(("famd", 2), "real", "synthetic", 1).dist[:, 0]
    lo_m, hi_m = stats.bootstrap_mean_ci(d, 5, n_boot=BOOT)
    assert res.ci == pytest.approx((1 / (1 + hi_m), 1 / (1 + lo_m)))
    assert res.ci[0] < res.value < res.ci[1]


def test_intervals_can_be_switched_off_for_cost_measurement():
    real = pl.DataFrame({"a": np.arange(20.0)})
    with without_intervals():
        res = common_rows(real, real)
    assert res.ci is None and res.details["ci_method"].startswith("none: intervals switched off")
    # 20 of 20 records copied: Clopper–Pearson (fewer than 10 on a side), lower = 0.025^(1/20)
    assert common_rows(real, real).ci == pytest.approx((0.025 ** (1 / 20), 1.0))


# ----------------------------------------------------------------- every registered metric
N = 600


@pytest.fixture(scope="module")
def adult_report(adult, adult_holdout):
    real = adult.head(N)
    syn = privgate.baselines.noisy_copy(real, seed=1)
    params = {
        "disclosure_identity": {"keys": EXAMPLE_KEYS[:4]},
        "disclosure_attribute": {"keys": EXAMPLE_KEYS[:4]},
        "detection_mlp": {"max_iter": 30, "n_jobs": 1},
        "membership_inference": {"n_jobs": 1},
    }
    kw = dict(
        holdout=adult_holdout.head(N),
        keys=EXAMPLE_KEYS,
        sensitive=EXAMPLE_SENSITIVE,
        pairing=True,
        params=params,
        on_error="record",
    )
    return privgate.evaluate(real, syn, baseline=True, seed=0, **kw), (real, syn, kw)


# intervals that contain their point estimate by construction (score intervals, Wald intervals,
# and monotone maps of them); a percentile bootstrap need not (skewed or discrete replicates)
CONTAINS = ("Wilson", "Clopper", "DeLong", "grouped jackknife")


def test_every_registered_metric_has_an_interval_or_says_why_not(adult_report):
    rep, _ = adult_report
    assert not rep.errors
    assert set(rep.results) == set(privgate.catalogue.metric_names())
    for name, r in rep.results.items():
        method = r.details["ci_method"]
        if r.ci is None:
            assert method.startswith("none: ") and len(method) > 12, name
            continue
        lo, hi = r.ci
        assert 0.0 <= lo <= hi <= 1.0, (name, r.ci)
        assert not method.startswith("none"), name
        if method.startswith(CONTAINS):
            assert lo - 1e-12 <= r.value <= hi + 1e-12, (name, r.value, r.ci)
        else:  # a bootstrap: the value lies within the interval or within a width of it
            assert lo - (hi - lo) - 1e-9 <= r.value <= hi + (hi - lo) + 1e-9, (name, r.value, r.ci)
    # what this sample shows: the bootstrap intervals contain their value here too
    boot = [n for n, r in rep.results.items() if r.ci is not None and "bootstrap" in r.details["ci_method"]]
    jack = [n for n, r in rep.results.items() if r.ci is not None and "jackknife" in r.details["ci_method"]]
    assert len(boot) >= 5 and {"authenticity", "identifiability", "median_dcr", "nnaa", "dcr"} <= set(jack)
    assert all(rep.results[n].ci[0] <= rep.results[n].value <= rep.results[n].ci[1] for n in boot)


def test_excess_interval_with_a_holdout(adult_report):
    rep, (real_, syn_, kw) = adult_report
    hold_ = kw["holdout"]
    paired_seen = mover_seen = jack_seen = 0
    for name, r in rep.results.items():
        spec = catalogue.get_metric(name)
        if spec.self_controlled or "pairing" in spec.needs:
            assert r.baseline is None and r.excess_ci is None, name
            continue
        assert r.baseline is not None and r.excess == pytest.approx(r.value - r.baseline)
        method = r.details["excess_ci_method"]
        if r.ci is None:
            assert r.excess_ci is None and method.startswith("none"), name
            continue
        lo, hi = r.excess_ci
        assert lo <= hi and r.baseline_ci is not None
        if method.startswith("paired"):
            paired_seen += 1
            assert np.mean(r.per_record) == pytest.approx(r.value)
        elif method.startswith("grouped jackknife"):
            jack_seen += 1
            jk = jackknife_sources(r)
            # (the disclosure measures keep no per-record array: their flags are computed for the replicates only)
            assert set(jk) == {"real", "synthetic"} and (r.per_record is not None or spec.family == "disclosure")
            # the baseline's replicates are not kept on the result: recompute it on the baseline context
            base_ctx = EvaluationContext(
                real_, syn_, keys=EXAMPLE_KEYS, sensitive=EXAMPLE_SENSITIVE, seed=0, holdout=hold_
            ).holdout_baseline()
            jb = jackknife_sources(registry.run_spec(spec, base_ctx, kw["params"].get(name, {})))
            ci, _, _ = stats.jackknife_interval(
                r.excess,
                {"real": jk["real"] - jb["real"], "synthetic": jk["synthetic"], "holdout": jb["synthetic"]},
                bounds=(-1, 1),
            )
            assert r.excess_ci == pytest.approx(ci) and lo <= r.excess <= hi, name
        else:
            mover_seen += 1
            assert r.excess_ci == pytest.approx(stats.difference_interval(r.value, r.ci, r.baseline, r.baseline_ci))
            assert lo <= r.excess <= hi, name
    # zero_cap, generalized_cap, attribute_inference, disclosure_identity, disclosure_attribute, nnaa
    assert paired_seen >= 4 and mover_seen >= 3 and jack_seen == 6


def test_paired_excess_is_the_bootstrap_of_per_record_differences(adult, adult_holdout):
    real, hold = adult.head(400), adult_holdout.head(400)
    syn = privgate.baselines.noisy_copy(real, seed=2)
    rep = privgate.evaluate(real, syn, ["authenticity"], holdout=hold, baseline=True, seed=4)
    r = rep.results["authenticity"]
    base = privgate.evaluate(real, hold, ["authenticity"], seed=4).results["authenticity"]
    # with a holdout of the release's size the baseline sample is the whole holdout (reordered)
    assert r.baseline == pytest.approx(base.value)
    assert r.excess_ci == stats.bootstrap_mean_ci(r.per_record, 4, n_boot=BOOT, paired=base.per_record)
    assert r.details["excess_ci_method"].startswith("paired percentile bootstrap")


def test_same_seed_same_intervals(adult_report):
    rep, (real, syn, kw) = adult_report
    names = [
        "common_rows",
        "median_dcr",
        "nnaa",
        "dcr",
        "attribute_inference",
        "proximity_score",
        "disclosure_attribute",
    ]
    kw = dict(kw, params={k: v for k, v in kw["params"].items() if k in names})
    again = privgate.evaluate(real, syn, names, baseline=True, seed=0, **kw)
    other = privgate.evaluate(real, syn, names, baseline=True, seed=1, **kw)
    for n in names:
        assert again.results[n].ci == rep.results[n].ci, n
        assert again.results[n].excess_ci == rep.results[n].excess_ci, n
    # the bootstraps take the seed: another seed moves them
    assert other.results["dcr"].ci != rep.results["dcr"].ci


def test_self_controlled_metrics_get_no_baseline(monkeypatch, adult, adult_holdout):
    spec = catalogue.get_metric("common_rows")
    monkeypatch.setitem(registry._REGISTRY, "common_rows", dataclasses.replace(spec, self_controlled=True))
    rep = privgate.evaluate(
        adult.head(200), adult.head(200), ["common_rows", "dcr"], holdout=adult_holdout.head(200), baseline=True
    )
    assert rep.results["common_rows"].baseline is None and rep.results["common_rows"].excess_ci is None
    assert "excess_ci_method" not in rep.results["common_rows"].details
    assert rep.results["dcr"].excess_ci is not None


def test_median_dcr_zero_medians_and_small_sample_bootstrap():
    from privgate.metrics.distance import _median_dcr_value

    # both medians 0 → 1 (copy); only the real–real median 0 → 0; else 2·(1 − σ(r))
    assert _median_dcr_value(np.array([0.0, 1.0, 1.0]), np.array([0.0, 0.0, 1.0])).tolist() == pytest.approx(
        [1.0, 0.0, 2.0 * (1.0 - 1.0 / (1.0 + math.exp(-1.0)))]
    )
    # fewer than 25 real records: the bootstrap of the statistic
    rng = np.random.default_rng(6)
    real = pl.DataFrame({"a": rng.normal(size=24), "b": rng.normal(size=24)})
    syn = pl.DataFrame({"a": rng.normal(size=70), "b": rng.normal(size=70)})
    ctx = EvaluationContext(real, syn, seed=2)
    res = median_dcr(ctx)
    d_rs = ctx.neighbours("mixed", "real", "synthetic", 1).dist[:, 0]
    d_rr = ctx.neighbours("mixed", "real", "real", 1).dist[:, 0]
    expected = stats.bootstrap_ci(
        lambda idx: 2.0 * (1.0 - 1.0 / (1.0 + np.exp(-np.median(d_rs[idx]) / np.median(d_rr[idx])))), 24, 2, n_boot=BOOT
    )
    assert res.ci == pytest.approx(expected)


def _by_group(ctx, role: str, n: int):
    labels = jackknife_labels(ctx, role, n)
    return labels, [labels != g for g in range(int(labels.max()) + 1)]


def test_real_to_real_jackknife_replicates_are_the_metrics_recomputed_without_each_group():
    # each replicate = the metric recomputed from scratch on the real records left (in the same
    # scaled space): the nearest other real record is searched among them, not read from the full search
    rng = np.random.default_rng(6)
    real = pl.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80)})
    syn = pl.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80)})
    ctx = EvaluationContext(real, syn, seed=2)
    from privgate.metrics.distance import _median_dcr_value

    sp = ctx.mixed()
    labels, keeps = _by_group(ctx, "real", 80)
    assert int(labels.max()) + 1 == 8  # ⌊√80⌋ groups
    res = {m: fn(ctx) for m, fn in (("median_dcr", median_dcr), ("authenticity", authenticity), ("nnaa", nnaa))}
    want = {m: [] for m in res}
    d_ss = knn(sp.synthetic, sp.synthetic, 1, exclude_self=True).dist[:, 0]
    d_sr_all = knn(sp.synthetic, sp.real, 1).dist[:, 0]
    for keep in keeps:
        r = sp.real[keep]
        d_rs = knn(r, sp.synthetic, 1).dist[:, 0]
        d_rr = knn(r, r, 1, exclude_self=True).dist[:, 0]
        want["median_dcr"].append(_median_dcr_value(np.array([np.median(d_rs)]), np.array([np.median(d_rr)]))[0])
        want["authenticity"].append(np.mean(d_rs <= d_rr))
        # deleting real records leaves nnaa's synthetic side alone (the synthetic records' nearest real
        # record among all of them: held fixed; the synthetic records have their own jackknife source)
        want["nnaa"].append(0.5 * np.mean(d_rs <= d_rr) + 0.5 * np.mean(d_sr_all <= d_ss))
    for m, r in res.items():
        assert jackknife_sources(r)["real"] == pytest.approx(want[m]), m
        assert "jackknife" in r.details["ci_method"] and r.ci[0] <= r.value <= r.ci[1], m
    var, df = stats.jackknife_variance(np.array(want["median_dcr"]))
    assert res["median_dcr"].ci == pytest.approx(stats.t_interval(res["median_dcr"].value, var, df))
    var, df = stats.jackknife_variance(np.array(want["authenticity"]))
    flags = res["authenticity"].per_record
    assert res["authenticity"].ci == pytest.approx(stats.effective_share_interval(flags.sum(), 80, var, df)[0])
    assert "interval at the effective sample size" in res["authenticity"].details["ci_method"]


def test_dcr_jackknife_refits_the_famd_axes_without_each_group():
    rng = np.random.default_rng(3)
    real = pl.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60), "c": rng.choice(["x", "y", "z"], 60)})
    syn = pl.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50), "c": rng.choice(["x", "y", "z"], 50)})
    ctx = EvaluationContext(real, syn, seed=5)
    res = dcr(ctx)
    z = famd_inputs({"real": ctx.real, "synthetic": ctx.synthetic}, ctx.schema)
    want = []
    for keep in _by_group(ctx, "real", 60)[1]:
        v = np.linalg.svd(z["real"][keep], full_matrices=False)[2][:2].T
        want.append(1.0 / (1.0 + knn(z["real"][keep] @ v, z["synthetic"] @ v, 1).dist[:, 0].mean()))
    assert jackknife_sources(res)["real"] == pytest.approx(want)
    assert res.ci == pytest.approx(stats.t_interval(res.value, *stats.jackknife_variance(np.array(want))))
    assert "FAMD axes refitted" in res.details["ci_method"]


def test_dcr_jackknife_refit_of_a_wide_table_is_the_svd_of_the_records_left():
    # more FAMD inputs (one-hot levels) than real records: the axes come from the records' Gram
    # matrix; they must be the SVD's axes of the records left (up to sign)
    rng = np.random.default_rng(4)
    cols = {f"n{j}": rng.normal(size=30) for j in range(8)}
    cols.update({f"c{j}": rng.choice(list("pqrst"), 30) for j in range(8)})
    real = pl.DataFrame(cols)
    syn = pl.DataFrame({c: (rng.normal(size=25) if c.startswith("n") else rng.choice(list("pqrst"), 25)) for c in cols})
    ctx = EvaluationContext(real, syn, seed=2)
    res = dcr(ctx)
    z = famd_inputs({"real": ctx.real, "synthetic": ctx.synthetic}, ctx.schema)
    assert z["real"].shape[1] > z["real"].shape[0]
    want = []
    for keep in _by_group(ctx, "real", 30)[1]:
        v = np.linalg.svd(z["real"][keep], full_matrices=False)[2][:2].T
        want.append(1.0 / (1.0 + knn(z["real"][keep] @ v, z["synthetic"] @ v, 1).dist[:, 0].mean()))
    assert jackknife_sources(res)["real"] == pytest.approx(want, rel=1e-9)


def test_leading_axes_of_a_wide_matrix_from_its_gram_matrix():
    from privgate.metrics.distance import _leading_axes_wide

    rng = np.random.default_rng(0)
    z = rng.normal(size=(12, 40))
    keep = np.flatnonzero(np.arange(12) % 4 != 1)
    got = _leading_axes_wide(z, z @ z.T, keep, 3)
    want = np.linalg.svd(z[keep], full_matrices=False)[2][:3].T
    assert np.abs(np.abs((got * want).sum(axis=0)) - 1).max() < 1e-10  # the same unit axes, signs free
    # rank 1: the second axis has a zero singular value and comes out as zero
    one = np.outer(rng.normal(size=5), rng.normal(size=9))
    axes = _leading_axes_wide(one, one @ one.T, np.arange(5), 2)
    assert abs(abs(axes[:, 0] @ np.linalg.svd(one)[2][0]) - 1) < 1e-10
    assert np.isfinite(axes).all()
    assert np.linalg.norm(axes[:, 1]) < 1e-6 or abs(np.linalg.norm(axes[:, 1]) - 1) < 1e-10


def test_reconstruction_jackknife_replicates_are_the_metrics_without_each_group():
    # categorical keys: the key space does not depend on the real sample, so deleting a group and
    # recomputing from scratch must give the stored replicate exactly
    rng = np.random.default_rng(11)
    n, m = 60, 50
    real = pl.DataFrame(
        {"k1": rng.choice(list("abcd"), n), "k2": rng.choice(list("xyz"), n), "s": rng.choice(list("PQ"), n)}
    )
    syn = pl.DataFrame(
        {"k1": rng.choice(list("abcd"), m), "k2": rng.choice(list("xy"), m), "s": rng.choice(list("PQ"), m)}
    )
    ctx = EvaluationContext(real, syn, seed=4, keys=["k1", "k2"], sensitive="s")
    from privgate.metrics import attribute_inference, generalized_cap

    _, keep_r = _by_group(ctx, "real", n)
    _, keep_s = _by_group(ctx, "synthetic", m)
    for fn in (zero_cap, generalized_cap, attribute_inference):
        jk = jackknife_sources(fn(ctx))
        fresh = lambda r, s: fn(EvaluationContext(r, s, seed=4, keys=["k1", "k2"], sensitive="s")).value  # noqa: E731
        assert jk["real"] == pytest.approx([fresh(real.filter(pl.Series(k)), syn) for k in keep_r]), fn.__name__
        assert jk["synthetic"] == pytest.approx([fresh(real, syn.filter(pl.Series(k))) for k in keep_s]), fn.__name__
    # a generalized CAP whose only nearest synthetic combination vanishes with a group is searched
    # again: one synthetic record per combination, so every deleted group removes some real
    # records' whole tied set
    syn1 = pl.DataFrame({"k1": list("abcdabcdab") * 3, "k2": list("xxxxyyyyzz") * 3, "s": rng.choice(list("PQ"), 30)})
    syn1 = (
        syn1.with_columns(pl.concat_str([pl.col("k1"), pl.lit(str(0))]).alias("k1"))
        .with_row_index("i")
        .with_columns(pl.concat_str([pl.col("k1"), (pl.col("i") // 10).cast(pl.String)]).alias("k1"))
        .drop("i")
    )
    real1 = syn1.sample(40, with_replacement=True, seed=1)
    ctx1 = EvaluationContext(real1, syn1, seed=4, keys=["k1", "k2"], sensitive="s")
    jk = jackknife_sources(generalized_cap(ctx1))
    fresh1 = [
        generalized_cap(
            EvaluationContext(real1, syn1.filter(pl.Series(k)), seed=4, keys=["k1", "k2"], sensitive="s")
        ).value
        for k in _by_group(ctx1, "synthetic", 30)[1]
    ]
    assert jk["synthetic"] == pytest.approx(fresh1)


def test_nnaa_interval_with_unequal_sizes_pools_the_repetitions():
    rng = np.random.default_rng(8)
    real = pl.DataFrame({"a": rng.normal(size=60)})
    syn = pl.DataFrame({"a": rng.normal(size=60)})
    # unequal sizes: the repetitions' flags pooled, one repetition's worth drawn per side
    small = nnaa(EvaluationContext(real, syn.head(40), seed=3), repetitions=3)
    assert "3 subsampled repetitions pooled" in small.details["ci_method"]
    assert small.ci[0] <= small.value <= small.ci[1]


def test_nnaa_jackknife_by_hand_on_nine_records(monkeypatch):
    # 9 real and 9 synthetic records on one numeric column (the flags compare distances, so the
    # space's scaling does not change them); 3 jackknife groups of each set (the ≥ 25-record
    # floor lowered for the test)
    monkeypatch.setattr(stats.jackknife, "MIN_GROUPS", 2)
    real_x = np.arange(9.0)  # nearest other real record: 1 away for all
    syn_x = np.array([0.2, 0.3, 2.6, 10.0, 11.0, 12.5, 20.0, 21.5, 4.4])
    ctx = EvaluationContext(pl.DataFrame({"a": real_x}), pl.DataFrame({"a": syn_x}), seed=4)
    res = nnaa(ctx)
    # real side: d_rs = .2 .7 .6 .4 .4 .6 1.6 2.6 2 against d_rr = 1 → flags 1 1 1 1 1 1 0 0 0
    assert res.per_record.tolist() == [1, 1, 1, 1, 1, 1, 0, 0, 0]
    # synthetic side: d_sr = .2 .3 .4 2 3 4.5 12 13.5 .4, d_ss = .1 .1 1.8 1 1 1.5 1.5 1.5 1.8
    syn_flags = np.array([0, 0, 1, 0, 0, 0, 0, 0, 1.0])
    assert res.value == pytest.approx(0.5 * (6 / 9 + 2 / 9))
    lab_r, lab_s = jackknife_labels(ctx, "real", 9), jackknife_labels(ctx, "synthetic", 9)
    assert sorted(np.bincount(lab_r)) == [3, 3, 3] and sorted(np.bincount(lab_s)) == [3, 3, 3]
    # real groups deleted from both roles: flags recomputed from scratch on the real records left
    real_reps = []
    for g in range(3):
        r = real_x[lab_r != g]
        d_rr = np.array([np.min(np.abs(np.delete(r, i) - r[i])) for i in range(r.size)])
        d_rs = np.array([np.min(np.abs(syn_x - v)) for v in r])
        real_reps.append(0.5 * (np.mean(d_rs <= d_rr) + syn_flags.mean()))
    # synthetic groups deleted as queries only: the mean of the synthetic flags left
    syn_reps = [0.5 * (6 / 9 + syn_flags[lab_s != h].mean()) for h in range(3)]
    jk = jackknife_sources(res)
    assert jk["real"] == pytest.approx(real_reps) and jk["synthetic"] == pytest.approx(syn_reps)
    v_r = 2 / 3 * np.sum((np.array(real_reps) - np.mean(real_reps)) ** 2)
    v_s = 2 / 3 * np.sum((np.array(syn_reps) - np.mean(syn_reps)) ** 2)
    assert v_r > 0 and v_s > 0
    df = (v_r + v_s) ** 2 / (v_r**2 / 2 + v_s**2 / 2)  # Satterthwaite, 2 df each
    from scipy.stats import t

    half = t.ppf(0.975, df) * math.sqrt(v_r + v_s)
    assert res.ci == pytest.approx((max(0.0, res.value - half), min(1.0, res.value + half)))
    assert "3 groups of the synthetic records (as queries)" in res.details["ci_method"]
    assert "held fixed" in res.details["ci_method"]
