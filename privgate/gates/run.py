"""Running a gate: evaluate the configured metrics on a release and decide pass / warn / block.

The gate **fails closed**: an input that cannot be loaded, an invalid configuration, a metric
that errors (unless the configuration marks it ``optional``), a baseline that cannot be computed
while a holdout is given, or a history store that cannot be read or written all block the
release (exit codes: :data:`privgate.gates.outcome.EXIT_CODES`).

The gate never computes a distance itself: it calls :func:`privgate.evaluate` and compares the
results with the rules (:mod:`privgate.gates.deciding`). The run is recorded once, at the end
(:func:`record_outcome`).

**Deadline.** The evaluation runs in a worker thread (:mod:`privgate.gates.deadline`); when the
run's deadline passes (or the caller is interrupted) the run is blocked ("did not finish within
its deadline") and the worker stopped; one still inside a native call is left behind as a daemon
thread, ``outcome.worker``, and ``privgate gate`` then ends its process once the run is recorded
(docs/gates.md, "Deadline").

**Precomputed results.** ``run_gate(report=...)`` gates results computed beforehand
(:func:`privgate.gates.plan.evaluate_for_gate` per part, joined with
:func:`privgate.report.merge_reports`): they are checked against this run's plan and inputs, a
report that does not match blocks, and the gate then decides exactly as if it had evaluated.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import ConfigError, PrivgateError
from ..options import DEFAULT_DEADLINE, RunOptions, parse_options
from .checks import GateCheck, decision_of, error_check, privgate_error_text, safe_message
from .config import declared_dataset, resolve_gate_config
from .config_model import GateConfig
from .deadline import DeadlineExceeded, with_deadline
from .deciding import decide, result_problem, unchecked_checks
from .fingerprint import inputs_fingerprint
from .outcome import GateOutcome, add_error
from .plan import evaluation_plan, precomputed_report

if TYPE_CHECKING:  # pragma: no cover
    from ..history.store import HistoryStore


# the dataset of a run whose configuration names none that can be read
UNKNOWN_DATASET = "unknown"


def _evaluate(*args: Any, **kwargs: Any) -> Any:
    """Indirection to :func:`privgate.evaluate` (lets tests substitute a failing metric run)."""
    from ..evaluation import evaluate

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
    generator_digest: str | None = None,
    memory_limit: int | str | None = None,
    options: RunOptions | None = None,
    executor: Any = None,
    sharded: bool = False,
) -> GateOutcome:
    """Gate one synthetic release and, when ``history`` is given, record the run in it.

    ``cfg``: a :class:`GateConfig`, a dict or a path to a YAML/TOML file; ``real``, ``synthetic``
    and ``holdout``: anything :func:`privgate.io.load_frame` accepts. Never raises (not even for
    ``SystemExit`` or ``KeyboardInterrupt`` from a metric): anything that stops the gate from
    deciding gives a blocked outcome, exit code 3. ``history`` is read for trend rules; the run is
    recorded in it once, at the end, unless ``record=False`` (a caller with more steps that can
    fail records the final decision itself with :func:`record_outcome`).

    ``options`` (:class:`privgate.options.RunOptions`) and the keywords ``threads`` …
    ``memory_limit`` override the configuration's ``options`` (None: not given; a keyword wins
    over ``options``); the options used are recorded in the outcome's configuration. ``report``:
    precomputed results; ``generator_version`` and ``generator_digest``
    (:mod:`privgate.audit.identity`): the generator that made the release, for ``require_audit``
    (:func:`privgate.gates.require_audit.requirement_check`). ``executor``: None or ``"local"``
    evaluates here; a Dask scheduler address (``"dask://host:port"``) or a ``distributed.Client``
    evaluates each metric family on a worker of that cluster (:mod:`privgate.gates.cluster`,
    extra ``[dask]``), with the same results and decision. ``sharded=True`` (with a cluster
    ``executor``): the inputs — each a Parquet file, a folder of them, a glob or a list of files
    the workers can read — are never loaded here; they are fingerprinted and evaluated partition by
    partition on the workers (:mod:`privgate.gates.sharded`), searches sharded and merged exactly;
    a metric that cannot be sharded blocks, naming why (docs/cluster.md, "Sharded gate").
    """
    start = time.perf_counter()
    created = datetime.now(timezone.utc)
    run_id = uuid.uuid4().hex
    release_id = str(release_id)
    overrides = {
        "threads": threads,
        "exact": exact,
        "sample_real": sample_real,
        "sample": sample,
        "deadline": deadline,
        "memory_limit": memory_limit,
    }
    seconds = _deadline_of(cfg, options, deadline)

    def work() -> GateOutcome:
        return _run(
            cfg,
            real,
            synthetic,
            holdout,
            release_id,
            history,
            dataset=dataset,
            options=options,
            overrides=overrides,
            progress=progress,
            run_id=run_id,
            created=created,
            precomputed=report,
            generator_version=generator_version,
            generator_digest=generator_digest,
            executor=executor,
            sharded=sharded,
        )

    worker = None
    try:
        outcome, worker = with_deadline(work, seconds)
    except BaseException as exc:  # noqa: BLE001 - fails closed, whatever escaped (SystemExit too)
        worker = getattr(exc, "worker", None)
        outcome = _stopped(
            exc,
            seconds,
            cfg,
            dataset,
            run_id=run_id,
            release_id=release_id,
            created=created,
            has_holdout=holdout is not None,
        )
    outcome.worker = worker if worker is not None and worker.is_alive() else None
    outcome.seconds = time.perf_counter() - start
    if history is not None and record:
        record_outcome(outcome, history)
    return outcome


def _stopped(exc: BaseException, seconds: float, cfg: Any, dataset: str | None, **run: Any) -> GateOutcome:
    """The blocked outcome of a run stopped by its deadline or by whatever escaped it."""
    if isinstance(exc, DeadlineExceeded):
        where = "(deadline)"
        text = (
            f"the run did not finish within its deadline of {seconds:g} s and was stopped; the release is "
            "blocked — raise options.deadline (--deadline, the Dagster resource's deadline) or make the "
            "run lighter (options.sample, fewer metrics)"
        )
    else:
        where, text = "(gate)", f"the gate stopped: {privgate_error_text(exc)}"
    config = _config_of(cfg, dataset)
    ds = dataset or (config.dataset if config is not None else declared_dataset(cfg) or UNKNOWN_DATASET)
    return _outcome([error_check(where, text)], dataset=ds, config=config, **run)


def _config_of(cfg: Any, dataset: str | None) -> "GateConfig | None":
    """The configuration, when it can be read (for a run stopped before it decided), else None."""
    try:
        return resolve_gate_config(cfg, dataset)
    except Exception:  # noqa: BLE001 - the run reports the configuration's problem itself
        return None


def _deadline_of(cfg: Any, options: RunOptions | None, deadline: Any) -> float:
    """The run's deadline in seconds: ``deadline`` when given (validated), else ``options``',
    else the configuration's ``options.deadline`` (the default when the configuration cannot be
    read: the run reports why)."""
    if deadline is not None:
        try:
            return parse_options({"deadline": deadline}).deadline
        except ConfigError:
            return DEFAULT_DEADLINE  # _run reports the invalid option and blocks
    if options is not None and options.deadline is not None:
        return options.deadline
    config = _config_of(cfg, None)
    return config.options.deadline if config is not None else DEFAULT_DEADLINE


@dataclass
class _Inputs:
    """A run's inputs as loaded: frames (Parquet / Arrow files stay scans), the size and
    modification time of each scanned file, what was given, and the fingerprint."""

    frames: dict[str, Any] = field(default_factory=dict)
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)
    sources: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)

    def evaluated(self) -> dict[str, Any]:
        """What the evaluation reads: a scanned file's path (its metrics read only the columns
        they need), else the loaded frame."""
        return {r: (self.sources[r] if r in self.stamps else f) for r, f in self.frames.items()}

    def changed(self) -> list[str]:
        """The scanned files that changed since they were fingerprinted."""
        return [r for r, st in self.stamps.items() if _stamp(self.sources[r]) != st]


def _run(
    cfg: Any,
    real: Any,
    synthetic: Any,
    holdout: Any,
    release_id: str,
    history: "HistoryStore | None",
    *,
    dataset: str | None,
    progress: Any,
    run_id: str,
    created: datetime,
    options: RunOptions | None = None,
    overrides: Mapping[str, Any] | None = None,
    precomputed: Any = None,
    generator_version: str | None = None,
    generator_digest: str | None = None,
    executor: Any = None,
    sharded: bool = False,
) -> GateOutcome:
    checks: list[GateCheck] = []
    report, previous_release = None, None
    has_holdout = holdout is not None
    config = _load_config(cfg, dataset, options, overrides or {}, checks)
    ds = dataset or (config.dataset if config else declared_dataset(cfg) or UNKNOWN_DATASET)
    if config is None:  # errors first: an invalid configuration is reported before any input is opened
        return _outcome(
            checks,
            run_id=run_id,
            dataset=ds,
            release_id=release_id,
            created=created,
            has_holdout=has_holdout,
            config=None,
        )
    sources = {"real": real, "synthetic": synthetic, "holdout": holdout}
    inputs = _open_inputs(
        config, sources, checks, has_holdout=has_holdout, precomputed=precomputed, executor=executor, sharded=sharded
    )
    if config.require_holdout and not has_holdout:
        checks.append(error_check("(holdout)", "the configuration requires a holdout and none was given"))
    if not checks:
        config, report, previous_release = _evaluate_and_decide(
            config,
            history,
            ds,
            inputs,
            checks,
            has_holdout=has_holdout,
            precomputed=precomputed,
            progress=progress,
            executor=executor,
            sharded=sharded,
        )
    if config.require_audit is not None:  # a passing audit of the generator
        checks.append(_audit_check(config, history, ds, generator_version, generator_digest))
    if report is not None:  # a run that evaluated no rule about the release
        # does not pass — a passing audit is about the generator, not this release
        checks.extend(unchecked_checks(config, checks))
    return _outcome(
        checks,
        run_id=run_id,
        dataset=ds,
        release_id=release_id,
        created=created,
        has_holdout=has_holdout,
        report=report,
        config=config,
        fingerprint=inputs.fingerprint,
        previous_release_id=previous_release,
    )


def _open_inputs(
    config: GateConfig,
    sources: dict[str, Any],
    checks: list[GateCheck],
    *,
    has_holdout: bool,
    precomputed: Any,
    executor: Any,
    sharded: bool,
) -> _Inputs:
    """The run's inputs: loaded here, or left to the cluster's workers when ``sharded`` (after
    refusing, before any input is read, the metrics a sharded run cannot compute)."""
    if not sharded:
        return _load_inputs(sources, checks)
    if precomputed is None:
        from .sharded import refused_metrics

        refused = refused_metrics(config, evaluation_plan(config, has_holdout))
        if refused is not None:
            checks.append(error_check("(sharded)", refused))
    return _Inputs(sources=sources) if checks else _sharded_inputs(sources, executor, checks)


def _evaluate_and_decide(
    config: GateConfig,
    history: "HistoryStore | None",
    ds: str,
    inputs: _Inputs,
    checks: list[GateCheck],
    *,
    has_holdout: bool,
    precomputed: Any,
    progress: Any,
    executor: Any,
    sharded: bool,
) -> tuple[GateConfig, Any, str | None]:
    """Evaluate the release and add the rules' checks: (the configuration with the threads the
    run resolved, the report or None, the last accepted release's id)."""
    last = _last_accepted(config, history, ds, inputs.fingerprint, checks)
    report = _evaluation(
        config, inputs, has_holdout, precomputed, checks, progress=progress, executor=executor, sharded=sharded
    )
    if report is not None:
        results, errors = _gateable(report)
        changed = inputs.changed()
        if changed:  # the fingerprint and the scores may describe different content
            checks.append(error_check("(input)", f"the {', '.join(changed)} file(s) changed during the run"))
        used = (getattr(report, "params", None) or {}).get("options") or {}
        if used.get("threads"):
            config = config.with_options(threads=int(used["threads"]))  # as resolved, recorded
        checks.extend(
            decide(
                config,
                results,
                errors,
                has_holdout=has_holdout,
                previous=last.metrics,
                previous_note=last.note,
                trend_note=last.trend_note,
            )
        )
    return config, report, last.release_id


