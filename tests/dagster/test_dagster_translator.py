"""PrivgateTranslator: a user's subclass renames and redescribes what every factory builds, and
the runs report under the names it gives."""

from pathlib import Path

import dagster as dg
import pytest

from privgate.dagster import (
    PrivgateResource,
    PrivgateTranslator,
    build_generator_audit,
    build_privgate_checks,
    build_privgate_family_checks,
    build_privgate_scorecards,
)
from privgate.dagster.audit_check import build_audit_required_check
from privgate.dagster.definitions import build_definitions

GATE = "version: 1\ndataset: my-data\nmetrics:\n  common_rows:\n    threshold: {block: 0.1}\n"


class Renamed(PrivgateTranslator):
    """A user's translator: overrides the attributes it changes, for the kinds it changes."""

    def get_name(self, props):
        name = super().get_name(props)
        if props["kind"] == "check":
            return "privacy_" + name
        if props["kind"] in ("op", "step_op"):
            return name.replace("privgate_", "gate_of_", 1)
        if props["kind"] == "pool":
            return "one_pool"
        if props["kind"] == "audit_op":
            return f"{props['step']}_of_{props['audit']}"
        return name

    def get_description(self, props):
        return "our privacy gate" if props["kind"] == "op" and "steps" not in props else super().get_description(props)

    def get_asset_key(self, props):
        if props["kind"] == "scorecard":
            return dg.AssetKey(["scorecards", dg.AssetKey.from_coercible(props["asset_key"]).path[-1]])
        return super().get_asset_key(props)


@pytest.fixture
def gate(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(GATE)
    return path


@dg.asset
def release():
    return None


def _check_names(checks) -> set[str]:
    return {key.name for c in checks for key in c.check_keys}


def test_default_translator_gives_privgates_names(gate):
    (checks,) = build_privgate_checks(assets=[release], gate_config=gate)
    assert _check_names([checks]) == {"gate_decision", "common_rows__threshold_block"}
    assert checks.node_def.name == "privgate_release"
    assert checks.node_def.pools == {"privgate_my_data"}


def test_a_subclass_renames_the_single_step_checks(gate):
    (checks,) = build_privgate_checks(assets=[release], gate_config=gate, translator=Renamed())
    assert _check_names([checks]) == {"privacy_gate_decision", "privacy_common_rows__threshold_block"}
    assert checks.node_def.name == "gate_of_release"
    assert checks.node_def.description == "our privacy gate"
    assert checks.node_def.pools == {"one_pool"}
    (scorecard,) = build_privgate_scorecards(assets=[release], translator=Renamed())
    assert scorecard.key == dg.AssetKey(["scorecards", "release"])


def test_a_subclass_renames_the_family_checks_and_their_steps(gate):
    (checks,) = build_privgate_family_checks(assets=[release], gate_config=gate, translator=Renamed())
    assert _check_names([checks]) == {"privacy_gate_decision", "privacy_common_rows__threshold_block"}
    graph = checks.node_def
    assert graph.name == "gate_of_release"
    assert {n.name for n in graph.node_defs} == {"gate_of_release__re_identification", "gate_of_release__gate"}
    (join,) = [n for n in graph.node_defs if n.name.endswith("__gate")]
    assert join.pools == {"one_pool"}


def test_a_subclass_renames_the_audit_ops():
    audit = build_generator_audit(
        "my_audit", real=dg.AssetKey("real"), generate=lambda *a: None, versions=["1"], translator=Renamed()
    )
    assert {n.name for n in audit.node_def.node_defs} == {"plan_of_my_audit", "runs_of_my_audit", "analyse_of_my_audit"}
    check = build_audit_required_check(release, audit, translator=Renamed())
    assert check.node_def.name == "generator_audit_passed_release"  # not overridden: the default


def test_the_bundled_definitions_ask_the_translator(example):
    defs = build_definitions(data_dir=example["root"], gate_config=example["gate"], env={}, translator=Renamed())
    graph = defs.resolve_asset_graph()
    names = {k.name for k in graph.asset_check_keys}
    assert names and all(n.startswith("privacy_") for n in names)
    assert dg.AssetKey(["scorecards", "synthetic_release"]) in graph.get_all_asset_keys()
    sensor = defs.resolve_sensor_def("new_release_sensor")
    assert sensor is not None


def test_a_run_reports_under_the_translated_names(gate, tmp_path, real_frame, instance):
    real = tmp_path / "real.parquet"
    real_frame.write_parquet(real)

    @dg.asset
    def leaky_release():
        return real_frame.head(100)  # 100 of 600 real records copied: common_rows 1/6 > 0.1

    translator = Renamed()
    result = dg.materialize(
        [
            leaky_release,
            *build_privgate_scorecards(assets=[leaky_release], translator=translator),
            *build_privgate_checks(assets=[leaky_release], gate_config=gate, translator=translator),
        ],
        instance=instance,
        raise_on_error=False,
        resources={"privgate": PrivgateResource(real_path=str(real), history_url=f"sqlite:///{tmp_path / 'h.sqlite'}")},
    )
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(checks) == {"privacy_gate_decision", "privacy_common_rows__threshold_block"}
    assert checks["privacy_gate_decision"].passed is False
    assert checks["privacy_common_rows__threshold_block"].passed is False
    mats = {e.asset_key for e in result.get_asset_materialization_events()}
    assert dg.AssetKey(["scorecards", "leaky_release"]) in mats


def test_the_default_translator_answers_each_kind_and_refuses_the_rest():
    t = PrivgateTranslator()
    key = dg.AssetKey(["data", "release"])
    assert t.get_asset_key({"kind": "scorecard", "asset_key": key}) == dg.AssetKey(
        ["data", "release_privacy_scorecard"]
    )
    assert t.get_name({"kind": "step_op", "asset_key": key, "step": "gate"}) == "privgate_data__release__gate"
    assert t.get_name({"kind": "audit_versions", "audit": "my_audit"}) == "my_audit_versions"
    assert "one step per metric family (statistical)" in t.get_description(
        {"kind": "op", "asset_key": key, "steps": ["statistical"]}
    )
    run = type("Run", (), {"root_run_id": None, "run_id": "r1"})()
    assert t.get_path({"kind": "audit_folder", "work_dir": "/w", "run": run, "audit": "a", "version": "1.0"}) == Path(
        "/w/r1/a/1.0"
    )
    with pytest.raises(ValueError, match="no description for a 'pool'; it gives one for: op, step_op"):
        t.get_description({"kind": "pool", "dataset": "d"})


def test_the_translator_has_only_the_methods_users_override():
    """Like dagster-dbt's translator: one public method per attribute of what is built."""
    public = sorted(n for n in vars(PrivgateTranslator) if not n.startswith("_"))
    assert public == ["get_asset_key", "get_description", "get_metadata", "get_name", "get_path"]
