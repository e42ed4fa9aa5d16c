"""deploy/: every file parses, the instance loads from each dagster.yaml, compose / Dockerfile /
workspace files agree with each other, and the Helm values use real chart and executor settings."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from urllib.parse import urlparse

import dagster as dg
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PG_VARS = ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")


def _yaml(rel: str):
    return yaml.safe_load((DEPLOY / rel).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "rel",
    [
        "local/dagster.yaml",
        "postgres/dagster.yaml",
        "workspace.yaml",
        "docker/workspace.yaml",
        "docker-compose.yml",
        "helm/values.yaml",
    ],
)
def test_yaml_files_parse(rel):
    assert isinstance(_yaml(rel), dict)


@pytest.mark.parametrize("rel", ["local", "postgres"])
def test_instance_config_validates_against_dagster_schema(rel, monkeypatch):
    from dagster._config import process_config
    from dagster._config.field_utils import Shape
    from dagster._core.instance.config import dagster_instance_config, dagster_instance_config_schema

    for var in PG_VARS:
        monkeypatch.setenv(var, "5432" if var.endswith("PORT") else "x")
    monkeypatch.setenv("DAGSTER_HOME", str(DEPLOY / rel))
    config, _ = dagster_instance_config(str(DEPLOY / rel))
    result = process_config(Shape(dagster_instance_config_schema()), config)
    assert result.success, [e.message for e in result.errors]
    assert config["telemetry"] == {"enabled": False}


def test_sqlite_instance_loads(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DEPLOY / "local" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 2
        assert instance.telemetry_enabled is False
    assert (home / "history" / "runs.db").exists()


def _pg_parts(url: str) -> dict[str, str]:
    u = urlparse(url)
    return {
        "DAGSTER_PG_HOST": u.hostname or "127.0.0.1",
        "DAGSTER_PG_PORT": str(u.port or 5432),
        "DAGSTER_PG_USER": u.username or "postgres",
        "DAGSTER_PG_PASSWORD": u.password or "",
        "DAGSTER_PG_DB": u.path.lstrip("/") or "postgres",
    }


@pytest.fixture
def pg_database():
    """A fresh PostgreSQL database for Dagster's instance tables (dropped afterwards); env vars
    for deploy/postgres/dagster.yaml pointing at it."""
    url = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL not set")
    import psycopg2

    parts = _pg_parts(url)
    name = f"privgate_dagster_{uuid.uuid4().hex[:10]}"
    conn = psycopg2.connect(
        host=parts["DAGSTER_PG_HOST"],
        port=int(parts["DAGSTER_PG_PORT"]),
        user=parts["DAGSTER_PG_USER"],
        password=parts["DAGSTER_PG_PASSWORD"] or None,
        dbname=parts["DAGSTER_PG_DB"],
    )
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {**parts, "DAGSTER_PG_DB": name}
    finally:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.close()


@pytest.mark.postgres
def test_postgres_instance_loads_and_runs_the_pipeline(pg_database, example, tmp_path, monkeypatch):
    """deploy/postgres/dagster.yaml as is: the instance lives in PostgreSQL, and a blocked and a
    passing release run against it with their check results stored there."""
    from privgate.dagster.definitions import build_definitions

    for var, value in pg_database.items():
        monkeypatch.setenv(var, value)
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DEPLOY / "postgres" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    defs = build_definitions(
        data_dir=example["root"],
        gate_config=example["gate"],
        history_url=f"sqlite:///{example['history']}",
        executor="in_process",
        env={},
    )
    job = defs.resolve_job_def("evaluate_release")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        instance.add_dynamic_partitions("releases", ["r-pass", "r-block"])
        ok = job.execute_in_process(instance=instance, partition_key="r-pass", raise_on_error=False)
        blocked = job.execute_in_process(instance=instance, partition_key="r-block", raise_on_error=False)
        assert ok.success and not blocked.success
        key = dg.AssetCheckKey(dg.AssetKey("synthetic_release"), "common_rows__threshold_block")
        history = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
        assert len(history) == 2
        by_run = {r.run_id: r for r in history}
        assert by_run[blocked.run_id].evaluation.passed is False
        assert by_run[ok.run_id].evaluation.passed is True
        published = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("published_release")), limit=10
        ).records
        assert [r.partition_key for r in published] == ["r-pass"]


def _image_code_location() -> str:
    """The code location file inside the image: the Dockerfile's WORKDIR and the folder it copies."""
    text = (DEPLOY / "Dockerfile").read_text()
    workdir = re.search(r"^WORKDIR (\S+)", text, re.M).group(1)
    assert "COPY dagster_defs ./dagster_defs" in text
    return f"{workdir}/dagster_defs/definitions.py"


