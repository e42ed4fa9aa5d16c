"""The generator audit as a Dagster asset (privgate.dagster.audit): the graph fans the runs out
in chunks and gives the same result as audit_generator in one process with the same seed (in
process and under the multiprocess executor), its metadata holds no record value, and a
release's check requires a passing audit of the generator version that made it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from privgate.audit import AuditResult, audit_generator
from privgate.audit.attacks import DEFAULT_ATTACKS

HERE = Path(__file__).resolve().parent


def _load(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_privgate_dagster_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_conf = _load("conftest")
jobs = _load("audit_jobs")


@pytest.fixture
def folders(tmp_path, monkeypatch):
    out = {k: tmp_path / k for k in ("work", "reports", "storage")}
    for k, v in out.items():
        monkeypatch.setenv(f"PRIVGATE_{k.upper()}_DIR", str(v))
    monkeypatch.setenv("PRIVGATE_THREADS", "1")
    out["history"] = tmp_path / "history.sqlite"
    monkeypatch.setenv("PRIVGATE_HISTORY_URL", f"sqlite:///{out['history']}")
    return out


def _reference() -> dict:
    """The same audit in one process (audit_generator, one worker)."""
    # the generator the job audits (its digest is recorded: the wrapper's, covering what it wraps)
    ref = audit_generator(
        jobs._DyingOnce(jobs.GENERATOR),
        jobs.tiny_real(),
        workers=1,
        threads=1,
        generator_name="tiny",
        generator_version=jobs.VERSION,
        looks=None,
        **jobs.SETTINGS,
    ).to_dict()
    ref.pop("cost")
    return ref


def _materialisation(result) -> dict:
    (event,) = result.get_asset_materialization_events()
    return {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}


def _check_result(md: dict, ref: dict, folders: dict) -> None:
    saved = AuditResult.from_dict(json.loads(Path(md["audit_json"]).read_text())).to_dict()
    cost = saved.pop("cost")
    assert saved == ref  # every target, attack, count and bound
    assert cost["runs"] == 16 and cost["workers"] == 2  # two run steps
    assert md["epsilon_lower"] == round(ref["epsilon_lower"], 4)
    assert md["auc_lower"] == round(ref["auc_lower"], 4)
    assert md["n_audited"] == ref["n_audited"] == 3 and md["runs"] == 16 and md["runs_failed"] == 0
    assert md["claimed_epsilon"] == 1.0 and md["violation"] is ref["violation"] is False
    assert md["verdict"] == "no violation found" and md["generator_version"] == jobs.VERSION
    assert md["seconds_generator"] >= 0 and md["seconds_audit"] > 0
    assert Path(md["audit_json"]).parent == folders["reports"] / "audits" / jobs.AUDIT / jobs.VERSION
    # decided by the audit rules (the default configuration) and recorded in the score history
    from privgate.gates.audit_rules import decide_audit
    from privgate.history import HistoryStore

    expected = decide_audit(AuditResult.from_dict(ref | {"cost": cost}))
    assert md["decision"] == expected.decision and md["accepted"] is expected.accepted is True
    assert md["decision_code"] == expected.exit_code and md["recorded"] is True
    store = HistoryStore(f"sqlite:///{folders['history']}")
    try:
        last = store.last_audit("tiny", jobs.VERSION)
    finally:
        store.close()
    assert last.run_id == md["privgate_run_id"] and last.decision == md["decision"]
    assert last.epsilon_lower == pytest.approx(ref["epsilon_lower"])
    # the steps' files (the prepared audit holds real records) are deleted after the analysis
    assert not any(p.is_file() for p in folders["work"].rglob("*"))


def test_the_graph_fans_runs_out_and_matches_audit_generator(folders, real_frame):
    defs = jobs.audit_definitions(executor=dg.in_process_executor)
    job = defs.resolve_job_def(jobs.JOB)
    with _conf.fast_instance() as instance:
        result = job.execute_in_process(instance=instance, partition_key=jobs.VERSION)
    assert result.success
    steps = sorted({e.step_key for e in result.all_events if e.step_key})
    a = f"{jobs.AUDIT}.{jobs.AUDIT}"
    assert steps == [f"{a}__analyse", f"{a}__plan", f"{a}__runs[runs_0_7]", f"{a}__runs[runs_8_15]"]
    md = _materialisation(result)
    _check_result(md, _reference(), folders)
    # the asset's value: one row per (target, attack), numbers and ids only
    table = result.output_for_node(jobs.AUDIT)
    assert isinstance(table, pl.DataFrame) and table.height == 3 * len(DEFAULT_ATTACKS)
    # no metadata value is a value of a real record
    values = {str(v) for c in jobs.tiny_real().columns for v in jobs.tiny_real()[c].unique()}
    texts = [str(v) for v in md.values()]
    assert not [t for t in texts if any(v in t for v in values)]


def test_multiprocess_executor_runs_the_chunks_in_their_own_processes(folders, monkeypatch, tmp_path):
    """Two chunks under Dagster's multiprocess executor (a spawned process per step, standing in
    for a pod per step). The second chunk's process dies (like an OOM-killed pod): the run fails
    and nothing is materialised; re-executed from failure, only that chunk and the analysis run
    again, on the plan and the first chunk's runs kept in the work folder, and the result is
    audit_generator's with the same seed."""
    monkeypatch.syspath_prepend(str(HERE))
    import audit_jobs

    from privgate.audit import prepare_audit

    plan = prepare_audit(
        None, jobs.tiny_real(), **{k: v for k, v in jobs.SETTINGS.items() if k != "claimed_epsilon"}
    ).plan
    marker = tmp_path / "kill-once"
    marker.touch()
    monkeypatch.setenv("PRIVGATE_TEST_KILL_FILE", str(marker))
    monkeypatch.setenv("PRIVGATE_TEST_KILL_SEED", str(plan.generator_seed(11)))
    a = f"{jobs.AUDIT}.{jobs.AUDIT}"
    job = dg.reconstructable(audit_jobs.audit_job)
    with _conf.fast_instance() as instance:
        with dg.execute_job(
            job, instance=instance, tags={"dagster/partition": jobs.VERSION}, raise_on_error=False
        ) as died:
            assert not died.success and not marker.exists()
            failed = {e.step_key for e in died.all_events if e.event_type_value == "STEP_FAILURE"}
            assert failed == {f"{a}__runs[runs_8_15]"}
            assert not died.get_asset_materialization_events()
            starts = {e.step_key: e.pid for e in died.all_events if e.event_type_value == "STEP_START"}
            pids = [starts[f"{a}__runs[runs_0_7]"], starts[f"{a}__runs[runs_8_15]"]]
            assert len(set(pids)) == 2 and os.getpid() not in pids
            first_id = died.run_id
        # (the UI's re-execution copies the parent run's tags; execute_job takes them as given)
        with dg.execute_job(
            job,
            instance=instance,
            raise_on_error=False,
            tags=died.dagster_run.tags,
            reexecution_options=dg.ReexecutionOptions.from_failure(first_id, instance),
        ) as again:
            assert again.success
            ran = {e.step_key for e in again.all_events if e.event_type_value == "STEP_START"}
            assert ran == {f"{a}__runs[runs_8_15]", f"{a}__analyse"}
            md = _materialisation(again)
    _check_result(md, _reference(), folders)


