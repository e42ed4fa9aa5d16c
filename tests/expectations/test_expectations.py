"""The privgate GX expectations on an ephemeral context: values, pass / fail / errored,
details, batches from Polars and pandas, real data by path and by registry."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")

import privgate.gx as pe  # noqa: E402
from privgate import catalogue, registry  # noqa: E402


def _require_metric(name: str) -> None:
    """A metric an expectation test is about must be registered: a renamed or removed metric
    fails the test (it is not skipped)."""
    assert name in catalogue.metric_names(), f"privgate metric {name!r} is not registered"


def _validate(ctx, synthetic, expectation, **kw):
    return pe.validate_release(synthetic, expectation, context=ctx, **kw)


# ------------------------------------------------------------------ hand-computed value
def test_common_rows_value_matches_hand_computation(gx_context, tiny):
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    # 1 of 4 real records has an identical synthetic record (see the fixture) → 0.25
    at = _validate(gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=0.25))
    below = _validate(gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=0.2))
    assert at.result["observed_value"] == pytest.approx(0.25)
    assert at.success is True  # "at most": risk == threshold passes
    assert below.success is False and not pe.is_errored(below)
    d = below.result["details"]
    assert d["metric"] == "common_rows"
    assert d["threshold"] == 0.2
    assert d["raw"] == pytest.approx(0.25)
    assert d["n_real"] == 4 and d["n_synthetic"] == 3
    assert pe.summarise(below)["status"] == "failed"


def test_observed_value_equals_library_metric(gx_context, adult_small, adult_path, adult_random):
    """The expectation reports exactly what privgate.metrics.<name> returns."""
    from privgate import metrics

    release = adult_random.head(300)
    for name, cls in (
        ("common_rows", pe.ExpectSyntheticExactCopyRateToBeBelow),
        ("dcr", pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow),
    ):
        _require_metric(name)
        lib = getattr(metrics, name)(adult_small, release)
        r = _validate(gx_context, release, cls(real=adult_path, threshold=1.0))
        assert r.success
        assert r.result["observed_value"] == pytest.approx(lib.value, abs=1e-12)
        assert r.result["details"]["raw"] == pytest.approx(lib.raw, abs=1e-12)


# ------------------------------------------------------- passing and failing release per metric
NAMED_CASES = [
    # (metric, expectation kwargs beyond real/threshold, threshold)
    ("common_rows", {}, 0.01),
    # the 2-component FAMD projection of adult_small keeps ~8 % of the variance, so even uniform
    # noise lands near real records (random ≈ 0.77 here, copy = 1): gate close to 1
    ("dcr", {}, 0.9),
    ("attribute_inference", {"sensitive": ["occupation"]}, 0.5),
    # one repetition, one thread: keeps the LightGBM fits to about a second
    ("membership_inference", {"params": {"repetitions": 1, "n_jobs": 1}}, 0.5),
    # 4 keys: a copy has 28 % replicated uniques / 30 % DiSCO, uniform noise 4 % / 1.3 %
    ("disclosure_identity", {"keys": ["age", "sex", "race", "marital_status"], "sensitive": ["occupation"]}, 0.1),
    ("disclosure_attribute", {"keys": ["age", "sex", "race", "marital_status"], "sensitive": ["occupation"]}, 0.1),
]


def test_every_metric_these_tests_name_is_registered():
    """A renamed or removed metric fails here (no test about it is silently skipped)."""
    named = {case[0] for case in NAMED_CASES} | set(pe.NAMED) | {"hitting_rate", "nndr", "hidden_rate"}
    missing = sorted(named - set(catalogue.metric_names()))
    assert not missing, f"privgate metrics not registered: {missing}"


@pytest.mark.parametrize("metric,extra,threshold", NAMED_CASES, ids=[c[0] for c in NAMED_CASES])
def test_named_expectation_copy_fails_random_passes(
    gx_context, adult_small, adult_path, adult_random, metric, extra, threshold
):
    _require_metric(metric)
    cls = pe.NAMED[metric]
    exp = cls(real=adult_path, threshold=threshold, **extra)
    from privgate import baselines

    copy = _validate(gx_context, baselines.copy(adult_small), exp)
    rand = _validate(gx_context, adult_random, exp)  # baselines.uniform_random(adult_small, seed=7)
    for r in (copy, rand):
        assert not pe.is_errored(r), pe.error_message(r)
        assert r.result["details"]["metric"] == metric
    assert copy.success is False, f"{metric}: a copy of the real data must fail (risk {copy.result})"
    assert rand.success is True, f"{metric}: a uniform random release must pass ({rand.result})"
    assert copy.result["observed_value"] > rand.result["observed_value"]


def test_general_expectation_any_registered_metric(gx_context, adult_path, adult_small):
    _require_metric("hitting_rate")
    exp = pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="hitting_rate", real=adult_path, threshold=0.5)
    r = _validate(gx_context, adult_small, exp)
    assert r.success is False  # a copy hits every real record
    assert r.result["observed_value"] == pytest.approx(1.0)
    assert r.result["details"]["metric"] == "hitting_rate"


def test_general_expectation_passes_metric_params(gx_context, adult_small, adult_path, adult_random):
    """params reach the metric: nndr's result records the n_components it used."""
    _require_metric("nndr")
    a = _validate(
        gx_context,
        adult_random,
        pe.ExpectSyntheticPrivacyRiskToBeBelow(
            metric="nndr", real=adult_path, threshold=1.0, params={"n_components": 3}
        ),
    )
    b = _validate(
        gx_context,
        adult_random,
        pe.ExpectSyntheticPrivacyRiskToBeBelow(
            metric="nndr", real=adult_path, threshold=1.0, params={"n_components": 2}
        ),
    )
    assert not pe.is_errored(a), pe.error_message(a)
    assert a.result["details"]["params"].get("n_components") == 3
    assert b.result["details"]["params"].get("n_components") == 2