def _audit_check(
    config: GateConfig,
    history: "HistoryStore | None",
    ds: str,
    generator_version: str | None,
    generator_digest: str | None,
) -> GateCheck:
    """The check of the configuration's require_audit: a passing audit of the release's generator."""
    from .require_audit import requirement_check

    return GateCheck(
        **requirement_check(config.require_audit, history, generator_version, digest=generator_digest, dataset=ds)
    )


def _load_config(
    cfg: Any, dataset: str | None, options: RunOptions | None, overrides: Mapping[str, Any], checks: list[GateCheck]
) -> GateConfig | None:
    """The run's configuration with its ``dataset`` and the run's ``options`` / ``overrides``
    applied (the one place a run's options are resolved); None (and an error check) when it is
    invalid."""
    try:
        config = resolve_gate_config(cfg, dataset)  # an invalid dataset name is a configuration error
        return config.with_options(options, **overrides)  # so is an invalid option
    except ConfigError as exc:
        checks.append(error_check("(config)", f"invalid configuration: {safe_message(str(exc))}"))
    except Exception as exc:  # noqa: BLE001
        checks.append(error_check("(config)", f"invalid configuration: {privgate_error_text(exc)}"))
    return None


def _load_inputs(sources: dict[str, Any], checks: list[GateCheck]) -> _Inputs:
    """Load (or scan) and fingerprint the inputs; an input that is missing or cannot be loaded
    is an error check. Parquet / Arrow files stay file scans: fingerprinted in batches and handed
    to the evaluation as paths, whose metrics read only the columns they need (a group-by streams
    the file) and load a frame once, when a neighbour search needs the encoded matrix
    (docs/performance.md, "Compact spaces and streaming inputs")."""
    from ..io import load_frame, scan_frame

    inputs = _Inputs(sources=sources)
    for role, data in sources.items():
        if data is None:
            if role != "holdout":
                checks.append(error_check(f"({role})", f"{role} input missing"))
            continue
        try:
            scan = scan_frame(data, role=role)
            if scan is not None:
                inputs.stamps[role] = _stamp(data)
            inputs.frames[role] = scan if scan is not None else load_frame(data, role=role)
        except Exception as exc:  # noqa: BLE001
            checks.append(error_check(f"({role})", f"cannot load {role}: {privgate_error_text(exc)}"))
    if not checks:
        _check_columns(inputs, checks)
    try:
        inputs.fingerprint = inputs_fingerprint(inputs.frames, sources)
    except Exception as exc:  # noqa: BLE001
        checks.append(error_check("(input)", f"cannot fingerprint inputs: {privgate_error_text(exc)}"))
    return inputs


