"""Running a gate: evaluate the configured metrics on a release and decide pass / warn / block.

The gate **fails closed**: an input that cannot be loaded, an invalid configuration, a metric
that errors (unless the configuration marks it ``optional``), a baseline that cannot be computed
while a holdout is given, or a history store that cannot be read or written all block the
release. Exit codes (``EXIT_CODES``):

====  =======  ==============================================================================
code  meaning  when
====  =======  ==============================================================================
0     pass     every rule passed
1     warn     a ``warn`` rule fired, no ``block`` rule fired
2     block    a ``block`` rule fired: the release is too risky
3     error    the gate could not decide completely (invalid configuration, missing or corrupt
               input, a non-optional metric failed, history unavailable); decision is ``block``
====  =======  ==============================================================================

The gate never computes a distance itself: it calls :func:`privgate.evaluate` and compares the
results with the rules.
"""

from __future__ import annotations

import math
import numbers
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np
import polars as pl

from ..text_tables import TABLE_WIDTH, format_table, table_blocks, wrap_line
from ..errors import ConfigError, PrivgateError
from ..results import MetricResult, _jsonable
from .config import GateConfig, Rule, load_gate_config, parse_gate_config
from .fingerprint import inputs_fingerprint

if TYPE_CHECKING:  # pragma: no cover
    from ..history.store import HistoryStore


class Decision(str, Enum):
    """The gate's decision; compares equal to its string value."""

    PASS = "pass"
    WARN = "warn"
    BLOCK = "block"

    def __str__(self) -> str:
        return self.value


EXIT_CODES: dict[str, int] = {"pass": 0, "warn": 1, "block": 2, "error": 3}
_RANK = {"pass": 0, "warn": 1, "block": 2}
_EPS = 1e-12


@dataclass
class GateCheck:
    """One rule evaluated on one metric (or one failure that blocks).

    ``value`` is the metric's risk value, ``compared`` the quantity the rule compares with
    ``threshold`` (the value for threshold rules, the excess over the holdout baseline for baseline
    rules, the increase over the last accepted release for trend rules, the p-value for test
    rules) — or, with ``on`` = "lower" / "upper", that end of its interval. ``interval`` is the
    95 % interval of the compared quantity (``ci`` for threshold rules, ``excess_ci`` for baseline
    rules; None when the result has none or the rule has no interval), ``p_value`` the metric's
    own p-value when it is a test.
    """

    metric: str
    rule: str                      # "threshold" | "baseline" | "trend" | "error"
    value: float | None
    raw: float | None
    threshold: float | None
    severity: str                  # "warn" | "block"
    verdict: str                   # "pass" | "warn" | "block"
    message: str = ""
    seconds: float = 0.0
    optional: bool = False
    compared: float | None = None
    baseline: float | None = None
    previous: float | None = None
    skipped: bool = False
    on: str = ""                   # "estimate" | "lower" | "upper" | "p_value" ("" for errors)
    interval: tuple[float, float] | None = None
    p_value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({k: getattr(self, k) for k in self.__dataclass_fields__})


@dataclass
class GateOutcome:
    """Everything one gate run decided; ``to_dict()`` is the JSON report's core."""

    run_id: str
    dataset: str
    release_id: str
    decision: Decision
    checks: list[GateCheck]
    exit_code: int
    report: Any = None                       # privgate Report, None when evaluation did not run
    config: GateConfig | None = None
    config_hash: str | None = None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    seconds: float = 0.0
    privgate_version: str = ""
    has_holdout: bool = False
    previous_release_id: str | None = None
    recorded: bool = False
    worker: Any = None                       # a stopped run's worker thread still inside native code

    @property
    def accepted(self) -> bool:
        """A release is accepted (may be published) when the decision is pass or warn."""
        return self.decision != Decision.BLOCK

    @property
    def results(self) -> dict[str, MetricResult]:
        return dict(getattr(self.report, "results", {}) or {})

    @property
    def errors(self) -> dict[str, str]:
        return {c.metric: c.message for c in self.checks if c.rule == "error"}

    def to_dict(self) -> dict[str, Any]:
        results = {n: r.to_dict() for n, r in self.results.items()}
        return _jsonable({
            "run_id": self.run_id,
            "dataset": self.dataset,
            "release_id": self.release_id,
            "decision": str(self.decision),
            "exit_code": self.exit_code,
            "accepted": self.accepted,
            "created_at": self.created_at.isoformat(),
            "seconds": self.seconds,
            "privgate_version": self.privgate_version,
            "config_hash": self.config_hash,
            "config": self.config.to_dict() if self.config else None,
            "has_holdout": self.has_holdout,
            "previous_release_id": self.previous_release_id,
            "fingerprint": self.fingerprint,
            "checks": [_check_dict(c) for c in self.checks],
            "results": results,
        })

    def table(self, compact: bool = False) -> str:
        """The decision table as plain text (what ``privgate gate`` prints: ``compact=True``, the
        100-column view; ``privgate gate --wide``: every column)."""
        return format_checks(self, compact=compact)


def _check_dict(c: "GateCheck") -> dict[str, Any]:
    """A check as JSON, always with the interval fields (None when absent)."""
    out = c.to_dict()
    for k in ("on", "interval", "p_value"):
        out.setdefault(k, _jsonable(getattr(c, k, None)))
    return out


# ---------------------------------------------------------------------------------------------
# deciding


