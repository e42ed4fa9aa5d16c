"""GX expectations decide on the same evidence as the gate: ``on`` (the estimate or an end of its
95 % interval), ``test`` rules on the p-value, and a missing interval / p-value fails closed."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

gx = pytest.importorskip("great_expectations")

import privgate  # noqa: E402
import privgate.gx as pe  # noqa: E402
from privgate.gates import check_name, run_gate  # noqa: E402
from privgate.gx.core import observed_text  # noqa: E402

DEFAULT_CONFIG = Path(privgate.__file__).parent / "configs" / "default_gate.yaml"
N = 300


@pytest.fixture(scope="module")
def evidence_frames(tmp_path_factory, adult_holdout_path):
    """Training records, a holdout, and releases that separate the estimate from its interval:
    ``nonmembers`` (real people never trained on), ``copy2`` (2 % copied: memorisation estimate
    > 0.01, lower end 0), ``copy3`` (3 % copied: estimate above the block limit, lower end only
    above the warn limit)
    and ``leaky`` (10 % copied: both ends above)."""
    d = tmp_path_factory.mktemp("evidence")
    adult = pl.read_parquet(Path(privgate.__file__).parent / "data" / "adult_sample.parquet")
    holdout_all = pl.read_parquet(Path(privgate.__file__).parent / "data" / "adult_holdout.parquet")
    if holdout_all.height < 2 * N:
        pytest.skip("bundled holdout too small")
    real, holdout, fresh = adult.head(N), holdout_all.head(N), holdout_all.slice(N, N)
    real.write_parquet(d / "real.parquet")
    holdout.write_parquet(d / "holdout.parquet")
    releases = {
        "nonmembers": fresh,
        "copy2": pl.concat([real.head(6), fresh.head(N - 6)]),
        "copy3": pl.concat([real.head(9), fresh.head(N - 9)]),
        "leaky": pl.concat([real.head(30), privgate.baselines.noisy_copy(holdout, seed=1).head(N - 30)]),
    }
    return {"real": str(d / "real.parquet"), "holdout": str(d / "holdout.parquet"), **releases}


def _default_with_test_rule() -> dict:
    cfg = yaml.safe_load(DEFAULT_CONFIG.read_text())
    mem = cfg["metrics"]["memorisation"]
    # PyYAML reads the bare key `on` as true (YAML 1.1); the gate's loader maps it back
    mem["threshold"] = {("on" if k is True else k): v for k, v in mem["threshold"].items()}
    assert mem["threshold"]["on"] == "lower", "the shipped memorisation rule decides on the lower end"
    mem["test"] = {"when": "with_holdout", "warn": 0.05, "block": 0.01}
    return cfg


def _gx_rows(suite, release, context) -> dict[str, dict]:
    result = pe.validate_release(release, suite, context=context)
    return {pe.summarise(r)["meta"]["check_name"]: pe.summarise(r) for r in result.results}


@pytest.mark.parametrize(
    "release,with_holdout",
    [
        ("nonmembers", True),
        ("copy3", True),
        ("leaky", True),
        ("leaky", False),
    ],
)
def test_suite_verdict_per_rule_equals_the_gate(gx_context, evidence_frames, release, with_holdout):
    cfg = _default_with_test_rule()
    holdout = evidence_frames["holdout"] if with_holdout else None
    outcome = run_gate(cfg, evidence_frames["real"], evidence_frames[release], holdout)
    assert not [c for c in outcome.checks if c.rule == "error"], outcome.table()
    gate = {
        check_name(c.metric, c.rule, c.severity): c
        for c in outcome.checks
        if c.rule in ("threshold", "baseline", "test") and not c.skipped
    }

    suite = pe.suite_from_gate_config(cfg, real=evidence_frames["real"], holdout=holdout)
    rows = _gx_rows(suite, evidence_frames[release], gx_context)

    assert set(rows) == set(gate), "one expectation per applicable threshold/baseline/test rule"
    for name, check in gate.items():
        row = rows[name]
        assert row["status"] != "errored", (name, row["error"])
        assert (row["status"] == "failed") == (check.verdict != "pass"), (name, check.verdict, row)
        assert row["severity"] == ("critical" if check.severity == "block" else "warning")
        assert row["on"] == check.on, name
        assert row["compared"] == pytest.approx(check.compared, abs=1e-12), name
    if with_holdout:
        mem = {k: rows[f"memorisation__{k}"] for k in ("threshold_warn", "threshold_block", "test_warn", "test_block")}
        assert mem["threshold_block"]["expectation_type"] == "expect_synthetic_privacy_risk_to_be_below"
        assert mem["test_block"]["expectation_type"] == "expect_synthetic_privacy_test_p_value_to_be_above"
        expected = {  # (threshold warn, threshold block, test warn, test block) failed?
            "nonmembers": (False, False, False, False),
            "copy3": (True, False, True, True),
            "leaky": (True, True, True, True),
        }[release]
        assert tuple(mem[k]["status"] == "failed" for k in mem) == expected, mem
    else:
        assert not any(n.startswith("memorisation") for n in rows), "with_holdout rules only"


def test_on_lower_decides_differently_from_the_estimate(gx_context, evidence_frames):
    """The releases above are ones where the evidence choice matters: the memorisation estimate
    is above the block limit but the lower end of its interval is not (so a GX suite that
    ignored ``on`` would block where the gate does not)."""
    kwargs = dict(
        metric="memorisation", real=evidence_frames["real"], holdout=evidence_frames["holdout"], threshold=0.01
    )
    exps = [
        pe.ExpectSyntheticPrivacyRiskToBeBelow(**kwargs, on=on, meta={"check_name": on})
        for on in ("estimate", "lower", "upper")
    ]
    for release in ("copy2", "copy3"):
        rows = _gx_rows(gx.ExpectationSuite(name="on", expectations=exps), evidence_frames[release], gx_context)
        est, lo, hi = rows["estimate"], rows["lower"], rows["upper"]
        assert est["status"] == "failed" and lo["status"] == "passed", release
        assert hi["status"] == "failed" and hi["compared"] >= est["compared"] >= lo["compared"]
        assert lo["compared"] == pytest.approx(lo["interval"][0])
        assert hi["compared"] == pytest.approx(hi["interval"][1])
        assert est["risk"] == lo["risk"] == est["compared"], "risk stays the point estimate"


def test_missing_interval_or_p_value_errors_like_the_gate_blocks(gx_context, evidence_frames):
    cfg = {
        "version": 1,
        "dataset": "t",
        "metrics": {
            "nsnd": {"baseline": {"on": "upper", "block": 0.5}},  # has no ci, so no excess_ci
            "close_values": {"threshold": {"on": "lower", "block": 0.5}},  # has no ci (says why)
            "common_rows": {"test": {"block": 0.01}},  # is not a test: no p-value
            "memorisation": {"threshold": {"on": "lower", "block": 0.5}},  # has both
        },
    }
    release = evidence_frames["nonmembers"]
    outcome = run_gate(cfg, evidence_frames["real"], release, evidence_frames["holdout"])
    assert outcome.exit_code == 3
    errors = {c.metric for c in outcome.checks if c.rule == "error" and c.verdict == "block"}
    assert errors == {"nsnd", "close_values", "common_rows"}

    suite = pe.suite_from_gate_config(cfg, real=evidence_frames["real"], holdout=evidence_frames["holdout"])
    rows = _gx_rows(suite, release, gx_context)
    assert rows["memorisation__threshold_block"]["status"] == "passed"
    for name, missing in (
        ("nsnd__baseline_block", "excess_ci"),
        ("close_values__threshold_block", "reports no ci"),
        ("common_rows__test_block", "p-value"),
    ):
        row = rows[name]
        assert row["status"] == "errored" and not row["passed"], name
        assert missing in row["error"] and "fails closed" in row["error"], row["error"]


def test_data_docs_sentences_say_what_is_compared():
    real = "data/real.parquet"
    lower = pe.ExpectSyntheticPrivacyRiskToBeBelow
    s = lower.sentence({"metric": "memorisation", "real": real, "threshold": 0.01, "on": "lower"})
    assert s.startswith("The lower end of the 95 % interval of the privacy risk (memorisation")
    assert "must be at most 0.01" in s
    s = pe.ExpectSyntheticExactCopyRateToBeBelow.sentence(
        {"real": real, "threshold": 0.02, "on": "upper", "compare_to": "excess", "holdout": "data/h.parquet"}
    )
    assert s.startswith("The upper end of the 95 % interval of the amount by which the exact-copy rate (common_rows")
    assert "exceeds the same risk of an equally large holdout sample" in s
    assert "must be at most 0.02" in s
    s = pe.ExpectSyntheticExactCopyRateToBeBelow.sentence({"real": real, "threshold": 0.02})
    assert s.startswith("Exact-copy rate (common_rows") and "interval" not in s
    s = pe.ExpectSyntheticPrivacyTestPValueToBeAbove.sentence(
        {"metric": "memorisation", "real": real, "threshold": 0.01}
    )
    assert s.startswith("The p-value of the privacy test (memorisation")
    assert "must be at least 0.01" in s


def test_observed_value_text_names_the_compared_number():
    details = {"compared": "value", "on": "lower", "estimate": 0.04, "value": 0.04, "interval": [0.007, 0.072]}
    assert observed_text(0.007, details) == ("lower end 0.007 of the 95 % interval 0.007 to 0.072; risk 0.04")
    assert observed_text(0.0046, {"compared": "p_value", "value": 0.04}) == "p-value 0.0046 (risk 0.04)"


def test_p_value_expectation_rejects_an_interval_or_a_baseline():
    with pytest.raises(Exception, match="on must be 'estimate'"):
        pe.ExpectSyntheticPrivacyTestPValueToBeAbove(
            metric="memorisation", real="r.parquet", threshold=0.01, on="lower"
        )
    with pytest.raises(Exception, match="compare_to must be 'value'"):
        pe.ExpectSyntheticPrivacyTestPValueToBeAbove(
            metric="memorisation", real="r.parquet", threshold=0.01, compare_to="excess"
        )
    with pytest.raises(Exception):
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="memorisation", real="r.parquet", threshold=0.01, on="middle")


def test_no_holdout_baseline_for_self_controlled_metrics(gx_context, evidence_frames):
    """As privgate.evaluate(baseline=True) and the gate: memorisation (and the attacks) compare
    with the holdout themselves; an 'excess' over a holdout-as-release baseline would score the
    holdout against itself. The expectation is errored, not computed."""
    exp = pe.ExpectSyntheticPrivacyRiskToBeBelow(
        metric="memorisation",
        real=evidence_frames["real"],
        holdout=evidence_frames["holdout"],
        threshold=0.05,
        compare_to="excess",
    )
    r = pe.validate_release(evidence_frames["leaky"], exp, context=gx_context)
    assert pe.is_errored(r) and r.success is False
    assert "has no holdout baseline" in pe.error_message(r)