def _sharded_inputs(sources: dict[str, Any], executor: Any, checks: list[GateCheck]) -> _Inputs:
    """A sharded run's inputs: never loaded here; fingerprinted on the cluster ``executor`` from
    their partitions. An input given as an in-memory table, no cluster, a scheduler that cannot be
    reached or a partition that cannot be read is an error check naming the role, the address or
    the file."""
    from ..audit.cluster import is_cluster

    inputs = _Inputs(sources=sources)
    for role, data in sources.items():
        if data is None and role != "holdout":
            checks.append(error_check(f"({role})", f"{role} input missing"))
        elif data is not None and not isinstance(data, (str, Path, list, tuple)):
            checks.append(error_check(f"({role})", _in_memory_input(role, data)))
    try:
        if not is_cluster(executor):
            checks.append(
                error_check(
                    "(executor)",
                    "a sharded gate runs on a Dask cluster: give executor= a "
                    "scheduler address (dask://host:port) or a distributed.Client",
                )
            )
            return inputs
        if checks:
            return inputs
        from .sharded import sharded_fingerprint_of

        inputs.fingerprint = sharded_fingerprint_of(sources, executor)
        inputs.frames = {r: s for r, s in sources.items() if s is not None}
    except Exception as exc:  # noqa: BLE001
        checks.append(error_check("(input)", f"cannot read the sharded inputs: {privgate_error_text(exc)}"))
    return inputs