def decide(
    cfg: GateConfig,
    results: Mapping[str, MetricResult],
    errors: Mapping[str, str],
    *,
    has_holdout: bool,
    previous: Mapping[str, float] | None = None,
    previous_note: str = "",
    trend_note: str = "",
) -> list[GateCheck]:
    """Compare metric results with the configuration's rules; pure (no I/O).

    ``previous`` maps metric → value of the last accepted release (``None``: no trend
    comparison possible, ``previous_note`` says why); ``trend_note`` is appended to evaluated
    trend checks' messages (e.g. that the real data changed since that release).
    """
    checks: list[GateCheck] = []
    for name, mg in cfg.metrics.items():
        res = results.get(name)
        if res is None and name not in errors and not any(r.applies(has_holdout) for r in mg.rules):
            continue  # not evaluated because no rule applies (e.g. a holdout-only metric, no holdout)
        if res is None or name in errors:
            msg = safe_message(errors.get(name, "no result was produced"))
            checks.append(_error_check(name, f"metric failed: {msg}", optional=mg.optional))
            continue
        for rule in mg.rules:
            if not rule.applies(has_holdout):
                continue
            check = _rule_check(name, res, rule, mg.optional, has_holdout, previous, previous_note)
            if trend_note and check.rule == "trend" and not check.skipped:
                check.message = f"{check.message} ({trend_note})"
            checks.append(check)
    return checks


_ON_WORDS = {"lower": "lower bound", "upper": "upper bound"}


RULE_CHECKS = ("threshold", "baseline", "trend", "test", "audit")


def unchecked_checks(config: GateConfig, checks: list[GateCheck]) -> list[GateCheck]:
    """What to add when no rule was evaluated in a run (every rule skipped or not applying, every
    metric optional and failed): a blocking error "nothing was checked" (exit 3) — a gate that
    checked nothing must not pass — or, when the configuration says ``allow_unchecked: true``, a
    passing note saying in words that the release passes unchecked. Empty when a rule was
    evaluated or the run already failed."""
    if any(c.rule in RULE_CHECKS and not c.skipped for c in checks):
        return []
    if any(c.rule == "error" and c.verdict == "block" for c in checks):
        return []
    why = "; ".join(dict.fromkeys(f"{c.metric} {c.rule}: {c.message}" for c in checks if c.skipped)) \
        or "no rule of the configuration applies to this run (e.g. every rule `when: with_holdout` and no holdout)"
    text = f"nothing was checked: no rule could be evaluated ({safe_message(why, 300)})"
    if config.allow_unchecked:
        return [GateCheck(metric="(gate)", rule="unchecked", value=None, raw=None, threshold=None,
                          severity="warn", verdict="pass", skipped=True,
                          message=f"{text}; the release passes UNCHECKED because the configuration says "
                                  "allow_unchecked: true")]
    return [_error_check("(gate)", f"{text}; a gate that checked nothing does not pass — give what the "
                                   "rules need (a holdout, an earlier accepted release) or add a rule that "
                                   "applies, or set allow_unchecked: true to let such a release pass")]


def unchecked_note(outcome: "GateOutcome") -> str:
    """A sentence for a release that passed with nothing checked (``allow_unchecked``), else ""."""
    if any(c.rule == "unchecked" for c in outcome.checks):
        return (" Nothing was checked: no rule of the gate could be evaluated on this run, and the "
                "release passes UNCHECKED only because the configuration says allow_unchecked: true.")
    return ""


def _rule_check(name: str, res: MetricResult, rule: Rule, optional: bool, has_holdout: bool,
                previous: Mapping[str, float] | None, previous_note: str) -> GateCheck:
    base = dict(metric=name, rule=rule.kind, value=res.value, raw=res.raw, threshold=rule.limit,
                severity=rule.severity, seconds=res.seconds, optional=optional, baseline=res.baseline,
                on=rule.on, p_value=res.p_value)
    interval = None
    if rule.kind == "threshold":
        point, interval = res.value, res.ci
        what = f"value {point:.4f}"
    elif rule.kind == "baseline":
        if not has_holdout:
            return GateCheck(**base, verdict="pass", skipped=True,
                             message="no holdout given; baseline rule not evaluated")
        if res.excess is None or res.baseline is None:
            return _missing_check(base, optional, "holdout baseline could not be computed")
        point, interval = float(res.excess), res.excess_ci
        what = f"excess {point:+.4f} over holdout baseline {res.baseline:.4f}"
    elif rule.kind == "test":
        if res.p_value is None:
            return _missing_check(base, optional, f"the test rule needs a p-value and {name} reports none")
        p = float(res.p_value)
        fired = rule_fires(rule.kind, p, rule.limit)
        return GateCheck(**base, verdict=rule.severity if fired else "pass", compared=p,
                         message=f"p-value {p:.3g} {'<' if fired else '≥'} {rule.limit:g}")
    else:  # trend
        if previous is None:
            return GateCheck(**base, verdict="pass", skipped=True,
                             message=previous_note or "no accepted release to compare with")
        if name not in previous or previous[name] is None:
            return GateCheck(**base, verdict="pass", skipped=True,
                             message="metric absent from the last accepted release")
        prev = history_number(previous[name])
        if prev is None:  # +inf would open the rule (1 − inf), NaN would pass it: never decide on it
            return _missing_check(base, optional, history_problem(name, previous[name]))
        base["previous"] = prev
        point = res.value - prev
        what = f"increase {point:+.4f} over last accepted {prev:.4f}"
    base["interval"] = (float(interval[0]), float(interval[1])) if interval is not None else None
    compared = compared_number(point, interval, rule.on)
    if compared is None:
        quantity, field_ = ("value", "ci") if rule.kind == "threshold" else ("excess", "excess_ci")
        return _missing_check(base, optional, f"the rule compares the {_ON_WORDS[rule.on]} of the {quantity}'s "
                                              f"interval and {name} reports no {field_}")
    if rule.on != "estimate":
        fmt = "{:.4f}" if rule.kind == "threshold" else "{:+.4f}"
        what = (f"{_ON_WORDS[rule.on]} {fmt.format(compared)} of {what} (95 % interval "
                f"{fmt.format(interval[0])} to {fmt.format(interval[1])})")
    fired = rule_fires(rule.kind, compared, rule.limit)
    verdict = rule.severity if fired else "pass"
    msg = f"{what} {'>' if fired else '≤'} {rule.limit:g}"
    return GateCheck(**base, verdict=verdict, compared=compared, message=msg)


