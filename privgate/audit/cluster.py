"""The generator runs of an audit on a Dask distributed cluster (extra ``[dask]``).

The same runs as :func:`privgate.audit.runner.execute`, but each run is one Dask task on
whichever worker of the cluster is free: :func:`privgate.audit.runner.make_run` with the plan,
the feature space and the generator, which reach the workers once (one task holds them; the
scheduler keeps its inputs, so it is recomputed if the worker holding it dies). A run's training
set and seed depend on the plan and the run number alone, so the outcomes — and the audit's
result — are the same as on local processes, bit for bit.

A worker that dies (killed, evicted, out of memory) loses the runs it was making and the
outcomes it held: the scheduler gives them to the other workers, which make them again, the
same (``distributed.scheduler.allowed-failures`` bounds how often one run may be on a worker
that dies: past it the audit fails with an :class:`~privgate.errors.AuditError`). A generator
that raises is a failed run of the audit, as on local processes.

The executor is named as ``dask://host:port`` (or ``tcp://host:port``, ``tls://host:port``:
the scheduler's address) or given as a ``distributed.Client``. Workers must be able to import
privgate and the generator's module (or the generator must pickle by value with cloudpickle: a
lambda or a function of ``__main__``). Each run gets ``threads`` threads (default 1) for the
generator's native libraries and the features; size the workers' ``--nthreads`` so that the
runs a worker makes at once × ``threads`` is its cores (docs/cluster.md)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import AuditError, InputError
from .features import FeatureSpace
from .plan import AuditPlan
from .single_run import Generate, Progress, RunOutcome, make_run

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client

SCHEMES = ("dask://", "tcp://", "tls://", "inproc://")
LOCAL = ("local",)
CONNECT_TIMEOUT = 30.0


def is_cluster(executor: Any) -> bool:
    """Whether ``executor`` names a cluster (an address or a ``distributed.Client``); None and
    ``"local"`` mean local processes; anything else is refused with what is accepted."""
    if executor is None or (isinstance(executor, str) and executor in LOCAL):
        return False
    if isinstance(executor, str):
        if executor.startswith(SCHEMES) and len(executor.split("://", 1)[1]) > 0:
            return True
        raise InputError(
            f"executor must be 'local', a Dask scheduler address (dask://host:port, tcp://host:port, "
            f"tls://host:port) or a distributed.Client; got {executor!r}"
        )
    if type(executor).__name__ == "Client" and hasattr(executor, "submit"):
        return True
    raise InputError(
        f"executor must be 'local', a Dask scheduler address or a distributed.Client; got a {type(executor).__name__}"
    )


def _distributed() -> Any:
    try:
        import distributed  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError("running on a Dask cluster needs Dask distributed: pip install 'privgate[dask]'") from exc
    return distributed


def address_of(executor: str) -> str:
    """The scheduler address Dask connects to (``dask://`` is Dask's ``tcp://``)."""
    return "tcp://" + executor[len("dask://") :] if executor.startswith("dask://") else executor


def connect(executor: Any, timeout: float = CONNECT_TIMEOUT) -> tuple["Client", bool]:
    """A client of the cluster and whether this call opened it (and must close it)."""
    distributed = _distributed()
    if not isinstance(executor, str):
        return executor, False
    try:
        return distributed.Client(address_of(executor), timeout=timeout, set_as_default=False), True
    except (OSError, TimeoutError) as exc:
        raise AuditError(
            f"cannot reach the Dask scheduler at {executor} within {timeout:g} s "
            f"({type(exc).__name__}); is it running and is the address right?"
        ) from None


def send_module_by_value(generate: Any, folder: str | None = None) -> bool:
    """Send the generator's module to the workers with the generator when it is one file of the
    current directory (``privgate audit --generator my_gen:fit`` run beside ``my_gen.py``), which
    the workers cannot import; a module of a package is sent by name. Returns whether it is."""
    import inspect  # noqa: PLC0415
    import os  # noqa: PLC0415
    import sys  # noqa: PLC0415

    if inspect.ismethod(generate):
        target: Any = type(generate.__self__)
    elif inspect.isfunction(generate) or inspect.isclass(generate):
        target = generate
    else:
        target = type(generate)
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    path = getattr(module, "__file__", None) if module is not None else None
    if module is None or path is None or "." in module.__name__ or inspect.ismodule(generate):
        return False
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(folder or os.getcwd()):
        return False
    _distributed()
    import cloudpickle  # noqa: PLC0415

    cloudpickle.register_pickle_by_value(module)
    return True


# ---------------------------------------------------------------- what runs on a worker
def _unpack(payload: bytes) -> tuple[AuditPlan, FeatureSpace, Generate]:
    import cloudpickle  # noqa: PLC0415 - a dependency of distributed

    return cloudpickle.loads(payload)


def _run_on_worker(job: tuple[AuditPlan, FeatureSpace, Generate], run: int, threads: int) -> tuple[RunOutcome, str]:
    from distributed import get_worker  # noqa: PLC0415

    plan, space, generate = job
    return make_run(plan, space, generate, run, threads=threads), get_worker().address


# ---------------------------------------------------------------- the runs on the cluster
def execute_on_cluster(
    executor: Any,
    plan: AuditPlan,
    space: FeatureSpace,
    generate: Generate,
    runs: Sequence[int],
    *,
    threads: int | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> tuple[list[RunOutcome], dict[str, Any]]:
    """Make ``runs`` on the Dask cluster ``executor`` and return their outcomes in run order,
    with how they were executed (workers, threads per run, runs made per worker).

    ``threads``: threads per run (default 1). ``deadline``: seconds the runs may take; then the
    runs still to make are cancelled and an :class:`~privgate.errors.AuditError` says how many
    were made."""
    import cloudpickle  # noqa: PLC0415

    per_run = 1 if threads is None else int(threads)
    if per_run < 1:
        raise InputError(f"threads must be at least 1; got {threads!r}")
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not 0 < deadline < float("inf")
    ):
        raise InputError(f"deadline must be a positive number of seconds; got {deadline!r}")
    distributed = _distributed()
    runs = [int(r) for r in runs]
    stop_at = None if deadline is None else time.monotonic() + float(deadline)
    try:
        payload = cloudpickle.dumps((plan, space, generate))
    except Exception as exc:  # noqa: BLE001 - any pickling failure: say which object
        raise InputError(
            f"the generator cannot be sent to the cluster's workers ({type(exc).__name__}); give a "
            "module-level function or class instance, importable on the workers"
        ) from None
    client, opened = connect(executor)
    tag = f"privgate-audit-{uuid.uuid4().hex[:12]}"
    submitted: list[Any] = []
    done: dict[int, tuple[RunOutcome, str]] = {}
    try:
        n_workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
        job = client.submit(_unpack, payload, key=f"{tag}-job", pure=False)
        futures = [client.submit(_run_on_worker, job, r, per_run, key=f"{tag}-run-{r}", pure=False) for r in runs]
        submitted = [job, *futures]
        left = None if stop_at is None else max(stop_at - time.monotonic(), 0.001)
        try:
            for fut in distributed.as_completed(futures, loop=client.loop, timeout=left):
                outcome, worker = _outcome(fut, distributed)
                done[outcome.run] = (outcome, worker)
                if progress is not None:
                    progress(len(done), len(runs))
        except (TimeoutError, distributed.TimeoutError):
            raise _deadline_error(deadline, len(done), len(runs)) from None
    finally:
        if submitted and len(done) < len(runs):
            client.cancel(submitted, force=True)  # the runs not made: off the cluster
        if opened:
            client.close()
    per_worker: dict[str, int] = {}
    for _, worker in done.values():
        per_worker[worker] = per_worker.get(worker, 0) + 1
    how = {
        "executor": "dask",
        "scheduler": _shown_address(executor, client),
        "workers": n_workers,
        "threads": per_run,
        "threads_per_worker": per_run,
        "runs_per_worker": per_worker,
        "run_workers": {r: w for r, (_, w) in done.items()},
        "note": f"Dask cluster {_shown_address(executor, client)}: {n_workers} workers, {per_run} thread(s) a run",
    }
    return [done[r][0] for r in runs], how


def _outcome(fut: Any, distributed: Any) -> tuple[RunOutcome, str]:
    """A finished run's outcome and worker; a run that could not be made is an AuditError."""
    try:
        return fut.result()
    except distributed.KilledWorker:
        raise AuditError(
            f"run {_run_of(fut.key)} was on {_allowed_failures()} workers that died: the generator "
            "ends its worker (a crash or too much memory); make one run with workers=1 locally to "
            "see the failure"
        ) from None
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - a failure outside the generator
        raise AuditError(
            f"run {_run_of(fut.key)} failed on the cluster outside the generator "
            f"({type(exc).__name__}); are privgate and the generator's module installed on the "
            "workers?"
        ) from None


def _run_of(key: Any) -> str:
    return str(key).rsplit("-", 1)[-1]


def _allowed_failures() -> int:
    import dask  # noqa: PLC0415

    return int(dask.config.get("distributed.scheduler.allowed-failures", 3)) + 1


def _shown_address(executor: Any, client: Any) -> str:
    if isinstance(executor, str):
        return executor
    try:
        return str(client.scheduler.address)
    except Exception:  # noqa: BLE001 - only shown
        return "a distributed.Client"


def _deadline_error(deadline: float | None, n_done: int, n_runs: int) -> AuditError:
    return AuditError(
        f"the audit's runs did not finish within their deadline of {deadline:g} s ({n_done} of "
        f"{n_runs} runs made); the cluster's runs still to make were cancelled — raise the deadline, "
        "make fewer runs, a faster generator or add workers"
    )
