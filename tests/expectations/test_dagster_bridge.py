"""The GX → Dagster bridge: AssetCheckResults per expectation (passed / failed / errored),
stable check names shared with the AssetCheckSpecs, and a blocking gate in a real run."""

from __future__ import annotations

import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")
dg = pytest.importorskip("dagster")

import privgate.gx as pe  # noqa: E402
from privgate.gx import dagster_bridge as bridge  # noqa: E402


@pytest.fixture(scope="module")
def suite(adult_path):
    s = gx.ExpectationSuite(name="bridge_suite")
    s.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.05))
    s.add_expectation(
        pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(real=adult_path, threshold=0.5, severity="warning")
    )
    s.add_expectation(pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="hitting_rate", real=adult_path, threshold=0.9))
    s.add_expectation(
        pe.ExpectSyntheticPrivacyRiskToBeBelow(
            metric="broken_metric_name", real=adult_path, threshold=0.9, meta={"check_name": "custom name!"}
        )
    )
    return s


@pytest.fixture(scope="module")
def leaky(adult_small, adult_random) -> pl.DataFrame:
    # 30 of 600 real records copied: common_rows = 0.05 (at the threshold → passes),
    # hitting_rate ≥ 0.05 (< 0.9 → passes), dcr high (> 0.5 → fails, warning severity)
    return pl.concat([adult_small.head(30), adult_random.tail(adult_small.height - 30)])


@pytest.fixture(scope="module")
def validation(gx_context, suite, leaky):
    return pe.validate_release(leaky, suite, context=gx_context)


def test_check_names_match_specs(suite, validation):
    names = bridge.check_names(suite)
    assert names == ["privacy_common_rows", "privacy_dcr", "privacy_hitting_rate", "custom_name_"]
    results = bridge.to_asset_check_results(validation, asset_key="synthetic_release")
    assert sorted(r.check_name for r in results) == sorted(names)
    specs = bridge.asset_check_specs(suite, "synthetic_release")
    assert [s.name for s in specs] == names
    assert all(s.blocking for s in specs)
    assert specs[0].description.startswith("Exact-copy rate (common_rows")


def test_results_map_status_severity_and_metadata(validation):
    by_name = {r.check_name: r for r in bridge.to_asset_check_results(validation, asset_key="synthetic_release")}
    copies = by_name["privacy_common_rows"]
    assert copies.passed is True
    assert copies.asset_key == dg.AssetKey("synthetic_release")
    md = copies.metadata
    assert md["risk"].value == pytest.approx(30 / 600)
    assert md["threshold"].value == pytest.approx(0.05)
    assert md["metric"].value == "common_rows" and md["status"].value == "passed"
    assert md["errored"].value is False

    dcr = by_name["privacy_dcr"]
    assert dcr.passed is False
    assert dcr.severity == dg.AssetCheckSeverity.WARN  # GX severity "warning"
    assert dcr.metadata["raw"].value > 0

    errored = by_name["custom_name_"]
    assert errored.passed is False
    assert errored.severity == dg.AssetCheckSeverity.ERROR
    assert errored.metadata["errored"].value is True
    assert errored.metadata["status"].value == "errored"
    assert "UnknownMetricError" in errored.metadata["error"].value
    assert "risk" not in errored.metadata


def test_accepts_json_and_single_results(validation):
    from_json = bridge.to_asset_check_results(validation.to_json_dict(), asset_key="a")
    from_obj = bridge.to_asset_check_results(validation, asset_key="a")
    assert [(r.check_name, r.passed) for r in from_json] == [(r.check_name, r.passed) for r in from_obj]
    single = bridge.to_asset_check_results(validation.results[0], asset_key="a")
    assert len(single) == 1


def test_duplicate_names_get_stable_suffixes(adult_path):
    s = gx.ExpectationSuite(name="dups")
    s.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.0))
    s.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.1))
    names = bridge.check_names(s)
    assert len(set(names)) == 2 and all(n.startswith("privacy_common_rows_") for n in names)
    reordered = gx.ExpectationSuite(name="dups2")
    for e in reversed(s.expectations):
        reordered.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(**e.configuration.kwargs))
    assert bridge.check_names(reordered) == list(reversed(names))


def test_blocking_gate_in_a_dagster_run(gx_context, adult_small, adult_path, adult_random):
    """In-asset check specs from the suite: a leaky release fails the blocking check and the
    downstream publish step does not run; a clean release publishes."""
    suite = gx.ExpectationSuite(name="gate")
    suite.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.0))
    release = {"data": adult_random}

    @dg.asset(check_specs=bridge.asset_check_specs(suite, "synthetic_release"))
    def synthetic_release():
        df = release["data"]
        yield dg.Output(df.height)
        result = pe.validate_release(df, suite, context=gx_context)
        yield from bridge.to_asset_check_results(result)

    @dg.asset
    def published_release(synthetic_release):
        return synthetic_release

    with dg.instance_for_test() as instance:
        ok = dg.materialize([synthetic_release, published_release], instance=instance, raise_on_error=False)
        assert ok.success
        assert [e.passed for e in ok.get_asset_check_evaluations()] == [True]
        assert len(ok.get_asset_materialization_events()) == 2

        release["data"] = pl.concat([adult_small.head(5), adult_random.tail(100)])
        bad = dg.materialize([synthetic_release, published_release], instance=instance, raise_on_error=False)
        assert not bad.success
        evals = bad.get_asset_check_evaluations()
        assert [(e.check_name, e.passed) for e in evals] == [("privacy_common_rows", False)]
        assert evals[0].metadata["risk"].value == pytest.approx(5 / adult_small.height)
        materialized = {e.asset_key for e in bad.get_asset_materialization_events()}
        assert dg.AssetKey("published_release") not in materialized