def history_number(x: Any) -> float | None:
    """A value read back from the history as a number a trend rule may compare with: a finite
    number in [0, 1] (a metric value), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        return None
    v = float(x)
    return v if math.isfinite(v) and 0.0 <= v <= 1.0 else None


def history_problem(name: str, x: Any) -> str:
    """Why a stored value of ``name`` cannot be compared (its kind only, never the value) and the fix."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        kind = f"not a number ({type(x).__name__})"
    elif math.isnan(float(x)):
        kind = "NaN"
    elif math.isinf(float(x)):
        kind = "infinite"
    else:
        kind = "outside [0, 1]"
    return (f"the history's value of {name} for the last accepted release is {kind}: metric values are "
            "finite numbers in [0, 1], so the history was altered or corrupted; the trend rule cannot "
            "compare with it — correct or delete that run's score row")


def compared_number(point: float, interval: Any, on: str) -> float | None:
    """The number a rule compares with its limit: the point estimate (``on="estimate"``) or the
    lower / upper end of its 95 % interval; None when an end is asked for and there is no
    interval (the caller fails closed). The one definition the gate and the GX expectations use."""
    if on == "estimate":
        return float(point)
    if on not in ("lower", "upper"):
        raise ValueError(f"on must be 'estimate', 'lower' or 'upper', got {on!r}")
    if interval is None:
        return None
    return float(interval[0] if on == "lower" else interval[1])


def rule_fires(kind: str, compared: float, limit: float) -> bool:
    """Whether a rule of ``kind`` fires on the quantity it compares: a ``test`` rule when the
    p-value is strictly below its limit, every other kind when the quantity is above its limit
    (beyond a rounding tolerance of 1e-12). Shared by the adapters that decide like the gate."""
    if kind == "test":
        return compared < limit
    return compared > limit + _EPS


def _missing_check(base: dict[str, Any], optional: bool, what: str) -> GateCheck:
    """A rule that cannot be evaluated because the result lacks what it compares: blocks (fails
    closed, exit 3), or is ignored for an optional metric."""
    if optional:
        return GateCheck(**{**base, "rule": "error"}, verdict="pass", skipped=True,
                         message=f"{what}; optional metric, ignored")
    return GateCheck(**{**base, "rule": "error", "severity": "block"}, verdict="block",
                     message=f"{what} (fails closed)")


def _error_check(metric: str, message: str, *, optional: bool = False) -> GateCheck:
    if optional:
        return GateCheck(metric=metric, rule="error", value=None, raw=None, threshold=None,
                         severity="warn", verdict="pass", optional=True, skipped=True,
                         message=f"{message}; optional metric, ignored")
    return GateCheck(metric=metric, rule="error", value=None, raw=None, threshold=None,
                     severity="block", verdict="block", message=f"{message} (fails closed)")


def decision_of(checks: list[GateCheck]) -> tuple[Decision, int]:
    """The worst verdict and the exit code (3 when a blocking error check exists)."""
    worst = max((c.verdict for c in checks), key=_RANK.__getitem__, default="pass")
    decision = Decision(worst)
    if any(c.rule == "error" and c.verdict == "block" for c in checks):
        return Decision.BLOCK, EXIT_CODES["error"]
    return decision, EXIT_CODES[decision.value]


_WRAPPED = re.compile(r"^(?P<head>.*?failed: )(?P<type>[A-Za-z_][\w.]*)(?::.*)?$", re.S)


def safe_message(message: str, limit: int = 400) -> str:
    """An error message safe to store: a wrapped foreign exception keeps only its type name
    (its text may quote data values); privgate's own messages never contain record values and
    are kept, truncated to ``limit`` characters."""
    text = str(message).strip().splitlines()[0] if str(message).strip() else "unknown error"
    m = _WRAPPED.match(text)
    if m:
        text = f"{m.group('head')}{m.group('type')}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _privgate_error_text(exc: BaseException) -> str:
    if isinstance(exc, PrivgateError):
        return safe_message(f"{type(exc).__name__}: {exc}")
    return f"{type(exc).__name__} (details withheld: they may quote data values)"


# ---------------------------------------------------------------------------------------------
# running


def _evaluate(*args: Any, **kwargs: Any) -> Any:
    """Indirection to :func:`privgate.evaluate` (lets tests substitute a failing metric run)."""
    from ..evaluate import evaluate

    return evaluate(*args, **kwargs)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("privgate")
    except Exception:  # noqa: BLE001
        return "unknown"