def test_suite_parameter_threshold(gx_context, tiny):
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    exp = pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold={"$PARAMETER": "max_copies"})
    ok = _validate(gx_context, synth, exp, expectation_parameters={"max_copies": 0.3})
    bad = _validate(gx_context, synth, exp, expectation_parameters={"max_copies": 0.1})
    assert ok.success is True and bad.success is False
    assert bad.result["details"]["threshold"] == 0.1


def test_excess_over_holdout_baseline(gx_context, adult_small, adult_path, adult_holdout_path):
    """compare_to="excess": observed value = value − baseline, the baseline being the metric
    on the holdout sample privgate.evaluate(baseline=True) draws — checked against it."""
    import privgate

    release = pl.concat([adult_small.head(60), pl.read_parquet(adult_holdout_path).tail(240)])
    exp = pe.ExpectSyntheticPrivacyRiskToBeBelow(
        metric="hitting_rate", real=adult_path, holdout=adult_holdout_path, compare_to="excess", threshold=0.05
    )
    r = _validate(gx_context, release, exp)
    assert not pe.is_errored(r), pe.error_message(r)
    lib = privgate.evaluate(adult_small, release, ["hitting_rate"], holdout=adult_holdout_path, baseline=True).results[
        "hitting_rate"
    ]
    d = r.result["details"]
    assert d["baseline"] == pytest.approx(lib.baseline)
    assert r.result["observed_value"] == pytest.approx(lib.excess)
    assert d["value"] == pytest.approx(lib.value)
    assert d["compared"] == "excess"
    # 60 of 600 real records copied: the excess is ≈ 0.1, over the 0.05 allowed
    assert r.result["observed_value"] > 0.05 and r.success is False
    no_holdout = _validate(
        gx_context,
        release,
        pe.ExpectSyntheticPrivacyRiskToBeBelow(
            metric="hitting_rate", real=adult_path, compare_to="excess", threshold=0.05
        ),
    )
    assert pe.is_errored(no_holdout) and "holdout" in pe.error_message(no_holdout)