def _in_memory_input(role: str, data: Any) -> str:
    """Why a sharded run refuses ``role`` given as an in-memory table (refused here, before any
    of its records would be sent to the cluster)."""
    return (
        f"{role}: a sharded gate reads its inputs on the workers and was given an in-memory "
        f"{type(data).__name__}; give a Parquet file, a folder of them, a glob or a list of files "
        "the workers can read (or run without sharded)"
    )


def _check_columns(inputs: _Inputs, checks: list[GateCheck]) -> None:
    """An input without records is an error check calling it empty; inputs whose columns differ
    are an error check naming the columns where the input's format
    keeps names apart from records (Parquet, Arrow, frames) and by position, counted from 1, in a
    CSV (:func:`privgate.io.column_difference`)."""
    import polars as pl

    from ..io import column_difference, header_is_names

    for role, frame in inputs.frames.items():  # a file with a header and no record is empty too
        rows = frame.select(pl.len()).collect().item() if isinstance(frame, pl.LazyFrame) else frame.height
        if rows == 0:
            checks.append(error_check(f"({role})", f"the {role} input is empty: it has columns but 0 records"))
    if checks:
        return
    columns = {
        r: (f.collect_schema().names() if isinstance(f, pl.LazyFrame) else list(f.columns))
        for r, f in inputs.frames.items()
    }
    certain = {r: header_is_names(inputs.sources[r]) for r in columns}
    problem = column_difference(columns, certain) if "real" in columns else None
    if problem is not None:
        checks.append(error_check("(input)", f"the inputs do not match: {problem}"))


