"""One generator run of an audit (:func:`make_run`: train, sample, features), what it gives
(:class:`RunOutcome`) and how its failures are told (:func:`describe_error`,
:class:`GeneratorExited`).

Below both executors that call it: the worker processes (:mod:`privgate.audit.workers`) and the
runner that drives them (:mod:`privgate.audit.runner`), so the
workers do not import the runner back.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import AuditError, InputError, PrivgateError
from ..threads import limited
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
        return {
            "run": self.run,
            "features": None if self.features is None else self.features.tolist(),
            "seconds_generate": self.seconds_generate,
            "seconds_features": self.seconds_features,
            "release_rows": self.release_rows,
            "error": self.error,
            "contract_error": self.contract_error,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunOutcome":
        feats = d.get("features")
        return cls(
            int(d["run"]),
            None if feats is None else np.asarray(feats, dtype=np.float64),
            float(d["seconds_generate"]),
            float(d["seconds_features"]),
            int(d.get("release_rows", 0)),
            d.get("error"),
            bool(d.get("contract_error", False)),
        )


class GeneratorExited(AuditError):
    """The generator (or its module) raised SystemExit, KeyboardInterrupt or another
    BaseException that is not an Exception, or ended its worker process: the audit stops."""


def describe_error(exc: BaseException) -> str:
    """An exception as a report may show it: its type alone, and the message only of privgate's
    own exceptions raised by privgate's own code (they never quote values). A message written by
    the user's code — a generator raising ``InputError(<a training row>)`` included — may quote
    training records, so it is never shown."""
    if isinstance(exc, PrivgateError) and _raised_by_privgate(exc):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _raised_by_privgate(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc``'s traceback is a file of the privgate package."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE)


def make_run(
    plan: AuditPlan,
    space: FeatureSpace,
    generate: Generate,
    run: int,
    *,
    targets_in: np.ndarray | None = None,
    threads: int = 1,
) -> RunOutcome:
    """Train and sample the generator for run ``run`` of ``plan`` (or with the targets
    ``targets_in``, for a preflight run) and compute every target's features on the release.
    An Exception of the generator is the run's outcome (its type); SystemExit, KeyboardInterrupt
    and any other BaseException raise :class:`GeneratorExited` (type only): the audit stops."""
    training = plan.training_frame(run, targets_in)
    seed = plan.generator_seed(run)
    start = time.perf_counter()
    try:
        with limited(threads):
            release = generate(training, plan.n_rows, seed)
    except Exception as exc:  # noqa: BLE001 - the generator's failure is a result of the run
        return RunOutcome(run, None, time.perf_counter() - start, 0.0, 0, describe_error(exc))
    except BaseException as exc:  # noqa: BLE001 - an exit or interrupt inside the generator ends the audit
        raise GeneratorExited(
            f"the generator raised {type(exc).__name__} in run {run} (a generator returns a "
            "release or raises an Exception; it must not end its process): the audit is "
            "stopped"
        ) from None
    generated = time.perf_counter()
    try:
        frame = space.prepare(release, role=f"release of run {run}")
        with limited(threads):
            feats = space.features(frame)
    except InputError as exc:
        return RunOutcome(
            run, None, generated - start, time.perf_counter() - generated, 0, describe_error(exc), contract_error=True
        )
    return RunOutcome(run, feats, generated - start, time.perf_counter() - generated, frame.height)