def test_real_and_holdout_as_suite_parameters(gx_context, tiny, tmp_path):
    """A saved suite can leave the data paths to run time: real={"$PARAMETER": ...}."""
    real, synth = tiny
    path = tmp_path / "tiny_real.parquet"
    real.write_parquet(path)
    exp = pe.ExpectSyntheticExactCopyRateToBeBelow(real={"$PARAMETER": "real_path"}, threshold=0.3)
    r = _validate(gx_context, synth, exp, expectation_parameters={"real_path": str(path)})
    assert not pe.is_errored(r), pe.error_message(r)
    assert r.result["observed_value"] == pytest.approx(0.25) and r.success
    assert "$PARAMETER real_path" in pe.ExpectSyntheticExactCopyRateToBeBelow.sentence(exp.configuration.kwargs)


# ------------------------------------------------------------------------------ errors
def test_unknown_metric_is_errored_not_failed(gx_context, tiny):
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    r = _validate(
        gx_context, synth, pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="no_such_metric", real=ref, threshold=1.0)
    )
    assert r.success is False
    assert pe.is_errored(r)
    assert "UnknownMetricError" in pe.error_message(r)
    assert pe.summarise(r)["status"] == "errored"


def test_metric_raising_is_errored_and_message_withheld(gx_context, tiny, monkeypatch):
    """A metric that crashes (non-privgate exception) → errored, never a pass even with
    threshold 1, and the exception's own text (which could quote data) is not shown."""
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    spec = catalogue.get_metric("common_rows")

    def boom(ctx, **params):
        raise RuntimeError("secret-value-42 leaked in a message")

    monkeypatch.setitem(registry._REGISTRY, "common_rows", dataclasses.replace(spec, func=boom))
    pe.compute.clear_context_cache()
    r = _validate(gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=1.0))
    assert r.success is False and pe.is_errored(r)
    text = json.dumps(r.to_json_dict())
    assert "MetricComputationError" in text and "RuntimeError" in pe.error_message(r)
    assert "secret-value-42" not in text
    assert "raise RuntimeError" not in text  # the exception chain (with source lines) is cut


def test_exception_around_the_metric_is_errored_and_message_withheld(gx_context, tiny, monkeypatch):
    """A non-privgate exception outside the metric (here: building the evaluation context) is
    not covered by run_spec's withholding: compute_risk withholds its text and cuts the chain."""
    import privgate.context

    real, synth = tiny
    ref = pe.register_real("tiny", real)

    def broken_init(self, *args, **kwargs):
        raise ValueError("secret-cell-913 quoted by a library")

    monkeypatch.setattr(privgate.context.EvaluationContext, "__init__", broken_init)
    pe.compute.clear_context_cache()
    r = _validate(gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=1.0))
    assert r.success is False and pe.is_errored(r)
    text = json.dumps(r.to_json_dict())
    assert "ValueError (message withheld" in pe.error_message(r)
    assert "secret-cell-913" not in text
    pe.compute.clear_context_cache()


def test_missing_real_file_is_errored(gx_context, tiny, tmp_path):
    _, synth = tiny
    r = _validate(
        gx_context,
        synth,
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=str(tmp_path / "missing.parquet"), threshold=1.0),
    )
    assert pe.is_errored(r) and "file not found" in pe.error_message(r)


def test_unregistered_reference_is_errored(gx_context, tiny):
    _, synth = tiny
    r = _validate(
        gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real="registry:never_registered", threshold=1.0)
    )
    assert pe.is_errored(r) and "never_registered" in pe.error_message(r)


def test_bad_parameters_are_errored(gx_context, tiny):
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    unknown_param = _validate(
        gx_context,
        synth,
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=1.0, params={"no_such_option": 1}),
    )
    reserved = _validate(
        gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=1.0, params={"seed": 3})
    )
    bad_threshold = _validate(gx_context, synth, pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=1.5))
    for r in (unknown_param, reserved, bad_threshold):
        assert r.success is False and pe.is_errored(r), r
    assert "ParameterError" in pe.error_message(unknown_param)
    assert "seed" in pe.error_message(reserved)
    assert "threshold" in pe.error_message(bad_threshold)