@dataclass
class _Last:
    """What trend rules compare with: the last accepted release's metric values (None: no
    comparison possible, ``note`` says why), its id, and a note when the real data changed."""

    metrics: dict[str, Any] | None = None
    release_id: str | None = None
    note: str = ""
    trend_note: str = ""


def _last_accepted(
    config: GateConfig, history: "HistoryStore | None", ds: str, fingerprint: dict[str, Any], checks: list[GateCheck]
) -> _Last:
    """The last accepted release of dataset ``ds`` (for trend rules); a history that cannot be
    read is an error check."""
    if not config.needs_history:
        return _Last()
    if history is None:
        return _Last(note="no history store given; trend rule not evaluated")
    try:
        last = history.last_accepted(ds)
    except Exception as exc:  # noqa: BLE001
        checks.append(error_check("(history)", f"cannot read history: {privgate_error_text(exc)}"))
        return _Last(note="history unavailable")
    if last is None:
        return _Last(note=f"first accepted release of dataset {ds!r}; nothing to compare with")
    out = _Last(metrics=last.metrics, release_id=last.release_id)
    # values depend on the real data: say when it changed since then
    if (last.fingerprint.get("real") or {}).get("content_sha256") != (fingerprint.get("real") or {}).get(
        "content_sha256"
    ):
        out.trend_note = f"the real data differ from release {last.release_id!r}'s: compare with care"
    return out


