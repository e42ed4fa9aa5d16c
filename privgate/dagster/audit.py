"""A generator audit as a Dagster asset, its generator runs fanned out as dynamic steps, and a
release check that requires a passing audit of the generator version that made the release::

    import dagster as dg
    from privgate.dagster import build_generator_audit, build_audit_required_check

    audit = build_generator_audit("my_generator_audit", generate=my_generate,
                                  real=dg.AssetKey("real_data"), claimed_epsilon=1.0,
                                  runs=200, chunk_size=20)
    audit_ok = build_audit_required_check(my_release, audit, "generator_version")

``build_generator_audit`` returns one graph-backed asset, **partitioned by generator version**
(a partition per version: the audits of every version side by side, a new version a new
partition, no code change), whose graph is

- ``<name>__plan`` — :func:`privgate.audit.prepare_audit` (targets, preflight runs, the design);
  writes the prepared audit to ``<work_dir>/<root run id>/<name>/<version>/prepared.pkl`` and
  yields one dynamic output per chunk of ``chunk_size`` run numbers (mapping key
  ``runs_<first>_<last>``);
- ``<name>__runs`` (one step per chunk) — :func:`privgate.audit.make_run` for each run of its
  chunk with the step's thread budget; writes the runs' outcomes (features of the targets on
  each release: numbers only) as ``runs/<mapping key>.json``;
- ``<name>__analyse`` (after every chunk, ``.collect()``) — :func:`privgate.audit.analyse_runs`:
  the attacks and the ε lower bound; decides the audit with the audit rules
  (:func:`privgate.gates.audit_rules.decide_audit`) and records it in the score history; saves
  the :class:`~privgate.audit.AuditResult` as JSON, records its summary numbers and the decision
  as the materialisation's metadata and returns its per-(target,
  attack) table (:meth:`~privgate.audit.AuditResult.to_polars`) as the asset's value; then
  deletes the run's work folder.

A run's training set and seed depend on the plan and its run number alone, so the steps give the
same features — and the same result — as :func:`privgate.audit.audit_generator` in one process
with the same seed. Nothing but ``Nothing`` passes between the steps (no IO manager): the work
folder (:attr:`PrivgateResource.work_dir`) must be shared by every step's process or pod. The
multiprocess executor runs the chunks in parallel processes, ``dagster_k8s.k8s_job_executor`` in
parallel pods (op ``<name>__runs`` in ``per_step_k8s_config`` sizes them).

Failing closed: a run whose generator raises is a failed run of the audit (counted, as in
``audit_generator``); a step that dies without writing fails the Dagster run and the audit is not
materialised — a check requiring it then blocks.

Parameters of :func:`build_generator_audit`:

``generate(training, n_rows, seed)``: the generator (as for
:func:`privgate.audit.audit_generator`); or ``generate_for(version)`` returning the
generator of a version. ``real``: the sensitive records — an upstream asset
(``dg.AssetKey``, ``AssetsDefinition`` or ``AssetSpec``, loaded through its IO manager), a
file path, or a function returning a frame. ``population``: a path or a function (default:
``real``). ``claimed_epsilon`` / ``delta``: the generator's DP claim. ``runs``,
``targets``, ``n_targets``, ``canaries``, ``training_rows``, ``n_rows``, ``design``,
``background``, ``attacks``, ``confidence``, ``seed``: as ``audit_generator``, with its defaults
(:mod:`privgate.audit.defaults`: the many-canary design, 200 runs, 160 canaries; the same
seed for every version: versions are compared on the same game). The runs fan out all at
once, so an asset's audit is never sequential: it makes every run.

``chunk_size``: runs per dynamic step (one process or pod each). ``versions``: the
partitions — a ``PartitionsDefinition``, a list of versions (static), or None: dynamic
partitions ``<name>_versions`` (add a version with ``instance.add_dynamic_partitions``).
``run_threads``: thread budget of a run step (default: the resource's ``threads``;
unset there: privgate's default). ``executor``: a Dask scheduler address
(``dask://host:port``, extra ``[dask]``): each run step sends its chunk's runs to that cluster,
one task a run with ``run_threads`` threads (default 1), instead of making them in its own
process — the steps stay light and the cluster's workers make the fits
(:mod:`privgate.audit.cluster`; a worker lost mid-step: its runs are made again). ``step_tags``: ``"plan"`` / ``"runs"`` / ``"analyse"`` →
op tags (e.g. ``dagster-k8s/config`` for that step's pod). ``retry_policy``: retries of the
run steps. ``resource_key``: the :class:`~privgate.dagster.PrivgateResource` (its
``work_dir`` holds the steps' files, its ``reports_dir`` the saved results).
``io_manager_key``: IO manager of the asset's value (the per-target table).

``audit_config``: the audit rules that decide the audit (an ``audit:`` block's path, mapping
or :class:`~privgate.gates.audit_rules.AuditConfig`; default
:func:`~privgate.gates.audit_rules.default_audit_config`: block when the ε lower bound
exceeds the claimed ε, warn / block on the AUC lower bound). ``record``: record the decided
audit in the resource's score history (``privgate_audits``, what ``require_audit`` of a
release gate and ``privgate audits`` read); a history that cannot be written fails the step.
``translator``: names the ops, partitions and work folders and builds the descriptions and
metadata (:class:`~privgate.dagster.translator.PrivgateTranslator`).
"""

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import dagster as dg

