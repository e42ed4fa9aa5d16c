"""One release's evaluation split into steps by metric family (build_privgate_family_checks):
the same checks, results, history rows, reports and decision as the single check step, a failing
or dying family blocks the release, and it runs under the multiprocess executor."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from privgate.dagster.definitions import EVALUATE_JOB, build_definitions
from privgate.dagster.rule_checks import DECISION_CHECK


def _dagster_conftest():
    """tests/dagster/conftest.py as a module (a plain ``import conftest`` may find another
    folder's conftest when several test folders run together)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_privgate_dagster_conftest", Path(__file__).resolve().parent / "conftest.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_conf = _dagster_conftest()
GATE_YAML, fast_instance, run_release = _conf.GATE_YAML, _conf.fast_instance, _conf.run_release

RELEASE = dg.AssetKey("synthetic_release")
GRAPH = "privgate_synthetic_release"
# the test configuration plus nnaa: two families (re-identification, tracing)
FAMILY_GATE_YAML = GATE_YAML + "  nnaa:\n    threshold: {block: 0.9}\n"
HERE = Path(__file__).resolve().parent


def _defs(example, evaluation="by_family", **kw):
    example["gate"].write_text(FAMILY_GATE_YAML, encoding="utf-8")
    return build_definitions(
        data_dir=example["root"],
        gate_config=example["gate"],
        history_url=f"sqlite:///{example['history']}",
        executor="in_process",
        sensor_settle_seconds=0,
        evaluation=evaluation,
        env={},
        **kw,
    )


def _checks(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _materialized(result) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


# --- definitions ---------------------------------------------------------------------------------


def test_family_checks_are_the_single_step_checks_in_steps(example):
    example["gate"].write_text(FAMILY_GATE_YAML, encoding="utf-8")
    single = build_definitions(data_dir=example["root"], gate_config=example["gate"], executor="in_process", env={})
    split = _defs(example)
    keys = lambda d: set(d.resolve_asset_graph().asset_check_keys)  # noqa: E731
    assert keys(split) == keys(single) and dg.AssetCheckKey(RELEASE, DECISION_CHECK) in keys(split)
    job = split.resolve_job_def(EVALUATE_JOB)
    graph = job.graph.node_named(GRAPH).definition
    assert sorted(n.name for n in graph.nodes) == [f"{GRAPH}__gate", f"{GRAPH}__re_identification", f"{GRAPH}__tracing"]
    # the blocking checks' join gates the publication: published_release waits for it
    published = job.graph.dependency_structure.all_upstream_outputs_from_node("published_release")
    assert f"{GRAPH}" in {o.node.name for o in published}
    # the launchpad configuration of the single step works unchanged
    cfg = {"ops": {GRAPH: {"config": {"release_id": "x", "holdout_path": "h.parquet"}}}}
    assert job.run_config_schema.config_type is not None
    from dagster._core.system_config.objects import ResolvedRunConfig

    resolved = ResolvedRunConfig.build(job, cfg)
    assert resolved.ops[f"{GRAPH}.{GRAPH}__tracing"].config == {"release_id": "x", "holdout_path": "h.parquet"}
    dg.Definitions.validate_loadable(split)


def test_steps_tags_and_threads_are_checked(example):
    from privgate.dagster.family import build_privgate_family_checks
    from privgate.errors import ConfigError

    gate = example["gate"]
    gate.write_text(FAMILY_GATE_YAML, encoding="utf-8")
    k8s = {"dagster-k8s/config": {"container_config": {"resources": {"limits": {"cpu": "4"}}}}}
    (checks,) = build_privgate_family_checks(
        assets=[RELEASE],
        gate_config=gate,
        steps={"distance": ["re-identification"], "tracing": ["nnaa"]},
        step_tags={"tracing": k8s},
        step_threads={"tracing": 4},
    )
    ops = {n.name: n.definition for n in checks.node_def.nodes}
    assert json.loads(ops[f"{GRAPH}__tracing"].tags["dagster-k8s/config"]) == k8s["dagster-k8s/config"]
    assert set(ops) == {f"{GRAPH}__distance", f"{GRAPH}__tracing", f"{GRAPH}__gate"}
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=r"no step evaluates \['nnaa'\]"):
        build_privgate_family_checks(assets=[RELEASE], gate_config=gate, steps={"a": ["re-identification"]})
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="'nnaa' is in steps 'a' and 'b'"):
        build_privgate_family_checks(
            assets=[RELEASE], gate_config=gate, steps={"a": ["re-identification", "nnaa"], "b": ["nnaa"]}
        )
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="step_tags for unknown steps"):
        build_privgate_family_checks(assets=[RELEASE], gate_config=gate, step_tags={"trace": k8s})
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="identifier other than 'gate'"):
        build_privgate_family_checks(assets=[RELEASE], gate_config=gate, steps={"gate": ["tracing"]})
    with pytest.raises(ConfigError, match="PRIVGATE_EVALUATION"):
        build_definitions(data_dir=example["root"], gate_config=gate, env={"PRIVGATE_EVALUATION": "split"})
    with pytest.raises(ConfigError, match="PRIVGATE_STEP_THREADS"):
        build_definitions(
            data_dir=example["root"],
            gate_config=gate,
            env={"PRIVGATE_EVALUATION": "by_family", "PRIVGATE_STEP_THREADS": "[4]"},
        )


