"""The Dagster checks of a gate whose configuration requires an audit: the configuration's
version and digest select the audit, and only an audit of that generator lets the release
through (an audit of another generator under the same name and version does not)."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from privgate.dagster import PrivgateResource, build_privgate_checks
from privgate.dagster.rule_checks import DECISION_CHECK
from privgate.gates.audit_rules import decide_audit
from privgate.history import HistoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from audit_helpers import DIGEST, evidence_result  # noqa: E402

GATE = (
    "version: 1\ndataset: plugin\nmetrics:\n  common_rows:\n    threshold: {block: 0.1}\n"
    "require_audit: {generator: g, version: '1', dataset: plugin, digest: %s}\n"
)


@pytest.mark.parametrize("digest,passes", [(DIGEST, True), ("cd" * 32, False)], ids=["same", "another"])
def test_the_checks_pass_only_on_an_audit_of_the_configured_generator(tmp_path, real_frame, instance, digest, passes):
    real = tmp_path / "real.parquet"
    real_frame.write_parquet(real)
    (tmp_path / "gate.yaml").write_text(GATE % digest)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.record_audit(decide_audit(evidence_result()), dataset="plugin")

    @dg.asset
    def release() -> pl.DataFrame:  # every column shuffled on its own: no copied record
        return pl.DataFrame({c: real_frame[c].shuffle(seed=i) for i, c in enumerate(real_frame.columns)}).head(300)

    (checks,) = build_privgate_checks(assets=[release], gate_config=tmp_path / "gate.yaml")
    result = dg.materialize(
        [release, checks],
        instance=instance,
        raise_on_error=False,
        resources={"privgate": PrivgateResource(real_path=str(real), history_url=f"sqlite:///{tmp_path / 'h.sqlite'}")},
    )
    decision = {e.check_name: e for e in result.get_asset_check_evaluations()}[DECISION_CHECK]
    assert decision.passed is passes, decision.description
    if not passes:
        assert "audited another generator" in str(decision.metadata) + str(decision.description)
