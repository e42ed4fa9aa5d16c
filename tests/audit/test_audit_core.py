"""The generator audit's game, targets, features, analysis and end-to-end behaviour, on tiny data
with hand-checked values."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from privgate.audit import audit_generator, prepare_audit
from privgate.audit.analysis import analyse_attack, choose_threshold, errors_at, tpr_at_fpr
from privgate.audit.features import FEATURES, FeatureSpace
from privgate.audit.plan import make_plan
from privgate.audit.targets import level_canary, range_canary, select_targets
from privgate.errors import AuditError, InputError, ParameterError
from privgate.schema import infer_schema


def people(n: int = 300, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": rng.normal(50, 5, n).round(1),
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(list("abcd"), n),
        }
    )


# module-level generators: a process pool can pickle them
def resample_training(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Not private at all: draws the training records themselves."""
    return training.sample(n_rows, with_replacement=True, seed=seed)


def copy_training(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Not private at all: publishes its training set."""
    return training


def public_only(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Perfectly private: ignores its training data (ε = 0)."""
    return people(n_rows, seed=10_000 + seed)


def refuses_new_levels(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    if training["job"].str.starts_with("privgate-canary").any():
        raise KeyError("unknown level")  # a library message could quote a value: only the type is kept
    return public_only(training, n_rows, seed)


def fails_on_odd_seeds(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    if seed % 2:
        raise RuntimeError("flaky")
    return public_only(training, n_rows, seed)


def always_fails(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    raise RuntimeError("broken")


def wrong_columns(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    return public_only(training, n_rows, seed).rename({"age": "years"})


# ------------------------------------------------------------------ targets
def test_outliers_are_the_isolated_records_most_isolated_first():
    real = pl.DataFrame({"x": [0.0, 0.1, 0.2, 0.3, 0.15, 0.25, 5.0, 9.0], "c": ["a"] * 8})
    sch = infer_schema({"real": real})
    t = select_targets(real, real, sch, n_targets=2, canaries=False)
    assert t.source_rows == [7, 6]
    assert t.kinds == ["outlier", "outlier"]
    assert t.scores[0] > t.scores[1] > 0


def test_canaries_lie_beyond_every_value_and_level():
    real = people(50)
    sch = infer_schema({"real": real})
    rc = range_canary(real, sch)
    assert rc["age"][0] > real["age"].max() and rc["income"][0] > real["income"].max()
    assert rc.schema == real.schema
    assert rc["sex"][0] in real["sex"].to_list()  # other columns hold the most frequent value
    lc = level_canary(real, sch)
    assert lc["sex"][0] not in real["sex"].to_list() and lc["job"][0] not in real["job"].to_list()
    t = select_targets(real, real, sch, n_targets=5)
    # the three places left: one cell canary (half of them, rounded down), two outliers
    assert t.kinds == ["outlier"] * 2 + ["canary_range", "canary_level", "canary_cell"]


def test_user_targets_must_share_the_columns():
    real = people(50)
    sch = infer_schema({"real": real})
    with pytest.raises(InputError, match="only in targets"):
        select_targets(real, real, sch, real.head(2).rename({"age": "years"}))
    t = select_targets(real, real, sch, real.head(2))
    assert t.kinds == ["user", "user"] and t.frame.height == 2


# ------------------------------------------------------------------ the game
def test_design_is_balanced_seeded_and_adds_targets_to_a_fixed_background():
    real = people(200)
    sch = infer_schema({"real": real})
    t = select_targets(real, real, sch, n_targets=4)
    plan = make_plan(real, t, sch, runs=20, training_rows=50, fit_share=0.5, seed=3)
    assert plan.n_runs == 20 and plan.fit.sum() == 10
    for row in plan.included:  # half of the fit and half of the test runs
        assert row[plan.fit].sum() == 5 and row[~plan.fit].sum() == 5
    again = make_plan(real, t, sch, runs=20, training_rows=50, fit_share=0.5, seed=3)
    assert np.array_equal(plan.included, again.included)
    other = make_plan(real, t, sch, runs=20, training_rows=50, fit_share=0.5, seed=4)
    assert not np.array_equal(plan.included, other.included)
    f0, f1 = plan.training_frame(0), plan.training_frame(1)
    assert f0.height == 50 + plan.included[:, 0].sum()
    assert np.array_equal(plan.background_rows(0), plan.background_rows(7))  # fixed background
    assert plan.training_frame(0).equals(f0)  # deterministic
    assert f1.height == 50 + plan.included[:, 1].sum()
    assert plan.n_rows == 50


def test_separate_design_gives_each_target_its_own_runs():
    real = people(100)
    sch = infer_schema({"real": real})
    t = select_targets(real, real, sch, n_targets=3, canaries=False)
    plan = make_plan(real, t, sch, design="separate", runs=8, training_rows=20)
    assert plan.n_runs == 24
    assert (plan.assigned.sum(axis=0) == 1).all()  # one target per run
    assert not (plan.included & ~plan.assigned).any()
    with pytest.raises(ParameterError, match="runs must be at least"):
        make_plan(real, t, sch, runs=4)
    with pytest.raises(ParameterError, match="training_rows"):
        make_plan(real, t, sch, runs=8, training_rows=1000)


# ------------------------------------------------------------------ features
def test_features_by_hand():
    pool = pl.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "a", "b", "b"]})
    target = pl.DataFrame({"x": [10.0], "c": ["z"]})
    sch = infer_schema({"real": pool})
    space = FeatureSpace.build(pool, target, sch)
    # population std of x = sqrt(1.25); the target's nearest population record is x=3, c=b
    assert space.radius[0] == pytest.approx(math.sqrt((7 / math.sqrt(1.25)) ** 2 + 1.0))
    release = space.prepare(pl.DataFrame({"x": [10.0, 10.0, 0.0, 2.0], "c": ["z", "a", "a", "z"]}))
    f = dict(zip(FEATURES, space.features(release)[0]))
    assert f["exact_copies"] == 1 and f["nearest_distance"] == 0.0
    assert f["second_distance"] == pytest.approx(1.0)  # same x, category mismatch adds 1 to d²
    # the target's rarest values: x above every population value (2 of 4 records), c = "z" (2 of 4)
    assert f["rarest_value_share"] == pytest.approx(0.5)
    assert f["two_rarest_share"] == pytest.approx(0.25)
    assert f["value_share_mean"] == pytest.approx(0.5)
    assert f["release_rows_log"] == pytest.approx(math.log(4))


def test_a_release_without_the_populations_columns_is_refused_by_name():
    pool = people(20)
    sch = infer_schema({"real": pool})
    space = FeatureSpace.build(pool, pool.head(1), sch)
    with pytest.raises(InputError, match="years"):
        space.prepare(pool.rename({"age": "years"}))


# ------------------------------------------------------------------ analysis
def test_threshold_chosen_on_fit_runs_and_counted_on_test_runs():
    fit_s = np.array([0.1, 0.2, 0.3, 0.8, 0.9, 1.0])
    fit_y = np.array([0, 0, 0, 1, 1, 1], dtype=bool)
    direction, tau = choose_threshold(fit_s, fit_y, delta=0.0, alpha=0.05)
    assert direction == 1 and 0.3 < tau <= 0.8
    # reversed orientation is found too
    d2, _ = choose_threshold(-fit_s, fit_y, delta=0.0, alpha=0.05)
    assert d2 == -1
    assert errors_at(np.array([0.5, 0.85, 0.95, 0.1]), np.array([1, 1, 0, 0], dtype=bool), 1, 0.8) == (1, 2, 1, 2)


def test_perfect_separation_gives_the_clopper_pearson_bound():
    y = np.array([1] * 50 + [0] * 50, dtype=bool)
    s = y.astype(float)
    a = analyse_attack(s, y, s, y, delta=0.0, alpha_each=0.05)
    hi = 1 - 0.025 ** (1 / 50)  # one-sided CP upper bound of 0/50 at α/2
    assert a["epsilon_lower"] == pytest.approx(math.log((1 - hi) / hi), rel=1e-9)
    assert a["auc"] == 1.0 and a["false_positives"] == 0 and a["false_negatives"] == 0


def test_tpr_at_fixed_fpr_keeps_the_fit_runs_fpr():
    fit_y = np.array([0] * 100 + [1] * 10, dtype=bool)
    fit_s = np.concatenate([np.arange(100) / 100, np.full(10, 2.0)])
    r = tpr_at_fpr(fit_s, fit_y, np.array([0.985, 0.5, 3.0]), np.array([0, 0, 1], dtype=bool), 0.01)
    # one fit out-score (0.99) may sit at or above τ: τ is just above 0.98
    assert r["fpr"] == 0.5 and r["tpr"] == 1.0 and r["fpr_resolution"] == 0.5


# ------------------------------------------------------------------ end to end
def test_a_generator_that_returns_its_training_records_is_caught():
    r = audit_generator(
        copy_training,
        people(),
        design="shared",
        runs=100,
        n_targets=3,
        training_rows=100,
        claimed_epsilon=1.0,
        seed=0,
        workers=1,
        threads=1,
        looks=None,
    )
    # every attack separates perfectly: no test run wrong, bounded at α/2 = 0.025 (one-sided
    # Clopper–Pearson at 0.0125 per rate) — the largest bound these runs can show
    b = r.best
    assert b["false_positives"] == b["false_negatives"] == 0 and b["runs_with"] + b["runs_without"] == 60
    hi_in, hi_out = 1 - 0.0125 ** (1 / b["runs_with"]), 1 - 0.0125 ** (1 / b["runs_without"])
    want = max(math.log((1 - hi_in) / hi_out), math.log((1 - hi_out) / hi_in))
    assert r.epsilon_lower == pytest.approx(want, rel=1e-9)
    assert r.epsilon_provable == pytest.approx(want, rel=1e-9)
    assert r.violation is True and r.epsilon_lower > 1.0
    assert r.max_auc >= 0.9 and r.n_audited == 3
    assert r.design["attacks"] == ["distance", "rare_value", "cell", "region", "shadow"]
    assert r.design["alpha_per_test"] == pytest.approx(0.05 / 2 / 15)
    assert r.best["epsilon_lower"] == r.epsilon_lower


def test_resampled_training_records_are_caught_less_surely():
    # drawing n records with replacement misses a given record 37 % of the time: weaker evidence
    r = audit_generator(
        resample_training,
        people(),
        design="shared",
        runs=100,
        n_targets=3,
        training_rows=100,
        claimed_epsilon=0.25,
        seed=0,
        workers=1,
        threads=1,
    )
    assert 0.25 < r.epsilon_lower < 2.0 and r.violation is True


def test_a_generator_that_ignores_its_training_data_proves_nothing():
    r = audit_generator(
        public_only,
        people(),
        design="shared",
        runs=60,
        n_targets=4,
        training_rows=100,
        claimed_epsilon=0.5,
        seed=0,
        workers=1,
        threads=1,
    )
    assert r.epsilon_lower == 0.0 and r.violation is False and r.n_audited == 4


def test_same_seed_same_result_and_no_record_values_in_the_output():
    base = people()
    real = base.with_columns(
        pl.Series("job", ["secret-value-%d" % i if i == 7 else v for i, v in enumerate(base["job"])]),
        pl.when(pl.int_range(pl.len()) == 7).then(95).otherwise(pl.col("age")).alias("age"),
    )
    kw = dict(design="shared", runs=20, n_targets=4, training_rows=60, seed=5, workers=1, threads=1)
    a = audit_generator(resample_training, real, **kw).to_dict()
    b = audit_generator(resample_training, real, **kw).to_dict()
    a.pop("cost"), b.pop("cost")
    assert a == b
    text = json.dumps(a)
    assert "secret-value" not in text
    assert any(t["real_row"] == 7 for t in a["targets"])  # the unique record is a target, by row only


def test_a_target_the_generator_refuses_is_reported_not_a_crash():
    r = audit_generator(
        refuses_new_levels, people(), design="shared", runs=20, n_targets=4, training_rows=60, workers=1, threads=1
    )
    refused = [t for t in r.targets if t["status"] == "not taken"]
    assert [t["kind"] for t in refused] == ["canary_level"] and refused[0]["why"] == "KeyError"
    # one preflight run with the three canaries (range, level, cell), then one per canary
    assert r.n_audited == 3 and r.cost["preflight_runs"] == 4


def test_failed_runs_stay_in_the_analysis_as_empty_releases():
    r = audit_generator(
        fails_on_odd_seeds,
        people(),
        design="shared",
        runs=24,
        n_targets=2,
        canaries=False,
        training_rows=40,
        threads=1,
        workers=1,
    )
    assert 0 < r.cost["runs_failed"] < 24 and r.failed_runs[0]["error"] == "RuntimeError"
    t = r.targets[0]
    assert t["fit_runs"] + t["test_runs"] == 24  # every run counts
    assert r.epsilon_lower == 0.0  # failures do not depend on the targets: no evidence


def test_broken_generators_get_clear_errors():
    with pytest.raises(AuditError, match="RuntimeError"):
        audit_generator(
            always_fails, people(), design="shared", runs=8, n_targets=2, canaries=False, training_rows=30, threads=1
        )
    with pytest.raises(InputError, match="years") as err:
        audit_generator(wrong_columns, people(), design="shared", runs=8, n_targets=2, training_rows=30, threads=1)
    assert "'age'" not in str(err.value)  # a real column the release lacks is named by position only


def test_worker_processes_give_the_same_result():
    kw = dict(design="shared", runs=16, n_targets=2, canaries=False, training_rows=40, seed=1, threads=2)
    one = audit_generator(resample_training, people(), workers=1, **kw).to_dict()
    two = audit_generator(resample_training, people(), workers=2, **kw).to_dict()
    assert two["cost"]["workers"] == 2
    one.pop("cost"), two.pop("cost")
    assert one == two


def test_prepare_without_a_generator_skips_the_preflight():
    p = prepare_audit(None, people(), design="shared", runs=8, n_targets=3, training_rows=30)
    assert p.preflight == [] and p.plan.n_targets == 3


def empty_release(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """A DP mechanism may publish no records at all."""
    return training.head(0)


def exits_its_process(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    import os

    os._exit(13)


def infinite_values(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    return public_only(training, n_rows, seed).with_columns(pl.lit(float("inf")).alias("income"))


def test_an_empty_release_is_a_release_with_no_neighbours():
    r = audit_generator(
        empty_release, people(), design="shared", runs=8, n_targets=2, canaries=False, training_rows=30, threads=1
    )
    assert r.cost["runs_failed"] == 0 and r.epsilon_lower == 0.0 and r.n_audited == 2


def test_a_generator_that_ends_its_worker_process_is_an_audit_error():
    with pytest.raises(AuditError, match="worker process died"):
        audit_generator(
            exits_its_process,
            people(),
            design="shared",
            runs=8,
            n_targets=2,
            canaries=False,
            training_rows=30,
            workers=2,
            threads=2,
        )


def test_infinite_values_in_a_release_are_refused_by_column():
    with pytest.raises(InputError, match="income"):
        audit_generator(
            infinite_values, people(), design="shared", runs=8, n_targets=2, canaries=False, training_rows=30, threads=1
        )


def never_returns(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    import time

    time.sleep(600)
    return training


def test_a_generator_that_never_returns_is_stopped_at_the_deadline():
    import time

    start = time.monotonic()
    with pytest.raises(AuditError, match=r"deadline of [0-9.]+ s \(0 of 8 runs made\)"):
        audit_generator(
            never_returns,
            people(),
            design="shared",
            runs=8,
            n_targets=2,
            canaries=False,
            training_rows=30,
            workers=1,
            threads=1,
            deadline=3,
        )
    assert time.monotonic() - start < 120  # not the generator's 600 s (a bound, not a timing)


def test_a_deadline_that_is_met_changes_nothing():
    kw = dict(design="shared", runs=8, n_targets=2, canaries=False, training_rows=30, seed=2, threads=1)
    a = audit_generator(resample_training, people(), workers=1, **kw).to_dict()
    b = audit_generator(resample_training, people(), workers=1, deadline=600, **kw).to_dict()
    assert b["cost"]["workers"] == 1
    a.pop("cost"), b.pop("cost")
    assert a == b
