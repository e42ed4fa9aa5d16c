"""A release gate that requires a passing audit of the generator version that made the release."""

from __future__ import annotations

import polars as pl
import pytest

from audit_helpers import make_result
from privgate.gates import run_gate
from privgate.gates.audit_rules import decide_audit
from privgate.history import HistoryStore

METRICS = {"common_rows": {"threshold": {"block": 0.5}}}
RULES = {"rules": {"epsilon": {"block": "claimed"}}}


@pytest.fixture
def frames():
    real = pl.DataFrame({"a": [float(i) for i in range(20)], "b": ["x", "y"] * 10})
    synthetic = pl.DataFrame({"a": [i + 0.5 for i in range(20)], "b": ["y", "x"] * 10})
    return real, synthetic


def audit_checks(outcome):
    return [c for c in outcome.checks if c.metric == "(audit)"]


def gate(frames, store, *, at=None, **req):
    """Gate with ``require_audit: {generator: g, **req}`` and the generator version ``at`` given at run time."""
    cfg = {"dataset": "d", "metrics": METRICS, "require_audit": {"generator": "g", **req}}
    return run_gate(cfg, *frames, release_id="r", history=store, record=False, generator_version=at)


def test_without_a_passing_audit_the_release_blocks_and_with_one_it_passes(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        none = gate(frames, store, at="1")
        assert (str(none.decision), none.exit_code) == ("block", 2)
        assert "no audit of generator 'g' version '1'" in audit_checks(none)[0].message
        store.record_audit(decide_audit(make_result(1.5, name="g", version="1"), RULES))  # a violation
        failed = gate(frames, store, at="1")
        assert failed.exit_code == 2 and "decided block" in audit_checks(failed)[0].message
        store.record_audit(decide_audit(make_result(0.2, name="g", version="1"), RULES))
        ok = gate(frames, store, at="1")
        assert (str(ok.decision), ok.exit_code) == ("pass", 0)
        assert audit_checks(ok)[0].verdict == "pass"
        # another version of the generator has no audit; another generator's audit does not count
        assert gate(frames, store, at="2").exit_code == 2
        store.record_audit(decide_audit(make_result(0.2, name="h", version="2"), RULES))
        assert gate(frames, store, at="2").exit_code == 2
        # the version pinned in the configuration
        pinned = gate(frames, store, version="1")
        assert pinned.exit_code == 0


def test_the_requirement_cannot_be_decided_without_a_version_a_history_or_with_a_mismatch(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.record_audit(decide_audit(make_result(0.2, name="g", version="1"), RULES))
        no_version = gate(frames, store)
        assert no_version.exit_code == 3 and "no version" in no_version.checks[-1].message
        clash = gate(frames, store, at="2", version="1")
        assert clash.exit_code == 3 and "requires version '1'" in clash.checks[-1].message
    no_history = gate(frames, None, at="1")
    assert no_history.exit_code == 3 and "no history store" in no_history.checks[-1].message


def test_a_recorded_gate_run_stores_the_audit_check(frames, tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.record_audit(decide_audit(make_result(0.2, name="g", version="1"), RULES))
        cfg = {"dataset": "d", "metrics": METRICS, "require_audit": {"generator": "g"}}
        out = run_gate(cfg, *frames, release_id="r", history=store, generator_version="1")
        assert out.recorded and out.exit_code == 0
        checks = store.checks(out.run_id)
        assert checks.filter(pl.col("metric") == "(audit)")["verdict"].to_list() == ["pass"]
