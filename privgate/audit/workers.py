"""The audit's worker processes: spawned, fed over pipes, and never outliving the audit.

Each worker is a spawned Python process with a pipe each way. It loads the generator once (for a
:class:`~privgate.audit.loader.GeneratorRef`: imports the user's module — in the worker, so a
module that exits or hangs while importing ends a worker, not the audit), then a plan per phase
(preflight, runs), and answers each run request with its :class:`~privgate.audit.runner.RunOutcome`.

Whatever the generator does, a worker answers with privgate's own words: an outcome, or
``("fatal", text)`` when the generator (or its module) raised ``SystemExit``,
``KeyboardInterrupt`` or another ``BaseException`` that is not an ``Exception`` — the text names
the exception's type, never its message. A worker that dies (``os._exit``, a crash, the kernel's
out-of-memory killer) is seen by its process sentinel.

A worker never outlives the audit's process:

- on Linux it asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``), which
  also stops a worker stuck in native code;
- on every platform a watchdog thread reads a lifeline pipe whose only writer is the audit's
  process, and ends the worker when it closes (the parent's death closes it);
- the audit ends its workers with SIGKILL when it stops early (deadline, a fatal run, an interrupt,
  SIGTERM handled by the command line) and asks them to exit when it is done.

Workers stay in the audit's process group, so a CI runner that kills the group kills them too.
Processes the generator itself starts are its own (not tracked)."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import sys
import threading
from multiprocessing.connection import wait
from typing import Any

#: seconds given to a worker to exit when asked, before it is killed
EXIT_GRACE = 2.0


class WorkerDied(Exception):
    """A worker process ended without answering (exit code in ``.exitcode``)."""

    def __init__(self, worker: "Worker", exitcode: int | None) -> None:
        super().__init__(f"worker {worker.index} ended with exit code {exitcode}")
        self.worker = worker
        self.exitcode = exitcode


class Worker:
    """One spawned worker process and its pipes; messages are sent by a thread, so a worker that
    does not read (a hung import) never blocks the audit."""

    def __init__(self, ctx: Any, index: int, lifeline_r: Any, threads: int) -> None:
        self.index = index
        self.ready = False
        self.busy: Any = None  # the request being made
        self.phase: int | None = None  # the plan loaded
        from_worker, to_parent = ctx.Pipe(duplex=False)
        from_parent, to_worker = ctx.Pipe(duplex=False)
        self.inbox, self._outbox_conn = from_worker, to_worker
        self.proc = ctx.Process(
            target=worker_main,
            args=(from_parent, to_parent, lifeline_r, threads),
            name=f"privgate-audit-worker-{index}",
            daemon=False,
        )
        self.proc.start()
        from_parent.close()
        to_parent.close()
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send_loop, name=f"privgate-audit-sender-{index}", daemon=True)
        self._sender.start()

    def send(self, data: bytes) -> None:
        self._outbox.put(data)

    def _send_loop(self) -> None:
        while True:
            data = self._outbox.get()
            if data is None:
                return
            try:
                self._outbox_conn.send_bytes(data)
            except (OSError, ValueError):  # the worker is gone
                return

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    def close(self, kill: bool) -> None:
        """Ask the worker to exit (kill it if it does not within EXIT_GRACE s), or kill it."""
        if not kill and self.proc.is_alive():
            self.send(pickle.dumps(("stop",)))
            self.proc.join(EXIT_GRACE)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(EXIT_GRACE)
        self._outbox.put(None)
        for conn in (self.inbox, self._outbox_conn):
            try:
                conn.close()
            except OSError:
                pass
        try:
            self.proc.close()
        except ValueError:  # still running: nothing more can be done from here
            pass


class Pool:
    """Up to ``size`` workers, started on demand, each given the pickled generator first."""

    def __init__(self, size: int, threads: int, generator: bytes) -> None:
        self.size = size
        self.threads = threads
        self.generator = generator
        self.workers: list[Worker] = []
        self._ctx = _context()
        self._lifeline_r, self._lifeline_w = self._ctx.Pipe(duplex=False)

    def grow(self, n: int) -> None:
        """Start workers until there are ``min(n, size)``."""
        while len(self.workers) < min(n, self.size):
            w = Worker(self._ctx, len(self.workers), self._lifeline_r, self.threads)
            env = {**os.environ, **{k: str(self.threads) for k in THREAD_VARS}}
            w.send(pickle.dumps(("setup", list(sys.path), os.getcwd(), env)))
            w.send(pickle.dumps(("generator", self.generator)))
            self.workers.append(w)

    def wait(self, timeout: float | None) -> list[tuple[Worker, Any]]:
        """The messages of workers that answered within ``timeout`` seconds, as (worker, message);
        raises :class:`WorkerDied` for a worker that ended with nothing left to read."""
        conns = {w.inbox: w for w in self.workers}
        sentinels = {w.proc.sentinel: w for w in self.workers}
        ready = wait(list(conns) + list(sentinels), timeout)
        out = []
        for obj in ready:
            if obj in conns:
                w = conns[obj]
                try:
                    out.append((w, pickle.loads(obj.recv_bytes())))
                except (EOFError, OSError):
                    raise WorkerDied(w, _exitcode(w)) from None
        for obj in ready:
            if obj in sentinels:
                w = sentinels[obj]
                if not any(x is w for x, _ in out) and not w.inbox.poll():
                    raise WorkerDied(w, _exitcode(w))
        return out

    def close(self, kill: bool) -> None:
        for w in self.workers:
            w.close(kill)
        for conn in (self._lifeline_r, self._lifeline_w):
            conn.close()


#: read by the native libraries of a generator when they start their threads
THREAD_VARS = ("PRIVGATE_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _context() -> Any:
    """The fork server where the platform has one (a worker is forked from a server process that
    imported privgate, polars and NumPy once: milliseconds per worker after the first), else
    spawn. A worker is given the audit's sys.path, directory and environment before anything."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["privgate.audit.workers", "privgate.audit._preload"])
        return ctx
    return multiprocessing.get_context("spawn")