def run_gate(
    cfg: GateConfig | Mapping[str, Any] | str | Path,
    real: Any,
    synthetic: Any,
    holdout: Any = None,
    release_id: str = "r1",
    history: "HistoryStore | None" = None,
    *,
    dataset: str | None = None,
    progress: Callable[..., Any] | None = None,
    record: bool = True,
    threads: int | None = None,
    report: Any = None,
    exact: bool | None = None,
    sample_real: int | None = None,
    sample: int | str | None = None,
    deadline: float | None = None,
    generator_version: str | None = None,
    memory_limit: int | str | None = "auto",
) -> GateOutcome:
    """Gate one synthetic release and, when ``history`` is given, record the run in it.

    ``cfg`` is a :class:`GateConfig`, a dict or a path to a YAML/TOML file. ``real``,
    ``synthetic`` and ``holdout`` are anything :func:`privgate.io.load_frame` accepts. Never raises
    (not even for ``SystemExit`` or ``KeyboardInterrupt`` from a metric): anything that stops the
    gate from deciding produces a blocked outcome with exit code 3.

    ``history`` is read for trend rules; the run is recorded in it once, at the end, unless
    ``record=False`` — a caller with more steps that can fail (the CLI writes reports) records
    the final decision itself with :func:`record_outcome`. ``threads``: the run's thread budget
    (BLAS, OpenMP, faiss, LightGBM; :mod:`privgate.threads`), default the configuration's
    ``options.threads``, else ``$PRIVGATE_THREADS`` or the cores free at the start. ``exact`` and
    ``sample_real`` and ``sample`` override the configuration's ``options`` likewise (None: keep them); the
    options used are recorded in the outcome's configuration (the thread budget as resolved).

    ``report``: results computed beforehand instead of evaluating here -- e.g. one
    :func:`evaluate_for_gate` per metric family in separate processes, joined with
    :func:`privgate.report.merge_reports`. The gate then decides exactly as if it had evaluated
    (same checks, history row and reports), after checking that the results were computed with
    this run's plan (:func:`evaluation_plan`) from these inputs (``params["inputs_sha256"]``);
    a report that does not match blocks (exit 3), and a planned metric it lacks blocks as a
    metric that produced no result.

    ``memory_limit``: the evaluation's memory guard (:mod:`privgate.memory_guard`; "auto":
    ``$PRIVGATE_MEMORY_LIMIT``, else the memory available): a run estimated not to fit blocks
    (exit 3) before any metric runs, naming the metric and the options that would fit.

    ``deadline``: seconds the run may take (default the configuration's ``options.deadline``, 6
    hours unless set). The evaluation runs in a worker thread; when the deadline passes (or the
    caller is interrupted) the outcome is blocked — exit 3, "did not finish within its deadline"
    — and recorded as such, and the worker is stopped: an exception is raised in it, which takes
    effect as soon as it runs Python code again (NumPy, Polars, faiss and LightGBM return to
    Python between blocks of work). A worker still inside one native call after a grace period
    is left behind as a daemon thread: ``outcome.worker`` says so, and ``privgate gate`` then ends
    its process once the run is recorded (docs/gates.md, "Deadline").

    ``generator_version``: the version of the generator that made the release, for a
    configuration's ``require_audit`` (:mod:`privgate.gates.audit_rules`): the release blocks
    unless the history's last audit of that generator version passed.
    """
    start = time.perf_counter()
    created = datetime.now(timezone.utc)
    run_id = uuid.uuid4().hex
    release_id = str(release_id)
    options = {"threads": threads, "exact": exact, "sample_real": sample_real, "sample": sample,
               "deadline": deadline}
    seconds = _deadline_of(cfg, deadline)

    def work() -> GateOutcome:
        return _run(cfg, real, synthetic, holdout, release_id, history, dataset=dataset, options=options,
                    progress=progress, run_id=run_id, created=created, precomputed=report,
                    generator_version=generator_version, memory_limit=memory_limit)

    worker = None
    try:
        outcome, worker = _with_deadline(work, seconds)
    except BaseException as exc:  # noqa: BLE001 - fails closed, whatever escaped (SystemExit too)
        if isinstance(exc, DeadlineExceeded):
            text = (f"the run did not finish within its deadline of {seconds:g} s and was stopped; the release is "
                    "blocked — raise options.deadline (--deadline, the Dagster resource's deadline) or make the "
                    "run lighter (options.sample, fewer metrics)")
        else:
            text = f"the gate stopped: {_privgate_error_text(exc)}"
        worker = getattr(exc, "worker", None)
        outcome = _outcome([_error_check("(deadline)" if isinstance(exc, DeadlineExceeded) else "(gate)", text)],
                           run_id=run_id, dataset=_dataset_of(cfg, dataset), release_id=release_id,
                           created=created, has_holdout=holdout is not None, config=_config_of(cfg, dataset))
    outcome.worker = worker if worker is not None and worker.is_alive() else None
    outcome.seconds = time.perf_counter() - start
    if history is not None and record:
        record_outcome(outcome, history)
    return outcome


class DeadlineExceeded(BaseException):
    """Raised in a gate run's worker thread (and by :func:`_with_deadline`) when its deadline
    passed. A BaseException: no ``except Exception`` of a metric swallows it."""


# seconds a stopped worker is given to reach Python code and end
STOP_GRACE = 5.0


