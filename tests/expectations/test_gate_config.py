"""A GX suite built from a privgate gate configuration decides like `privgate gate`."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")

import privgate  # noqa: E402
import privgate.gx as pe  # noqa: E402
from privgate.errors import ConfigError  # noqa: E402

DEFAULT_CONFIG = Path(privgate.__file__).parent / "configs" / "default_gate.yaml"
N = 300


@pytest.fixture(scope="module")
def frames(tmp_path_factory, adult_small, adult_holdout_path):
    d = tmp_path_factory.mktemp("gatecfg")
    real = adult_small.head(N)
    holdout = pl.read_parquet(adult_holdout_path).head(N)
    real.write_parquet(d / "real.parquet")
    holdout.write_parquet(d / "holdout.parquet")
    # 10 % copied training records + a noisy copy of non-members
    release = pl.concat([real.head(30), privgate.baselines.noisy_copy(holdout, seed=1).head(N - 30)])
    return {"real": str(d / "real.parquet"), "holdout": str(d / "holdout.parquet"), "release": release}


def _gate_verdicts(outcome) -> dict[str, str]:
    from privgate.gates import check_name

    return {
        check_name(c.metric, c.rule, c.severity): c.verdict
        for c in outcome.checks
        if c.rule in ("threshold", "baseline") and not c.skipped
    }


@pytest.mark.parametrize("with_holdout", [True, False], ids=["holdout", "no_holdout"])
def test_suite_decides_like_the_gate(gx_context, frames, with_holdout):
    from privgate.gates import run_gate

    holdout = frames["holdout"] if with_holdout else None
    outcome = run_gate(DEFAULT_CONFIG, frames["real"], frames["release"], holdout)
    gate = _gate_verdicts(outcome)

    suite = pe.suite_from_gate_config(DEFAULT_CONFIG, real=frames["real"], holdout=holdout)
    result = pe.validate_release(frames["release"], suite, context=gx_context)
    gx_status = {pe.summarise(r)["meta"]["check_name"]: pe.summarise(r) for r in result.results}

    assert set(gx_status) == set(gate), "one expectation per applicable threshold/baseline rule"
    assert gate, "the default config has rules for this run"
    for name, verdict in gate.items():
        row = gx_status[name]
        assert row["status"] != "errored", (name, row["error"])
        assert (row["status"] == "failed") == (verdict != "pass"), (name, verdict, row["risk"])
    # the leaky release: copies fire the common_rows block rule either way
    blocked = "common_rows__baseline_block" if with_holdout else "common_rows__threshold_block"
    assert gate[blocked] == "block" and gx_status[blocked]["status"] == "failed"
    assert gx_status[blocked]["severity"] == "critical"
    skipped = suite.meta["privgate_skipped_rules"]
    assert skipped and all(r["kind"] == "trend" for r in skipped)


def test_warn_rules_map_to_warning_severity_and_optional_errors_do_not_block(frames):
    import dagster as dg

    from privgate.gx import dagster_bridge as bridge

    cfg = {
        "version": 1,
        "dataset": "t",
        "metrics": {
            "common_rows": {"threshold": {"warn": 0.0, "block": 0.5}},
            "hidden_rate": {"optional": True, "threshold": {"block": 0.5}},  # no pairing → errors
        },
    }
    suite = pe.suite_from_gate_config(cfg, real=frames["real"])
    assert [e.meta["check_name"] for e in suite.expectations] == [
        "common_rows__threshold_warn",
        "common_rows__threshold_block",
        "hidden_rate__threshold_block",
    ]
    result = pe.validate_release(frames["release"], suite)
    checks = {c.check_name: c for c in bridge.to_asset_check_results(result, asset_key="r")}
    assert checks["common_rows__threshold_warn"].passed is False
    assert checks["common_rows__threshold_warn"].severity == dg.AssetCheckSeverity.WARN
    assert checks["common_rows__threshold_block"].passed is True
    optional = checks["hidden_rate__threshold_block"]
    assert optional.passed is False and optional.metadata["errored"].value is True
    assert optional.severity == dg.AssetCheckSeverity.WARN


def test_require_holdout_without_holdout_refuses(frames):
    cfg = {
        "version": 1,
        "dataset": "t",
        "require_holdout": True,
        "metrics": {"common_rows": {"threshold": {"block": 0.0}}},
    }
    with pytest.raises(ConfigError, match="require_holdout"):
        pe.suite_from_gate_config(cfg, real=frames["real"])


@pytest.mark.parametrize("kind", ["permuted", "split", "scaled", "permuted-scaled"])
def test_the_default_suite_fails_a_copy_with_disguised_labels(gx_context, frames, kind, tmp_path):
    """A copy of the training data whose category labels were permuted or split, whose numerics
    were ×1000, or both, passes every label- or value-comparing expectation; the label-free ones
    of the default suite fail it, with and without a holdout, and no real cell appears in the
    result."""
    import json

    real = pl.read_parquet(frames["real"])
    if kind == "scaled":
        release = privgate.baselines.transformed_copy(real, "scaled")
    elif kind == "permuted-scaled":
        release = privgate.baselines.transformed_copy(real, "scaled", labels="permuted", seed=3)
    else:
        release = privgate.baselines.disguised_copy(real, kind, seed=3)
    for holdout in (frames["holdout"], None):
        suite = pe.suite_from_gate_config(DEFAULT_CONFIG, real=frames["real"], holdout=holdout)
        result = pe.validate_release(release, suite, context=gx_context)
        rows = {pe.summarise(r)["meta"]["check_name"]: pe.summarise(r) for r in result.results}
        assert result.success is False
        failed = {name for name, row in rows.items() if row["status"] == "failed"}
        assert any(name.startswith("label_free") for name in failed), (kind, holdout, rows)
        text = json.dumps(result.to_json_dict(), default=str)
        assert "Never-married" not in text and "Husband" not in text


def test_a_single_value_comparing_expectation_says_when_the_release_is_disguised(gx_context, frames):
    """common_rows alone on a ×1000 copy with permuted labels: 0 exact copies, which the result
    must not let a reader take for "no copy" — it says the labels and scales differ; on the
    honest-ish release of the fixture it says nothing."""
    real = pl.read_parquet(frames["real"])
    release = privgate.baselines.transformed_copy(real, "scaled", labels="permuted", seed=3)
    exp = pe.ExpectSyntheticExactCopyRateToBeBelow(real=frames["real"], threshold=0.01)
    r = pe.validate_release(release, exp, context=gx_context)
    d = r.result["details"]
    assert r.result["observed_value"] == 0.0
    assert d["release_view"]["differs"] and d["release_view"]["numeric_columns_mapped"] >= 1
    assert d["release_view"]["labels_recoded"] >= 1
    assert "does not show copies in disguise" in d["warning"]
    assert "does not show copies in disguise" in pe.summarise(r)["warning"]
    plain = pe.validate_release(frames["release"], exp, context=gx_context).result["details"]
    assert plain["release_view"]["differs"] is False and "warning" not in plain