def test_helm_values_size_each_family_step(example):
    """deploy/helm/values.yaml: the evaluation is by family on the step pods too, the
    per-step resources name real op names of the job built from the shipped default
    configuration (and of every registry family), each family's thread budget is its pod's CPU
    limit, the steps' work folder is on the shared volume, and the executor accepts the config."""
    import yaml

    pytest.importorskip("dagster_k8s", reason="dagster-k8s (extra 'k8s') not installed")
    from dagster._config import process_config
    from dagster_k8s import k8s_job_executor

    from privgate.registry import FAMILIES

    values = yaml.safe_load((HERE.parents[1] / "deploy" / "helm" / "values.yaml").read_text())
    (dep,) = values["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e["value"] for e in dep["env"]}
    ex = json.loads(env["PRIVGATE_K8S_EXECUTOR_CONFIG"])
    assert process_config(k8s_job_executor.config_schema.config_type, ex).success
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]["envVars"]
    for var in ("PRIVGATE_EVALUATION", "PRIVGATE_WORK_DIR", "PRIVGATE_STEP_THREADS"):
        assert f"{var}={env[var]}" in ex["env_vars"], var  # the step pods build the same job
    for var in ("PRIVGATE_EVALUATION", "PRIVGATE_WORK_DIR"):
        assert f"{var}={env[var]}" in launcher, var
    assert env["PRIVGATE_EVALUATION"] == "by_family"
    assert env["PRIVGATE_WORK_DIR"].startswith(env["PRIVGATE_DAGSTER_DATA_DIR"] + "/")
    per_step = ex["per_step_k8s_config"]
    steps = {re.sub(r"[^A-Za-z0-9_]", "_", f) for f in FAMILIES}
    assert {k for k in per_step if k.startswith(GRAPH)} == {f"{GRAPH}__{s}" for s in steps | {"gate"}}
    threads = json.loads(env["PRIVGATE_STEP_THREADS"])
    assert set(threads) == steps
    for step, n in threads.items():
        limits = per_step[f"{GRAPH}__{step}"]["container_config"]["resources"]["limits"]
        assert float(limits["cpu"]) == n, step
    defs = build_definitions(data_dir=example["root"], env={**env, "PRIVGATE_EXECUTOR": "in_process"})
    job = defs.resolve_job_def(EVALUATE_JOB)
    ops = {n.name for n in job.graph.node_named(GRAPH).definition.nodes}
    assert ops == {f"{GRAPH}__re_identification", f"{GRAPH}__tracing", f"{GRAPH}__gate"} <= set(per_step)