def _with_deadline(work: Callable[[], Any], seconds: float) -> tuple[Any, Any]:
    """``work()`` in a daemon worker thread, waited for ``seconds``: (its result, the thread).
    Past the deadline, or when the waiting thread is interrupted (KeyboardInterrupt), the worker
    is stopped (:func:`_stop`) and DeadlineExceeded (or the interrupt) is raised with the thread
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
        _stop(worker)
        exc.worker = worker  # type: ignore[attr-defined]
        raise
    if worker.is_alive():
        _stop(worker)
        err = DeadlineExceeded(f"deadline of {seconds:g} s passed")
        err.worker = worker  # type: ignore[attr-defined]
        raise err
    if "error" in box:
        raise box["error"]
    return box["result"], worker


def _stop(worker: Any) -> None:
    """Raise DeadlineExceeded in ``worker`` (effective when it next runs Python code) and give it
    ``STOP_GRACE`` seconds to end."""
    import ctypes

    if worker.ident is not None and worker.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(DeadlineExceeded))
        worker.join(STOP_GRACE)


def _config_of(cfg: Any, dataset: str | None) -> "GateConfig | None":
    """The configuration, when it can be read (for a run stopped before it decided), else None."""
    try:
        config = cfg if isinstance(cfg, GateConfig) else (
            load_gate_config(cfg) if isinstance(cfg, (str, Path)) else parse_gate_config(cfg))
        return config.with_dataset(dataset) if dataset else config
    except Exception:  # noqa: BLE001 - the run reports the configuration's problem itself
        return None


def _dataset_of(cfg: Any, dataset: str | None) -> str:
    config = _config_of(cfg, dataset)
    return dataset or (config.dataset if config is not None else "unknown")


def _deadline_of(cfg: Any, deadline: float | None) -> float:
    """The run's deadline in seconds: ``deadline`` when given (validated), else the configuration's
    ``options.deadline`` (the default when the configuration cannot be read: the run reports why)."""
    from .config import DEFAULT_DEADLINE, parse_options

    if deadline is not None:
        try:
            return parse_options({"deadline": deadline}).deadline
        except ConfigError:
            return DEFAULT_DEADLINE  # _run reports the invalid option and blocks
    config = _config_of(cfg, None)
    return config.options.deadline if config is not None else DEFAULT_DEADLINE


def record_outcome(outcome: GateOutcome, history: "HistoryStore") -> GateOutcome:
    """Record ``outcome`` (its final decision) in ``history`` in one transaction. A run that
    cannot be recorded is not accepted: its decision becomes block, exit code 3."""
    try:
        history.record(outcome)
        outcome.recorded = True
    except BaseException as exc:  # noqa: BLE001 - a run that cannot be recorded is not accepted
        add_error(outcome, "(history)", f"cannot record the run: {_privgate_error_text(exc)}")
    return outcome


def add_error(outcome: GateOutcome, where: str, message: str) -> GateOutcome:
    """Add a blocking error check to ``outcome`` (a step after the decision failed, e.g. a report
    that cannot be written) and re-decide: block, exit code 3."""
    outcome.checks.append(_error_check(where, message))
    outcome.decision, outcome.exit_code = decision_of(outcome.checks)
    return outcome


def _outcome(checks: list[GateCheck], *, run_id: str, dataset: str, release_id: str,
             created: datetime, has_holdout: bool, **kw: Any) -> GateOutcome:
    decision, code = decision_of(checks)
    config = kw.get("config")
    return GateOutcome(run_id=run_id, dataset=dataset, release_id=release_id, decision=decision,
                       checks=checks, exit_code=code, created_at=created,
                       config_hash=config.hash if config else None, privgate_version=_version(),
                       has_holdout=has_holdout, **kw)


def result_problem(res: Any) -> str | None:
    """Why a metric result cannot be gated (None when it can): the value must be a finite number
    in [0, 1]; a baseline, excess, interval or p-value, when present, must be finite and in
    range. Junk from a custom metric, or a result changed after it was built, fails closed
    instead of passing every rule (NaN compares false with every limit). Only types and metric
    values are named, never a value of any other kind (it could be a record's)."""
    if not isinstance(res, MetricResult):
        return f"returned {type(res).__name__}, not a MetricResult"
    checks = [("value", res.value, 0.0, 1.0), ("baseline", res.baseline, 0.0, 1.0),
              ("excess", res.excess, -1.0, 1.0), ("p_value", res.p_value, 0.0, 1.0)]
    for field_name, lo, hi in (("ci", 0.0, 1.0), ("baseline_ci", 0.0, 1.0), ("excess_ci", -1.0, 1.0)):
        ci = getattr(res, field_name, None)
        if ci is None:
            continue
        if not isinstance(ci, (tuple, list)) or len(ci) != 2:
            return f"has {field_name} of type {type(ci).__name__}; expected (lower, upper)"
        checks += [(f"{field_name} lower", ci[0], lo, hi), (f"{field_name} upper", ci[1], lo, hi)]
    for what, x, lo, hi in checks:
        if x is None and what != "value":
            continue
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            return f"has {what} of type {type(x).__name__}; expected a finite number in [{lo:g}, {hi:g}]"
        v = float(x)
        tol = _EPS if what == "value" else 1e-9  # rounding in an interval's end is not junk
        if not math.isfinite(v) or v < lo - tol or v > hi + tol:
            return f"has {what} {v!r}; expected a finite number in [{lo:g}, {hi:g}]"
    if res.ci is not None and res.ci[0] > res.ci[1] + _EPS:
        return "has an interval whose lower end is above its upper end"
    if not isinstance(res.raw, (int, float, np.integer, np.floating)) or isinstance(res.raw, bool):
        return f"has raw of type {type(res.raw).__name__}; expected a number"
    return None


def evaluation_plan(config: GateConfig, has_holdout: bool) -> dict[str, Any]:
    """What a gate run of ``config`` evaluates, as :func:`privgate.evaluate` keyword arguments
    (without the inputs): the metrics with a rule that applies (in configuration order), their
    parameters, keys, sensitive columns, schema, seed, and whether holdout baselines are
    needed. One plan for :func:`run_gate` and for evaluations split over several processes."""
    names = config.metrics_for(has_holdout)
    return {"metrics": names, "keys": config.keys, "sensitive": config.sensitive,
            "schema": config.schema, "seed": config.seed,
            "params": {n: p for n, p in config.params().items() if n in names},
            "baseline": bool(has_holdout and config.needs_baseline)}


def evaluate_for_gate(config: GateConfig, real: Any, synthetic: Any, holdout: Any = None, *,
                      metrics: Any = None, threads: int | None = None,
                      progress: Callable[..., Any] | None = None) -> Any:
    """Evaluate part of a gate run's plan (:func:`evaluation_plan`): the planned metrics among
    ``metrics`` (default: all), with the plan's parameters, seed and baselines, metric failures
    recorded in ``Report.errors``. The report carries the content digests of its inputs
    (``params["inputs_sha256"]``) so :func:`run_gate` (``report=``) can check that the parts it
    is given were computed from the inputs it gates. A metric's result does not depend on which
    other metrics share its context (each searches or slices the same exact neighbours), so the
    parts of a split evaluation give the results of the whole.

    Input validation errors raise (as :func:`privgate.evaluate`)."""
    from ..evaluate import evaluate
    from ..io import load_frame
    from .fingerprint import frame_fingerprint

    frames = {role: load_frame(data, role=role) for role, data in
              (("real", real), ("synthetic", synthetic), ("holdout", holdout)) if data is not None}
    plan = evaluation_plan(config, "holdout" in frames)
    if metrics is not None:
        wanted = set(metrics)
        plan["metrics"] = [m for m in plan["metrics"] if m in wanted]
        plan["params"] = {k: v for k, v in plan["params"].items() if k in wanted}
    report = evaluate(frames["real"], frames["synthetic"], holdout=frames.get("holdout"),
                      on_error="record", progress=progress,
                      threads=threads if threads is not None else config.options.threads,
                      exact=config.options.exact, sample_real=config.options.sample_real,
                      sample=config.options.sample, **plan)
    report.params["inputs_sha256"] = {role: frame_fingerprint(f)["content_sha256"]
                                      for role, f in frames.items()}
    report.params["schema_overrides"] = dict(plan["schema"] or {})
    return report


def _precomputed(report: Any, plan: dict[str, Any], fingerprint: dict[str, Any],
                 frames: dict[str, Any]) -> Any:
    """``report`` checked against this run's plan and inputs, as a copy in plan order; raises
    ParameterError naming what does not match."""
    from ..errors import ParameterError
    from ..report import Report

    if not isinstance(report, Report):
        raise ParameterError(f"the precomputed report is a {type(report).__name__}, not a privgate Report")
    planned = list(plan["metrics"])
    params = report.params or {}

    def mismatch(what: str) -> ParameterError:
        return ParameterError(f"the precomputed report does not match this gate run: {what}")

    extra = [n for n in (*report.results, *report.errors) if n not in planned]
    if extra:
        raise mismatch(f"it has metrics the configuration does not plan for this run: {extra[:5]}")
    if report.results:  # results must come from these inputs with these settings
        digests = params.get("inputs_sha256")
        if not isinstance(digests, dict):
            raise mismatch("it carries no input digests (params['inputs_sha256']; use evaluate_for_gate)")
        for role, frame in frames.items():
            if frame is not None and digests.get(role) != (fingerprint.get(role) or {}).get("content_sha256"):
                raise mismatch(f"it was computed from other {role} data (content digest differs)")
        if set(digests) - {r for r, f in frames.items() if f is not None}:
            raise mismatch(f"it was computed with inputs this run lacks: {sorted(set(digests) - set(frames))}")
        if report.seed != plan["seed"]:
            raise mismatch(f"seed {report.seed!r}, the configuration's is {plan['seed']!r}")
        if dict(params.get("schema_overrides") or {}) != dict(plan["schema"] or {}):
            raise mismatch("it was computed with other column kinds (schema) than the configuration's")
        for key in ("keys", "sensitive", "baseline"):
            have = params.get(key)
            want = plan[key]
            if key != "baseline":
                have, want = list(have or []), list(want or [])
            if have != want:
                raise mismatch(f"{key} {have!r}, the configuration's is {want!r}")
        got = params.get("metric_params") or {}
        for name in report.results:
            if dict(got.get(name) or {}) != dict(plan["params"].get(name) or {}):
                raise mismatch(f"metric {name!r} was computed with other parameters than the configuration's")
    return Report(results={n: report.results[n] for n in planned if n in report.results},
                  errors={n: report.errors[n] for n in planned if n in report.errors},
                  schema=dict(report.schema), n_real=report.n_real, n_synthetic=report.n_synthetic,
                  n_holdout=report.n_holdout, seed=report.seed, seconds=report.seconds,
                  params={**params, "metrics": planned})


def _run(cfg: Any, real: Any, synthetic: Any, holdout: Any, release_id: str,
         history: "HistoryStore | None", *, dataset: str | None, progress: Any, run_id: str,
         created: datetime, options: Mapping[str, Any] | None = None,
         precomputed: Any = None, generator_version: str | None = None,
         memory_limit: int | str | None = "auto") -> GateOutcome:
    from ..io import load_frame, scan_frame

    checks: list[GateCheck] = []
    report = None
    fingerprint: dict[str, Any] = {}
    previous_release = None
    has_holdout = holdout is not None

    config: GateConfig | None = None
    try:
        if isinstance(cfg, GateConfig):
            config = cfg
        elif isinstance(cfg, (str, Path)):
            config = load_gate_config(cfg)
        else:
            config = parse_gate_config(cfg)
        if dataset:
            config = config.with_dataset(dataset)  # an invalid name is a configuration error
        if options:
            config = config.with_options(**options)  # an invalid option is a configuration error
    except ConfigError as exc:
        checks.append(_error_check("(config)", f"invalid configuration: {safe_message(str(exc))}"))
    except Exception as exc:  # noqa: BLE001
        checks.append(_error_check("(config)", f"invalid configuration: {_privgate_error_text(exc)}"))
    ds = dataset or (config.dataset if config else "unknown")

    # Parquet / Arrow files stay file scans: fingerprinted in batches and handed to the evaluation
    # as paths, whose metrics read only the columns they need (a group-by streams the file) and
    # load a frame once, when a neighbour search needs the encoded matrix (docs/performance.md)
    frames: dict[str, pl.DataFrame | pl.LazyFrame | None] = {}
    stamps: dict[str, tuple[int, int]] = {}
    for role, data in (("real", real), ("synthetic", synthetic), ("holdout", holdout)):
        if data is None:
            if role != "holdout":
                checks.append(_error_check(f"({role})", f"{role} input missing"))
            continue
        try:
            scan = scan_frame(data, role=role)
            if scan is not None:
                stamps[role] = _stamp(data)
            frames[role] = scan if scan is not None else load_frame(data, role=role)
        except Exception as exc:  # noqa: BLE001
            checks.append(_error_check(f"({role})", f"cannot load {role}: {_privgate_error_text(exc)}"))
    sources = {"real": real, "synthetic": synthetic, "holdout": holdout}
    try:
        fingerprint = inputs_fingerprint(frames, sources)
    except Exception as exc:  # noqa: BLE001
        checks.append(_error_check("(input)", f"cannot fingerprint inputs: {_privgate_error_text(exc)}"))
    inputs = {r: (sources[r] if r in stamps else f) for r, f in frames.items()}

    if config is not None and config.require_holdout and not has_holdout:
        checks.append(_error_check("(holdout)", "the configuration requires a holdout and none was given"))

    if config is not None and not checks:
        previous, note, trend_note = None, "", ""
        if config.needs_history:
            if history is None:
                note = "no history store given; trend rule not evaluated"
            else:
                try:
                    last = history.last_accepted(ds)
                except Exception as exc:  # noqa: BLE001
                    checks.append(_error_check("(history)", f"cannot read history: {_privgate_error_text(exc)}"))
                    last = None
                    note = "history unavailable"
                else:
                    if last is None:
                        note = f"first accepted release of dataset {ds!r}; nothing to compare with"
                    else:
                        previous = last.metrics
                        previous_release = last.release_id
                        # values depend on the real data: say when it changed since then
                        if ((last.fingerprint.get("real") or {}).get("content_sha256")
                                != (fingerprint.get("real") or {}).get("content_sha256")):
                            trend_note = (f"the real data differ from release {last.release_id!r}'s: "
                                          "compare with care")
        plan = evaluation_plan(config, has_holdout)
        try:
            if precomputed is not None:
                report = _precomputed(precomputed, plan, fingerprint, frames)
            else:
                report = _evaluate(inputs["real"], inputs["synthetic"], holdout=inputs.get("holdout"),
                                   on_error="record", progress=progress, threads=config.options.threads,
                                   exact=config.options.exact, sample_real=config.options.sample_real,
                                   sample=config.options.sample, memory_limit=memory_limit,
                                   **plan)
        except BaseException as exc:  # noqa: BLE001 - rejected inputs, SystemExit/KeyboardInterrupt from a metric
            what = "was interrupted" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "failed"
            checks.append(_error_check("(input)" if isinstance(exc, PrivgateError) else "(evaluation)",
                                       f"evaluation {what}: {_privgate_error_text(exc)}"))
        else:
            errors = dict(getattr(report, "errors", {}) or {})
            results = dict(getattr(report, "results", {}) or {})
            for name, res in list(results.items()):
                problem = result_problem(res)
                if problem is not None:
                    errors[name] = f"metric {name!r} {problem}"
                    del results[name]  # never rendered, stored or compared
            report.results = results
            report.errors = errors
            changed = [r for r, st in stamps.items() if _stamp(sources[r]) != st]
            if changed:  # the fingerprint and the scores may describe different content
                checks.append(_error_check("(input)", f"the {', '.join(changed)} file(s) changed during the run"))
            used = (getattr(report, "params", None) or {}).get("options") or {}
            if used.get("threads"):
                config = config.with_options(threads=int(used["threads"]))  # as resolved, recorded
            checks.extend(decide(config, results, errors, has_holdout=has_holdout, previous=previous,
                                 previous_note=note, trend_note=trend_note))

    if config is not None and config.require_audit is not None:  # a passing audit of the generator
        from .audit_rules import requirement_check

        checks.append(GateCheck(**requirement_check(config.require_audit, history, generator_version)))
    if config is not None and report is not None:  # a run that evaluated no rule does not pass
        checks.extend(unchecked_checks(config, checks))
    return _outcome(checks, run_id=run_id, dataset=ds, release_id=release_id, created=created,
                    has_holdout=has_holdout, report=report, config=config, fingerprint=fingerprint,
                    previous_release_id=previous_release)


def _stamp(path: Any) -> tuple[int, int]:
    """Size and modification time of an input file (a file replaced during the run is refused)."""
    st = Path(path).stat()
    return st.st_size, st.st_mtime_ns


# ---------------------------------------------------------------------------------------------
# printing


def _fmt(x: float | None, signed: bool = False) -> str:
    """A score as text; "-" for anything that is not a finite number (a broken result never
    breaks the table that reports it)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
        return "-"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def merged_checks(checks: list[GateCheck]) -> list[tuple[GateCheck, str, str]]:
    """Consecutive checks of one metric and rule on the same quantity (a warn and a block limit)
    become one row: (the deciding check, limits text, verdict)."""
    rows: list[tuple[GateCheck, str, str]] = []
    group: list[GateCheck] = []

    def flush() -> None:
        if not group:
            return
        worst = max(group, key=lambda c: _RANK[c.verdict])
        limits = " / ".join(f"{c.severity} {c.threshold:g}" for c in group if c.threshold is not None) or "-"
        rows.append((worst if worst.verdict != "pass" else group[0], limits, worst.verdict))
        group.clear()

    for c in checks:
        if group and (c.metric, c.rule, c.compared, c.skipped) != (group[0].metric, group[0].rule,
                                                                   group[0].compared, group[0].skipped):
            flush()
        group.append(c)
        if c.rule == "error":
            flush()
    flush()
    return rows


def fmt_interval(ci: Any, signed: bool = False) -> str:
    """``[lower, upper]`` of an interval in the decision table's number format, "" without one."""
    if ci is None:
        return ""
    try:
        return f"[{_fmt(float(ci[0]), signed)}, {_fmt(float(ci[1]), signed)}]"
    except (TypeError, ValueError, IndexError, KeyError):
        return ""


def fmt_p(p: Any) -> str:
    """A p-value: 4 decimals, small ones as "<0.0001"; "-" without one."""
    if p is None:
        return "-"
    p = float(p)
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def with_interval(x: float | None, ci: Any, signed: bool = False) -> str:
    """A value followed by its interval: ``0.0120 [0.0040, 0.0310]``."""
    text = _fmt(x, signed)
    iv = fmt_interval(ci, signed) if x is not None else ""
    return f"{text} {iv}" if iv else text


def check_row(outcome: "GateOutcome", c: GateCheck, limits: str, verdict: str) -> dict[str, str]:
    """One decision-table row as text: the value with the metric's interval, the compared
    quantity with the rule's interval (the check's own, else the result's: ``ci`` for threshold
    rules, ``excess_ci`` for baseline rules), the interval end the rule decided on and the
    p-value (the check's, else the metric's). The GateCheck fields ``on``, ``interval`` and
    ``p_value`` are read when present."""
    res = outcome.results.get(c.metric)
    on = getattr(c, "on", None)
    interval = getattr(c, "interval", None)
    if interval is None and res is not None and c.rule in ("threshold", "baseline"):
        interval = res.ci if c.rule == "threshold" else res.excess_ci
    p = getattr(c, "p_value", None)
    if p is None and res is not None and c.rule != "error":
        p = res.p_value
    signed = c.rule in ("baseline", "trend")
    return {
        "metric": c.metric + (" (optional)" if c.optional else ""),
        "rule": c.rule + (f" ({on})" if on in ("lower", "upper") else ""),
        "value": with_interval(c.value, res.ci if res is not None else None),
        "compared": with_interval(c.compared, interval, signed),
        "limits": limits,
        "p": fmt_p(p),
        "verdict": verdict.upper() if verdict != "pass" else "pass",
        "note": c.message if verdict != "pass" or c.skipped or c.rule == "error" else "",
    }


def decision_rows(outcome: "GateOutcome") -> list[tuple[GateCheck, str, dict[str, str]]]:
    """The decision table (warn and block limits of one rule on one row): (the deciding check,
    its verdict, its row as text)."""
    return [(c, verdict, check_row(outcome, c, limits, verdict))
            for c, limits, verdict in merged_checks(outcome.checks)]


def sampling_summary(results: Mapping[str, Any]) -> str | None:
    """One line naming the metrics estimated on sampled query records (``details["sampled"]``)
    and how many of how many records per side, or None when every record was used."""
    parts = []
    for name, res in (results or {}).items():
        sampled = (getattr(res, "details", None) or {}).get("sampled")
        if not sampled:
            continue
        sides = [sampled] + [v for v in sampled.values() if isinstance(v, dict)]
        text = ", ".join(f"{d.get('side', 'real')} {d['n']:,} of {d['of']:,}" for d in sides)
        parts.append(f"{name} ({text})")
    if not parts:
        return None
    return "sampled query records (seeded; intervals include the sampling error): " + "; ".join(parts)


def format_checks(outcome: GateOutcome, compact: bool = False) -> str:
    """A fixed-width decision table (warn and block limits of one rule on one row; values with
    their 95 % intervals; p-values) followed by the decision line.

    ``compact``: no line longer than 100 characters — per row the metric, the rule, the quantity
    compared with the limits (with its interval), the limits and the verdict (the p-value only
    when a test rule is present), and each row's note (why it warned, blocked or was skipped) on
    an indented line below it."""
    label = {0: "PASS", 1: "WARN", 2: "BLOCK", 3: "BLOCK (error: the gate could not decide; fails closed)"}
    width = TABLE_WIDTH if compact else None
    if compact:
        text_rows = [r for _, _, r in decision_rows(outcome)]
        keys = ["metric", "rule", "compared", "limits", "p", "verdict"]
        if not any(c.rule == "test" for c in outcome.checks):
            keys.remove("p")
        names = {"compared": "compared [95% CI]"}
        lines, blocks = table_blocks([names.get(k, k) for k in keys],
                                     [[r[k] for k in keys] for r in text_rows],
                                     width=width, wrap=("compared [95% CI]", "limits"))
        for r, block in zip(text_rows, blocks):
            lines += block
            if r["note"]:
                lines.append(wrap_line(f"    {r['note']}", width, indent="    "))
    else:
        header = ("metric", "rule", "value [95% CI]", "compared [95% CI]", "limits", "p", "verdict", "note")
        keys = ("metric", "rule", "value", "compared", "limits", "p", "verdict", "note")
        rows = [tuple(r[k] for k in keys) for _, _, r in decision_rows(outcome)]
        lines = [line.rstrip() for line in format_table(header, rows).splitlines()]
    lines.append("")
    note = sampling_summary(outcome.results)
    if note:
        lines.append(wrap_line(note, width, indent="  "))
    if unchecked_note(outcome):
        lines.append(wrap_line(unchecked_note(outcome).strip(), width, indent="  "))
    lines.append(wrap_line(f"decision: {label.get(outcome.exit_code, str(outcome.decision).upper())}  "
                           f"(dataset {outcome.dataset!r}, release {outcome.release_id!r}, run {outcome.run_id}, "
                           f"exit code {outcome.exit_code})", width, indent="  "))
    return "\n".join(lines)