def _exitcode(w: Worker) -> int | None:
    w.proc.join(1.0)
    return w.proc.exitcode


# ---------------------------------------------------------------- in the worker process
def worker_main(inbox: Any, outbox: Any, lifeline: Any, threads: int) -> None:
    """A worker's life: die with the parent, say ready, then answer messages until told to stop."""
    try:
        import signal

        # Ctrl-C reaches the whole foreground process group: the audit's process stops and kills
        # its workers; a worker interrupted inside the generator would only blur which one it was
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _die_with_parent(lifeline)
        outbox.send_bytes(pickle.dumps(("ready", os.getpid())))
        _serve(inbox, outbox, threads)
    except BaseException:  # noqa: BLE001 - nothing may print a traceback of the user's code
        pass
    _flush()
    os._exit(0)


def _serve(inbox: Any, outbox: Any, threads: int) -> None:
    from .single_run import GeneratorExited, describe_error, make_run

    generate: Any = None
    plan = space = None
    load_failure: str | None = None
    while True:
        try:
            msg = pickle.loads(inbox.recv_bytes())
        except (EOFError, OSError):
            return
        kind = msg[0]
        if kind == "stop":
            return
        try:
            if kind == "setup":
                _setup(*msg[1:])
            elif kind == "generator":
                generate = _load(msg[1])
            elif kind == "plan":
                plan, space = pickle.loads(msg[2])
            elif kind == "run":
                run, targets_in = msg[1]
                outcome = make_run(plan, space, generate, run, targets_in=targets_in, threads=threads)
                outbox.send_bytes(pickle.dumps(("outcome", outcome)))
        except GeneratorExited as exc:
            load_failure = str(exc)
        except BaseException as exc:  # noqa: BLE001 - told to the parent in privgate's words
            where = "loading the generator" if kind == "generator" else f"the worker's {kind} step"
            load_failure = f"{where} failed: {describe_error(exc)}"
        if load_failure is not None:
            outbox.send_bytes(pickle.dumps(("fatal", load_failure)))
            return


def _setup(path: list[str], cwd: str, env: dict[str, str]) -> None:
    """The audit's import path, directory and environment (as a spawned process would inherit)."""
    sys.path[:] = path
    try:
        os.chdir(cwd)
    except OSError:
        pass
    os.environ.clear()
    os.environ.update(env)


def _load(payload: bytes) -> Any:
    """Unpickle the generator (importing its module) and resolve a GeneratorRef."""
    from .loader import GeneratorRef
    from .single_run import GeneratorExited

    try:
        generate = pickle.loads(payload)
        if isinstance(generate, GeneratorRef):
            generate.resolve()
    except Exception:
        raise
    except BaseException as exc:  # SystemExit, KeyboardInterrupt while importing
        raise GeneratorExited(
            f"loading the generator (importing its module) raised {type(exc).__name__}: the "
            "module ends its process when imported; the audit is stopped"
        ) from None
    return generate


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass


def _forget_fork_server() -> None:
    """Close this worker's copy of the fork server's lifeline (every forked process inherits
    one): the server then ends as soon as the audit's process does, and the kernel's parent-death
    signal reaches this worker even while it is inside native code."""
    try:
        from multiprocessing import forkserver

        server = forkserver._forkserver
        fd = server._forkserver_alive_fd
        if fd is not None:
            server._forkserver_alive_fd = None
            os.close(fd)
    except (ImportError, AttributeError, OSError):
        pass


def _die_with_parent(lifeline: Any) -> None:
    """SIGKILL from the kernel when the parent dies (Linux; the parent is the fork server, which
    exits when the audit's process does), and a watchdog on the lifeline pipe (its only writer is
    the audit's process)."""
    _forget_fork_server()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if lifeline.poll():  # the audit's process died before the request took effect (it never writes)
        os._exit(1)

    def watch() -> None:
        try:
            lifeline.recv_bytes()  # the parent never writes: returns (EOFError) when it is gone
        except BaseException:  # noqa: BLE001
            pass
        os._exit(1)

    threading.Thread(target=watch, name="privgate-audit-watchdog", daemon=True).start()
