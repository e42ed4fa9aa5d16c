"""The risk arithmetic every attack shares, the holdout requirement and parameter checks."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.attacks._control import CI_METHOD, attack_result, sample_rows
from privgate.context import EvaluationContext
from privgate.errors import NotApplicableError, ParameterError

ATTACKS = ("singling_out", "linkability", "inference")


def _ctx():
    real = pl.DataFrame({"x": [float(i) for i in range(10)], "s": list("ababababab")})
    return EvaluationContext(real, real, holdout=real)


def test_risk_and_interval_by_hand():
    # 30 of 100 attacks and 10 of 100 control attacks succeed, z = 1.959964 (95 %):
    # Wilson centres a = (30 + z²/2)/(100 + z²) = 0.307399, c = (10 + z²/2)/(100 + z²) = 0.114797;
    # half-widths da = z/(100 + z²)·√(30·70/100 + z²/4) = 0.088450, dc = 0.059568;
    # risk = (a − c)/(1 − c) = 0.217579; error = √((da/(1 − c))² + (dc·(a − 1)/(1 − c)²)²) = 0.112944.
    res = attack_result(
        _ctx(),
        "x",
        n_success=30,
        n_attacks=100,
        n_control_success=10,
        n_control=100,
        n_baseline_success=5,
        n_baseline=100,
        params={},
        details={},
        per_record=np.zeros(10),
        per_record_description="",
    )
    d = res.details
    assert d["attack_rate"] == pytest.approx(0.3073987, abs=1e-6)
    assert d["control_rate"] == pytest.approx(0.1147974, abs=1e-6)
    assert d["attack_rate_error"] == pytest.approx(0.0884498, abs=1e-6)
    assert d["control_rate_error"] == pytest.approx(0.0595683, abs=1e-6)
    assert res.raw == pytest.approx(0.2175788, abs=1e-6) and res.value == pytest.approx(0.2175788, abs=1e-6)
    assert res.ci == pytest.approx((0.1046350, 0.3305226), abs=1e-6)
    assert d["ci_method"] == CI_METHOD and d["n_attacks"] == 100 and "warnings" not in d


def test_negative_residual_is_clipped_value_but_kept_raw():
    # the control does better than the attack: raw < 0, value 0, interval within [0, 1] and containing 0
    res = attack_result(
        _ctx(),
        "x",
        n_success=5,
        n_attacks=100,
        n_control_success=40,
        n_control=100,
        n_baseline_success=50,
        n_baseline=100,
        params={},
        details={},
        per_record=np.zeros(10),
        per_record_description="",
    )
    assert res.raw < -0.5 and res.value == 0.0
    assert res.ci == (0.0, 0.0)
    assert any("naive" in w for w in res.details["warnings"])


def test_exact_baseline_has_no_error():
    res = attack_result(
        _ctx(),
        "x",
        n_success=50,
        n_attacks=100,
        n_control_success=0,
        n_control=100,
        n_baseline_success=0,
        n_baseline=100,
        baseline_exact=0.25,
        params={},
        details={},
        per_record=np.zeros(10),
        per_record_description="",
    )
    assert res.details["baseline_rate"] == 0.25 and res.details["baseline_rate_error"] == 0.0


def test_target_sample_is_seeded_sorted_and_capped():
    a = sample_rows(100, 10, seed=3, stream="attack.targets")
    assert np.array_equal(a, sample_rows(100, 10, seed=3, stream="attack.targets"))
    assert not np.array_equal(a, sample_rows(100, 10, seed=4, stream="attack.targets"))
    assert np.all(np.diff(a) > 0) and a.size == 10
    assert np.array_equal(sample_rows(5, 10, seed=0, stream="attack.targets"), np.arange(5))


@pytest.mark.parametrize("name", ATTACKS)
def test_missing_holdout_is_a_clear_error(name):
    real = pl.DataFrame({"x": [1.0, 2.0, 3.0], "s": ["a", "b", "a"]})
    with pytest.raises(NotApplicableError, match=f"{name} needs a holdout"):
        getattr(privgate.metrics, name)(real, real, secret="s") if name == "inference" else getattr(
            privgate.metrics, name
        )(real, real)


@pytest.mark.parametrize(
    "name, params, match",
    [
        ("singling_out", {"n_attacks": 0}, "n_attacks"),
        ("singling_out", {"mode": "bivariate"}, "mode"),
        ("singling_out", {"n_cols": 0}, "n_cols"),
        ("linkability", {"aux_cols": ["x"]}, "two lists"),
        ("linkability", {"aux_cols": (["x", "s"], ["s"])}, "disjoint"),
        ("linkability", {"aux_cols": (["x"], ["nope"])}, "not in the data"),
        ("linkability", {"n_neighbors": 0}, "n_neighbors"),
        ("inference", {"secret": "s", "regression": True}, "numeric secret"),
        ("inference", {"secret": "s", "tolerance": -1}, "tolerance"),
        ("inference", {}, "secret="),
    ],
)
def test_bad_parameters_are_named(name, params, match):
    real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "s": ["a", "b", "a", "b"]})
    with pytest.raises(ParameterError, match=match):
        getattr(privgate.metrics, name)(real, real, holdout=real, **params)


def test_registered_in_one_family_self_controlled_needing_a_holdout():
    from privgate.catalogue import get_metric, metric_names

    assert metric_names("gdpr-attack") == ["inference", "linkability", "singling_out"]
    for name in ATTACKS:
        spec = get_metric(name)
        assert spec.self_controlled and "holdout" in spec.needs and "Giomi" in spec.reference
