"""Making the generator runs of an audit: one run (:func:`make_run`: train, sample, features;
defined in :mod:`privgate.audit.single_run`) and many (:class:`Runs`,
:func:`execute`) on worker processes under the audit's deadline. Any other fan-out (Dagster's
dynamic steps, Kubernetes pods) calls :func:`make_run` on its share of the run numbers with the
same plan: a run's training set and seed depend on the plan and the run number alone, so every
executor gives the same features."""

from __future__ import annotations

import os
import pickle
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import AuditError, InputError
from ..threads import resolve_threads
from .features import FeatureSpace
from .limits import MAX_WORKERS, Clock
from .plan import AuditPlan
from .single_run import Generate, GeneratorExited, Progress, RunOutcome, make_run
from .workers import THREAD_VARS as _THREAD_VARS
from .workers import Pool, WorkerDied


# ---------------------------------------------------------------- making many runs
class Runs:
    """How one audit makes its generator runs, phase after phase (preflight, then the design's
    runs), under one deadline: on worker processes (:mod:`privgate.audit.workers`: forked from a
    fork server, else spawned), or in this process when the generator cannot be pickled or no
    worker can start.

    ``threads``: the audit's thread budget (default $PRIVGATE_THREADS, else the free cores);
    ``workers``: processes (default: the budget), each given budget // workers threads (at least 1)
    for the generator's native libraries and the features; ``deadline``: seconds (default
    :data:`privgate.audit.limits.DEFAULT_DEADLINE`) or a :class:`~privgate.audit.limits.Clock`
    already running. The first worker starts at once and imports the generator while the audit
    plans. Use as a context manager: leaving it ends every worker (killed when leaving on an
    error, the deadline or an interrupt)."""

    def __init__(
        self,
        generate: Generate,
        *,
        workers: int | None = None,
        threads: int | None = None,
        deadline: float | Clock | None = None,
    ) -> None:
        self.clock = deadline if isinstance(deadline, Clock) else Clock(deadline)
        budget = resolve_threads(threads)
        n_workers = budget if workers is None else workers
        if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
            raise InputError(f"workers must be a positive integer; got {workers!r}")
        if n_workers > MAX_WORKERS:
            raise InputError(f"workers must be at most {MAX_WORKERS:,}; got {int(n_workers):,}")
        self.generate = generate
        self.how: dict[str, Any] = {"threads": budget}
        self.pool: Pool | None = None
        self._phase = 0
        try:
            payload = pickle.dumps(generate)
        except Exception:  # noqa: BLE001 - any pickling failure means: runs in this process
            payload = None
            self.how["note"] = (
                "the generator cannot be pickled (a lambda or a nested function): runs made in this "
                "process, the deadline checked between runs only"
            )
        if payload is None:
            self.how.update(workers=1, threads_per_worker=budget)
            return
        per_worker = max(1, budget // int(n_workers))
        self.how.update(workers=0, threads_per_worker=per_worker)
        self.pool = Pool(int(n_workers), per_worker, payload)
        self._grow(1)
        if not self.pool.workers:
            self._without_workers()

    def __enter__(self) -> "Runs":
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        self.close(kill=kind is not None)

    def close(self, kill: bool = False) -> None:
        """End the workers: asked to exit, or killed (``kill``)."""
        if self.pool is not None:
            self.pool.close(kill)
            self.pool = None

    def make(
        self,
        plan: AuditPlan,
        space: FeatureSpace,
        runs: Sequence[int],
        *,
        targets_in: Mapping[int, Sequence[int]] | None = None,
        progress: Progress | None = None,
    ) -> list[RunOutcome]:
        """Make ``runs`` of ``plan`` (run r with the targets ``targets_in[r]`` when given: a
        preflight run) and return their outcomes in the order of ``runs``."""
        requests = [
            (
                int(r),
                None
                if targets_in is None or int(r) not in targets_in
                else np.asarray(targets_in[int(r)], dtype=np.int64),
            )
            for r in runs
        ]
        if self.pool is not None:
            try:
                return self._on_pool(plan, space, requests, progress)
            except _NoWorkers:
                self._without_workers()
        return self._in_process(plan, space, requests, progress)

    def _without_workers(self) -> None:
        self.close(kill=True)
        self.how.update(
            workers=1,
            threads_per_worker=self.how["threads"],
            note="no worker process could start: the runs were made in this process, the deadline "
            "checked between runs only",
        )

    def _deadline_error(self, n_done: int, n_runs: int) -> AuditError:
        return AuditError(
            f"the audit's runs did not finish within their deadline of {self.clock.seconds:g} s "
            f"({n_done} of {n_runs} runs made); the worker processes were ended — raise the "
            "deadline, make fewer runs or a faster generator"
        )

    def _in_process(self, plan, space, requests, progress) -> list[RunOutcome]:
        done = []
        for run, targets_in in requests:
            if self.clock.left() <= 0:
                raise self._deadline_error(len(done), len(requests))
            done.append(
                make_run(plan, space, self.generate, run, targets_in=targets_in, threads=self.how["threads_per_worker"])
            )
            if progress is not None:
                progress(len(done), len(requests))
        return done

    def _grow(self, n: int) -> None:
        """Start workers up to ``n``, with the thread variables their native libraries read."""
        assert self.pool is not None
        env_before = {k: os.environ.get(k) for k in _THREAD_VARS}
        os.environ.update({k: str(self.pool.threads) for k in _THREAD_VARS})
        try:
            self.pool.grow(n)
        except Exception:  # noqa: BLE001 - the platform refused a process: go on with those started
            pass
        finally:
            for k, v in env_before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.how["workers"] = len(self.pool.workers)

    def _on_pool(self, plan, space, requests, progress) -> list[RunOutcome]:
        """One request at a time to each idle worker (the plan sent first to a worker that has not
        loaded it); at the deadline, a fatal answer or a worker's death the workers are killed."""
        pool = self.pool
        assert pool is not None
        self._phase += 1
        phase = self._phase
        plan_msg = pickle.dumps(("plan", phase, pickle.dumps((plan, space))))
        self._grow(len(requests))
        todo = list(range(len(requests)))[::-1]
        results: dict[int, RunOutcome] = {}
        try:
            while len(results) < len(requests):
                for w in pool.workers:
                    if w.busy is None and todo:
                        if w.phase != phase:
                            w.send(plan_msg)
                            w.phase = phase
                        w.busy = todo.pop()
                        w.send(pickle.dumps(("run", requests[w.busy])))
                left = self.clock.left()
                if left <= 0:
                    raise self._deadline_error(len(results), len(requests))
                for w, msg in pool.wait(left):
                    if msg[0] == "ready":
                        w.ready = True
                    elif msg[0] == "outcome":
                        results[w.busy] = msg[1]
                        w.busy = None
                        if progress is not None:
                            progress(len(results), len(requests))
                    else:  # "fatal": the generator ended the audit
                        raise GeneratorExited(msg[1])
        except WorkerDied as exc:
            if not any(w.ready for w in pool.workers):
                raise _NoWorkers() from None
            raise GeneratorExited(
                f"a worker process died after {len(results)} of {len(requests)} runs (exit code "
                f"{exc.exitcode}): the generator ended its process (os._exit, a crash or the out-of-memory "
                "killer); the audit is stopped"
            ) from None
        finally:
            for w in pool.workers:
                w.busy = None
        return [results[i] for i in range(len(requests))]


class _NoWorkers(Exception):
    """No worker process could start."""


def execute(
    plan: AuditPlan,
    space: FeatureSpace,
    generate: Generate,
    runs: Sequence[int],
    *,
    workers: int | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> tuple[list[RunOutcome], dict[str, Any]]:
    """Make ``runs`` of ``plan`` on worker processes (:class:`Runs`) and return their outcomes in
    run order, with how they were executed. ``deadline``: seconds the runs may take (default
    :data:`privgate.audit.limits.DEFAULT_DEADLINE`); past it the workers are killed and an
    :class:`~privgate.errors.AuditError` says how many runs were made."""
    with Runs(generate, workers=workers, threads=threads, deadline=deadline) as r:
        return r.make(plan, space, runs, progress=progress), r.how
