"""Partitioned test inputs for the sharded gate: three roles of mixed records written as Parquet
folders (several files, each one or more row groups), plus a wide free-text identifier per
record — a wide table, so that the whole table, not the interpreter, sets a local gate's memory
at a size whose searches take seconds."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import yaml

from privgate.gates import DEFAULT_CONFIG_PATH
from privgate.sharded.context import NOT_SHARDED


def records(n: int, seed: int, note_bytes: int = 0) -> pl.DataFrame:
    """``n`` records: two numerics, three categoricals (one constant numeric), and an identifier."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "age": rng.integers(18, 90, n).astype(float),
            "income": np.round(rng.lognormal(10, 1, n), 2),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice([f"r{i}" for i in range(12)], n),
            "plan": pl.Series([None if v == "-" else v for v in rng.choice(["a", "b", "c", "-"], n)], dtype=pl.String),
            "unit": np.full(n, 0.1),
            "note": [f"{seed}-{i}-" + "x" * note_bytes for i in range(n)],
        }
    )


def release(real: pl.DataFrame, n: int, seed: int, copies: float) -> pl.DataFrame:
    """A release of ``n`` records: fresh records, with ``copies`` of them exact copies of real ones."""
    fresh = records(n, seed, note_bytes=len(real["note"][0]) - len("1-0-"))
    k = round(copies * n)
    take = np.random.default_rng(seed + 100).choice(real.height, k, replace=False)
    return pl.concat([fresh[: n - k], real[np.sort(take)]])


def write_folder(frame: pl.DataFrame, folder: Path, files: int = 3, row_group: int | None = None) -> Path:
    """``frame`` as ``files`` Parquet files in ``folder`` (row groups of ``row_group`` records)."""
    folder.mkdir(parents=True, exist_ok=True)
    step = -(-frame.height // files)
    for i in range(files):
        pq.write_table(
            frame[i * step : (i + 1) * step].to_arrow(),
            folder / f"part-{i:02d}.parquet",
            row_group_size=row_group or step,
        )
    return folder


def sharded_default_gate(path: Path) -> Path:
    """The default gate without the metrics a sharded run cannot compute (written to ``path``)."""
    cfg = yaml.safe_load(Path(DEFAULT_CONFIG_PATH).read_text())
    cfg["metrics"] = {m: v for m, v in cfg["metrics"].items() if m not in NOT_SHARDED}
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


#: a test cluster's workers: one thread each, native pools held to one thread
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "POLARS_MAX_THREADS": "1", "PRIVGATE_THREADS": "1"}


@contextmanager
def local_cluster(workers: int = 3) -> Iterator[tuple]:
    """A real ``distributed.LocalCluster`` of ``workers`` single-thread worker processes and a
    client of it (not the default client)."""
    import distributed

    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_port=0,
        env=WORKER_ENV,
    ) as lc:
        with distributed.Client(lc, set_as_default=False) as c:
            yield lc, c


def close(a, b, tol: float = 1e-9) -> bool:
    """Whether two results' numbers (or tuples of them, or None) agree within ``tol`` relative."""
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return a is not None and b is not None and len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    return abs(a - b) <= tol * (1 + abs(a))


def assert_same_report(local, remote) -> None:
    """A sharded report gives the local report's metrics, no errors, and each metric's value, raw
    value, interval, baseline, excess and p-value within :func:`close`, with the same label-free
    view description."""
    assert remote.errors == local.errors == {}
    assert set(remote.results) == set(local.results)
    for name, a in local.results.items():
        b = remote.results[name]
        got = (b.value, b.raw, b.ci, b.baseline, b.baseline_ci, b.excess, b.excess_ci, b.p_value)
        want = (a.value, a.raw, a.ci, a.baseline, a.baseline_ci, a.excess, a.excess_ci, a.p_value)
        assert close(got, want), (name, got, want)
        assert b.details.get("label_free") == a.details.get("label_free"), name


class KillAfter:
    """A scheduler plugin (mixed with ``SchedulerPlugin`` by the test) that SIGKILLs the worker
    process which just finished the ``after``-th task whose key starts with ``prefixes``: a worker
    lost mid-run, with what it computed and held lost with it."""

    def __init__(self, pids: dict[str, int], after: int, prefixes: tuple[str, ...]) -> None:
        self.pids, self.after, self.prefixes, self.seen, self.killed = pids, after, prefixes, 0, None

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if self.killed or finish != "memory" or not str(key).startswith(self.prefixes):
            return
        self.seen += 1
        worker = kwargs.get("worker")
        if self.seen >= self.after and worker in self.pids:
            self.killed = worker
            os.kill(self.pids[worker], signal.SIGKILL)


def folders_of(tmp: Path, frames: dict[str, pl.DataFrame]) -> dict[str, str]:
    """Each role's frame written as a folder of three Parquet files under ``tmp``: the paths."""
    return {r: str(write_folder(f, tmp / r, files=3)) for r, f in frames.items()}


def sharded_context(client, folders: dict[str, str]):
    """A sharded context on the folders, as :func:`privgate.sharded.evaluate.evaluate_sharded`
    builds it (seed 0, default options)."""
    from privgate.options import RunOptions
    from privgate.sharded.context import ShardedContext
    from privgate.sharded.prepare import prepare_inputs
    from privgate.sharded.search import ShardedSearch, View

    inputs, found = prepare_inputs(client, {**{"holdout": None}, **folders})
    return ShardedContext(
        ShardedSearch(client, inputs),
        {r: View(r) for r in inputs.parts},
        seed=0,
        options=RunOptions(),
        column_report=found["coded"],
    )


def label_free_gates(client, tmp: Path, real: pl.DataFrame, synth: pl.DataFrame, holdout: pl.DataFrame):
    """(local outcome, sharded outcome) of the default gate cut to common_rows and the label-free
    metrics, on the frames in process and on folders of them on ``client``'s cluster."""
    from privgate.gates import DEFAULT_CONFIG_PATH, run_gate
    from privgate.metrics.label_free import LABEL_FREE_METRICS

    folders = folders_of(tmp, {"real": real, "synthetic": synth, "holdout": holdout})
    cfg = yaml.safe_load(Path(DEFAULT_CONFIG_PATH).read_text())
    cfg["metrics"] = {m: v for m, v in cfg["metrics"].items() if m in ("common_rows", *LABEL_FREE_METRICS)}
    path = tmp / "gate.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    local = run_gate(str(path), real, synth, holdout=holdout, record=False, threads=1)
    return local, sharded_gate(str(path), folders, client)


def sharded_gate(cfg, folders: dict[str, str], client, **kw):
    """One sharded run of the gate ``cfg`` on the partition folders (real, synthetic, holdout) on
    ``client``'s cluster (or a scheduler address), one thread, not recorded."""
    from privgate.gates import run_gate

    return run_gate(
        cfg,
        folders["real"],
        folders["synthetic"],
        holdout=folders["holdout"],
        record=False,
        threads=1,
        executor=client,
        sharded=True,
        **kw,
    )