from privgate.names import identifier

from .audit_files import (
    atomic_write,
    chunk_of,
    chunks,
    read_outcomes,
    read_prepared,
    write_outcomes,
    write_prepared,
)
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

if TYPE_CHECKING:  # pragma: no cover
    from privgate.audit.single_run import Generate

GROUP = "privgate_audit"
STEPS = ("plan", "runs", "analyse")


def build_generator_audit(
    name: str,
    *,
    real: Any,
    generate: "Generate | None" = None,
    generate_for: "Callable[[str], Generate] | None" = None,
    population: Any = None,
    claimed_epsilon: float | None = None,
    delta: float = 0.0,
    confidence: float | None = None,
    runs: int | None = None,
    chunk_size: int = 20,
    targets: Any = "auto",
    n_targets: int | None = None,
    canaries: bool = True,
    training_rows: int | None = None,
    n_rows: int | None = None,
    design: str | None = None,
    background: str | None = None,
    attacks: Sequence[str] | None = None,
    seed: int = 0,
    versions: "dg.PartitionsDefinition | Sequence[str] | None" = None,
    generator_name: str | None = None,
    run_threads: int | None = None,
    step_tags: Mapping[str, Mapping[str, Any]] | None = None,
    retry_policy: dg.RetryPolicy | None = None,
    resource_key: str = "privgate",
    group_name: str = GROUP,
    io_manager_key: str | None = None,
    audit_config: Any = None,
    record: bool = True,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
    executor: Any = None,
) -> dg.AssetsDefinition:
    """A partitioned asset ``name`` auditing a generator, one partition per generator version;
    its parameters are described in the module docstring (*Parameters*)."""
    from privgate.audit import defaults

    _validate(name, generate, generate_for, chunk_size, step_tags)
    executor = _cluster(name, executor)
    # every default from privgate.audit.defaults, as audit_generator and privgate audit take them
    runs = defaults.DEFAULT_RUNS if runs is None else runs
    design = defaults.default_design(delta) if design is None else design
    n_targets = defaults.default_n_targets(design) if n_targets is None else n_targets
    background = defaults.DEFAULT_BACKGROUND if background is None else background
    confidence = defaults.DEFAULT_CONFIDENCE if confidence is None else confidence
    spec = AuditSpec(
        name=name,
        real=real,
        real_key=_asset_key_of(real),
        population=population,
        resolve=(lambda version: generate) if generate is not None else generate_for,
        label=generator_name or _generator_label(generate if generate is not None else generate_for),
        options=dict(
            targets=targets,
            n_targets=n_targets,
            canaries=canaries,
            runs=runs,
            training_rows=training_rows,
            n_rows=n_rows,
            design=design,
            background=background,
            seed=seed,
        ),
        runs=runs,
        chunk_size=chunk_size,
        claimed_epsilon=claimed_epsilon,
        delta=delta,
        confidence=confidence,
        attacks=attacks,
        run_threads=run_threads,
        tags={k: dict(v) for k, v in (step_tags or {}).items()},
        retry_policy=retry_policy,
        resource_key=resource_key,
        io_manager_key=io_manager_key,
        rules=_audit_rules(audit_config),
        record=record,
        translator=translator,
        executor=executor,
    )
    return _audit_asset(spec, _versions(name, versions, translator), group_name, seed)


