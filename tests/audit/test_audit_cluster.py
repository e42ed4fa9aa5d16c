"""The audit's generator runs on a real Dask cluster: a scheduler and two worker processes started
here, joining over TCP (tests/audit/local_dask.py). The result equals the local audit's bit for
bit; a worker killed mid-audit loses its runs, which the other worker makes again, the same."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from audit_helpers import GENERATOR_MODULE, work_folder
from local_dask import Exiting, Failing, Slowed, local_dask
from test_audit_soundness import DOMAIN, data

from privgate.audit import analyse_runs, audit_generator, execute, prepare_audit
from privgate.audit.cluster import execute_on_cluster, is_cluster
from privgate.audit.mechanisms import LaplaceHistogram
from privgate.errors import AuditError, InputError

pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")

OPTIONS = dict(design="shared", runs=24, n_targets=4, training_rows=150, claimed_epsilon=1.0, seed=5, looks=None)


@pytest.fixture(scope="module")
def cluster():
    with local_dask(n_workers=2) as c:
        yield c


def without_cost(result) -> dict:
    d = result.to_dict()
    d.pop("cost")
    return d


def same_outcomes(a, b) -> bool:
    return [o.run for o in a] == [o.run for o in b] and all(
        (x.features is None) == (y.features is None)
        and x.error == y.error
        and (x.features is None or x.features.tobytes() == y.features.tobytes())
        for x, y in zip(a, b)
    )


def test_audit_on_the_cluster_equals_the_local_audit_bit_for_bit(cluster):
    gen = LaplaceHistogram(1.0, DOMAIN, release="rounded", noise_factor=0.2)
    local = audit_generator(gen, data(seed=1), workers=1, threads=1, **OPTIONS)
    remote = audit_generator(
        gen, data(seed=1), executor=cluster.address.replace("tcp://", "dask://"), threads=1, **OPTIONS
    )
    assert without_cost(remote) == without_cost(local)
    assert remote.auc_lower > 0.2  # a leaky mechanism: the equality compares real numbers
    assert "Dask cluster" in remote.cost["note"] and remote.cost["workers"] == 2
    # and the runs' features themselves, bit for bit, against the local pool of processes
    prepared = prepare_audit(gen, data(seed=1), n_targets=4, design="shared", runs=24, training_rows=150, seed=5)
    runs = range(prepared.plan.n_runs)
    on_pool, _ = execute(prepared.plan, prepared.space, gen, runs, workers=2, threads=2)
    on_cluster, how = execute_on_cluster(cluster.address, prepared.plan, prepared.space, gen, runs)
    assert same_outcomes(on_cluster, on_pool)
    assert set(how["run_workers"]) == set(runs) and sum(how["runs_per_worker"].values()) == len(runs)


def test_a_generator_that_raises_is_a_failed_run_as_locally(cluster):
    prepared = prepare_audit(None, data(seed=2), n_targets=2, design="shared", runs=8, training_rows=100, seed=1)
    outcomes, _ = execute_on_cluster(cluster.address, prepared.plan, prepared.space, Failing(), range(4))
    assert [o.error for o in outcomes] == ["ZeroDivisionError"] * 4 and all(o.features is None for o in outcomes)


def test_a_killed_worker_loses_runs_that_the_other_makes_again_with_the_same_result():
    from distributed import Client

    gen = LaplaceHistogram(1.0, DOMAIN, release="rounded", noise_factor=0.2)
    slow = Slowed(gen, 0.4)
    prepared = prepare_audit(gen, data(seed=3), n_targets=4, design="shared", runs=16, training_rows=150, seed=7)
    runs = range(prepared.plan.n_runs)
    local, _ = execute(prepared.plan, prepared.space, gen, runs, workers=1, threads=1)
    with local_dask(n_workers=2) as c:
        names = c.worker_addresses()
        victim, survivor = names["w0"], names["w1"]
        lost: list[int] = []
        with Client(c.address, timeout=30, set_as_default=False) as watcher:

            def progress(done: int, total: int) -> None:
                if lost or done < 2:
                    return
                running = watcher.processing(workers=[victim])[victim]
                if not running:
                    return
                lost.extend(int(str(k).rsplit("-", 1)[-1]) for k in running if "-run-" in str(k))
                c.kill_worker("w0")

            outcomes, how = execute_on_cluster(c.address, prepared.plan, prepared.space, slow, runs, progress=progress)
    assert lost, "the worker was killed while it was making runs"
    assert c.workers["w0"].poll() is not None
    # the runs it was making were made again by the survivor; the outcomes are the local ones
    assert all(how["run_workers"][r] == survivor for r in lost)
    assert same_outcomes(outcomes, local)
    a = analyse_runs(prepared, outcomes, claimed_epsilon=1.0)
    b = analyse_runs(prepared, local, claimed_epsilon=1.0)
    assert without_cost(a) == without_cost(b)


def test_a_deadline_cancels_the_runs_not_made(cluster):
    prepared = prepare_audit(None, data(seed=2), n_targets=2, design="shared", runs=8, training_rows=100, seed=1)
    slow = Slowed(LaplaceHistogram(1.0, DOMAIN), 3.0)
    with pytest.raises(AuditError, match=r"deadline of 1 s \(0 of 8 runs made\)"):
        execute_on_cluster(cluster.address, prepared.plan, prepared.space, slow, range(8), deadline=1)


def test_a_generator_that_ends_every_worker_it_runs_on_stops_the_audit(cluster):
    # each death is a lost worker whose run is given to another; past allowed-failures it is the generator
    prepared = prepare_audit(None, data(seed=2), n_targets=2, design="shared", runs=8, training_rows=100, seed=1)
    with pytest.raises(AuditError, match="run 0 was on 4 workers that died"):
        execute_on_cluster(cluster.address, prepared.plan, prepared.space, Exiting(), [0])
    # the nannies restart their workers: the cluster is whole again
    from distributed import Client

    with Client(cluster.address, timeout=30, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=120)


def test_executor_names_are_checked():
    assert not is_cluster(None) and not is_cluster("local")
    assert is_cluster("dask://10.0.0.1:8786") and is_cluster("tcp://scheduler:8786")
    with pytest.raises(InputError, match="executor must be"):
        is_cluster("ray://head:10001")
    with pytest.raises(InputError, match="executor must be"):
        is_cluster(4)
    with pytest.raises(InputError, match="workers"):
        audit_generator(LaplaceHistogram(1.0, DOMAIN), data(), executor="dask://127.0.0.1:1", workers=2, runs=8)


def test_an_unreachable_scheduler_is_an_audit_error():
    from privgate.audit.cluster import connect

    with pytest.raises(AuditError, match="cannot reach the Dask scheduler at dask://127.0.0.1:9"):
        connect("dask://127.0.0.1:9", timeout=2)


def test_privgate_imports_without_distributed_and_the_executor_names_the_extra():
    code = (
        "import sys; sys.modules['distributed'] = None\n"
        "import privgate, privgate.audit\n"
        "from privgate.audit.cluster import connect\n"
        "try:\n    connect('dask://127.0.0.1:9')\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "pip install 'privgate[dask]'" in out.stdout


def test_the_cli_sends_a_generator_of_the_current_directory_and_decides_as_locally(cluster, tmp_path, monkeypatch):
    # the module is a file of the current directory, which the workers cannot import: it goes by value
    from privgate.cli import main

    work_folder(tmp_path, monkeypatch, data(seed=4), {"cluster_cli_gen.py": GENERATOR_MODULE})
    common = [
        "audit",
        "--real",
        "real.parquet",
        "--generator",
        "cluster_cli_gen:Noisy",
        "--generator-args",
        '{"scale": 0.01}',
        "--design",
        "shared",
        "--runs",
        "30",
        "--n-targets",
        "2",
        "--training-rows",
        "100",
        "--threads",
        "1",
        "--claimed-epsilon",
        "1",
        "--quiet",
        "--looks",
        "1",
    ]
    codes = [
        main([*common, "--workers", "1", "--json", "local.json"]),
        main([*common, "--executor", cluster.address.replace("tcp://", "dask://"), "--json", "cluster.json"]),
    ]
    reports = [json.loads((tmp_path / f).read_text()) for f in ("local.json", "cluster.json")]
    for r in reports:
        r["result"].pop("cost")
        r.pop("run_id", None)
        r.pop("recorded_at", None)
    assert codes[0] == codes[1] and reports[0]["result"]["auc_lower"] > 0  # a copy with tiny noise: evidence
    assert reports[0]["result"] == reports[1]["result"]


def test_dagster_run_steps_send_their_runs_to_the_cluster_with_the_local_result(cluster, tmp_path):
    dg = pytest.importorskip("dagster")
    from privgate.dagster import PrivgateResource, build_generator_audit

    gen = LaplaceHistogram(1.0, DOMAIN, release="rounded", noise_factor=0.2)
    settings = dict(design="shared", runs=16, n_targets=3, training_rows=150, claimed_epsilon=1.0, seed=2)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="executor must be"):
        build_generator_audit("bad", generate=gen, real=lambda: data(seed=6), executor="ray://head:1")
    audit = build_generator_audit(
        "cluster_audit",
        generate=gen,
        real=lambda: data(seed=6),
        chunk_size=8,
        versions=["v1"],
        generator_name="lap",
        run_threads=1,
        record=False,
        executor=cluster.address.replace("tcp://", "dask://"),
        **settings,
    )
    defs = dg.Definitions(
        assets=[audit],
        jobs=[dg.define_asset_job("cluster_audit_job", selection=[audit])],
        resources={
            "privgate": PrivgateResource(
                real_path="unused", work_dir=str(tmp_path / "work"), reports_dir=str(tmp_path / "reports")
            ),
            "io_manager": dg.FilesystemIOManager(base_dir=str(tmp_path / "storage")),
        },
        executor=dg.in_process_executor,
    )
    job = defs.resolve_job_def("cluster_audit_job")  # the job builds with the executor
    with dg.DagsterInstance.ephemeral() as instance:
        run = job.execute_in_process(instance=instance, partition_key="v1")
    assert run.success
    (event,) = run.get_asset_materialization_events()
    saved = json.loads(open(event.materialization.metadata["audit_json"].value).read())
    assert "Dask cluster" in saved["cost"]["note"]
    saved.pop("cost")
    ref = audit_generator(
        gen, data(seed=6), workers=1, threads=1, generator_name="lap", generator_version="v1", looks=None, **settings
    )
    assert saved == without_cost(ref)