def test_a_run_planning_some_checks_yields_only_those(example, instance):
    """The sensor's and the schedule's runs plan a subset of the checks: the by-family graph runs
    its steps once and reports only the planned checks; the release is published."""
    defs = _defs(example)
    planned = {
        dg.AssetCheckKey(RELEASE, n) for n in (DECISION_CHECK, "common_rows__threshold_block", "nnaa__threshold_block")
    }
    job = defs.resolve_job_def(EVALUATE_JOB).get_subset(
        asset_selection={RELEASE, dg.AssetKey("real_data"), dg.AssetKey("published_release")},
        asset_check_selection=planned,
    )
    instance.add_dynamic_partitions("releases", ["r-pass"])
    result = job.execute_in_process(instance=instance, partition_key="r-pass", raise_on_error=False)
    assert result.success
    assert {e.check_name for e in result.get_asset_check_evaluations()} == {k.name for k in planned}
    assert "published_release" in _materialized(result)


# --- same results as the single step -------------------------------------------------------------


def _normalised_checks(result, run_id: str) -> dict[str, tuple]:
    out = {}
    for name, ev in _checks(result).items():
        md = {
            k: v.value
            for k, v in ev.metadata.items()
            if k not in ("json_report", "html_report", "evaluation_steps", "privgate_run_id")
        }
        if "summary" in md:
            md["summary"] = md["summary"].replace(run_id, "RUN")
        out[name] = (ev.passed, ev.severity, ev.description, json.dumps(md, sort_keys=True, default=str))
    return out


def _report_json(path: str) -> dict:
    d = json.loads(Path(path).read_text())
    for k in ("run_id", "created_at", "seconds", "history"):
        d.pop(k, None)
    for r in d["results"].values():
        r.pop("seconds")
    for c in d["checks"]:
        c.pop("seconds")
    return d


def test_split_and_single_step_agree_on_the_bundled_example(tmp_path):
    """The bundled example (Adult sample, its holdout, the demo's leaky release, the shipped
    default configuration): the family steps and the single step give the same check results
    and metadata, the same score-history rows and the same JSON report, and the same decision."""
    from privgate.commands.demo import make_releases
    from privgate.data import example_path, load_example
    from privgate.history import HistoryStore

    release = make_releases(load_example("adult_sample"), seed=0)["release-2-leaky"]
    runs = {}
    with fast_instance() as instance:
        for mode in ("single", "by_family"):
            root = tmp_path / mode
            (root / "releases").mkdir(parents=True)
            release.write_parquet(root / "releases" / "leaky.parquet")
            url = f"sqlite:///{root / 'history.sqlite'}"
            defs = build_definitions(
                data_dir=root,
                real_path=example_path("adult_sample"),
                holdout_path=example_path("adult_holdout"),
                history_url=url,
                dataset="adult",
                executor="in_process",
                evaluation=mode,
                env={},
            )
            result = run_release(defs, instance, "leaky")
            decision = _checks(result)[DECISION_CHECK]
            run_id = decision.metadata["privgate_run_id"].value
            store = HistoryStore(url)
            try:
                scores = store.metric_history("adult").drop("run_id", "created_at", "seconds", strict=False)
                run_rows = store.runs("adult")
            finally:
                store.close()
            runs[mode] = {
                "success": result.success,
                "checks": _normalised_checks(result, run_id),
                "scores": scores,
                "decision": run_rows["decision"].to_list(),
                "report": _report_json(decision.metadata["json_report"].value),
                "materialized": _materialized(result),
                "work": sorted(p.name for p in (root / "work").glob("*/*")),
            }
    single, split = runs["single"], runs["by_family"]
    assert single["decision"] == split["decision"] == ["warn"]  # the leaky release warns
    assert single["checks"] == split["checks"]
    assert single["checks"][DECISION_CHECK][0] is not False
    assert single["report"] == split["report"]
    assert single["scores"].equals(split["scores"]) and single["scores"].height >= 8
    assert single["success"] and split["success"]
    assert "published_release" in split["materialized"]
    assert split["work"] == []  # the join removed the steps' files