def _evaluation(
    config: GateConfig,
    inputs: _Inputs,
    has_holdout: bool,
    precomputed: Any,
    checks: list[GateCheck],
    *,
    progress: Any,
    executor: Any = None,
    sharded: bool = False,
) -> Any:
    """The run's report: evaluated here with the configuration's plan and options, on a cluster's
    workers (``executor``), or the precomputed one — the last two checked against the plan and
    the inputs; None (and an error check) when that failed."""
    plan = evaluation_plan(config, has_holdout)
    evaluated = inputs.evaluated()
    try:
        if precomputed is None and sharded:
            from .sharded import evaluate_sharded_gate

            precomputed = evaluate_sharded_gate(
                config, plan, inputs.sources, inputs.fingerprint, executor=executor, progress=progress
            )
        elif precomputed is None and executor is not None:
            from ..audit.cluster import is_cluster

            if is_cluster(executor):
                import polars as pl

                from .cluster import evaluate_on_cluster

                loaded = {r: (f.collect() if isinstance(f, pl.LazyFrame) else f) for r, f in inputs.frames.items()}
                precomputed = evaluate_on_cluster(
                    config,
                    loaded["real"],
                    loaded["synthetic"],
                    loaded.get("holdout"),
                    executor=executor,
                    threads=config.options.threads,
                    progress=progress,
                )
        if precomputed is not None:
            return precomputed_report(precomputed, plan, inputs.fingerprint, inputs.frames)
        return _evaluate(
            evaluated["real"],
            evaluated["synthetic"],
            holdout=evaluated.get("holdout"),
            on_error="record",
            progress=progress,
            options=config.options,
            **plan,
        )
    except BaseException as exc:  # noqa: BLE001 - rejected inputs, SystemExit/KeyboardInterrupt from a metric
        what = "was interrupted" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "failed"
        checks.append(
            error_check(
                "(input)" if isinstance(exc, PrivgateError) else "(evaluation)",
                f"evaluation {what}: {privgate_error_text(exc)}",
            )
        )
        return None


def _gateable(report: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The report's results a gate may compare and its errors: a result that is not a finite
    number in range (:func:`result_problem`) becomes an error and is never rendered, stored or
    compared. The report is updated in place."""
    errors = dict(getattr(report, "errors", {}) or {})
    results = dict(getattr(report, "results", {}) or {})
    for name, res in list(results.items()):
        problem = result_problem(res)
        if problem is not None:
            errors[name] = f"metric {name!r} {problem}"
            del results[name]
    report.results = results
    report.errors = errors
    return results, errors


def _stamp(path: Any) -> tuple[int, int]:
    """Size and modification time of an input file (a file replaced during the run is refused)."""
    st = Path(path).stat()
    return st.st_size, st.st_mtime_ns


def record_outcome(outcome: GateOutcome, history: "HistoryStore") -> GateOutcome:
    """Record ``outcome`` (its final decision) in ``history`` in one transaction. A run that
    cannot be recorded is not accepted: its decision becomes block, exit code 3."""
    try:
        history.record(outcome)
        outcome.recorded = True
    except BaseException as exc:  # noqa: BLE001 - a run that cannot be recorded is not accepted
        add_error(outcome, "(history)", f"cannot record the run: {privgate_error_text(exc)}")
    return outcome


def _outcome(
    checks: list[GateCheck],
    *,
    run_id: str,
    dataset: str,
    release_id: str,
    created: datetime,
    has_holdout: bool,
    **kw: Any,
) -> GateOutcome:
    decision, code = decision_of(checks)
    config = kw.get("config")
    return GateOutcome(
        run_id=run_id,
        dataset=dataset,
        release_id=release_id,
        decision=decision,
        checks=checks,
        exit_code=code,
        created_at=created,
        config_hash=config.hash if config else None,
        privgate_version=_version(),
        has_holdout=has_holdout,
        **kw,
    )