def test_workspaces_point_at_the_code():
    """Every deployment loads the project's code location, dagster_defs/definitions.py."""
    (local,) = _yaml("workspace.yaml")["load_from"]
    target = local["python_file"]
    assert (DEPLOY / target["relative_path"]).resolve() == REPO / "dagster_defs" / "definitions.py"
    assert (DEPLOY / target["working_directory"]).resolve() == REPO
    grpc = _yaml("docker/workspace.yaml")["load_from"][0]["grpc_server"]
    compose = _yaml("docker-compose.yml")
    assert grpc["host"] in compose["services"]
    user_cmd = compose["services"][grpc["host"]]["command"]
    assert user_cmd[:3] == ["dagster", "code-server", "start"]
    assert user_cmd[user_cmd.index("-p") + 1] == str(grpc["port"])
    image_file = _image_code_location()
    assert image_file.endswith("/" + user_cmd[user_cmd.index("-f") + 1])  # relative to WORKDIR
    dockerfile_cmd = json.loads(re.search(r"^CMD (.+)$", (DEPLOY / "Dockerfile").read_text(), re.M).group(1))
    assert image_file.endswith("/" + dockerfile_cmd[dockerfile_cmd.index("-f") + 1])
    dep = _yaml("helm/values.yaml")["dagster-user-deployments"]["deployments"][0]
    assert dep["codeServerArgs"] == ["-f", image_file]