# --- the release check -------------------------------------------------------------------------------


def test_a_release_needs_a_passing_audit_of_its_generator_version(folders):
    """Releases r-sound (made by an audited ε-DP generator), r-copies (made by a generator the
    audit proves non-private) and r-unaudited (a version never audited): only r-sound passes;
    the blocking check stops what is downstream of the others."""
    from privgate.dagster import PrivgateResource, build_audit_required_check, build_generator_audit
    from privgate.dagster.audit_example import EXAMPLE_DOMAIN, LaplaceHistogram

    made_by = {"r-sound": "sound", "r-copies": "copies", "r-unaudited": "never-audited"}
    generators = {"sound": LaplaceHistogram(0.1, EXAMPLE_DOMAIN), "copies": jobs.copying}
    audit = build_generator_audit(
        "gen_audit",
        generate_for=generators.__getitem__,
        real=jobs.tiny_real,
        claimed_epsilon=0.1,
        design="shared",
        runs=48,
        chunk_size=24,
        n_targets=3,
        training_rows=200,
        seed=0,
        versions=[*generators, "never-audited"],
    )
    releases = dg.StaticPartitionsDefinition(list(made_by))

    @dg.asset(partitions_def=releases)
    def release(context) -> dg.Output[pl.DataFrame]:
        version = made_by[context.partition_key]
        return dg.Output(pl.DataFrame({"x": [1, 2]}), metadata={"generator_version": version})

    @dg.asset(partitions_def=releases, deps=[release])
    def published() -> None:
        return None

    check = build_audit_required_check(release, audit, "generator_version")
    (spec,) = check.check_specs
    assert spec.blocking and [d.asset_key for d in spec.additional_deps] == [audit.key]  # lineage
    defs = dg.Definitions(
        assets=[audit, release, published],
        asset_checks=[check],
        resources={
            "privgate": PrivgateResource(
                real_path="unused", work_dir=str(folders["work"]), reports_dir=str(folders["reports"])
            ),
            "io_manager": dg.FilesystemIOManager(base_dir=str(folders["storage"])),
        },
        executor=dg.in_process_executor,
    )
    audit_job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={audit.key})
    release_job = dg.define_asset_job("release_job", selection=[release, published])
    release_job = dg.Definitions.merge(defs, dg.Definitions(jobs=[release_job])).resolve_job_def("release_job")
    spec_key = dg.AssetCheckKey(release.key, "generator_audit_passed")
    with _conf.fast_instance() as instance:
        audited = {
            v: _materialisation(audit_job.execute_in_process(instance=instance, partition_key=v)) for v in generators
        }
        assert audited["sound"]["verdict"] == "no violation found"
        assert audited["copies"]["verdict"] == "violation" and audited["copies"]["epsilon_lower"] > 0.1
        assert audited["sound"]["accepted"] is True and audited["copies"]["decision"] == "block"
        outcome = {}
        for rid in made_by:
            r = release_job.execute_in_process(instance=instance, partition_key=rid, raise_on_error=False)
            (ev,) = [e for e in r.get_asset_check_evaluations() if e.asset_check_key == spec_key]
            done = {e.asset_key.to_user_string() for e in r.get_asset_materialization_events()}
            outcome[rid] = (r.success, ev.passed, ev.severity, "published" in done, ev.description, ev.metadata)
    ok, passed, _, published_done, _, md = outcome["r-sound"]
    assert ok and passed and published_done and md["verdict"].value == "no violation found"
    for rid, why in (("r-copies", "the audit decided block"), ("r-unaudited", "has no audit")):
        ok, passed, severity, published_done, description, md = outcome[rid]
        assert not ok and not passed and not published_done, rid
        assert severity == dg.AssetCheckSeverity.ERROR and why in description, description
        assert description.startswith(f"release {rid}: ")
        assert md["generator_version"].value == made_by[rid]


