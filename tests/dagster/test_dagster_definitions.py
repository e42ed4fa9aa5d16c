"""The Definitions: validation by the dagster CLI, the check specs, executors, configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from privgate.dagster.definitions import build_definitions, build_executor
from privgate.dagster.rule_checks import DECISION_CHECK
from privgate.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _env_for_cli(example, tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIVGATE_", "DAGSTER_"))}
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env.update(
        DAGSTER_HOME=str(tmp_path / "home"),
        PRIVGATE_DAGSTER_DATA_DIR=str(example["root"]),
        PRIVGATE_GATE_CONFIG=str(example["gate"]),
        DAGSTER_DISABLE_TELEMETRY="1",
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def _specs(defs, asset: str = "synthetic_release") -> dict:
    graph = defs.resolve_asset_graph()
    return {k.name: graph.get_check_spec(k) for k in graph.asset_check_keys if k.asset_key == dg.AssetKey(asset)}


@pytest.mark.parametrize(
    "target",
    [
        ["-m", "privgate.dagster"],
        ["-f", str(REPO / "dagster_defs" / "definitions.py")],
        ["-w", str(REPO / "deploy" / "workspace.yaml")],
    ],
    ids=["module", "code-location", "workspace"],
)
def test_dagster_definitions_validate_cli(example, tmp_path, target):
    proc = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", *target],
        cwd=tmp_path,
        env=_env_for_cli(example, tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "passed validation" in (proc.stdout + proc.stderr)


def test_default_configuration_builds_and_validates(example):
    """The shipped default gate configuration (no PRIVGATE_GATE_CONFIG) loads as Definitions."""
    defs = build_definitions(data_dir=example["root"], env={})
    dg.Definitions.validate_loadable(defs)
    from privgate.gates import default_gate_config

    cfg = default_gate_config()
    names = set(_specs(defs))
    # no holdout configured: the checks declared are the rules that apply without one
    n_rules = sum(1 for m in cfg.metrics.values() for r in m.rules if r.when != "with_holdout")
    assert len(names) == n_rules + 1 and DECISION_CHECK in names
    with_holdout = build_definitions(
        data_dir=example["root"], holdout_path=str(example["root"] / "real.parquet"), env={}
    )
    n_with = sum(1 for m in cfg.metrics.values() for r in m.rules if r.when != "no_holdout")
    assert len(set(_specs(with_holdout))) == n_with + 1


def test_check_specs_block_rules_are_blocking_warn_rules_are_not(defs):
    specs = _specs(defs)
    assert set(specs) == {
        DECISION_CHECK,
        "common_rows__threshold_warn",
        "common_rows__threshold_block",
        "hitting_rate__threshold_block",
        "authenticity__trend_warn",
    }
    for name, spec in specs.items():
        assert spec.asset_key == dg.AssetKey("synthetic_release")
        assert spec.partitions_def is not None and spec.partitions_def.name == "releases"
        assert spec.blocking == (name == DECISION_CHECK or name.endswith("_block")), name
        assert spec.description


def test_the_latest_release_view_has_the_release_checks_unpartitioned(defs):
    release, view = _specs(defs), _specs(defs, "synthetic_release_latest_release")
    assert set(view) == set(release)
    for name, spec in view.items():
        assert spec.partitions_def is None and spec.blocking == release[name].blocking


def test_assets_partitions_jobs_and_resources(defs):
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {
        "real_data",
        "synthetic_release",
        "published_release",
        "synthetic_release_privacy_scorecard",
        "synthetic_release_latest_release",
    }
    for key in ("synthetic_release", "published_release"):
        pdef = graph.get(dg.AssetKey(key)).partitions_def
        assert isinstance(pdef, dg.DynamicPartitionsDefinition) and pdef.name == "releases"
    assert graph.get(dg.AssetKey("real_data")).partitions_def is None
    assert graph.get(dg.AssetKey("published_release")).parent_keys == {dg.AssetKey("synthetic_release")}
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"evaluate_release", "reevaluate_release"}
    assert set(defs.resources) == {"locations", "privgate", "io_manager"}


def test_invalid_gate_configuration_fails_the_load_naming_the_key(example, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmetrics:\n  common_rows:\n    threshold: {block: 7}\n")
    with pytest.raises(ConfigError, match=r"metrics\.common_rows\.threshold\.block"):
        build_definitions(data_dir=example["root"], gate_config=bad, env={})


def test_environment_variables_configure_locations(example, tmp_path):
    env = {
        "PRIVGATE_DAGSTER_DATA_DIR": str(tmp_path / "root"),
        "PRIVGATE_RELEASES_DIR": str(tmp_path / "drop"),
        "PRIVGATE_GATE_CONFIG": str(example["gate"]),
        "PRIVGATE_DATASET": "other",
        "PRIVGATE_SENSOR_STATUS": "stopped",
        "PRIVGATE_REEVALUATE_LATEST": "2",
        "PRIVGATE_EXECUTOR": "in_process",
    }
    defs = build_definitions(env=env)
    loc, pg = defs.resources["locations"], defs.resources["privgate"]
    assert loc.releases_dir == str(tmp_path / "drop")
    assert pg.real_path == str(tmp_path / "root" / "real.parquet")
    assert pg.load_config().dataset == "other"
    assert pg.history_url is None  # the CLI's default store
    with_url = build_definitions(env={**env, "PRIVGATE_HISTORY_URL": "sqlite:///h.sqlite"})
    assert with_url.resources["privgate"].history_url == "sqlite:///h.sqlite"
    assert defs.resolve_sensor_def("new_release_sensor").default_status == dg.DefaultSensorStatus.STOPPED
    assert defs.executor is dg.in_process_executor


def test_executors(tmp_path):
    multi = build_executor("multiprocess", max_concurrent=3, env={})
    assert multi.name == "privgate_multiprocess_executor"
    assert build_executor(env={"PRIVGATE_EXECUTOR": "in_process"}) is dg.in_process_executor
    with pytest.raises(ConfigError, match="PRIVGATE_EXECUTOR"):
        build_executor("celery", env={})
    with pytest.raises(ConfigError, match="PRIVGATE_K8S_EXECUTOR_CONFIG"):
        pytest.importorskip("dagster_k8s")
        build_executor("k8s", env={"PRIVGATE_K8S_EXECUTOR_CONFIG": "{not json"})


def test_k8s_executor_from_the_helm_values(example):
    """The executor configuration the Helm values give the user code is accepted by
    dagster_k8s.k8s_job_executor's config schema, and the Definitions load with it."""
    pytest.importorskip("dagster_k8s", reason="dagster-k8s (extra 'k8s') not installed")
    from dagster._config import process_config
    from dagster_k8s import k8s_job_executor

    values = yaml.safe_load((REPO / "deploy" / "helm" / "values.yaml").read_text())
    (dep,) = values["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e["value"] for e in dep["env"]}
    assert env["PRIVGATE_EXECUTOR"] == "k8s"
    config = json.loads(env["PRIVGATE_K8S_EXECUTOR_CONFIG"])
    evr = process_config(k8s_job_executor.config_schema.config_type, config)
    assert evr.success, [e.message for e in evr.errors]
    ex = build_executor(env=env)
    assert ex.name == "privgate_k8s_job_executor"
    defs = build_definitions(data_dir=example["root"], gate_config=example["gate"], env=env)
    dg.Definitions.validate_loadable(defs)
    assert defs.executor.name == "privgate_k8s_job_executor"


def test_example_prepares_a_loadable_workspace(tmp_path):
    """python -m privgate.dagster.example --prepare-only: the three demo releases in the watched
    folder, an instance with telemetry off, and Definitions that load from that environment."""
    from privgate.dagster.example import main, prepare

    env = prepare(tmp_path / "ex")
    releases = sorted(p.name for p in (tmp_path / "ex" / "releases").iterdir())
    assert releases == ["release-1-marginals.parquet", "release-2-leaky.parquet", "release-3-noisy-copy.parquet"]
    home = yaml.safe_load((Path(env["DAGSTER_HOME"]) / "dagster.yaml").read_text())
    assert home["telemetry"] == {"enabled": False}
    defs = build_definitions(env=env)
    dg.Definitions.validate_loadable(defs)
    assert defs.resources["privgate"].history_url == f"sqlite:///{tmp_path / 'ex' / 'history.sqlite'}"
    files, skipped = defs.resources["locations"].release_files()
    assert sorted(files) == ["release-1-marginals", "release-2-leaky", "release-3-noisy-copy"]
    assert not skipped
    assert main(["--dir", str(tmp_path / "ex"), "--prepare-only"]) == 0


def test_dagster_adapter_does_not_import_great_expectations():
    """The Dagster adapter stands without the GX one: importing privgate.dagster (its module
    entry point, the Definitions builder, the example) imports neither GX nor privgate.gx."""
    code = (
        "import sys, privgate.dagster, privgate.dagster.definitions, privgate.dagster.example; "
        "print('great_expectations' in sys.modules, 'privgate.gx' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO, timeout=120
    )
    assert out.stdout.split() == ["False", "False"]