def test_missing_suite_parameter_raises(gx_context, tiny):
    """GX itself refuses to validate when a threshold's $PARAMETER has no value (loud)."""
    from great_expectations.exceptions import SuiteParameterError

    real, synth = tiny
    ref = pe.register_real("tiny", real)
    with pytest.raises(SuiteParameterError):
        _validate(
            gx_context,
            synth,
            pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold={"$PARAMETER": "not_supplied"}),
        )


def test_schema_mismatch_is_errored(gx_context, tiny):
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    r = _validate(
        gx_context, synth.rename({"b": "c"}), pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=1.0)
    )
    assert pe.is_errored(r) and "SchemaMismatchError" in pe.error_message(r)


# --------------------------------------------------------------------- batches, references
def test_polars_and_pandas_batches_agree(gx_context, adult_small, adult_path, adult_random):
    """Polars (via Arrow), plain pandas and Arrow-backed pandas batches give the same risk,
    with nulls (workclass has missing values) surviving the round trip."""
    release = pl.concat([adult_small.head(100), adult_random.head(200)])
    assert release["workclass"].null_count() > 0
    exp = pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=1.0)
    values = []
    for batch in (
        release,
        release.to_pandas(),
        release.to_pandas(use_pyarrow_extension_array=True),
        release.to_arrow(),
        release.lazy(),
    ):
        r = _validate(gx_context, batch, exp)
        assert not pe.is_errored(r), pe.error_message(r)
        values.append(r.result["observed_value"])
    # 100 of the 600 real records are copied (adult_small has no duplicate rows among them)
    n_dup = adult_small.height - adult_small.unique().height
    assert n_dup == 0
    assert values == [pytest.approx(100 / adult_small.height)] * len(values)


def test_dtype_round_trip_dates_categoricals_booleans(gx_context, tmp_path):
    """Date, Datetime, Categorical, Enum, Boolean and Int columns with nulls survive Polars →
    Arrow-backed pandas → Polars: a copy of the real data is recognised as a copy."""
    import datetime as dt

    real = pl.DataFrame(
        {
            "day": [dt.date(2020, 1, d) for d in range(1, 7)],
            "ts": [dt.datetime(2021, 5, 1, h) for h in range(6)],
            "cat": pl.Series(["a", "b", None, "a", "c", "b"], dtype=pl.Categorical),
            "enum": pl.Series(["x", "y", "x", None, "y", "x"], dtype=pl.Enum(["x", "y"])),
            "flag": [True, None, False, True, False, True],
            "n": pl.Series([1, None, 3, 4, 5, 6], dtype=pl.Int32),
        }
    )
    path = tmp_path / "typed.parquet"
    real.write_parquet(path)
    exp = pe.ExpectSyntheticExactCopyRateToBeBelow(real=str(path), threshold=0.0)
    for batch in (real, real.to_pandas()):
        r = _validate(gx_context, batch, exp)
        assert not pe.is_errored(r), pe.error_message(r)
        assert r.result["observed_value"] == pytest.approx(1.0)


def test_paired_field_reaches_hidden_rate(gx_context, adult_small, adult_path):
    _require_metric("hidden_rate")
    paired = _validate(
        gx_context,
        adult_small,
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="hidden_rate", real=adult_path, threshold=0.5, paired=True),
    )
    unpaired = _validate(
        gx_context,
        adult_small,
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="hidden_rate", real=adult_path, threshold=0.5),
    )
    assert not pe.is_errored(paired), pe.error_message(paired)
    assert paired.result["observed_value"] == pytest.approx(1.0) and paired.success is False
    assert pe.is_errored(unpaired) and "NotApplicableError" in pe.error_message(unpaired)


def test_to_pandas_batch_is_lossless(adult_small):
    pdf = pe.to_pandas_batch(adult_small)
    assert isinstance(pdf, pd.DataFrame)
    back = pl.from_pandas(pdf)
    assert back.equals(adult_small)


