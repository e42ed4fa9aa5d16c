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
"""


import json
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import dagster as dg

from privgate.names import identifier, path_component

if TYPE_CHECKING:  # pragma: no cover
    from privgate.audit import AuditResult, PreparedAudit
    from privgate.audit.runner import Generate

GROUP = "privgate_audit"
#: the check a release gets from :func:`build_audit_required_check`
AUDIT_CHECK = "generator_audit_passed"
PREPARED_FILE = "prepared.pkl"
STARTED_FILE = "started.json"
RUNS_DIR = "runs"
OUTCOMES_FORMAT = 1
#: digits kept of the numbers recorded as metadata
DIGITS = 4


def build_generator_audit(
    name: str,
    *,
    real: Any,
    generate: "Generate | None" = None,
    generate_for: "Callable[[str], Generate] | None" = None,
    population: Any = None,
    claimed_epsilon: float | None = None,
    delta: float = 0.0,
    confidence: float = 0.95,
    runs: int | None = None,
    chunk_size: int = 20,
    targets: Any = "auto",
    n_targets: int | None = None,
    canaries: bool = True,
    training_rows: int | None = None,
    n_rows: int | None = None,
    design: str = "shared",
    background: str = "fixed",
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
) -> dg.AssetsDefinition:
    """A partitioned asset ``name`` auditing a generator, one partition per generator version.

    ``generate(training, n_rows, seed)``: the generator (as for
    :func:`privgate.audit.audit_generator`); or ``generate_for(version)`` returning the
    generator of a version. ``real``: the sensitive records — an upstream asset
    (``dg.AssetKey``, ``AssetsDefinition`` or ``AssetSpec``, loaded through its IO manager), a
    file path, or a function returning a frame. ``population``: a path or a function (default:
    ``real``). ``claimed_epsilon`` / ``delta``: the generator's DP claim. ``runs``,
    ``targets``, ``n_targets``, ``canaries``, ``training_rows``, ``n_rows``, ``design``,
    ``background``, ``attacks``, ``confidence``, ``seed``: as ``audit_generator`` (the same
    seed for every version: versions are compared on the same game).

    ``chunk_size``: runs per dynamic step (one process or pod each). ``versions``: the
    partitions — a ``PartitionsDefinition``, a list of versions (static), or None: dynamic
    partitions ``<name>_versions`` (add a version with ``instance.add_dynamic_partitions``).
    ``run_threads``: thread budget of a run step (default: the resource's ``threads``; unset
    there: privgate's default). ``step_tags``: ``"plan"`` / ``"runs"`` / ``"analyse"`` →
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
    """
    from privgate.audit.plan import DEFAULT_RUNS
    from privgate.audit.targets import DEFAULT_TARGETS

    ident = identifier(name, "audit")
    if ident != name:
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit: name {name!r} must be a Python identifier (e.g. {ident!r})")
    if (generate is None) == (generate_for is None):
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit({name!r}): give exactly one of generate and generate_for")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit({name!r}): chunk_size must be a positive integer; got {chunk_size!r}")
    unknown = sorted(set(step_tags or {}) - {"plan", "runs", "analyse"})
    if unknown:
        raise dg.DagsterInvalidDefinitionError(
            f"build_generator_audit({name!r}): step_tags for unknown steps {unknown}; the steps are "
            "'plan', 'runs' and 'analyse'")
    from privgate.gates.audit_rules import parse_audit_config

    rules = None if audit_config is None else (
        audit_config if not isinstance(audit_config, (str, os.PathLike)) else _load_audit_config(audit_config))
    if rules is not None:
        rules = parse_audit_config(rules)  # an invalid configuration fails the definitions' load
    runs = DEFAULT_RUNS if runs is None else runs
    n_targets = DEFAULT_TARGETS if n_targets is None else n_targets
    partitions_def = _versions(name, versions)
    real_key = _asset_key_of(real)
    options = dict(targets=targets, n_targets=n_targets, canaries=canaries, runs=runs,
                   training_rows=training_rows, n_rows=n_rows, design=design, background=background,
                   seed=seed)
    resolve = (lambda version: generate) if generate is not None else generate_for
    label = generator_name or _generator_label(generate if generate is not None else generate_for)
    tags = {k: dict(v) for k, v in (step_tags or {}).items()}

    def budget(resource: Any) -> int:
        from privgate.threads import resolve_threads

        if run_threads is not None:
            return resolve_threads(run_threads)
        return resolve_threads(resource.threads)

    def folder_of(context: Any) -> Path:
        resource = getattr(context.resources, resource_key)
        return work_folder(resource.work_dir, context.run, name, context.partition_key)

    plan_ins = {"real": dg.In()} if real_key is not None else {}

    @dg.op(name=f"{name}__plan", ins=plan_ins, out=dg.DynamicOut(dg.Nothing),
           required_resource_keys={resource_key}, tags=tags.get("plan", {}),
           description=f"privgate audit {name}: choose the targets, check the generator takes them "
                       f"and draw the design of {runs} runs; fan the runs out in chunks of {chunk_size}")
    def _plan(context: dg.OpExecutionContext, **inputs: Any):
        from privgate.audit import prepare_audit

        resource = getattr(context.resources, resource_key)
        version = context.partition_key
        folder = folder_of(context)
        real_frame = inputs["real"] if real_key is not None else _load(real, "real")
        pop = None if population is None else _load(population, "population")
        started = time.time()
        prepared = prepare_audit(resolve(version), real_frame, population=pop, schema=None,
                                 threads=budget(resource), **options)
        write_prepared(folder, prepared, started)
        n = prepared.plan.n_runs
        context.log.info(f"privgate audit {name} of version {version!r}: {prepared.plan.n_targets} targets "
                         f"({len(prepared.not_taken)} not taken), {n} runs in "
                         f"{len(chunks(n, chunk_size))} steps; prepared in {prepared.seconds:.1f} s")
        for first, last in chunks(n, chunk_size):
            yield dg.DynamicOutput(None, mapping_key=f"runs_{first}_{last - 1}")

    @dg.op(name=f"{name}__runs", ins={"chunk": dg.In(dg.Nothing)}, out=dg.Out(dg.Nothing),
           required_resource_keys={resource_key}, tags=tags.get("runs", {}), retry_policy=retry_policy,
           description=f"privgate audit {name}: train and sample the generator for one chunk of runs "
                       "and compute the targets' features on each release")
    def _runs(context: dg.OpExecutionContext):
        from privgate.audit import make_run

        resource = getattr(context.resources, resource_key)
        key = context.get_mapping_key()
        first, last = _chunk_of(key)
        folder = folder_of(context)
        prepared, _ = read_prepared(folder)
        generate_v = resolve(context.partition_key)
        threads = budget(resource)
        start = time.perf_counter()
        outcomes = [make_run(prepared.plan, prepared.space, generate_v, r, threads=threads)
                    for r in range(first, last + 1)]
        write_outcomes(folder, key, outcomes)
        failed = sum(o.error is not None for o in outcomes)
        context.log.info(f"privgate audit {name}: runs {first}–{last} made ({failed} failed) in "
                         f"{time.perf_counter() - start:.1f} s with {threads} thread(s)")
        return dg.Output(None, metadata={
            "runs": len(outcomes), "runs_failed": failed, "threads": threads,
            "seconds": dg.MetadataValue.float(round(time.perf_counter() - start, 3)),
            "seconds_generate": dg.MetadataValue.float(round(sum(o.seconds_generate for o in outcomes), 3)),
            "peak_rss_mib": dg.MetadataValue.int(_peak_rss_mib())})

    @dg.op(name=f"{name}__analyse", ins={"runs": dg.In(dg.Nothing)},
           out=dg.Out(io_manager_key=io_manager_key or "io_manager"),
           required_resource_keys={resource_key}, tags=tags.get("analyse", {}),
           description=f"privgate audit {name}: attack every target on the runs' releases and bound ε")
    def _analyse(context: dg.OpExecutionContext):
        from privgate.audit import analyse_runs

        resource = getattr(context.resources, resource_key)
        version = context.partition_key
        folder = folder_of(context)
        prepared, started = read_prepared(folder)
        outcomes = read_outcomes(folder)
        n_steps = len(chunks(prepared.plan.n_runs, chunk_size))
        result = analyse_runs(
            prepared, outcomes, attacks=attacks, claimed_epsilon=claimed_epsilon, delta=delta,
            confidence=confidence,
            execution={"workers": n_steps, "threads": budget(resource),
                       "note": f"Dagster: {n_steps} run steps of at most {chunk_size} runs"},
            wall_seconds=time.time() - started if started is not None else None,
            generator={"name": label, "version": version})
        from privgate.gates.audit_rules import decide_audit

        outcome = decide_audit(result, rules, dataset=resource.dataset)
        saved = result_path(resource, name, version, context.run.run_id).absolute()
        saved.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(saved, result.to_json())
        if record:
            store = resource.open_history()
            try:
                store.record_audit(outcome, dataset=resource.dataset)
            finally:
                store.close()
        shutil.rmtree(folder, ignore_errors=True)
        for parent in (folder.parent, folder.parent.parent):  # the asset's, then the run's folder
            try:
                parent.rmdir()
            except OSError:
                break
        context.log.info(f"privgate audit {name} of version {version!r}:\n{result.summary()}\n{outcome.table()}")
        return dg.Output(result.to_polars(), metadata={
            **decision_metadata(outcome), **audit_metadata(result),
            "audit_json": dg.MetadataValue.path(str(saved))})

    asset_kwargs: dict[str, Any] = dict(
        name=name, partitions_def=partitions_def, group_name=group_name, kinds={"privgate"},
        description=(f"privgate generator audit ({label}): {runs} runs, fanned out in steps of "
                     f"{chunk_size}; empirical ε lower bound"
                     + (f" against the claimed ε = {claimed_epsilon:g}" if claimed_epsilon is not None else "")),
        metadata={"claimed_epsilon": claimed_epsilon if claimed_epsilon is not None else "none",
                  "runs": runs, "chunk_size": chunk_size, "seed": seed})
    if real_key is not None:
        @dg.graph_asset(ins={"real": dg.AssetIn(real_key)}, **asset_kwargs)
        def _audit_of_asset(real):
            return _analyse(runs=_plan(real=real).map(_runs).collect())

        return _audit_of_asset

    @dg.graph_asset(**asset_kwargs)
    def _audit():
        return _analyse(runs=_plan().map(_runs).collect())

    return _audit


# --- what the steps share ---------------------------------------------------------------------------


def chunks(n_runs: int, size: int) -> list[tuple[int, int]]:
    """[first, end) run numbers of each chunk of at most ``size`` runs."""
    return [(i, min(i + size, n_runs)) for i in range(0, n_runs, size)]


def _chunk_of(mapping_key: str) -> tuple[int, int]:
    _, first, last = mapping_key.split("_")
    return int(first), int(last)


def work_folder(work_dir: str | None, run: Any, name: str, version: str) -> Path:
    """Where the steps of one audit run (and its re-executions: the root run id) leave files."""
    root = Path(work_dir) if work_dir else Path(tempfile.gettempdir()) / "privgate-steps"
    return root / (run.root_run_id or run.run_id) / name / path_component(version, "version")


def result_path(resource: Any, name: str, version: str, run_id: str) -> Path:
    """Where the analyse step saves the AuditResult JSON: ``<reports_dir>/audits/<name>/
    <version>/<run id>.json`` (without ``reports_dir``: under the work folder's root)."""
    root = Path(resource.reports_dir) if resource.reports_dir else (
        Path(resource.work_dir) if resource.work_dir else Path(tempfile.gettempdir()) / "privgate-steps")
    return root / "audits" / name / path_component(version, "version") / f"{run_id}.json"


def _atomic_write(path: Path, data: str | bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
    os.replace(tmp, path)


def write_prepared(folder: Path, prepared: "PreparedAudit", started: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write(folder / STARTED_FILE, json.dumps({"started": started}))
    _atomic_write(folder / PREPARED_FILE, pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL))


def read_prepared(folder: Path) -> "tuple[PreparedAudit, float | None]":
    from privgate.errors import AuditError

    path = folder / PREPARED_FILE
    if not path.exists():
        raise AuditError(f"the audit's plan is not in {path} (did the plan step run? is the work_dir "
                         "shared by every step?)")
    prepared = pickle.loads(path.read_bytes())
    try:
        started = json.loads((folder / STARTED_FILE).read_text(encoding="utf-8"))["started"]
    except (OSError, ValueError, KeyError):
        started = None
    return prepared, started


def write_outcomes(folder: Path, key: str, outcomes: Sequence[Any]) -> Path:
    """One chunk's run outcomes as JSON (the targets' features: numbers only)."""
    out = folder / RUNS_DIR
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{key}.json"
    _atomic_write(path, json.dumps({"format": OUTCOMES_FORMAT, "outcomes": [o.to_dict() for o in outcomes]},
                                   allow_nan=True))
    return path


def read_outcomes(folder: Path) -> list[Any]:
    """Every chunk's outcomes in run order (analyse_runs names the runs that are missing)."""
    from privgate.audit import RunOutcome

    found = []
    for path in sorted((folder / RUNS_DIR).glob("*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        found.extend(RunOutcome.from_dict(d) for d in payload["outcomes"])
    return sorted(found, key=lambda o: o.run)


def _round(x: Any) -> Any:
    return None if x is None else round(float(x), DIGITS)


def verdict_of(result: "AuditResult") -> str:
    if result.checked_nothing:
        return "checked nothing"
    if result.violation is None:
        return "no claim"
    return "violation" if result.violation else "no violation found"


def audit_metadata(result: "AuditResult") -> dict[str, Any]:
    """The numbers a person plots across versions — rounded scores, counts and seconds; ids of
    targets and attacks, never a value of a record."""
    cost = result.cost
    own = (cost.get("seconds_features_total") or 0.0) + (cost.get("seconds_analysis") or 0.0) \
        + (cost.get("seconds_prepare") or 0.0)
    md: dict[str, Any] = {
        "verdict": dg.MetadataValue.text(verdict_of(result)),
        "epsilon_lower": dg.MetadataValue.float(_round(result.epsilon_lower)),
        "auc_lower": dg.MetadataValue.float(_round(result.auc_lower)),
        "mu_lower": dg.MetadataValue.float(_round(result.mu_lower)),
        "delta": dg.MetadataValue.float(float(result.delta)),
        "confidence": dg.MetadataValue.float(float(result.confidence)),
        "checked_nothing": dg.MetadataValue.bool(result.checked_nothing),
        "n_audited": dg.MetadataValue.int(int(result.n_audited)),
        "targets": dg.MetadataValue.int(len(result.targets)),
        "runs": dg.MetadataValue.int(int(cost.get("runs", 0))),
        "runs_failed": dg.MetadataValue.int(int(cost.get("runs_failed", 0))),
        "preflight_runs": dg.MetadataValue.int(int(cost.get("preflight_runs", 0))),
        "seconds_generator": dg.MetadataValue.float(_round(cost.get("seconds_generate_total", 0.0))),
        "seconds_audit": dg.MetadataValue.float(_round(own)),
        "generator_version": dg.MetadataValue.text(str(result.generator.get("version"))),
        "generator": dg.MetadataValue.text(str(result.generator.get("name"))),
    }
    if result.claimed_epsilon is not None:
        md["claimed_epsilon"] = dg.MetadataValue.float(float(result.claimed_epsilon))
    if result.violation is not None:
        md["violation"] = dg.MetadataValue.bool(bool(result.violation))
    if result.max_auc is not None:
        md["max_auc"] = dg.MetadataValue.float(_round(result.max_auc))
    if result.best:
        md["strongest_target"] = dg.MetadataValue.text(f"{result.best['target']} ({result.best['kind']})")
        md["strongest_attack"] = dg.MetadataValue.text(str(result.best["attack"]))
    if cost.get("wall_seconds") is not None:
        md["wall_seconds"] = dg.MetadataValue.float(_round(cost["wall_seconds"]))
    return md


def decision_metadata(outcome: Any) -> dict[str, Any]:
    """The audit rules' decision (:func:`privgate.gates.audit_rules.decide_audit`): what a
    release check reads (``accepted``: pass or warn)."""
    return {
        "decision": dg.MetadataValue.text(outcome.decision),
        "decision_code": dg.MetadataValue.int(int(outcome.exit_code)),
        "accepted": dg.MetadataValue.bool(bool(outcome.accepted)),
        "privgate_run_id": dg.MetadataValue.text(outcome.run_id),
        "recorded": dg.MetadataValue.bool(bool(outcome.recorded)),
        "rules": dg.MetadataValue.md("```\n" + outcome.table() + "\n```"),
    }


def _load_audit_config(path: Any) -> Any:
    from privgate.gates.audit_rules import load_audit_config

    return load_audit_config(path)


def _versions(name: str, versions: Any) -> dg.PartitionsDefinition:
    if versions is None:
        return dg.DynamicPartitionsDefinition(name=f"{name}_versions")
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


# --- the release check -------------------------------------------------------------------------------


def audit_passes(metadata: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether an audit's materialisation lets a release of its generator through: the audit
    rules' decision recorded with it (:func:`privgate.gates.audit_rules.decide_audit`) accepted
    it (pass or warn). A materialisation without a decision fails closed."""
    def value(key: str) -> Any:
        v = metadata.get(key)
        return getattr(v, "value", v)

    decision = value("decision")
    if decision is None or value("accepted") is None:
        return False, "the audit's materialisation carries no decision (fails closed)"
    bound = f"ε lower bound {value('epsilon_lower')}"
    if value("claimed_epsilon") is not None:
        bound += f", claimed ε {value('claimed_epsilon')}"
    if value("accepted"):
        return True, f"the audit decided {decision} ({bound}; verdict: {value('verdict')})"
    return False, f"the audit decided {decision} ({bound}; verdict: {value('verdict')})"


def build_audit_required_check(
    release_asset: Any,
    audit_asset: Any,
    version_fn: "Callable[[dg.AssetCheckExecutionContext], str] | str" = "generator_version",
    *,
    name: str = AUDIT_CHECK,
    blocking: bool = True,
) -> dg.AssetChecksDefinition:
    """A blocking check on ``release_asset``: the generator version that made the release must
    have a passing audit in ``audit_asset`` (from :func:`build_generator_audit`).

    ``version_fn``: the release's generator version — a function of the check's context, or the
    name of a metadata entry of the release's latest materialisation (of the check's partition).
    The check reads the audit's latest materialisation of that version's partition and fails
    with severity ERROR when there is none or when the audit rules did not accept it (decision
    block or error: a proven violation, an AUC lower bound over the block limit, an audit that
    checked nothing; :func:`audit_passes`). Its metadata: the version, the audit's verdict,
    ε lower bound and claim, and the audit's run id."""
    from .checks import _asset_key_and_partitions

    key, partitions_def = _asset_key_and_partitions(release_asset)
    audit_key = audit_asset.key if isinstance(audit_asset, (dg.AssetsDefinition, dg.AssetSpec)) \
        else dg.AssetKey.from_coercible(audit_asset)
    spec_kwargs: dict[str, Any] = {}
    if partitions_def is not None:
        spec_kwargs["partitions_def"] = partitions_def
    import warnings

    with warnings.catch_warnings():
        # partitioned check specs are a Dagster "preview" API (1.13): results carry the partition
        warnings.filterwarnings("ignore", message=".*partitions_def.*AssetCheckSpec.*")
        warnings.filterwarnings("ignore", category=Warning, module="dagster.*")
        spec = dg.AssetCheckSpec(
            name, asset=key, blocking=blocking, additional_deps=[audit_key],  # lineage: audit → check
            description=f"the generator version that made {key.to_user_string()} has a passing audit in "
                        f"{audit_key.to_user_string()}", **spec_kwargs)

    @dg.multi_asset_check(specs=[spec], name=f"{identifier(name)}_{key.to_python_identifier()}",
                          description=spec.description)
    def _audit_required(context: dg.AssetCheckExecutionContext):
        partition = context.partition_key if context.has_partition_key else None
        try:
            version = version_fn(context) if callable(version_fn) else _release_metadata(
                context, key, partition, version_fn)
        except Exception as exc:  # noqa: BLE001 - no version known: no audit can be required
            version, why = None, f"the release's generator version is unknown ({type(exc).__name__}: {exc})"
        else:
            why = None if version else "the release's generator version is unknown"
        record = None
        if version:
            version = str(version)
            records = context.instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=audit_key, asset_partitions=[version]), limit=1,
                ascending=False).records
            record = records[0] if records else None
            if record is None:
                why = f"generator version {version!r} has no audit in {audit_key.to_user_string()}"
        md: dict[str, Any] = {"generator_version": dg.MetadataValue.text(str(version))}
        if record is None:
            passed = False
        else:
            meta = record.asset_materialization.metadata if record.asset_materialization else {}
            passed, why = audit_passes(meta)
            md["audit_run_id"] = dg.MetadataValue.text(record.run_id)
            for k in ("decision", "verdict", "epsilon_lower", "claimed_epsilon", "auc_lower", "n_audited"):
                if k in meta:
                    md[k] = meta[k]
        prefix = f"release {partition}: " if partition is not None else ""
        yield dg.AssetCheckResult(check_name=name, asset_key=key, passed=passed,
                                  severity=dg.AssetCheckSeverity.ERROR, metadata=md,
                                  description=prefix + str(why))

    return _audit_required


def _release_metadata(context: Any, key: dg.AssetKey, partition: str | None, entry: str) -> Any:
    """The value of metadata entry ``entry`` of the release's latest materialisation."""
    flt = dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None)
    records = context.instance.fetch_materializations(flt, limit=1, ascending=False).records
    if not records or records[0].asset_materialization is None:
        raise LookupError(f"{key.to_user_string()} has no materialisation"
                          + (f" of partition {partition!r}" if partition is not None else ""))
    meta = records[0].asset_materialization.metadata
    if entry not in meta:
        raise LookupError(f"its latest materialisation has no metadata entry {entry!r}")
    return getattr(meta[entry], "value", meta[entry])


__all__ = ["AUDIT_CHECK", "audit_metadata", "audit_passes", "build_audit_required_check",
           "build_generator_audit", "chunks", "decision_metadata"]
