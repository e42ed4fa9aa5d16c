"""The sharded gate on a real Dask ``LocalCluster`` of three worker processes, each with a memory
limit below the local gate's peak on the same records: the same decision, values and intervals
as the local gate; a worker killed mid-gate changes nothing; an unreadable partition and an
unreachable scheduler block (exit 3) naming the file and the address."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

distributed = pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parent))


from sharded_data import KillAfter, close, records, release, sharded_default_gate, sharded_gate, write_folder  # noqa: E402

from privgate.gates import run_gate  # noqa: E402
from privgate.sharded.context import NOT_SHARDED, SHARDED_METRICS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
N = 6000
NOTE_BYTES = 16000
WORKER_LIMIT = 600 * 2**20
#: the largest difference allowed between a sharded and a local number: the fit's moments are
#: merged from partitions (a few ulps from NumPy's one-pass mean and std), so distances differ in
#: their last bits; every comparison of distances is tolerant at 1e-9 (privgate.ties)
TOL = 1e-9

LOCAL_PEAK = """
import json, sys
import polars as pl
from privgate.gates import run_gate
folders = json.loads(sys.argv[1])
frames = {r: pl.read_parquet(folders[r] + "/*.parquet") for r in folders}
out = run_gate(sys.argv[2], frames["real"], frames["synthetic"], holdout=frames["holdout"], record=False, threads=1)
hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"exit": out.exit_code, "peak": hwm * 1024}))
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sharded")
    real = records(N, 1, NOTE_BYTES)
    holdout = records(N, 3, NOTE_BYTES)
    synth = release(real, N, 2, copies=0.01)
    folders = {
        r: str(write_folder(f, tmp / r, files=5))
        for r, f in (("real", real), ("synthetic", synth), ("holdout", holdout))
    }
    return {
        "frames": {"real": real, "synthetic": synth, "holdout": holdout},
        "folders": folders,
        "config": str(sharded_default_gate(tmp / "gate.yaml")),
        "tmp": tmp,
    }


@pytest.fixture(scope="module")
def cluster():
    import dask

    env = {
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "POLARS_MAX_THREADS": "1",
        "PRIVGATE_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
    }
    # no pause or spill: the limit is the memory each worker may reach (the nanny restarts a worker
    # past 95 % of it, which the test would see as a changed worker)
    with dask.config.set(
        {
            "distributed.worker.memory.pause": False,
            "distributed.worker.memory.spill": False,
            "distributed.worker.memory.target": False,
        }
    ):
        with distributed.LocalCluster(
            n_workers=3,
            threads_per_worker=1,
            processes=True,
            memory_limit=WORKER_LIMIT,
            dashboard_address=None,
            scheduler_port=0,
            env=env,
            local_directory=None,
        ) as lc:
            with distributed.Client(lc, set_as_default=False) as client:
                yield lc, client


@pytest.fixture(scope="module")
def gated(inputs, cluster):
    """The sharded gate of the inputs, on the cluster as started (and the workers it ran on)."""
    _, client = cluster
    before = set(client.scheduler_info(n_workers=-1)["workers"])
    out = sharded_gate(inputs["config"], inputs["folders"], client)
    return out, before, set(client.scheduler_info(n_workers=-1)["workers"]), client.run(_peak)