def test_registry_and_path_references_agree(gx_context, adult_small, adult_path, adult_random):
    ref = pe.register_real("adult_test", adult_small)
    assert ref == "registry:adult_test"
    assert "adult_test" in pe.registered_names()
    by_path = _validate(
        gx_context, adult_random, pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(real=adult_path, threshold=1.0)
    )
    by_name = _validate(
        gx_context, adult_random, pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(real=ref, threshold=1.0)
    )
    assert by_path.result["observed_value"] == pytest.approx(by_name.result["observed_value"], abs=1e-12)
    pe.unregister_real("adult_test")
    assert "adult_test" not in pe.registered_names()


def test_re_registering_a_name_is_not_served_from_cache(gx_context, tiny):
    real, synth = tiny
    exp = pe.ExpectSyntheticExactCopyRateToBeBelow(real="registry:swap", threshold=1.0)
    pe.register_real("swap", real)
    first = _validate(gx_context, synth, exp).result["observed_value"]
    pe.register_real("swap", synth)  # now the release is a full copy of "real"
    second = _validate(gx_context, synth, exp).result["observed_value"]
    assert (first, second) == (pytest.approx(0.25), pytest.approx(1.0))


def test_path_reference_expands_environment(monkeypatch, adult_path):
    from pathlib import Path

    monkeypatch.setenv("PRIVGATE_TEST_DATA", str(Path(adult_path).parent))
    frame, key = pe.resolve_reference(f"$PRIVGATE_TEST_DATA/{Path(adult_path).name}")
    assert frame.height > 0 and key.startswith("file:")


def test_results_never_contain_real_record_values(gx_context):
    """A real record with unique marker values: no score, detail or message carries them."""
    real = pl.DataFrame(
        {
            "name": ["Zebulon-Marker-Xq", "b", "c", "d", "e", "f"],
            "city": ["Secretville-77", "p", "q", "p", "q", "p"],
            "age": [913.25, 30.0, 40.0, 50.0, 60.0, 70.0],
        }
    )
    synth = pl.DataFrame({"name": ["b", "c", "zz"], "city": ["p", "q", "p"], "age": [30.0, 41.0, 55.0]})
    ref = pe.register_real("marker", real)
    exps = [
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=0.0),
        pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(real=ref, threshold=0.0),
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="hitting_rate", real=ref, threshold=0.0),
    ]
    res = pe.validate_release(synth, exps, context=gx_context, result_format="COMPLETE")
    text = json.dumps(res.to_json_dict(), default=str)
    for marker in ("Zebulon-Marker-Xq", "Secretville-77", "913.25"):
        assert marker not in text
    assert all(r.result.get("observed_value") is not None for r in res.results)


def test_import_privgate_does_not_import_gx():
    import subprocess
    import sys

    code = (
        "import sys, privgate, privgate.registry, privgate.metrics; "
        "print('great_expectations' in sys.modules, 'dagster' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_validate_release_takes_expectations_of_a_saved_suite(gx_context, tiny):
    real, synth = tiny
    ref = pe.register_real("tiny", real)
    suite = gx_context.suites.add(gx.ExpectationSuite(name="owned"))
    suite.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(real=ref, threshold=0.3))
    assert suite.expectations[0].id  # belongs to the suite
    r = pe.validate_release(synth, suite.expectations, context=gx_context)
    assert r.success and r.results[0].result["observed_value"] == pytest.approx(0.25)


def test_named_classes_are_registered_with_gx():
    from great_expectations.expectations.registry import get_expectation_impl

    for cls in pe.ALL_EXPECTATIONS:
        assert get_expectation_impl(cls.expectation_type) is cls
    assert pe.ExpectSyntheticExactCopyRateToBeBelow.expectation_type == "expect_synthetic_exact_copy_rate_to_be_below"
    assert set(pe.NAMED) == {
        "common_rows",
        "dcr",
        "attribute_inference",
        "membership_inference",
        "disclosure_identity",
        "disclosure_attribute",
    }