def _validate(name: str, generate: Any, generate_for: Any, chunk_size: Any, step_tags: Any) -> None:
    ident = identifier(name, "audit")
    if ident != name:
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit: name {name!r} must be a Python identifier (e.g. {ident!r})"
        )
    if (generate is None) == (generate_for is None):
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit({name!r}): give exactly one of generate and generate_for"
        )
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit({name!r}): chunk_size must be a positive integer; got {chunk_size!r}"
        )
    unknown = sorted(set(step_tags or {}) - set(STEPS))
    if unknown:
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit({name!r}): step_tags for unknown steps {unknown}; the steps are "
            "'plan', 'runs' and 'analyse'"
        )


def _cluster(name: str, executor: Any) -> Any:
    """The Dask scheduler the run steps send their runs to (None: the steps make them)."""
    from privgate.audit.cluster import is_cluster
    from privgate.errors import InputError

    try:
        return executor if is_cluster(executor) else None
    except InputError as exc:
        raise dg.DagsterInvalidDefinitionError(f"build_generator_audit({name!r}): {exc}") from None


def _audit_rules(audit_config: Any) -> Any:
    """The parsed audit rules (None: the default ones); an invalid configuration fails the
    definitions' load."""
    from privgate.gates.audit_rules import load_audit_config, parse_audit_config

    if audit_config is None:
        return None
    rules = load_audit_config(audit_config) if isinstance(audit_config, (str, os.PathLike)) else audit_config
    return parse_audit_config(rules)


@dataclass(frozen=True)
class AuditSpec:
    """Everything the three steps of one audit asset share."""

    name: str
    real: Any
    real_key: dg.AssetKey | None
    population: Any
    resolve: Callable[[str], Any]
    label: str
    options: dict[str, Any]
    runs: int
    chunk_size: int
    claimed_epsilon: float | None
    delta: float
    confidence: float
    attacks: Sequence[str] | None
    run_threads: int | None
    tags: dict[str, dict[str, Any]]
    retry_policy: dg.RetryPolicy | None
    resource_key: str
    io_manager_key: str | None
    rules: Any
    record: bool
    translator: PrivgateTranslator = field(default=DEFAULT_TRANSLATOR)
    #: a Dask scheduler address: the run steps make their runs on that cluster
    executor: Any = None

    def budget(self, resource: Any) -> int:
        """The thread budget of a step."""
        from privgate.threads import resolve_threads

        if self.run_threads is not None:
            return resolve_threads(self.run_threads)
        return resolve_threads(resource.threads)

    def resource(self, context: Any) -> Any:
        return getattr(context.resources, self.resource_key)

    def folder_of(self, context: Any) -> Path:
        """The work folder of this run and version."""
        return self.translator.get_path(
            {
                "kind": "audit_folder",
                "work_dir": self.resource(context).work_dir,
                "run": context.run,
                "audit": self.name,
                "version": context.partition_key,
            }
        )

    def op_kwargs(self, step: str) -> dict[str, Any]:
        """Name, resources, tags and description of op ``step``."""
        return dict(
            name=self.translator.get_name({"kind": "audit_op", "audit": self.name, "step": step}),
            required_resource_keys={self.resource_key},
            tags=self.tags.get(step, {}),
            description=self.translator.get_description(
                {"kind": "audit_op", "audit": self.name, "step": step, "runs": self.runs, "chunk_size": self.chunk_size}
            ),
        )


def _audit_asset(
    spec: AuditSpec, partitions_def: dg.PartitionsDefinition, group_name: str, seed: int
) -> dg.AssetsDefinition:
    plan, runs, analyse = _plan_op(spec), _runs_op(spec), _analyse_op(spec)
    asset_kwargs: dict[str, Any] = dict(
        name=spec.name,
        partitions_def=partitions_def,
        group_name=group_name,
        kinds={"privgate"},
        description=spec.translator.get_description(
            {
                "kind": "audit",
                "label": spec.label,
                "runs": spec.runs,
                "chunk_size": spec.chunk_size,
                "claimed_epsilon": spec.claimed_epsilon,
            }
        ),
        metadata={
            "claimed_epsilon": spec.claimed_epsilon if spec.claimed_epsilon is not None else "none",
            "runs": spec.runs,
            "chunk_size": spec.chunk_size,
            "seed": seed,
        },
    )
    if spec.real_key is not None:

        @dg.graph_asset(ins={"real": dg.AssetIn(spec.real_key)}, **asset_kwargs)
        def _audit_of_asset(real):
            return analyse(runs=plan(real=real).map(runs).collect())

        return _audit_of_asset

    @dg.graph_asset(**asset_kwargs)
    def _audit():
        return analyse(runs=plan().map(runs).collect())

    return _audit


