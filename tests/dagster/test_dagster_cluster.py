"""The Dagster checks of ``build_privgate_checks`` gating on a real Dask ``LocalCluster`` of three
worker processes, through ``PrivgateResource(executor=..., sharded=...)``: each metric family on a
worker (the release asset a frame), and partition by partition (real data, holdout and release
Parquet folders the workers read, the release asset's value the folder's path) — each check's
outcome, severity and metadata, and the recorded scores, equal to a local run's on the same
records. A sharded run given the release as a frame blocks, naming what it needs; the by-family
checks refuse the cluster settings they cannot honour.

The gate is the default one without the metrics a sharded run cannot compute yet
(``privgate.sharded.context.NOT_SHARDED``), so the test keeps its meaning as more are sharded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sharded"))

import dagster as dg  # noqa: E402
from sharded_data import records, release, sharded_default_gate, write_folder  # noqa: E402

from privgate.dagster import PrivgateResource, build_privgate_checks  # noqa: E402
from privgate.dagster.rule_checks import DECISION_CHECK  # noqa: E402
from privgate.history import HistoryStore  # noqa: E402

N = 1500
WORKER_LIMIT = 600 * 2**20
RELEASE_ID = "r1"
#: the largest relative difference allowed between a cluster's and a local score (docs/cluster.md)
TOL = 1e-9


@pytest.fixture(scope="module")
def cluster():
    """Three worker processes of one thread each, with a memory limit; closed after the module."""
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "POLARS_MAX_THREADS": "1", "PRIVGATE_THREADS": "1"}
    with distributed.LocalCluster(
        n_workers=3,
        threads_per_worker=1,
        processes=True,
        memory_limit=WORKER_LIMIT,
        dashboard_address=None,
        scheduler_port=0,
        env=env,
    ) as lc:
        yield lc


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The records as frames, as single Parquet files (the local and family runs) and as Parquet
    folders of several files (the sharded run), and the gate configuration."""
    tmp = tmp_path_factory.mktemp("dagster_cluster")
    real = records(N, 1)
    frames = {"real": real, "holdout": records(N, 3), "synthetic": release(real, N, 2, copies=0.01)}
    files = {}
    for role, frame in frames.items():
        files[role] = str(tmp / f"{role}.parquet")
        frame.write_parquet(files[role])
    folders = {r: str(write_folder(f, tmp / r, files=3)) for r, f in frames.items()}
    return {
        "frames": frames,
        "files": files,
        "folders": folders,
        "config": str(sharded_default_gate(tmp / "gate.yaml")),
        "tmp": tmp,
    }


def _dask_address(lc) -> str:
    """The cluster's scheduler as the resource names it: ``dask://host:port``."""
    return "dask://" + lc.scheduler_address.split("://", 1)[1]


def _transitions(lc) -> int:
    """How many task state transitions the cluster's scheduler has made."""
    with distributed.Client(lc, set_as_default=False) as client:
        return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def _gate(data, name: str, value, *, real: str, holdout: str, **settings) -> dict:
    """Materialise a release asset whose value is ``value`` with its privgate checks; the check
    evaluations by name and the history's record of the run."""

    @dg.asset(name=name)
    def release_asset():
        return value

    history = data["tmp"] / f"{name}.sqlite"
    checks = build_privgate_checks(assets=[release_asset], gate_config=data["config"])
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [release_asset, *checks],
            instance=instance,
            raise_on_error=False,
            run_config={"ops": {f"privgate_{name}": {"config": {"release_id": RELEASE_ID}}}},
            resources={
                "privgate": PrivgateResource(
                    real_path=real, holdout_path=holdout, history_url=f"sqlite:///{history}", threads=1, **settings
                )
            },
        )
        evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    store = HistoryStore(url=f"sqlite:///{history}")
    try:
        run = store.get_run(evaluations[DECISION_CHECK].metadata["privgate_run_id"].value)
    finally:
        store.close()
    return {"checks": evaluations, "run": run}


@pytest.fixture(scope="module")
def local(data):
    """The local run: the checks on the release frame, evaluated in this process."""
    return _gate(
        data, "local_release", data["frames"]["synthetic"], real=data["files"]["real"], holdout=data["files"]["holdout"]
    )


def _close(a, b) -> bool:
    return abs(a - b) <= TOL * (1 + abs(a))


def _same_outcome(cluster_run: dict, local_run: dict) -> None:
    """Every check with the local run's outcome, severity, description and metadata (the numbers
    as the checks show them), and the recorded scores within ``TOL``."""
    mine, theirs = cluster_run["checks"], local_run["checks"]
    assert set(mine) == set(theirs)
    skip = {"privgate_run_id", "summary"}  # the run's id; the summary table names it
    for name, local_check in theirs.items():
        check = mine[name]
        assert (check.passed, check.severity) == (local_check.passed, local_check.severity), name
        assert check.description == local_check.description, name
        numbers = {k: v.value for k, v in check.metadata.items() if k not in skip}
        assert numbers == {k: v.value for k, v in local_check.metadata.items() if k not in skip}, name
    ran, local_rec = cluster_run["run"], local_run["run"]
    assert (ran.decision, ran.exit_code) == (local_rec.decision, local_rec.exit_code)
    assert set(ran.metrics) == set(local_rec.metrics) and ran.metrics
    assert all(_close(ran.metrics[m], local_rec.metrics[m]) for m in local_rec.metrics), (
        ran.metrics,
        local_rec.metrics,
    )