# --- failing closed ------------------------------------------------------------------------------


def test_a_failing_family_step_blocks_the_release(example, instance, monkeypatch):
    """A family step whose evaluation raises records the failure; the join blocks the release
    (exit 3, recorded in the history), the family's rules are failed checks naming the step,
    and nothing is published."""
    import privgate.gates as gates
    from privgate.history import HistoryStore

    defs = _defs(example)
    real = gates.evaluate_for_gate

    def failing(cfg, *args, metrics=None, **kwargs):
        if metrics and "nnaa" in metrics:
            raise MemoryError("cannot allocate")
        return real(cfg, *args, metrics=metrics, **kwargs)

    monkeypatch.setattr(gates, "evaluate_for_gate", failing)
    result = run_release(defs, instance, "r-pass")
    assert not result.success
    checks = _checks(result)
    assert checks[DECISION_CHECK].passed is False
    assert checks["common_rows__threshold_block"].passed is True  # the other family decided
    nnaa = checks["nnaa__threshold_block"]
    assert nnaa.passed is False and "evaluation step 'tracing' stopped (MemoryError" in nnaa.description
    assert "published_release" not in _materialized(result)
    step = next(
        e
        for e in result.all_events
        if e.event_type_value == "STEP_OUTPUT" and e.step_key == f"{GRAPH}.{GRAPH}__tracing"
    )
    assert step is not None
    store = HistoryStore(f"sqlite:///{example['history']}")
    try:
        runs = store.runs("dagster-test")
    finally:
        store.close()
    assert runs["decision"].to_list() == ["block"] and runs["exit_code"].to_list() == [3]


def test_step_files_and_metadata_hold_no_real_value(example, instance, monkeypatch, real_frame):
    """What the family steps write for the join (kept here instead of deleted) and every
    metadata value of the run carry scores, counts and row positions only: no categorical value
    of the real data, no numeric value with five or more digits."""
    import privgate.dagster.family as family

    kept = []
    monkeypatch.setattr(family.shutil, "rmtree", lambda path, **kw: kept.append(Path(path)))
    result = run_release(_defs(example), instance, "r-block")
    assert not result.success
    (folder,) = kept
    files = sorted(folder.glob("*.json"))
    assert [f.stem for f in files] == ["re_identification", "tracing"]
    texts = [f.read_text() for f in files]
    for entry in instance.all_logs(result.run_id):
        data = getattr(entry.dagster_event, "event_specific_data", None)
        md = getattr(data, "asset_check_evaluation", None) or getattr(data, "metadata", None) and data
        for value in (getattr(md, "metadata", None) or {}).values():
            texts.append(str(getattr(value, "value", value)))
    text = "\n".join(texts)
    assert '"common_rows"' in text and "per_record_summary" in text
    values = set()
    for c, t in real_frame.schema.items():
        if t == pl.String:
            values |= {v for v in real_frame[c].drop_nulls().unique().to_list() if len(v) >= 4}
    assert values and not sorted(v for v in values if v in text)
    big = {
        str(int(v))
        for c, t in real_frame.schema.items()
        if t.is_numeric()
        for v in real_frame[c].drop_nulls().to_list()
        if abs(v) >= 10000
    }
    assert big and not (set(re.split(r"[^0-9]+", text)) & big)


