"""A gate's metric families evaluated on a real Dask cluster (a scheduler and two worker
processes joining over TCP, tests/audit/local_dask.py): the same results and decision as the
local run, through run_gate and the CLI; a scheduler that cannot be reached blocks the release."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))

from local_dask import local_dask  # noqa: E402
from test_split_evaluation import CFG, frames  # noqa: E402,F401 - the split evaluation's config and frames

from privgate.cli import main  # noqa: E402
from privgate.gates import run_gate  # noqa: E402
from privgate.gates.cluster import families_of  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with local_dask(n_workers=2) as c:
        yield c


def _numbers(outcome) -> dict:
    return {n: (r.value, r.raw, r.ci, r.baseline, r.excess) for n, r in outcome.report.results.items()}


def test_the_gate_on_the_cluster_equals_the_local_gate(cluster, frames):
    real, synth, holdout = frames
    local = run_gate(CFG, real, synth, holdout=holdout, record=False, threads=1)
    remote = run_gate(
        CFG,
        real,
        synth,
        holdout=holdout,
        record=False,
        threads=1,
        executor=f"dask://{cluster.address.split('://', 1)[1]}",
    )
    assert len(families_of(list(local.report.results))) >= 3  # more than one task was sent
    assert remote.exit_code == local.exit_code == 2
    assert _numbers(remote) == _numbers(local)
    assert [(c.metric, c.rule, c.verdict) for c in remote.checks] == [
        (c.metric, c.rule, c.verdict) for c in local.checks
    ]


def test_the_cli_gates_on_the_cluster_as_locally(cluster, frames, tmp_path):
    real, synth, holdout = frames
    for name, frame in (("real", real), ("synth", synth), ("holdout", holdout)):
        frame.write_parquet(tmp_path / f"{name}.parquet")
    common = [
        "gate",
        "--real",
        str(tmp_path / "real.parquet"),
        "--synthetic",
        str(tmp_path / "synth.parquet"),
        "--holdout",
        str(tmp_path / "holdout.parquet"),
        "--release-id",
        "r",
        "--no-history",
        "--quiet",
        "--threads",
        "1",
    ]
    (tmp_path / "cfg.yaml").write_text(
        "version: 1\ndataset: split\nseed: 3\nmetrics:\n  common_rows: {threshold: {warn: 0.02, block: 0.3}}\n"
        "  memorisation: {threshold: {when: with_holdout, 'on': lower, warn: 0.0, block: 0.01}}\n"
    )
    cfg = ["--config", str(tmp_path / "cfg.yaml")]
    assert main(common + cfg + ["--executor", cluster.address]) == main(common + cfg) == 2


def test_a_scheduler_that_cannot_be_reached_blocks_the_release(frames, monkeypatch):
    import privgate.gates.cluster as gate_cluster
    from privgate.errors import AuditError

    def unreachable(executor, timeout=30.0):
        raise AuditError(f"cannot reach the Dask scheduler at {executor} within {timeout:g} s (OSError)")

    monkeypatch.setattr(gate_cluster, "connect", unreachable)
    real, synth, holdout = frames
    out = run_gate(CFG, real, synth, holdout=holdout, record=False, executor="dask://127.0.0.1:9")
    assert out.exit_code == 3 and any("Dask scheduler" in c.message for c in out.checks if c.rule == "error")


def test_an_executor_that_is_no_cluster_address_blocks_naming_it(frames):
    real, synth, holdout = frames
    out = run_gate(CFG, real, synth, holdout=holdout, record=False, executor="spark://somewhere")
    assert out.exit_code == 3
    assert any(
        "executor must be 'local', a Dask scheduler address" in c.message for c in out.checks if c.rule == "error"
    )
    local = run_gate(CFG, real, synth, holdout=holdout, record=False, executor="local")
    assert local.exit_code == 2  # "local" evaluates here