def test_local_run_decides(local):
    """The reference run gates the release (not blocked by an error): the comparisons below are
    between runs that evaluated every metric."""
    assert local["run"].exit_code in (0, 1, 2), local["checks"][DECISION_CHECK].metadata
    assert local["run"].decision == local["checks"][DECISION_CHECK].metadata["decision"].value
    assert len(local["run"].metrics) >= 5


def test_family_mode_on_the_cluster_equals_local(data, cluster, local):
    """executor only: the release frame's metric families evaluated on the workers."""
    out = _gate(
        data,
        "family_release",
        data["frames"]["synthetic"],
        real=data["files"]["real"],
        holdout=data["files"]["holdout"],
        executor=_dask_address(cluster),
    )
    _same_outcome(out, local)


def test_sharded_checks_over_parquet_folders_equal_local(data, cluster, local):
    """executor + sharded: the release asset's value is the folder's path; the workers read the
    partitions of all three roles; the run's input digests are the local run's."""
    folders = data["folders"]
    out = _gate(
        data,
        "sharded_release",
        folders["synthetic"],
        real=folders["real"],
        holdout=folders["holdout"],
        executor=_dask_address(cluster),
        sharded=True,
    )
    _same_outcome(out, local)
    for role in ("real", "synthetic", "holdout"):
        assert out["run"].fingerprint[role]["content_sha256"] == local["run"].fingerprint[role]["content_sha256"]
        assert out["run"].fingerprint[role]["partitions"] == 3


def test_sharded_with_a_release_frame_blocks_naming_what_it_needs(data, cluster):
    """sharded=True while the release arrives as a frame: blocked (exit 3), never evaluated here,
    and refused before anything reaches the cluster (the scheduler made no task transition)."""
    folders = data["folders"]
    before = _transitions(cluster)
    out = _gate(
        data,
        "frame_release",
        data["frames"]["synthetic"],
        real=folders["real"],
        holdout=folders["holdout"],
        executor=_dask_address(cluster),
        sharded=True,
    )
    decision = out["checks"][DECISION_CHECK]
    assert not decision.passed
    assert decision.metadata["decision"].value == "block"
    text = " ".join(str(v.value) for v in decision.metadata.values())
    assert "in-memory DataFrame" in text and "Parquet file, a folder of them, a glob" in text, text
    assert out["run"].exit_code == 3 and not out["run"].metrics  # nothing was evaluated
    assert _transitions(cluster) == before


@pytest.mark.parametrize("sharded", [False, True])
def test_an_unreachable_scheduler_blocks_naming_the_address(data, monkeypatch, sharded):
    """A resource pointing at an address where no scheduler listens: the decision check fails
    (block, exit 3, recorded) naming the address, sharded or not, after the connection's timeout
    (shortened here), and no score is recorded."""
    import privgate.audit.cluster as audit_cluster

    monkeypatch.setattr(audit_cluster, "CONNECT_TIMEOUT", 1.0)
    monkeypatch.setattr(audit_cluster.connect, "__defaults__", (1.0,))
    folders = data["folders"]
    out = _gate(
        data,
        f"unreachable_{int(sharded)}",
        folders["synthetic"] if sharded else data["frames"]["synthetic"],
        real=folders["real"] if sharded else data["files"]["real"],
        holdout=folders["holdout"] if sharded else data["files"]["holdout"],
        executor="dask://127.0.0.1:9",
        sharded=sharded,
    )
    decision = out["checks"][DECISION_CHECK]
    assert not decision.passed and decision.metadata["decision"].value == "block"
    text = " ".join(str(v.value) for v in decision.metadata.values())
    assert "127.0.0.1:9" in text, text
    assert out["run"].exit_code == 3 and not out["run"].metrics


def test_by_family_checks_refuse_cluster_settings(data):
    """The by-family steps evaluate in their own Dagster steps: with a resource asking for a
    cluster each step fails naming why and the join blocks (exit 3, recorded), rather than
    evaluating elsewhere than asked."""
    from privgate.dagster import build_privgate_family_checks

    @dg.asset(name="family_steps_release")
    def release_asset():
        return data["frames"]["synthetic"]

    history = data["tmp"] / "family_steps.sqlite"
    checks = build_privgate_family_checks(assets=[release_asset], gate_config=data["config"])
    resource = PrivgateResource(
        real_path=data["files"]["real"],
        history_url=f"sqlite:///{history}",
        threads=1,
        sharded=True,
        work_dir=str(data["tmp"] / "work"),
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [release_asset, *checks], instance=instance, raise_on_error=False, resources={"privgate": resource}
        )
        evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    decision = evaluations[DECISION_CHECK]
    assert not decision.passed and decision.metadata["decision"].value == "block"
    text = " ".join(str(v.value) for v in decision.metadata.values())
    assert "apply to build_privgate_checks" in text, text
    store = HistoryStore(url=f"sqlite:///{history}")
    try:
        assert store.runs()["exit_code"].to_list() == [3]
    finally:
        store.close()


def test_resource_passes_where_to_evaluate_to_the_gate():
    resource = PrivgateResource(real_path="real.parquet", executor="dask://scheduler:8786", sharded=True)
    assert resource.run_options()["executor"] == "dask://scheduler:8786"
    assert resource.run_options()["sharded"] is True
    assert PrivgateResource(real_path="real.parquet").run_options()["executor"] is None