def test_audit_passes_reads_the_recorded_decision():
    from privgate.dagster.audit_check import audit_passes

    base = {"epsilon_lower": 0.2, "claimed_epsilon": 1.0, "verdict": "no violation found"}
    assert audit_passes({**base, "decision": "pass", "accepted": True}) == (
        True,
        "the audit decided pass (ε lower bound 0.2, claimed ε 1.0; verdict: no violation found)",
    )
    assert audit_passes({**base, "decision": "warn", "accepted": True})[0] is True
    assert audit_passes({**base, "decision": "block", "accepted": False, "verdict": "violation"}) == (
        False,
        "the audit decided block (ε lower bound 0.2, claimed ε 1.0; verdict: violation)",
    )
    assert audit_passes({**base, "decision": "error", "accepted": False})[0] is False
    assert audit_passes(base) == (False, "the audit's materialisation carries no decision (fails closed)")


def test_factory_arguments_are_checked():
    from privgate.dagster import build_generator_audit

    with pytest.raises(dg.DagsterInvalidDefinitionError, match="exactly one of generate and generate_for"):
        build_generator_audit("a", real="r.parquet")
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="chunk_size must be a positive integer"):
        build_generator_audit("a", real="r.parquet", generate=jobs.copying, chunk_size=0)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="must be a Python identifier"):
        build_generator_audit("my audit", real="r.parquet", generate=jobs.copying)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="step_tags for unknown steps"):
        build_generator_audit("a", real="r.parquet", generate=jobs.copying, step_tags={"run": {}})
    # an upstream asset as the real data: the plan step's input
    audit = build_generator_audit("a", real=dg.AssetKey("real_data"), generate=jobs.copying)
    assert audit.keys_by_input_name == {"real": dg.AssetKey("real_data")}
    assert isinstance(audit.partitions_def, dg.DynamicPartitionsDefinition)
    assert audit.partitions_def.name == "a_versions"


