"""The fail-closed invariant through the Dagster check path and the GX expectation path, on a
few generated cases each (Dagster runs and GX contexts are slow): a case that cannot be decided
is a failed ERROR check / an errored expectation, never a pass, and no real cell appears in any
check metadata or expectation result."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from pathlib import Path

import pytest
from fault_metrics import FAULTS, fault_metric
from generators import Case, cases, frame, real_tokens, release
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privgate.gates import check_name, parse_gate_config, run_gate

ADAPTER = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
JUNK = set(FAULTS) - {"ok"}


def _frames(case: Case):
    real = frame(case.names, case.kinds, case.n_real, case.seed)
    return real, release(real, case.how, case.seed, case.names, case.kinds)


def _registered(case: Case) -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    case.registry_names = {
        m: stack.enter_context(fault_metric(m.split(":", 1)[1])) if m.startswith("fault:") else m for m in case.metrics
    }
    return stack


def _no_leak(real, text: str, where: str) -> None:
    for token in real_tokens(real):
        assert token not in text, f"real cell {token!r} in {where}"


# ---------------------------------------------------------------------------------- Dagster
dg = pytest.importorskip("dagster")


@ADAPTER
@given(case=cases())
def test_dagster_checks_fail_closed(case, tmp_path_factory):
    from privgate.dagster.rule_checks import DECISION_CHECK, check_results
    from privgate.history import HistoryStore

    real, synthetic = _frames(case)
    with _registered(case):
        cfg = parse_gate_config(
            {
                "dataset": "campaign",
                "metrics": {
                    n: {"threshold": {case.severity.get(m, "block"): case.limits[m]}, "optional": m in case.optional}
                    for m, n in case.registry_names.items()
                },
            }
        )
        with HistoryStore(tmp_path_factory.mktemp("dg") / "h.sqlite") as store:
            outcome = run_gate(cfg, real, synthetic, release_id="r1", history=store)
            assert store.runs("campaign")["exit_code"].to_list() == [outcome.exit_code]
        results = {r.check_name: r for r in check_results(cfg, outcome)}
    decision = results[DECISION_CHECK]
    assert decision.passed == (outcome.exit_code in (0, 1))
    # a check is named <metric id>__<rule>_<severity> (privgate.gates.check_name)
    failed = {
        check_name(c.metric, "x", "y").split("__")[0]
        for c in outcome.checks
        if c.rule == "error" and c.verdict == "block"
    }
    for name, r in results.items():
        md = {k: v.value for k, v in (r.metadata or {}).items()}
        if name != DECISION_CHECK and name.split("__")[0] in failed:
            assert not r.passed, (name, md)  # a failed metric's rules never pass
        if r.passed and name != DECISION_CHECK and "value" in md:
            assert math.isfinite(md["value"]) and 0 <= md["value"] <= 1
        _no_leak(real, repr(md) + str(r.description), f"Dagster check {name}")
    if outcome.exit_code == 3:
        assert not decision.passed and decision.severity == dg.AssetCheckSeverity.ERROR


def test_dagster_materialisation_with_a_junk_metric_blocks_and_publishes_nothing(tmp_path):
    """One real run of the release job: a metric returning NaN fails the decision check, nothing
    is published, the history row is blocked."""
    from privgate.dagster.definitions import build_definitions
    from privgate.dagster.rule_checks import DECISION_CHECK
    from privgate.history import HistoryStore

    case = Case(
        names=["x", "c"],
        kinds=["float", "string"],
        n_real=30,
        seed=1,
        how="random",
        real_format="parquet",
        synthetic_format="parquet",
        holdout=False,
        metrics=[],
    )
    real, synthetic = _frames(case)
    root = tmp_path / "data"
    (root / "releases").mkdir(parents=True)
    real.write_parquet(root / "real.parquet")
    synthetic.write_parquet(root / "releases" / "r1.parquet")
    with fault_metric("value_nan") as name:
        gate = tmp_path / "gate.yaml"
        gate.write_text(
            f"version: 1\ndataset: campaign\nmetrics:\n  common_rows:\n    threshold: {{block: 0.5}}\n"
            f"  {name}:\n    threshold: {{block: 0.5}}\n"
        )
        defs = build_definitions(
            data_dir=root,
            gate_config=gate,
            history_url=f"sqlite:///{tmp_path / 'h.sqlite'}",
            executor="in_process",
            sensor_settle_seconds=0,
            env={},
        )
        shm = Path("/dev/shm")  # the event log's many synced writes are slow on a busy disk
        with (
            tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp,
            dg.instance_for_test(temp_dir=tmp) as instance,
        ):
            instance.add_dynamic_partitions("releases", ["r1"])
            result = defs.resolve_job_def("evaluate_release").execute_in_process(
                instance=instance, partition_key="r1", raise_on_error=False
            )
            checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
            published = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
            events = repr([e.event_specific_data for e in result.all_events])
    assert not checks[DECISION_CHECK].passed
    assert not any(v.passed for k, v in checks.items() if k.startswith(name))
    assert "published_release" not in published
    with HistoryStore(tmp_path / "h.sqlite") as store:
        runs = store.runs("campaign")
    assert runs["decision"].to_list() == ["block"] and runs["exit_code"].to_list() == [3]
    _no_leak(real, events, "Dagster events")


# -------------------------------------------------------------------------------------- GX
@pytest.fixture(scope="module")
def gx_context():
    gx = pytest.importorskip("great_expectations")
    return gx.get_context(mode="ephemeral")


@ADAPTER
@given(
    case=cases(),
    fault=st.sampled_from(sorted(set(FAULTS) - {"keyboard_interrupt"})),
    threshold=st.sampled_from([1.0, 0.5, 0.0]),
)
def test_gx_expectation_is_errored_never_passed(gx_context, case, fault, threshold):
    import privgate.gx as pe
    import privgate.gx.compute  # noqa: F401 - pe.compute below

    real, synthetic = _frames(case)
    with fault_metric(fault) as name:
        ref = pe.register_real(f"campaign-{case.seed}", real)  # a registry name; never refused
        pe.compute.clear_context_cache()
        r = pe.validate_release(
            synthetic,
            pe.ExpectSyntheticPrivacyRiskToBeBelow(metric=name, real=ref, threshold=threshold),
            context=gx_context,
        )
    observed = r.result.get("observed_value")
    if fault in JUNK:
        assert pe.is_errored(r) and r.success is False, (fault, observed)
    if r.success:
        assert not pe.is_errored(r) and math.isfinite(observed) and 0 <= observed <= threshold
    _no_leak(real, json.dumps(r.to_json_dict(), default=str), "GX result")


def test_gx_keyboard_interrupt_interrupts(gx_context):
    """KeyboardInterrupt is not turned into a result: the validation stops, nothing passes."""
    import privgate.gx as pe
    import privgate.gx.compute  # noqa: F401 - pe.compute below

    real, synthetic = _frames(
        Case(
            names=["x"],
            kinds=["float"],
            n_real=10,
            seed=2,
            how="random",
            real_format="parquet",
            synthetic_format="parquet",
            holdout=False,
            metrics=[],
        )
    )
    with fault_metric("keyboard_interrupt") as name:
        ref = pe.register_real("campaign-ki", real)
        pe.compute.clear_context_cache()
        with pytest.raises(KeyboardInterrupt):
            pe.validate_release(
                synthetic,
                pe.ExpectSyntheticPrivacyRiskToBeBelow(metric=name, real=ref, threshold=1.0),
                context=gx_context,
            )
