"""Making the generator runs of an audit: one run (train, sample, features) and many runs in this
process or on a pool of worker processes. Any other fan-out (Dagster's dynamic steps, Kubernetes
pods) calls :func:`make_run` on its share of the run numbers with the same plan: a run's training
set and seed depend on the plan and the run number alone, so every executor gives the same
features."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import AuditError, InputError, PrivgateError
from ..threads import limited, resolve_threads
from .features import FeatureSpace
from .plan import AuditPlan

Generate = Callable[[Any, int, int], Any]
Progress = Callable[[int, int], None]


@dataclass
class RunOutcome:
    """What one generator run gave: the features of every target on its release (None when it
    failed), seconds spent in the generator and in the features, the release's row count, and
    the failure (the exception's type; privgate's own messages too, which carry no values)."""

    run: int
    features: np.ndarray | None
    seconds_generate: float
    seconds_features: float
    release_rows: int = 0
    error: str | None = None
    #: the release broke the generator's contract (columns, dtypes): the audit cannot go on
    contract_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "features": None if self.features is None else self.features.tolist(),
                "seconds_generate": self.seconds_generate, "seconds_features": self.seconds_features,
                "release_rows": self.release_rows, "error": self.error, "contract_error": self.contract_error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunOutcome":
        feats = d.get("features")
        return cls(int(d["run"]), None if feats is None else np.asarray(feats, dtype=np.float64),
                   float(d["seconds_generate"]), float(d["seconds_features"]), int(d.get("release_rows", 0)),
                   d.get("error"), bool(d.get("contract_error", False)))


def describe_error(exc: BaseException) -> str:
    """An exception as a report may show it: privgate's own messages (they never quote values),
    otherwise the type alone (a library's message may quote training records)."""
    if isinstance(exc, PrivgateError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


def make_run(plan: AuditPlan, space: FeatureSpace, generate: Generate, run: int, *,
             targets_in: np.ndarray | None = None, threads: int = 1) -> RunOutcome:
    """Train and sample the generator for run ``run`` of ``plan`` (or with the targets
    ``targets_in``, for a preflight run) and compute every target's features on the release."""
    training = plan.training_frame(run, targets_in)
    seed = plan.generator_seed(run)
    start = time.perf_counter()
    try:
        with limited(threads):
            release = generate(training, plan.n_rows, seed)
    except Exception as exc:  # noqa: BLE001 - the generator's failure is a result of the run
        # the type alone: the generator is user code, and its message (privgate's own exception
        # types included, when the generator raises them) may quote a training record
        return RunOutcome(run, None, time.perf_counter() - start, 0.0, 0, type(exc).__name__)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit raised by the generator
        raise AuditError(f"the generator raised {type(exc).__name__} in run {run}: an audit whose generator "
                         "exits has no result") from None
    generated = time.perf_counter()
    try:
        frame = space.prepare(release, role=f"release of run {run}")
        with limited(threads):
            feats = space.features(frame)
    except InputError as exc:
        return RunOutcome(run, None, generated - start, time.perf_counter() - generated, 0, describe_error(exc),
                          contract_error=True)
    return RunOutcome(run, feats, generated - start, time.perf_counter() - generated, frame.height)


# ---------------------------------------------------------------- a pool of worker processes
_WORKER: dict[str, Any] = {}


def _die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the process that started it dies (even by SIGKILL),
    so an ended audit leaves no worker behind; elsewhere nothing (the pool's own pipes end it
    when it next reads)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)
    except (OSError, AttributeError):
        pass


def _init_worker(payload: bytes, threads: int) -> None:
    _die_with_parent()
    plan, space, generate = pickle.loads(payload)
    _WORKER.update(plan=plan, space=space, generate=generate, threads=threads)


def _started() -> bool:
    return True


def _worker_runs(runs: Sequence[int]) -> list[RunOutcome]:
    w = _WORKER
    return [make_run(w["plan"], w["space"], w["generate"], r, threads=w["threads"]) for r in runs]


def _worker_preflight(run: int, targets_in: np.ndarray) -> RunOutcome:
    w = _WORKER
    return make_run(w["plan"], w["space"], w["generate"], run, targets_in=targets_in, threads=w["threads"])


def isolated_run(plan: AuditPlan, space: FeatureSpace, generate: Generate, run: int, targets_in: np.ndarray, *,
                 threads: int = 1, deadline: float | None = None) -> RunOutcome:
    """One run (a preflight run with ``targets_in``) in a worker process of its own, so that a
    generator that ends its process (``os._exit``, a crash) or hangs ends this run, not the audit's
    process: the process ending is an :class:`AuditError`, so is ``deadline`` seconds passing. A
    generator that cannot be pickled runs here."""
    if not picklable(generate):
        return make_run(plan, space, generate, run, targets_in=targets_in, threads=threads)
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                               initargs=(pickle.dumps((plan, space, generate)), threads))
    finished = False
    try:
        fut = pool.submit(_worker_preflight, run, np.asarray(targets_in))
        try:
            out = fut.result(timeout=deadline)
        except BrokenProcessPool:
            raise AuditError("the generator ended its worker process on the preflight run (a crash or an exit "
                             "inside it): the audit has no result") from None
        except FuturesTimeout:
            raise AuditError(f"the preflight run did not finish within what was left of the audit's deadline "
                             f"({deadline:.1f} s); the worker process was ended") from None
        finished = True
        return out
    finally:
        if not finished:
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
        pool.shutdown(wait=finished, cancel_futures=True)


