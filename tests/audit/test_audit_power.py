"""The audit's worst-case search and its cheaper designs: cell canaries and their counts, the pooled
many-canary evidence, the canaries design, sequential looks and the largest provable bound."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.audit import audit_generator
from privgate.audit.analysis import pooled_guesses, rank_within
from privgate.audit.features import FeatureSpace, feature_index
from privgate.audit.mechanisms import LaplaceHistogram
from privgate.audit.plan import look_schedule, make_plan
from privgate.audit.targets import canary_targets, cell_canaries, level_canaries
from privgate.errors import ParameterError
from privgate.schema import infer_schema
from privgate.stats.one_run import canary_epsilon_lower_bound

DOMAIN = {"a": list("pqrs"), "b": list("xyz"), "x": [-4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0]}


def data(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "a": rng.choice(list("pqrs"), n, p=[0.4, 0.3, 0.2, 0.1]),
            "b": rng.choice(list("xyz"), n),
            "x": rng.normal(0.0, 1.0, n),
        }
    )


# ------------------------------------------------------------------ cell canaries and counts
def test_cell_canaries_sit_inside_the_domain_in_distinct_empty_regions():
    real = pl.DataFrame({"c": ["u"] * 50 + ["v"] * 50, "x": np.r_[np.linspace(0, 1, 50), np.linspace(2, 3, 50)]})
    sch = infer_schema({"real": real})
    cells = cell_canaries(real, sch, 2)
    assert cells.height == 2 and cells.schema == real.schema
    for c, x in zip(cells["c"], cells["x"]):
        assert c in ("u", "v") and 0.0 <= x <= 3.0  # values the population shows: inside any public domain
        same = real.filter(pl.col("c") == c)["x"]
        assert x < same.min() or x > same.max()  # no population record of its category near it
    assert cells["c"].n_unique() == 2  # distinct regions
    assert cell_canaries(real, sch, 0).height == 0


def test_cell_and_region_counts_count_release_records_in_the_targets_cell():
    pool = pl.DataFrame({"c": ["u", "v"] * 50, "x": np.arange(100, dtype=np.float64)})
    sch = infer_schema({"real": pool})
    target = pl.DataFrame({"c": ["u"], "x": [25.0]})
    space = FeatureSpace.build(pool, target, sch)
    # 10 quantile bins of 0..99: edges 0, 9.9, 19.8, 29.7, 39.6, ...: 25 is in bin 2, 35 in bin 3
    release = pl.DataFrame({"c": ["u", "u", "v", "u", "u"], "x": [21.0, 28.0, 25.0, 35.0, 55.0]})
    f = space.features(space.prepare(release))
    assert f[0, feature_index("cell_count")] == 2  # (u, 21), (u, 28)
    assert f[0, feature_index("region_count")] == 3  # and (u, 35) one bin away; never category v


def test_level_canaries_change_one_column_each():
    real = data(100)
    sch = infer_schema({"real": real})
    lv = level_canaries(real, sch, 4)
    for i, row in enumerate(lv.iter_rows(named=True)):
        unseen = [c for c in ("a", "b") if row[c] not in real[c].to_list()]
        assert len(unseen) == 1
    t = canary_targets(real, sch, 8)
    assert len(t) == 8 and set(t.kinds) <= {"canary_cell", "canary_level"}
    with pytest.raises(ParameterError, match="n_targets"):
        canary_targets(real, sch, 1)


# ------------------------------------------------------------------ pooled guesses
def test_pooled_guesses_count_right_guesses_on_the_test_runs():
    fit_s = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    fit_y = fit_s > 0.5
    test_s = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    test_y = np.array([[True, False], [False, False], [True, False]])
    p = pooled_guesses(fit_s, fit_y, test_s, test_y, alpha_fit=0.05, alpha=0.05, rank=False)
    # the rule "in iff score ≥ 1, else out" fits perfectly; on the test runs 5 of 6 are right
    assert (p["direction"], p["threshold_in"]) == (1, 1.0)
    assert p["guesses"] == 6 and p["correct"] == 5 and p["observations"] == 6
    assert p["epsilon_lower"] == canary_epsilon_lower_bound(5, 6, alpha=0.05)
    assert p["epsilon_provable"] == canary_epsilon_lower_bound(6, 6, alpha=0.05)


def test_ranks_come_from_the_fit_runs_alone():
    fit = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    r = rank_within(fit, np.array([[2.0, 20.0], [0.0, 40.0]]))
    assert r.tolist() == [[0.5, 0.5], [0.0, 1.0]]


def test_pooled_evidence_on_pure_noise_proves_nothing():
    rng = np.random.default_rng(7)
    y = rng.random((300, 20)) < 0.5
    p = pooled_guesses(
        rng.random((100, 20)), y[:100], rng.random((200, 20)), y[100:], alpha_fit=0.01, alpha=0.01, rank=True
    )
    assert p["epsilon_lower"] == 0.0


# ------------------------------------------------------------------ designs
def test_shared_design_includes_targets_independently_from_200_runs():
    real = data(200)
    sch = infer_schema({"real": real})
    t = canary_targets(real, sch, 6)
    small = make_plan(real, t, sch, runs=20, training_rows=50, fit_share=0.5, seed=1)
    assert not small.independent and (small.included[:, small.fit].sum(axis=1) == 5).all()
    big = make_plan(real, t, sch, runs=400, training_rows=50, seed=1)
    assert big.independent and not (big.included[:, big.fit].sum(axis=1) == 80).all()
    many = make_plan(real, t, sch, design="canaries", runs=3, training_rows=50, fit_share=0.2, seed=1)
    assert many.n_runs == 3 and many.fit.tolist() == [True, False, False] and many.independent
    seq = make_plan(real, t, sch, runs=10, training_rows=50, fit_share=0.4, seed=1, interleave=True)
    assert seq.fit.sum() == 4 and seq.fit[0] and not seq.fit[1]  # spread, the first run fits
    assert look_schedule(100, 4, 8) == [25, 50, 75, 100] and look_schedule(5, 5, 2) == [2, 3, 4, 5]


def canaries_audit(gen, seed, runs=4, claimed=1.0, **kw):
    return audit_generator(
        gen,
        data(seed=seed),
        design="canaries",
        runs=runs,
        n_targets=40,
        training_rows=150,
        claimed_epsilon=claimed,
        seed=seed,
        workers=1,
        threads=1,
        **kw,
    )


def test_canaries_design_is_seeded_and_catches_the_domain_fault_in_five_fits():
    broken = LaplaceHistogram(1.0, None, release="rounded", domain_from_data=True)
    r = canaries_audit(broken, seed=0)
    assert r.cost["runs"] + r.cost["preflight_runs"] <= 5
    assert r.violation is True and r.best["pooled"] and r.best["kind"] == "canary_level"
    assert r.epsilon_provable >= r.epsilon_lower > 1.0
    again = canaries_audit(broken, seed=0)
    assert again.epsilon_lower == r.epsilon_lower and again.pooled == r.pooled
    with pytest.raises(ParameterError, match="pure ε"):
        canaries_audit(broken, seed=0, delta=1e-5)


def test_canaries_design_does_not_accuse_an_exact_mechanism():
    bounds = [
        canaries_audit(LaplaceHistogram(1.0, DOMAIN, release="rounded"), seed=s, runs=6).epsilon_lower for s in range(3)
    ]
    assert all(b <= 1.0 for b in bounds)


def test_sequential_audit_stops_early_on_a_broken_mechanism_only():
    kw = dict(
        design="shared", runs=120, n_targets=4, training_rows=150, claimed_epsilon=1.0, workers=1, threads=1, looks=4
    )
    broken = audit_generator(
        LaplaceHistogram(1.0, None, release="rounded", domain_from_data=True), data(seed=1), seed=1, **kw
    )
    seq = broken.design["sequential"]
    assert broken.violation is True and seq["stopped_early"] and seq["stopped_after_runs"] < 120
    assert seq["alpha_per_look"] == pytest.approx(0.05 / 4) and broken.confidence == 0.95
    exact = audit_generator(LaplaceHistogram(1.0, DOMAIN, release="rounded"), data(seed=1), seed=1, **kw)
    assert exact.violation is False and exact.design["sequential"]["stopped_after_runs"] == 120
    with pytest.raises(ParameterError, match="claimed_epsilon"):
        audit_generator(
            LaplaceHistogram(1.0, DOMAIN),
            data(),
            design="shared",
            runs=40,
            n_targets=2,
            training_rows=50,
            looks=2,
            workers=1,
            threads=1,
        )


def test_largest_provable_bound_is_reported_beside_the_bound():
    r = audit_generator(
        LaplaceHistogram(1.0, DOMAIN, release="rounded"),
        data(seed=2),
        design="shared",
        runs=60,
        n_targets=4,
        training_rows=150,
        claimed_epsilon=1.0,
        seed=2,
        workers=1,
        threads=1,
    )
    assert r.epsilon_provable is not None and r.epsilon_provable >= r.best["epsilon_lower"]
    assert "largest bound these runs could show" in r.summary()
    assert r.to_dict()["epsilon_provable"] == r.epsilon_provable
