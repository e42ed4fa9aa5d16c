"""A release gate that requires a passing audit of the generator version that made the release:
the audit's stored row must be evidence (its decision re-derived from its numbers), of this
generator (its digest), on this dataset, strong enough, and never counts as checking the release."""

from __future__ import annotations

import polars as pl
import pytest
from audit_helpers import DIGEST, evidence_result

from privgate.gates import run_gate
from privgate.gates.audit_rules import decide_audit
from privgate.history import HistoryStore

METRICS = {"common_rows": {"threshold": {"block": 0.5}}}
RULES = {"rules": {"epsilon": {"block": "claimed"}}}
OTHER = "cd" * 32


@pytest.fixture
def frames():
    real = pl.DataFrame({"a": [float(i) for i in range(20)], "b": ["x", "y"] * 10})
    synthetic = pl.DataFrame({"a": [i + 0.5 for i in range(20)], "b": ["y", "x"] * 10})
    return real, synthetic


def audit_checks(outcome):
    return [c for c in outcome.checks if c.metric == "(audit)"]


def gate(frames, store, *, at=None, run_digest=DIGEST, metrics=METRICS, holdout=None, **req):
    """Gate with ``require_audit: {generator: g, **req}`` and the generator version ``at`` and
    digest ``run_digest`` given at run time."""
    cfg = {"dataset": "d", "metrics": metrics, "require_audit": {"generator": "g", **req}}
    return run_gate(
        cfg,
        *frames,
        holdout=holdout,
        release_id="r",
        history=store,
        record=False,
        generator_version=at,
        generator_digest=run_digest,
    )


def record(store, result=None, rules=RULES, dataset="d"):
    outcome = decide_audit(result if result is not None else evidence_result(), rules)
    store.record_audit(outcome, dataset=dataset)
    return outcome