def test_compose_services_and_environment():
    compose = _yaml("docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"postgres", "user_code", "webserver", "daemon"}
    assert services["webserver"]["command"][0] == "dagster-webserver"
    assert services["daemon"]["command"][:2] == ["dagster-daemon", "run"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    for svc in ("user_code", "webserver", "daemon"):
        s = services[svc]
        assert s["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (DEPLOY / s["build"]["context"] / s["build"]["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
        # every variable the PostgreSQL dagster.yaml reads is set for every Dagster process
        assert set(PG_VARS) <= set(s["environment"]), svc
        assert s["depends_on"]["postgres"]["condition"] == "service_healthy"
        # the workspace file the command names is the one the image contains
        if "-w" in s["command"]:
            ws = s["command"][s["command"].index("-w") + 1]
            assert f"COPY deploy/docker/workspace.yaml {ws}" in dockerfile
    assert "healthcheck" in services["postgres"]
    # the history database the user code writes to is created by the init script
    init = (DEPLOY / "docker" / "init-history-db.sql").read_text()
    db = re.search(r"CREATE DATABASE (\w+)", init).group(1)
    assert services["user_code"]["environment"]["PRIVGATE_HISTORY_URL"].endswith(f"/{db}")
    mount = services["postgres"]["volumes"][1].split(":")
    assert (DEPLOY / mount[0]).resolve() == DEPLOY / "docker" / "init-history-db.sql"
    assert mount[1].startswith("/docker-entrypoint-initdb.d/")


def test_dockerfile_copies_existing_paths_and_installs_the_k8s_extra():
    text = (DEPLOY / "Dockerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (REPO / src).exists(), src
    assert "COPY deploy/postgres/dagster.yaml ${DAGSTER_HOME}/dagster.yaml" in text
    assert "DAGSTER_DISABLE_TELEMETRY=1" in text
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert '".[k8s]"' in text and any(d.startswith("dagster-k8s") for d in extras["k8s"])


# Key names of the official chart (helm/dagster/schema in dagster-io/dagster, chart 1.13):
CHART_TOP = {
    "global",
    "dagsterWebserver",
    "dagster-user-deployments",
    "postgresql",
    "generatePostgresqlPasswordSecret",
    "generateCeleryConfigSecret",
    "rabbitmq",
    "redis",
    "flower",
    "ingress",
    "imagePullSecrets",
    "computeLogManager",
    "scheduler",
    "runLauncher",
    "pythonLogs",
    "dagsterDaemon",
    "busybox",
    "migrate",
    "telemetry",
    "serviceAccount",
    "retention",
    "concurrency",
    "additionalInstanceConfig",
}
RUN_LAUNCHER_TYPES = {
    "K8sRunLauncher": "k8sRunLauncher",
    "CeleryK8sRunLauncher": "celeryK8sRunLauncher",
    "CustomRunLauncher": "customRunLauncher",
}
K8S_RUN_LAUNCHER = {
    "image",
    "imagePullPolicy",
    "jobNamespace",
    "loadInclusterConfig",
    "kubeconfigFile",
    "envConfigMaps",
    "envSecrets",
    "envVars",
    "volumeMounts",
    "volumes",
    "labels",
    "failPodOnRunFailure",
}
USER_DEPLOYMENT = {
    "name",
    "image",
    "port",
    "dagsterApiGrpcArgs",
    "codeServerArgs",
    "includeConfigInLaunchedRuns",
    "env",
    "envConfigMaps",
    "envSecrets",
    "annotations",
    "nodeSelector",
    "affinity",
    "tolerations",
    "podSecurityContext",
    "securityContext",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "labels",
    "volumeMounts",
    "volumes",
    "schedulerName",
}
POSTGRESQL = {
    "postgresqlScheme",
    "image",
    "enabled",
    "postgresqlHost",
    "postgresqlUsername",
    "postgresqlPassword",
    "postgresqlDatabase",
    "postgresqlParams",
    "service",
}


def test_helm_values_use_chart_keys_and_the_k8s_executor():
    values = _yaml("helm/values.yaml")
    assert set(values) <= CHART_TOP, set(values) - CHART_TOP
    launcher = values["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    assert set(launcher["config"]) == {RUN_LAUNCHER_TYPES[launcher["type"]]}
    k8s = launcher["config"]["k8sRunLauncher"]
    assert set(k8s) <= K8S_RUN_LAUNCHER, set(k8s) - K8S_RUN_LAUNCHER
    assert values["postgresql"]["enabled"] is False
    assert set(values["postgresql"]) <= POSTGRESQL
    assert values["postgresql"]["postgresqlScheme"] == "postgresql+psycopg2"
    assert values["telemetry"] == {"enabled": False}
    deps = values["dagster-user-deployments"]
    assert deps["enabled"] is True
    (dep,) = deps["deployments"]
    assert set(dep) <= USER_DEPLOYMENT, set(dep) - USER_DEPLOYMENT
    assert {"repository", "tag", "pullPolicy"} <= set(dep["image"])
    env = {e["name"]: e["value"] for e in dep["env"]}
    assert env["PRIVGATE_EXECUTOR"] == "k8s"
    # the run pods, the step pods and the code server all mount the shared data volume
    import json

    ex = json.loads(env["PRIVGATE_K8S_EXECUTOR_CONFIG"])
    claim = {v["persistentVolumeClaim"]["claimName"] for v in ex["volumes"]}
    assert claim == {v["persistentVolumeClaim"]["claimName"] for v in k8s["volumes"]}
    assert claim == {v["persistentVolumeClaim"]["claimName"] for v in dep["volumes"]}
    mount = env["PRIVGATE_DAGSTER_DATA_DIR"]
    assert {m["mountPath"] for m in ex["volume_mounts"]} == {mount}
    assert {m["mountPath"] for m in k8s["volumeMounts"]} == {mount}


def _gib(quantity: str) -> float:
    """A Kubernetes memory quantity ("13Gi", "8704Mi") in GiB."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Gi|Mi)", quantity)
    assert match, quantity
    return float(match.group(1)) / (1 if match.group(2) == "Gi" else 1024)


def test_helm_family_pods_memory_covers_the_estimate_the_values_state(capsys):
    """The `privgate estimate` commands in values.yaml's comment, run now: every family pod's
    memory limit is at least the limit they suggest (1.5 x the estimate) and its request at
    least the estimate, each family checked against the first command listing it; together
    the commands cover every registry family, with the pods' own thread budgets."""
    import shlex

    from privgate.cli import main
    from privgate.registry import FAMILIES

    text = (DEPLOY / "helm" / "values.yaml").read_text(encoding="utf-8")
    commands = [shlex.split(m)[1:] for m in re.findall(r"^#\s+(privgate estimate .*)$", text, re.M)]
    assert len(commands) == 2, commands
    values = yaml.safe_load(text)
    (dep,) = values["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e["value"] for e in dep["env"]}
    per_step = json.loads(env["PRIVGATE_K8S_EXECUTOR_CONFIG"])["per_step_k8s_config"]
    sized: dict[str, dict] = {}
    for argv in commands:
        assert "--step-threads" in argv and json.loads(argv[argv.index("--step-threads") + 1]) == json.loads(
            env["PRIVGATE_STEP_THREADS"]
        )  # sized with the pods' thread budgets
        assert main(argv + ["--json"]) == 0
        for step, figure in json.loads(capsys.readouterr().out)["family_steps"].items():
            sized.setdefault(step, figure)
    assert set(sized) == {re.sub(r"[^A-Za-z0-9_]", "_", f) for f in FAMILIES}
    for step, figure in sized.items():
        resources = per_step[f"privgate_synthetic_release__{step}"]["container_config"]["resources"]
        assert _gib(resources["limits"]["memory"]) >= figure["limit_gib"], (step, figure)
        assert _gib(resources["requests"]["memory"]) >= figure["peak_gib"], (step, figure)
