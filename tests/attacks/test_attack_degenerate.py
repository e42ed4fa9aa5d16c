"""Degenerate releases and inputs: exact copies, holdout records as the release, one column,
all-null columns, a one-level secret; determinism."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.errors import AllNullColumnError, ParameterError

PARAMS = {"singling_out": {}, "linkability": {}, "inference": {"secret": "income"}}


@pytest.fixture(scope="module")
def small(adult, adult_holdout):
    return adult.head(1000), adult_holdout.head(1000)


def _run(name, real, syn, hold, **extra):
    return getattr(privgate.metrics, name)(real, syn, holdout=hold, **{**PARAMS[name], **extra})


@pytest.mark.parametrize("name", ["singling_out", "inference"])
def test_exact_copy_scores_near_one(small, name):
    real, hold = small
    res = _run(name, real, real, hold)
    assert res.value > 0.95 and res.ci[1] == pytest.approx(1.0, abs=0.02)


def test_exact_copy_links_records_that_are_distinct_on_both_parts():
    # on Adult one half of the columns ties many records (lowest index wins), so a copy is linked
    # only where both halves are distinct; on continuous data a copy links every record
    rng = np.random.default_rng(0)
    real = pl.DataFrame(rng.normal(size=(400, 4)), schema=["a", "b", "c", "d"])
    hold = pl.DataFrame(rng.normal(size=(400, 4)), schema=["a", "b", "c", "d"])
    res = privgate.metrics.linkability(real, real, holdout=hold, aux_cols=(["a", "b"], ["c", "d"]))
    assert res.details["n_success"] == 400 and res.value > 0.95


def test_exact_copy_adult_linkability_runs(small):
    real, hold = small
    res = _run("linkability", real, real, hold)
    assert res.value > 0.1 and res.details["attack_rate"] > res.details["control_rate"]


@pytest.mark.parametrize("name", list(PARAMS))
def test_holdout_records_as_release_score_zero(small, name):
    real, hold = small
    res = _run(name, real, hold, hold)
    assert res.value < 0.05 and res.ci[0] == 0.0


@pytest.mark.parametrize("name", list(PARAMS))
def test_independent_marginals_score_near_zero_for_joint_attacks(small, name):
    real, hold = small
    res = _run(name, real, privgate.baselines.independent_marginals(real, seed=3), hold)
    assert res.ci[0] <= 0.02 and 0.0 <= res.value <= res.ci[1] <= 1.0


def test_one_column():
    real = pl.DataFrame({"a": ["x", "y", "z", "z"]})
    res = privgate.metrics.singling_out(real, real, holdout=pl.DataFrame({"a": ["z", "z", "w"]}), n_attacks=5)
    assert res.details["n_cols"] == 1 and res.details["n_success"] == 2
    with pytest.raises(ParameterError, match="auxiliary column"):
        privgate.metrics.inference(real, real, holdout=real, secret="a")


def test_all_null_column_in_the_release_and_holdout(small):
    real, hold = small
    cols = ["age", "sex", "workclass", "hours_per_week", "income"]
    real, hold = real.select(cols), hold.select(cols)
    syn = privgate.baselines.noisy_copy(real, seed=1).with_columns(
        pl.lit(None, dtype=pl.Int64).alias("age"), pl.lit(None, dtype=pl.String).alias("sex")
    )
    hold = hold.with_columns(pl.lit(None, dtype=pl.String).alias("workclass"))
    for name in PARAMS:
        res = _run(name, real, syn, hold)
        assert 0.0 <= res.value <= 1.0 and res.ci is not None
    # numeric nulls are imputed, categorical nulls are a level: every guess of "sex" is null and
    # every secret is not, so no guess is right, on training and holdout records alike
    res = privgate.metrics.inference(real, syn, holdout=hold, secret="sex", aux_cols=["age", "workclass"])
    assert res.details["n_success"] == res.details["n_control_success"] == 0 and res.value == 0.0


def test_all_null_column_in_the_training_data_is_a_clear_error(small):
    real, hold = small
    real = real.with_columns(pl.lit(None, dtype=pl.String).alias("sex"))
    with pytest.raises(AllNullColumnError, match="'sex'"):
        privgate.metrics.singling_out(real, real, holdout=hold)


def test_secret_with_one_level():
    rng = np.random.default_rng(0)
    real = pl.DataFrame({"x": rng.normal(size=200), "s": ["only"] * 200})
    hold = pl.DataFrame({"x": rng.normal(size=200), "s": ["only"] * 200})
    res = privgate.metrics.inference(real, real, holdout=hold, secret="s")
    assert res.value == 0.0 and res.ci[0] == 0.0
    assert res.details["n_success"] == res.details["n_control_success"] == 200


@pytest.mark.parametrize("name", list(PARAMS))
def test_same_seed_same_result_other_seed_other_targets(small, name):
    real, hold = small
    syn = privgate.baselines.noisy_copy(real, seed=2)
    a, b = _run(name, real, syn, hold, seed=5, n_attacks=300), _run(name, real, syn, hold, seed=5, n_attacks=300)
    assert a.value == b.value and a.ci == b.ci and a.details == b.details
    assert np.array_equal(a.per_record, b.per_record)
    c = _run(name, real, syn, hold, seed=6, n_attacks=300)
    assert not np.array_equal(a.per_record, c.per_record)