def test_without_a_passing_audit_the_release_blocks_and_with_one_it_passes(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        none = gate(frames, store, at="1")
        assert (str(none.decision), none.exit_code) == ("block", 2)
        assert "no audit of generator 'g' version '1' on dataset 'd'" in audit_checks(none)[0].message
        record(store, evidence_result(fp=0, fn=0))  # a proven violation
        failed = gate(frames, store, at="1")
        assert failed.exit_code == 2 and "decided block" in audit_checks(failed)[0].message
        record(store)
        ok = gate(frames, store, at="1")
        assert (str(ok.decision), ok.exit_code) == ("pass", 0), ok.checks
        assert audit_checks(ok)[0].verdict == "pass" and "re-derived" in audit_checks(ok)[0].message
        # another version of the generator has no audit; another generator's audit does not count
        assert gate(frames, store, at="2").exit_code == 2
        record(store, evidence_result(name="h", version="2"))
        assert gate(frames, store, at="2").exit_code == 2
        # the version pinned in the configuration
        assert gate(frames, store, version="1").exit_code == 0


def test_the_requirement_cannot_be_decided_without_a_version_an_identity_a_history_or_with_a_mismatch(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record(store)
        no_version = gate(frames, store)
        assert no_version.exit_code == 3 and "no version" in no_version.checks[-1].message
        clash = gate(frames, store, at="2", version="1")
        assert clash.exit_code == 3 and "requires version '1'" in clash.checks[-1].message
        no_identity = gate(frames, store, at="1", run_digest=None)
        assert no_identity.exit_code == 3 and "no identity" in audit_checks(no_identity)[0].message
        clash = gate(frames, store, at="1", run_digest=OTHER, digest=DIGEST)
        assert clash.exit_code == 3 and "differs from the generator digest" in audit_checks(clash)[0].message
        bad = gate(frames, store, at="1", run_digest="not-a-digest")
        assert bad.exit_code == 3 and "not a digest" in audit_checks(bad)[0].message
        assert gate(frames, store, at="1", run_digest=None, digest=DIGEST).exit_code == 0
    no_history = gate(frames, None, at="1")
    assert no_history.exit_code == 3 and "no history store" in no_history.checks[-1].message


def test_only_an_audit_of_this_generator_on_this_dataset_counts(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        # a passing audit of a harmless function recorded under the production name and version
        record(store, evidence_result(digest=OTHER))
        harmless = gate(frames, store, at="1")
        assert harmless.exit_code == 2 and "audited another generator" in audit_checks(harmless)[0].message
        # an audit of the right generator on another dataset
        record(store, dataset="elsewhere")
        assert gate(frames, store, at="1").exit_code == 2
        assert gate(frames, store, at="1", dataset="elsewhere").exit_code == 0
        # an audit with no digest at all (a generator without a source file)
        record(store, evidence_result(digest=None))
        assert gate(frames, store, at="1").exit_code == 2


def test_a_version_must_be_a_string():
    from privgate.errors import ConfigError
    from privgate.gates.config_validate import parse_gate_config

    for v in (2.10, 3, True):
        with pytest.raises(ConfigError, match=r"^require_audit\.version: must be a version string"):
            parse_gate_config({"metrics": METRICS, "require_audit": {"generator": "g", "version": v}})
    with pytest.raises(ConfigError, match=r"quote it .*2\.10 is read as 2\.1"):
        parse_gate_config(
            __import__("yaml").safe_load(
                "metrics: {common_rows: {threshold: 0.5}}\nrequire_audit: {generator: g, version: 2.10}\n"
            )
        )
    for key, value in (
        ("digest", "x"),
        ("min_runs", 0),
        ("min_runs", 2.5),
        ("claimed_epsilon", float("nan")),
        ("dataset", 3),
        ("rules", {"nope": 1}),
    ):
        with pytest.raises(ConfigError, match=rf"^require_audit\.{key}"):
            parse_gate_config({"metrics": METRICS, "require_audit": {"generator": "g", key: value}})


def test_a_weak_or_lax_audit_does_not_satisfy_the_default_minimum(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        # 8 runs: fewer than the default minimum of 100
        record(store, evidence_result(n_out=2, n_in=2, fp=1, fn=1, total_runs=8))
        few = gate(frames, store, at="1")
        assert few.exit_code == 2 and "fewer than the 100" in audit_checks(few)[0].message
        # allowed by the gate's minimum, its runs still cannot show a bound above the claim
        weak = gate(frames, store, at="1", min_runs=8)
        assert weak.exit_code == 2 and "could not have shown a violation" in audit_checks(weak)[0].message
        # without any claim, the stated minimum alone decides
        record(
            store,
            evidence_result(n_out=2, n_in=2, fp=1, fn=1, total_runs=8, claimed=None),
            rules={"rules": {"auc_lower": {"block": 0.8}}},
        )
        assert gate(frames, store, at="1", min_runs=8).exit_code == 0
        # a stronger claim than the audit's runs can check
        record(store)
        strong = gate(frames, store, at="1", claimed_epsilon=3.0)
        assert strong.exit_code == 2 and "could not have shown" in audit_checks(strong)[0].message
        # lax rules: the audit passed under auc_lower block 0.99; the gate's rules (default) block
        record(store, evidence_result(auc_lower=0.9), rules={"rules": {"auc_lower": {"block": 0.99}}})
        lax = gate(frames, store, at="1")
        assert lax.exit_code == 2 and "does not pass the gate's audit rules" in audit_checks(lax)[0].message
        assert gate(frames, store, at="1", rules={"auc_lower": {"block": 0.95}}).exit_code == 0


def test_a_passing_audit_never_counts_as_checking_the_release(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record(store)
        copy = (frames[0], frames[0])  # an exact copy of the training data
        only_baseline = {"common_rows": {"baseline": {"block": 0.0}}}  # skipped: no holdout
        out = gate(copy, store, at="1", metrics=only_baseline)
        assert audit_checks(out)[0].verdict == "pass"
        assert (str(out.decision), out.exit_code) == ("block", 3)
        assert any("nothing was checked" in c.message for c in out.checks)
        only_trend = {"common_rows": {"trend": {"block": 0.0}}}  # skipped: first release
        assert gate(copy, store, at="1", metrics=only_trend).exit_code == 3
        cfg = {"dataset": "d", "metrics": only_trend, "allow_unchecked": True, "require_audit": {"generator": "g"}}
        allowed = run_gate(
            cfg, *copy, release_id="r", history=store, record=False, generator_version="1", generator_digest=DIGEST
        )
        assert allowed.exit_code == 0 and any(c.rule == "unchecked" for c in allowed.checks)


def test_a_recorded_gate_run_stores_the_audit_check(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record(store)
        cfg = {"dataset": "d", "metrics": METRICS, "require_audit": {"generator": "g", "digest": DIGEST}}
        out = run_gate(cfg, *frames, release_id="r", history=store, generator_version="1")
        assert out.recorded and out.exit_code == 0
        checks = store.checks(out.run_id)
        assert checks.filter(pl.col("metric") == "(audit)")["verdict"].to_list() == ["pass"]