def _plan_op(spec: AuditSpec) -> dg.OpDefinition:
    plan_ins = {"real": dg.In()} if spec.real_key is not None else {}

    @dg.op(ins=plan_ins, out=dg.DynamicOut(dg.Nothing), **spec.op_kwargs("plan"))
    def _plan(context: dg.OpExecutionContext, **inputs: Any):
        from privgate.audit import prepare_audit

        resource = spec.resource(context)
        version = context.partition_key
        folder = spec.folder_of(context)
        real_frame = inputs["real"] if spec.real_key is not None else _load(spec.real, "real")
        pop = None if spec.population is None else _load(spec.population, "population")
        started = time.time()
        prepared = prepare_audit(
            spec.resolve(version),
            real_frame,
            population=pop,
            schema=None,
            threads=spec.budget(resource),
            **spec.options,
        )
        write_prepared(folder, prepared, started)
        n = prepared.plan.n_runs
        context.log.info(
            f"privgate audit {spec.name} of version {version!r}: {prepared.plan.n_targets} "
            f"targets ({len(prepared.not_taken)} not taken), {n} runs in "
            f"{len(chunks(n, spec.chunk_size))} steps; prepared in {prepared.seconds:.1f} s"
        )
        for first, last in chunks(n, spec.chunk_size):
            yield dg.DynamicOutput(None, mapping_key=f"runs_{first}_{last - 1}")

    return _plan


def _runs_op(spec: AuditSpec) -> dg.OpDefinition:

    @dg.op(
        ins={"chunk": dg.In(dg.Nothing)},
        out=dg.Out(dg.Nothing),
        retry_policy=spec.retry_policy,
        **spec.op_kwargs("runs"),
    )
    def _runs(context: dg.OpExecutionContext):
        from privgate.audit import make_run

        key = context.get_mapping_key()
        first, last = chunk_of(key)
        folder = spec.folder_of(context)
        prepared, _ = read_prepared(folder)
        generate_v = spec.resolve(context.partition_key)
        threads = spec.budget(spec.resource(context))
        start = time.perf_counter()
        if spec.executor is not None:
            from privgate.audit.cluster import execute_on_cluster

            threads = spec.run_threads or 1  # per run, on the cluster's workers
            outcomes, _ = execute_on_cluster(
                spec.executor, prepared.plan, prepared.space, generate_v, range(first, last + 1), threads=threads
            )
        else:
            outcomes = [
                make_run(prepared.plan, prepared.space, generate_v, r, threads=threads) for r in range(first, last + 1)
            ]
        write_outcomes(folder, key, outcomes)
        failed = sum(o.error is not None for o in outcomes)
        context.log.info(
            f"privgate audit {spec.name}: runs {first}–{last} made ({failed} failed) in "
            f"{time.perf_counter() - start:.1f} s with {threads} thread(s)"
        )
        return dg.Output(
            None,
            metadata={
                "runs": len(outcomes),
                "runs_failed": failed,
                "threads": threads,
                "seconds": dg.MetadataValue.float(round(time.perf_counter() - start, 3)),
                "seconds_generate": dg.MetadataValue.float(round(sum(o.seconds_generate for o in outcomes), 3)),
                "peak_rss_mib": dg.MetadataValue.int(_peak_rss_mib()),
            },
        )

    return _runs


def _digest(spec: "AuditSpec", version: str) -> "str | None":
    """The audited generator's digest (:func:`privgate.audit.identity.callable_digest`), what a
    release gate's ``require_audit`` matches; None when it has none."""
    from privgate.audit.identity import callable_digest

    try:
        return callable_digest(spec.resolve(version))
    except Exception:  # noqa: BLE001 - no digest: the audit satisfies no require_audit
        return None