def picklable(generate: Generate) -> bool:
    """Whether ``generate`` can be sent to worker processes (a module-level function or an
    instance of a module-level class; not a lambda or a function defined inside another)."""
    try:
        pickle.dumps(generate)
        return True
    except Exception:  # noqa: BLE001 - any pickling failure means: run in this process
        return False


def execute(plan: AuditPlan, space: FeatureSpace, generate: Generate, runs: Sequence[int], *,
            workers: int | None = None, threads: int | None = None, progress: Progress | None = None,
            deadline: float | None = None) -> tuple[list[RunOutcome], dict[str, Any]]:
    """Make ``runs`` and return their outcomes in run order, with how they were executed.

    ``threads``: the run's thread budget (default $PRIVGATE_THREADS, else the free cores);
    ``workers``: processes (default: the budget; 1 without a deadline runs in this process).
    Each worker gets budget // workers threads (at least 1) for the generator's native
    libraries and the features. A generator that cannot be pickled runs in this process.

    ``deadline``: seconds the runs may take; then the worker processes are ended and an
    :class:`~privgate.errors.AuditError` says how many runs were made. A deadline needs worker
    processes (a run in this process cannot be stopped), so with one it uses at least one."""
    budget = resolve_threads(threads)
    n_workers = budget if workers is None else int(workers)
    if n_workers < 1:
        raise InputError(f"workers must be at least 1; got {workers!r}")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                 or not 0 < deadline < float("inf")):
        raise InputError(f"deadline must be a positive number of seconds; got {deadline!r}")
    n_workers = min(n_workers, max(len(runs), 1))
    how: dict[str, Any] = {"threads": budget}
    pool_wanted = n_workers > 1 or deadline is not None
    if pool_wanted and not picklable(generate):
        how["note"] = "the generator cannot be pickled (a lambda or a nested function): runs made in one process"
        if deadline is not None:
            how["note"] += "; its deadline cannot be enforced"
        n_workers, pool_wanted = 1, False
    per_worker = max(1, budget // n_workers)
    how.update(workers=n_workers, threads_per_worker=per_worker)
    runs = [int(r) for r in runs]
    if not pool_wanted:
        return _in_process(plan, space, generate, runs, per_worker, progress), how
    env_before = {k: os.environ.get(k) for k in _THREAD_VARS}
    os.environ.update({k: str(per_worker) for k in _THREAD_VARS})
    try:
        done = _on_pool(plan, space, generate, runs, n_workers, per_worker, progress, deadline)
    except _NoWorkers:
        # no worker could start (e.g. the main module cannot be re-imported): runs made here
        how["note"] = "no worker process could start: the runs were made in this process"
        how.update(workers=1, threads_per_worker=budget)
        done = _in_process(plan, space, generate, runs, budget, progress)
    finally:
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return done, how


class _NoWorkers(Exception):
    """The worker processes could not start."""


def _in_process(plan, space, generate, runs, threads, progress) -> list[RunOutcome]:
    done = []
    for r in runs:
        done.append(make_run(plan, space, generate, r, threads=threads))
        if progress is not None:
            progress(len(done), len(runs))
    return done


def _on_pool(plan, space, generate, runs, n_workers, per_worker, progress, deadline) -> list[RunOutcome]:
    """The runs on ``n_workers`` spawned processes, two runs a task (both workers stay busy to the
    end), results in run order; at ``deadline`` the processes are ended."""
    chunks = [runs[i:i + 2] for i in range(0, len(runs), 2)]
    payload = pickle.dumps((plan, space, generate))
    stop_at = None if deadline is None else time.monotonic() + float(deadline)
    results: dict[int, list[RunOutcome]] = {}
    pool = ProcessPoolExecutor(n_workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(payload, per_worker))
    finished = False
    try:
        try:
            pool.submit(_started).result(timeout=None if stop_at is None else max(stop_at - time.monotonic(), 0.1))
        except BrokenProcessPool:
            raise _NoWorkers() from None
        except FuturesTimeout:
            raise _deadline_error(deadline, 0, len(runs)) from None
        pending = {pool.submit(_worker_runs, chunk): i for i, chunk in enumerate(chunks)}
        n_done = 0
        while pending:
            left = None if stop_at is None else stop_at - time.monotonic()
            if left is not None and left <= 0:
                raise _deadline_error(deadline, n_done, len(runs))
            ready, _ = wait(list(pending), timeout=left, return_when=FIRST_COMPLETED)
            for fut in ready:
                i = pending.pop(fut)
                try:
                    results[i] = fut.result()
                except BrokenProcessPool:
                    # the generator ended its worker process: making the runs here would let it end this one
                    raise AuditError(f"a worker process died after {n_done} of {len(runs)} runs: the generator "
                                     "ended its process (a crash or an exit inside it); run it with workers=1 to "
                                     "see the failure") from None
                n_done += len(results[i])
                if progress is not None:
                    progress(n_done, len(runs))
        finished = True
    finally:
        if not finished:
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
        pool.shutdown(wait=finished, cancel_futures=True)
    return [o for i in range(len(chunks)) for o in results[i]]


def _deadline_error(deadline: float | None, n_done: int, n_runs: int) -> AuditError:
    return AuditError(f"the audit's runs did not finish within their deadline of {deadline:g} s ({n_done} of "
                      f"{n_runs} runs made); the worker processes were ended — raise the deadline, make fewer "
                      "runs or a faster generator")


# read by the native libraries of a generator when a worker process starts
_THREAD_VARS = ("PRIVGATE_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
