"""A real Dask cluster on this machine for the tests and benchmarks: one ``dask scheduler`` and
``n`` ``dask worker`` processes, each started as its own subprocess in its own process group,
joining over TCP on 127.0.0.1 as separate machines would. Everything is killed on exit, even
when the block failed. Also a slowed generator (a module, so the workers can import it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
START_TIMEOUT = 90.0


@dataclass
class LocalDask:
    """The running cluster: the scheduler's address, the processes and the workers' addresses
    by name."""

    address: str
    scheduler: subprocess.Popen
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: Path | None = None

    def worker_addresses(self) -> dict[str, str]:
        """Worker name → its address, as the scheduler knows them."""
        from distributed import Client

        with Client(self.address, timeout=30, set_as_default=False) as c:
            info = c.scheduler_info(n_workers=-1)["workers"]
        return {w["name"]: addr for addr, w in info.items()}

    def kill_worker(self, name: str) -> None:
        """SIGKILL worker ``name`` and its nanny (its whole process group), as a machine lost."""
        _kill_group(self.workers[name])


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
        pass


def _env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(REPO), str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(PRIVGATE_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


@contextmanager
def local_dask(n_workers: int = 2, nthreads: int = 1) -> Iterator[LocalDask]:
    """Start the scheduler and ``n_workers`` workers of ``nthreads`` threads; yield the cluster
    once every worker has joined; kill every process group on exit."""
    tmp = Path(tempfile.mkdtemp(prefix="privgate-dask-"))
    sched_file = tmp / "scheduler.json"
    env = _env()
    procs: list[subprocess.Popen] = []

    def start(args: list[str], log: str) -> subprocess.Popen:
        out = open(tmp / log, "wb")
        p = subprocess.Popen(
            [sys.executable, "-m", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=tmp,
        )
        procs.append(p)
        return p

    try:
        sched = start(
            [
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
                # if this process is killed before it can end them: the workers end when the
                # scheduler is gone (--death-timeout), the scheduler once idle this long
                "--idle-timeout",
                "900",
            ],
            "scheduler.log",
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not sched_file.exists() or sched_file.stat().st_size == 0:
            if sched.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Dask scheduler did not start: {(tmp / 'scheduler.log').read_text()[-2000:]}")
            time.sleep(0.1)
        import json

        time.sleep(0.2)  # the file is written whole
        address = json.loads(sched_file.read_text())["address"]
        cluster = LocalDask(address, sched, logs=tmp)
        for i in range(n_workers):
            cluster.workers[f"w{i}"] = start(
                [
                    "distributed.cli.dask_worker",
                    address,
                    "--name",
                    f"w{i}",
                    "--host",
                    "127.0.0.1",
                    "--nthreads",
                    str(nthreads),
                    "--nworkers",
                    "1",
                    "--no-dashboard",
                    "--death-timeout",
                    "60",
                    "--local-directory",
                    str(tmp / f"w{i}"),
                ],
                f"w{i}.log",
            )
        from distributed import Client

        with Client(address, timeout=START_TIMEOUT, set_as_default=False) as c:
            c.wait_for_workers(n_workers, timeout=START_TIMEOUT)
        yield cluster
    finally:
        for p in reversed(procs):
            _kill_group(p)


class Slowed:
    """A generator that takes at least ``seconds`` per run: ``inner``'s release after a sleep
    (a stand-in for a generator whose fit is slow, so the runs dominate their overhead)."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner = inner
        self.seconds = float(seconds)

    def __call__(self, training: Any, n_rows: int, seed: int) -> Any:
        time.sleep(self.seconds)
        return self.inner(training, n_rows, seed)


class Failing:
    """A generator that always raises (its runs are failed runs of the audit)."""

    def __call__(self, training: Any, n_rows: int, seed: int) -> Any:
        return 1 / 0


class Exiting:
    """A generator that ends its process (as a crash or the out-of-memory killer would)."""

    def __call__(self, training: Any, n_rows: int, seed: int) -> Any:
        os._exit(17)
