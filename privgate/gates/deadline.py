"""A gate run's deadline: the run's work in a daemon worker thread, stopped when the deadline
passes (or the waiting thread is interrupted). Stopping raises :class:`DeadlineExceeded` in the
worker, which takes effect as soon as it runs Python code again; a worker still inside one native
call after ``STOP_GRACE`` seconds is left behind (the caller says so).

A stop that lands in Python code a native library called (a Polars callback) can make that library
panic: the panic reaches the waiting side as whatever the worker raised and is ignored there (the
run is blocked for its deadline), ``run_gate`` reports any other escaping exception, a
``PanicException`` included, by its type only, and the data-reading commands keep the panic's own
message off standard error (:mod:`privgate.native_stderr`)."""

from __future__ import annotations

from typing import Any, Callable


class DeadlineExceeded(BaseException):
    """Raised in a gate run's worker thread (and by :func:`with_deadline`) when its deadline
    passed. A BaseException: no ``except Exception`` of a metric swallows it."""


# seconds a stopped worker is given to reach Python code and end
STOP_GRACE = 5.0


def with_deadline(work: Callable[[], Any], seconds: float) -> tuple[Any, Any]:
    """``work()`` in a daemon worker thread, waited for ``seconds``: (its result, the thread).
    Past the deadline, or when the waiting thread is interrupted (KeyboardInterrupt), the worker
    is stopped (:func:`stop_worker`) and DeadlineExceeded (or the interrupt) is raised with the thread
    as ``.worker``. Whatever ``work`` raised is raised here."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="privgate-gate-run", daemon=True)
    worker.start()
    try:
        worker.join(seconds)
    except BaseException as exc:  # KeyboardInterrupt while waiting: stop the run, block it
        stop_worker(worker)
        exc.worker = worker  # type: ignore[attr-defined]
        raise
    if worker.is_alive():
        stop_worker(worker)
        err = DeadlineExceeded(f"deadline of {seconds:g} s passed")
        err.worker = worker  # type: ignore[attr-defined]
        raise err
    if "error" in box:
        raise box["error"]
    return box["result"], worker


def stop_worker(worker: Any) -> None:
    """Raise DeadlineExceeded in ``worker`` (effective when it next runs Python code) and give it
    ``STOP_GRACE`` seconds to end."""
    import ctypes

    if worker.ident is not None and worker.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(DeadlineExceeded))
        worker.join(STOP_GRACE)