def _peak() -> int:
    """This process's peak resident memory, bytes: VmHWM, which starts anew with the program (Linux
    carries ru_maxrss over an exec from the process that forked it — here the test process)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024


def _numbers(outcome) -> dict:
    return {
        n: (r.value, r.raw, r.ci, r.baseline, r.baseline_ci, r.excess, r.excess_ci, r.p_value)
        for n, r in outcome.report.results.items()
    }


def test_the_sharded_gate_equals_the_local_gate_on_workers_smaller_than_its_peak(inputs, gated):
    peak = subprocess.Popen(
        [sys.executable, "-c", LOCAL_PEAK, json.dumps(inputs["folders"]), inputs["config"]],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PRIVGATE_THREADS": "1"},
    )
    remote, before, after, worker_peaks = gated
    f = inputs["frames"]
    local = run_gate(inputs["config"], f["real"], f["synthetic"], holdout=f["holdout"], record=False, threads=1)
    measured = json.loads(peak.communicate(timeout=120)[0].strip().splitlines()[-1])
    assert after == before  # no worker restarted past its limit
    assert len(before) == 3 and WORKER_LIMIT < measured["peak"], measured
    assert max(worker_peaks.values()) < WORKER_LIMIT, (worker_peaks, measured)
    print(
        f"local gate peak {measured['peak'] / 2**20:.0f} MiB; worker limit {WORKER_LIMIT / 2**20:.0f} MiB; "
        f"worker peaks {sorted(round(v / 2**20) for v in worker_peaks.values())} MiB"
    )
    assert measured["exit"] == local.exit_code == remote.exit_code == 1  # 1 % copies: common_rows warns
    assert remote.report.errors == {} and set(remote.report.results) == set(local.report.results)
    # every sharded metric of the default gate (label_free_authenticity's rules apply without a
    # holdout only: test_sharded_label_free.py gates it)
    assert set(SHARDED_METRICS) - {"label_free_authenticity"} <= set(remote.report.results)
    assert remote.report.params["sharded"]["partitions"] == {"real": 5, "synthetic": 5, "holdout": 5}
    mine, theirs = _numbers(remote), _numbers(local)
    assert {n: v for n, v in mine.items() if not close(v, theirs[n])} == {}
    assert [(c.metric, c.rule, c.verdict) for c in remote.checks] == [
        (c.metric, c.rule, c.verdict) for c in local.checks
    ]
    # the same input digests as the local gate's, made from row hashes on the workers
    assert {r: remote.fingerprint[r]["content_sha256"] for r in f} == {
        r: local.fingerprint[r]["content_sha256"] for r in f
    }
    assert local.report.results["identifier_reuse"].details["identifier_columns"] == ["note"]
    assert remote.report.results["identifier_reuse"].value == local.report.results["identifier_reuse"].value > 0


def test_a_worker_killed_mid_gate_has_its_shards_recomputed(inputs, cluster, gated):
    from distributed.diagnostics.plugin import SchedulerPlugin

    lc, client = cluster
    expected = gated[0]  # the cluster's scheduler runs here: the plugin is added to it
    pids = client.run(os.getpid)
    killer = type("Killer", (KillAfter, SchedulerPlugin), {})(pids, after=40, prefixes=("pair_task", "block_task"))
    lc.scheduler.add_plugin(killer, name="privgate-test-killer")
    try:
        out = sharded_gate(inputs["config"], inputs["folders"], client)
    finally:
        lc.scheduler.remove_plugin(name="privgate-test-killer")
    assert killer.killed is not None and killer.seen < expected.report.params["sharded"]["search_tasks"]
    assert killer.killed not in client.scheduler_info(n_workers=-1)["workers"]  # that process is gone
    assert out.exit_code == expected.exit_code == 1
    assert _numbers(out) == _numbers(expected)


def test_a_partition_no_worker_can_read_blocks_naming_the_file(inputs, cluster):
    _, client = cluster
    broken = inputs["tmp"] / "broken"
    write_folder(inputs["frames"]["synthetic"].head(300), broken, files=2)
    (broken / "part-01.parquet").write_bytes(b"PAR1 not a parquet file")
    folders = {**inputs["folders"], "synthetic": str(broken)}
    out = sharded_gate(inputs["config"], folders, client)
    assert out.exit_code == 3
    messages = " ".join(c.message for c in out.checks if c.rule == "error")
    assert "part-01.parquet" in messages and "synthetic" in messages
    # and the worker that tried, whose paths they are
    assert any(f"on worker {w}" in messages for w in client.scheduler_info(n_workers=-1)["workers"]), messages


def test_an_unreachable_scheduler_blocks_naming_the_address(inputs, monkeypatch):
    import privgate.audit.cluster as audit_cluster

    monkeypatch.setattr(audit_cluster, "CONNECT_TIMEOUT", 1.0)
    monkeypatch.setattr(audit_cluster.connect, "__defaults__", (1.0,))
    out = sharded_gate(inputs["config"], inputs["folders"], "dask://127.0.0.1:9")
    assert out.exit_code == 3
    assert any("127.0.0.1:9" in c.message for c in out.checks if c.rule == "error")


def test_the_cli_gates_sharded_only_on_a_cluster(inputs, capsys):
    from privgate.cli import main

    f = inputs["folders"]
    common = [
        "gate",
        "--real",
        f["real"],
        "--synthetic",
        f["synthetic"],
        "--holdout",
        f["holdout"],
        "--config",
        inputs["config"],
        "--release-id",
        "r",
        "--no-history",
        "--quiet",
        "--sharded",
    ]
    assert main(common) == 3  # no executor: a sharded gate runs on a cluster
    assert "a sharded gate runs on a Dask cluster" in capsys.readouterr().out


def test_the_default_gate_is_sharded_whole():
    """Every metric the shipped default gate asks for is computed on a cluster."""
    from privgate.gates import default_gate_config

    assert set(default_gate_config().metrics) <= set(SHARDED_METRICS)
    assert not NOT_SHARDED


def test_a_metric_not_sharded_is_refused_before_anything_is_read_naming_it(inputs, cluster):
    _, client = cluster
    cfg = yaml.safe_load(Path(inputs["config"]).read_text())
    cfg["metrics"]["close_values"] = {"threshold": {"warn": 0.99, "block": 0.999}}
    path = inputs["tmp"] / "with_close_values.yaml"
    path.write_text(yaml.safe_dump(cfg))
    missing = {r: str(inputs["tmp"] / "nowhere" / r) for r in ("real", "synthetic", "holdout")}
    out = sharded_gate(str(path), missing, client)  # the paths are never opened
    assert out.exit_code == 3 and out.report is None
    [check] = [c for c in out.checks if c.rule == "error"]
    assert "nothing was evaluated" in check.message
    named = set(re.findall(r"(\w+) cannot be evaluated sharded", check.message))
    assert named == {"close_values"}


def test_a_search_failing_on_the_cluster_blocks_naming_the_metric_and_no_value(inputs, cluster, monkeypatch):
    """A failure that is not privgate's own (a worker's exception, workers lost past the retries)
    is that metric's error: the gate blocks, naming the metric and the exception's type — not
    its text, which may quote a record."""
    from privgate.sharded.search import ShardedSearch

    _, client = cluster
    secret = inputs["frames"]["real"]["note"][0][:20]

    def fails(self, *args, **kwargs):
        raise RuntimeError(f"a worker quoting a record: {secret}")

    monkeypatch.setattr(ShardedSearch, "knn", fails)
    out = sharded_gate(inputs["config"], inputs["folders"], client)
    assert out.exit_code == 3
    messages = " ".join(c.message for c in out.checks if c.rule == "error")
    assert "RuntimeError (message withheld" in messages and secret not in messages, messages
    assert out.report is not None and "a worker quoting" not in json.dumps(out.report.errors)
    for m in ("memorisation", "authenticity", "identifiability", "median_dcr", "nnaa"):
        assert f"metric {m!r} failed: RuntimeError" in out.report.errors[m]