def test_the_bundled_definitions_carry_the_example_audit(example):
    from privgate.dagster.audit_example import EXAMPLE_AUDIT, EXAMPLE_VERSIONS
    from privgate.dagster.definitions import AUDIT_EXAMPLE_JOB, build_definitions

    without = build_definitions(data_dir=example["root"], gate_config=example["gate"], executor="in_process", env={})
    assert dg.AssetKey(EXAMPLE_AUDIT) not in without.resolve_asset_graph().get_all_asset_keys()
    defs = build_definitions(
        data_dir=example["root"],
        gate_config=example["gate"],
        executor="in_process",
        env={"PRIVGATE_EXAMPLE_AUDIT": "1"},
    )
    dg.Definitions.validate_loadable(defs)
    job = defs.resolve_job_def(AUDIT_EXAMPLE_JOB)
    graph = job.graph.node_named(EXAMPLE_AUDIT).definition
    assert sorted(n.name for n in graph.nodes) == [
        f"{EXAMPLE_AUDIT}__analyse",
        f"{EXAMPLE_AUDIT}__plan",
        f"{EXAMPLE_AUDIT}__runs",
    ]
    assert job.partitions_def.get_partition_keys() == list(EXAMPLE_VERSIONS)


def test_helm_values_size_the_audit_steps_and_load_with_the_k8s_executor(example):
    """deploy/helm/values.yaml: the example audit is on in the user code, the run pod and every
    step pod (each builds the same job), its three ops have per-step pod resources under their
    real op names, and the Definitions load with the k8s executor."""
    import yaml

    pytest.importorskip("dagster_k8s", reason="dagster-k8s (extra 'k8s') not installed")
    from privgate.dagster.audit_example import EXAMPLE_AUDIT
    from privgate.dagster.definitions import AUDIT_EXAMPLE_JOB, build_definitions

    values = yaml.safe_load((HERE.parents[1] / "deploy" / "helm" / "values.yaml").read_text())
    (dep,) = values["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e["value"] for e in dep["env"]}
    ex = json.loads(env["PRIVGATE_K8S_EXECUTOR_CONFIG"])
    assert env["PRIVGATE_EXAMPLE_AUDIT"] == "1"
    assert "PRIVGATE_EXAMPLE_AUDIT=1" in ex["env_vars"]
    assert "PRIVGATE_EXAMPLE_AUDIT=1" in values["runLauncher"]["config"]["k8sRunLauncher"]["envVars"]
    defs = build_definitions(data_dir=example["root"], gate_config=example["gate"], env=env)
    dg.Definitions.validate_loadable(defs)
    assert defs.executor.name == "privgate_k8s_job_executor"
    job = defs.resolve_job_def(AUDIT_EXAMPLE_JOB)
    ops = {n.name for n in job.graph.node_named(EXAMPLE_AUDIT).definition.nodes}
    audit_keys = {k for k in ex["per_step_k8s_config"] if k.startswith(EXAMPLE_AUDIT)}
    assert audit_keys == ops == {f"{EXAMPLE_AUDIT}__{s}" for s in ("plan", "runs", "analyse")}
    for op in ops:
        limits = ex["per_step_k8s_config"][op]["container_config"]["resources"]["limits"]
        assert float(limits["cpu"]) >= 1 and limits["memory"].endswith("Gi")


def test_documented_audit_example_runs_and_blocks_a_leaky_generators_release(tmp_path, monkeypatch, real_frame):
    """docs/examples/dagster_generator_audit.py exactly as in docs/dagster.md: the audit of the
    resampling generator proves a violation, and the release's check blocks it."""
    import runpy

    example = HERE.parents[1] / "docs" / "examples" / "dagster_generator_audit.py"
    assert example.read_text() in (HERE.parents[1] / "docs" / "dagster.md").read_text()
    monkeypatch.chdir(tmp_path)
    real_frame.write_parquet("customers.parquet")
    defs = runpy.run_path(str(example))["defs"]
    dg.Definitions.validate_loadable(defs)
    job = defs.resolve_implicit_global_asset_job_def()
    with _conf.fast_instance() as instance:
        instance.add_dynamic_partitions("generator_audit_versions", ["2.3"])
        assert job.get_subset(asset_selection={dg.AssetKey("customers")}).execute_in_process(instance=instance).success
        audit = job.get_subset(asset_selection={dg.AssetKey("generator_audit")}).execute_in_process(
            instance=instance, partition_key="2.3"
        )
        md = _materialisation(audit)
        release = job.get_subset(asset_selection={dg.AssetKey("synthetic_customers")}).execute_in_process(
            instance=instance, raise_on_error=False
        )
    assert md["verdict"] == "violation" and md["epsilon_lower"] > 1.0 and md["runs"] == 200
    assert Path(md["audit_json"]).is_relative_to(tmp_path / "reports" / "audits" / "generator_audit" / "2.3")
    (ev,) = release.get_asset_check_evaluations()
    assert not release.success and ev.passed is False and ev.check_name == "generator_audit_passed"
    assert ev.description.startswith("the audit decided block") and "verdict: violation" in ev.description