def _analyse_op(spec: AuditSpec) -> dg.OpDefinition:

    @dg.op(
        ins={"runs": dg.In(dg.Nothing)},
        out=dg.Out(io_manager_key=spec.io_manager_key or "io_manager"),
        **spec.op_kwargs("analyse"),
    )
    def _analyse(context: dg.OpExecutionContext):
        from privgate.audit import analyse_runs
        from privgate.gates.audit_rules import decide_audit

        resource = spec.resource(context)
        version = context.partition_key
        folder = spec.folder_of(context)
        prepared, started = read_prepared(folder)
        outcomes = read_outcomes(folder)
        n_steps = len(chunks(prepared.plan.n_runs, spec.chunk_size))
        result = analyse_runs(
            prepared,
            outcomes,
            attacks=spec.attacks,
            claimed_epsilon=spec.claimed_epsilon,
            delta=spec.delta,
            confidence=spec.confidence,
            execution={
                "workers": n_steps,
                "threads": spec.budget(resource),
                "note": f"Dagster: {n_steps} run steps of at most {spec.chunk_size} runs"
                + ("" if spec.executor is None else ", made on a Dask cluster"),
            },
            wall_seconds=time.time() - started if started is not None else None,
            generator={"name": spec.label, "version": version, "digest": _digest(spec, version)},
        )
        outcome = decide_audit(result, spec.rules, dataset=resource.dataset)
        saved = _save_and_record(spec, resource, result, outcome, version, context.run.run_id)
        _remove_work_folder(folder)
        context.log.info(f"privgate audit {spec.name} of version {version!r}:\n{result.summary()}\n{outcome.table()}")
        return dg.Output(
            result.to_polars(),
            metadata={
                **spec.translator.get_metadata({"kind": "audit_decision", "outcome": outcome}),
                **spec.translator.get_metadata({"kind": "audit", "result": result}),
                "audit_json": dg.MetadataValue.path(str(saved)),
            },
        )

    return _analyse


def _save_and_record(spec: AuditSpec, resource: Any, result: Any, outcome: Any, version: str, run_id: str) -> Path:
    """Save the AuditResult JSON and record the decided audit in the score history."""
    saved = spec.translator.get_path(
        {
            "kind": "audit_result",
            "reports_dir": resource.reports_dir,
            "work_dir": resource.work_dir,
            "audit": spec.name,
            "version": version,
            "run_id": run_id,
        }
    ).absolute()
    saved.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(saved, result.to_json())
    if spec.record:
        store = resource.open_history()
        try:
            store.record_audit(outcome, dataset=resource.dataset)
        finally:
            store.close()
    return saved


def _remove_work_folder(folder: Path) -> None:
    """Delete the run's files, then the asset's and the run's folders once empty."""
    shutil.rmtree(folder, ignore_errors=True)
    for parent in (folder.parent, folder.parent.parent):
        try:
            parent.rmdir()
        except OSError:
            break


# --- the asset's inputs --------------------------------------------------------------------------


def _versions(name: str, versions: Any, translator: PrivgateTranslator) -> dg.PartitionsDefinition:
    if versions is None:
        return dg.DynamicPartitionsDefinition(name=translator.get_name({"kind": "audit_versions", "audit": name}))
    if isinstance(versions, dg.PartitionsDefinition):
        return versions
    if isinstance(versions, str):
        versions = [versions]
    return dg.StaticPartitionsDefinition([str(v) for v in versions])


def _asset_key_of(x: Any) -> dg.AssetKey | None:
    """The key of an upstream asset given as ``real``; None for a path or a loader."""
    if isinstance(x, dg.AssetsDefinition):
        return x.key
    if isinstance(x, (dg.AssetSpec,)):
        return x.key
    if isinstance(x, dg.AssetKey):
        return x
    return None


def _load(source: Any, role: str) -> Any:
    from privgate.io import load_frame

    return load_frame(source() if callable(source) else source, role=role)


def _generator_label(fn: Any) -> str:
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(fn).__name__)}"


def _peak_rss_mib() -> int:
    from .family import _peak_rss_mib as peak

    return peak()


__all__ = ["AuditSpec", "build_generator_audit"]