def test_missing_step_results_block(example, instance, monkeypatch):
    """A join that finds no results of a step (e.g. a work_dir that is not shared between the
    step pods) blocks the release naming the step and the folder."""
    import privgate.dagster.family as family

    defs = _defs(example)
    real_write = family.write_partial

    def lost(folder, step, report, **kw):
        target = real_write(folder, step, report, **kw)
        if step == "re_identification":
            target.unlink()
        return target

    monkeypatch.setattr(family, "write_partial", lost)
    result = run_release(defs, instance, "r-pass")
    checks = _checks(result)
    assert not result.success and checks[DECISION_CHECK].passed is False
    msg = checks["common_rows__threshold_block"].description
    assert "evaluation step 're_identification' left no results" in msg
    assert checks["nnaa__threshold_block"].passed is True


# --- multiprocess executor -----------------------------------------------------------------------


@pytest.fixture
def mp_env(example, monkeypatch):
    """Environment of the bundled Definitions for tests/dagster/family_jobs.py (the step
    processes read it), evaluated by family on the multiprocess executor."""
    example["gate"].write_text(FAMILY_GATE_YAML, encoding="utf-8")
    env = {
        "PRIVGATE_DAGSTER_DATA_DIR": str(example["root"]),
        "PRIVGATE_GATE_CONFIG": str(example["gate"]),
        "PRIVGATE_HISTORY_URL": f"sqlite:///{example['history']}",
        "PRIVGATE_EVALUATION": "by_family",
        "PRIVGATE_EXECUTOR": "multiprocess",
        "PRIVGATE_MAX_CONCURRENT": "3",
        "PRIVGATE_SENSOR_STATUS": "stopped",
        "PRIVGATE_THREADS": "1",
        "PRIVGATE_STEP_THREADS": '{"tracing": 1}',
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.syspath_prepend(str(HERE))
    return example


def _execute(instance, release_id):
    """Store the release in process, then run only its checks under the multiprocess executor."""
    import family_jobs

    instance.add_dynamic_partitions("releases", [release_id])
    defs = build_definitions()
    stored = (
        defs.resolve_implicit_global_asset_job_def()
        .get_subset(asset_selection={RELEASE}, asset_check_selection=set())
        .execute_in_process(instance=instance, partition_key=release_id)
    )
    assert stored.success
    return dg.execute_job(
        dg.reconstructable(family_jobs.release_checks_job),
        instance=instance,
        tags={"dagster/partition": release_id},
        raise_on_error=False,
    )


def test_multiprocess_executor_runs_families_in_their_own_processes(mp_env, monkeypatch):
    """Under Dagster's multiprocess executor (a process per step) the family steps and the join
    run in separate processes and block a copied release; a family step whose process dies (like
    an OOM-killed pod) fails the run: the join does not run and nothing is recorded (the
    in-process tests show that a failed check step stops the publication)."""
    import os

    from privgate.history import HistoryStore

    with fast_instance() as instance:
        with _execute(instance, "r-block") as blocked:
            assert not blocked.success
            evs = {e.check_name: e for e in blocked.get_asset_check_evaluations()}
            assert evs[DECISION_CHECK].passed is False and evs["common_rows__threshold_block"].passed is False
            assert evs["nnaa__threshold_block"].passed is True
            starts = {e.step_key: e.pid for e in blocked.all_events if e.event_type_value == "STEP_START"}
            pids = [starts[f"{GRAPH}.{GRAPH}__{s}"] for s in ("re_identification", "tracing", "gate")]
            assert len(set(pids)) == 3 and os.getpid() not in pids
        monkeypatch.setenv("PRIVGATE_TEST_KILL_STEP", "nnaa")
        with _execute(instance, "r-pass") as died:
            assert not died.success
            failed = {e.step_key for e in died.all_events if e.event_type_value == "STEP_FAILURE"}
            assert f"{GRAPH}.{GRAPH}__tracing" in failed
            assert not died.get_asset_check_evaluations()  # the join did not run
    store = HistoryStore(f"sqlite:///{mp_env['history']}")
    try:
        runs = store.runs("dagster-test")
    finally:
        store.close()
    assert runs["release_id"].to_list() == ["r-block"] and runs["decision"].to_list() == ["block"]
