"""Assemble privgate's Dagster ``Definitions`` (assets, checks, jobs, sensor, schedule, resources,
IO manager, executor) from arguments or environment variables.

Environment variables (all optional; arguments of :func:`build_definitions` win):

=================================  ==========================================================
``PRIVGATE_DAGSTER_DATA_DIR``      root of the data folders below (default ``./privgate-dagster``)
``PRIVGATE_REAL_PATH``             the real data file (default ``<root>/real.parquet``)
``PRIVGATE_HOLDOUT_PATH``          an optional holdout file (real records not used for training)
``PRIVGATE_RELEASES_DIR``          the watched directory of releases (default ``<root>/releases``)
``PRIVGATE_PUBLISH_DIR``           where passing releases are copied (default ``<root>/published``)
``PRIVGATE_REPORTS_DIR``           HTML/JSON reports (default ``<root>/reports``)
``PRIVGATE_STORAGE_DIR``           the Parquet IO manager's folder (default ``<root>/storage``)
``PRIVGATE_GATE_CONFIG``           gate configuration file (default: privgate's shipped default)
``PRIVGATE_DATASET``               overrides the configuration's dataset name
``PRIVGATE_HISTORY_URL``           score history URL (read by ``privgate.history``; default SQLite)
``PRIVGATE_THREADS``               BLAS/OpenMP/faiss threads of an evaluation (default 1)
``PRIVGATE_EVALUATION``            ``single`` (default: one check step) or ``by_family`` (one step
                                   per metric family and a join step; build_privgate_family_checks)
``PRIVGATE_STEP_THREADS``          by_family: JSON object step → threads (default: PRIVGATE_THREADS)
``PRIVGATE_WORK_DIR``              by_family: where the steps leave results (default ``<root>/work``;
                                   a folder every step pod mounts)
``PRIVGATE_EXECUTOR``              ``multiprocess`` (default), ``in_process`` or ``k8s``
``PRIVGATE_MAX_CONCURRENT``        steps at a time for the multiprocess executor (default 2)
``PRIVGATE_K8S_EXECUTOR_CONFIG``   JSON config of ``dagster_k8s.k8s_job_executor``
``PRIVGATE_SENSOR_INTERVAL``       seconds between sensor ticks (default 30)
``PRIVGATE_SENSOR_SETTLE``         seconds a release file must be unmodified (default 5)
``PRIVGATE_SENSOR_STATUS``         ``running`` (default) or ``stopped`` when first loaded
``PRIVGATE_REEVALUATION_CRON``     schedule of re-evaluations (default ``0 3 * * *``)
``PRIVGATE_REEVALUATE_LATEST``     how many of the latest releases to re-evaluate (default 5)
``PRIVGATE_EXAMPLE_AUDIT``         ``1``: add the bundled generator audit example (job
                                   ``audit_example_generator``; default ``0``)
=================================  ==========================================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import dagster as dg

from privgate.config_files import parse_json
from privgate.errors import ConfigError

from .assets import build_published_release, real_data, synthetic_release
from .build_checks import applicable_check_keys, build_privgate_checks
from .data_locations import DataLocations
from .family import build_privgate_family_checks, default_steps
from .io_manager import PolarsParquetIOManager
from .latest import build_privgate_latest_release
from .privgate_resource import PrivgateResource
from .schedules import build_reevaluation_schedule
from .scorecard import build_privgate_scorecards
from .sensors import build_releases_sensor
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

EVALUATE_JOB = "evaluate_release"
REEVALUATE_JOB = "reevaluate_release"
AUDIT_EXAMPLE_JOB = "audit_example_generator"
EXECUTORS = ("multiprocess", "in_process", "k8s")
EVALUATIONS = ("single", "by_family")


def _env(name: str, env: Mapping[str, str]) -> str | None:
    value = env.get(name)
    return value if value not in (None, "") else None


def default_gate_config_path() -> Path:
    from privgate.gates import DEFAULT_CONFIG_PATH

    return Path(DEFAULT_CONFIG_PATH)


def build_executor(
    kind: str | None = None,
    *,
    max_concurrent: int | None = None,
    k8s_config: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> dg.ExecutorDefinition:
    """The executor: ``multiprocess`` (a process per step, ``max_concurrent`` at a time),
    ``in_process``, or ``k8s`` (``dagster_k8s.k8s_job_executor``: a Kubernetes Job per step)."""
    env = os.environ if env is None else env
    kind = (kind or _env("PRIVGATE_EXECUTOR", env) or "multiprocess").lower()
    if kind not in EXECUTORS:
        raise ConfigError(f"PRIVGATE_EXECUTOR: must be one of {', '.join(EXECUTORS)}, got {kind!r}")
    if kind == "in_process":
        return dg.in_process_executor
    if kind == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError as exc:  # pragma: no cover - depends on the image
            raise ConfigError("PRIVGATE_EXECUTOR=k8s needs dagster-k8s (pip install 'privgate[k8s]')") from exc
        if k8s_config is None:
            text = _env("PRIVGATE_K8S_EXECUTOR_CONFIG", env)
            k8s_config = parse_json(text, what="PRIVGATE_K8S_EXECUTOR_CONFIG") if text else {}
        if not isinstance(k8s_config, Mapping):
            raise ConfigError("PRIVGATE_K8S_EXECUTOR_CONFIG: must be a JSON object")
        return (
            k8s_job_executor.configured(dict(k8s_config), name="privgate_k8s_job_executor")
            if k8s_config
            else k8s_job_executor
        )
    if max_concurrent is None:
        max_concurrent = int(_env("PRIVGATE_MAX_CONCURRENT", env) or 2)
    return dg.multiprocess_executor.configured(
        {"max_concurrent": max_concurrent}, name="privgate_multiprocess_executor"
    )


def _step_threads(env: Mapping[str, str]) -> dict[str, int] | None:
    text = _env("PRIVGATE_STEP_THREADS", env)
    if not text:
        return None
    value = parse_json(text, what="PRIVGATE_STEP_THREADS")
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values()
    ):
        raise ConfigError('PRIVGATE_STEP_THREADS: must be a JSON object of step → threads, e.g. {"tracing": 4}')
    return value


def build_definitions(
    *,
    data_dir: str | os.PathLike[str] | None = None,
    real_path: str | os.PathLike[str] | None = None,
    holdout_path: str | os.PathLike[str] | None = None,
    releases_dir: str | os.PathLike[str] | None = None,
    publish_dir: str | os.PathLike[str] | None = None,
    reports_dir: str | os.PathLike[str] | None = None,
    storage_dir: str | os.PathLike[str] | None = None,
    gate_config: str | os.PathLike[str] | None = None,
    dataset: str | None = None,
    history_url: str | None = None,
    executor: str | dg.ExecutorDefinition | None = None,
    evaluation: str | None = None,
    step_threads: Mapping[str, int] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    sensor_interval: int | None = None,
    sensor_settle_seconds: float | None = None,
    sensor_running: bool | None = None,
    reevaluation_cron: str | None = None,
    reevaluate_latest: int | None = None,
    example_audit: bool | None = None,
    env: Mapping[str, str] | None = None,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
) -> dg.Definitions:
    """privgate's Definitions; see the module docstring for the environment variables.
    ``translator``: names and describes the checks, ops and scorecards
    (:class:`~privgate.dagster.translator.PrivgateTranslator`)."""
    env = os.environ if env is None else env
    pick = _Settings(env, Path(data_dir or _env("PRIVGATE_DAGSTER_DATA_DIR", env) or "privgate-dagster").absolute())
    locations, privgate, storage = _resources(
        pick,
        real_path=real_path,
        holdout_path=holdout_path,
        releases_dir=releases_dir,
        publish_dir=publish_dir,
        reports_dir=reports_dir,
        storage_dir=storage_dir,
        gate_config=gate_config,
        dataset=dataset,
        history_url=history_url,
        work_dir=work_dir,
    )
    cfg = privgate.load_config()  # the checks are declared from it; an invalid configuration fails the load
    release_checks = _release_checks(pick, cfg, privgate, evaluation, step_threads, translator)
    published_release = build_published_release(cfg)
    evaluate_job, reevaluate_job = _jobs(published_release)
    triggers = _triggers(
        pick,
        evaluate_job,
        reevaluate_job,
        published_release,
        cfg,
        privgate,
        sensor_interval=sensor_interval,
        sensor_settle_seconds=sensor_settle_seconds,
        sensor_running=sensor_running,
        reevaluation_cron=reevaluation_cron,
        reevaluate_latest=reevaluate_latest,
        translator=translator,
    )
    exec_def = executor if isinstance(executor, dg.ExecutorDefinition) else build_executor(executor, env=env)
    assets: list[Any] = [real_data, synthetic_release, published_release]
    jobs = [evaluate_job, reevaluate_job]
    _add_example_audit(pick, example_audit, assets, jobs, translator)
    return dg.Definitions(
        assets=[
            *assets,
            *build_privgate_scorecards(assets=[synthetic_release], translator=translator),
            *build_privgate_latest_release(
                assets=[synthetic_release], gate_config=cfg, holdout=bool(privgate.holdout_path), translator=translator
            ),
        ],
        asset_checks=release_checks,
        jobs=jobs,
        **triggers,
        resources={
            "locations": locations,
            "privgate": privgate,
            "io_manager": PolarsParquetIOManager(base_dir=storage),
        },
        executor=exec_def,
    )


def _resources(
    pick: "_Settings",
    *,
    real_path: Any,
    holdout_path: Any,
    releases_dir: Any,
    publish_dir: Any,
    reports_dir: Any,
    storage_dir: Any,
    gate_config: Any,
    dataset: Any,
    history_url: Any,
    work_dir: Any,
) -> tuple[DataLocations, PrivgateResource, str]:
    """The data locations, the privgate resource and the IO manager's folder."""
    locations = DataLocations(
        releases_dir=str(pick(releases_dir, "PRIVGATE_RELEASES_DIR", pick.root / "releases")),
        publish_dir=str(pick(publish_dir, "PRIVGATE_PUBLISH_DIR", pick.root / "published")),
    )
    storage = str(pick(storage_dir, "PRIVGATE_STORAGE_DIR", pick.root / "storage"))
    privgate = PrivgateResource(
        real_path=str(pick(real_path, "PRIVGATE_REAL_PATH", pick.root / "real.parquet")),
        holdout_path=(str(h) if (h := pick(holdout_path, "PRIVGATE_HOLDOUT_PATH", None)) else None),
        gate_config=str(pick(gate_config, "PRIVGATE_GATE_CONFIG", default_gate_config_path())),
        dataset=pick(dataset, "PRIVGATE_DATASET", None),
        # unset: the CLI's default store (privgate.history: $PRIVGATE_HISTORY_URL, else SQLite)
        history_url=pick(history_url, "PRIVGATE_HISTORY_URL", None),
        reports_dir=str(pick(reports_dir, "PRIVGATE_REPORTS_DIR", pick.root / "reports")),
        threads=int(pick(None, "PRIVGATE_THREADS", 1)),
        work_dir=str(pick(work_dir, "PRIVGATE_WORK_DIR", pick.root / "work")),
    )
    return locations, privgate, storage


class _Settings:
    """A setting: the argument when given, else the environment variable, else the default."""

    def __init__(self, env: Mapping[str, str], root: Path) -> None:
        self.env, self.root = env, root

    def __call__(self, arg: Any, var: str | None, default: Any) -> Any:
        value = arg if arg is not None else (_env(var, self.env) if var else None)
        return default if value is None else value


def _release_checks(
    pick: _Settings,
    cfg: Any,
    privgate: PrivgateResource,
    evaluation: str | None,
    step_threads: Mapping[str, int] | None,
    translator: PrivgateTranslator,
) -> list[dg.AssetChecksDefinition]:
    """The gate's checks on the bundled release asset: the bundled pipeline is one use of the
    factories users call on their own assets."""
    mode = str(pick(evaluation, "PRIVGATE_EVALUATION", "single")).lower()
    if mode not in EVALUATIONS:
        raise ConfigError(f"PRIVGATE_EVALUATION: must be one of {', '.join(EVALUATIONS)}, got {mode!r}")
    if mode == "by_family":
        threads = step_threads if step_threads is not None else _step_threads(pick.env)
        if threads:  # one setting for every configuration: steps it does not have are ignored
            threads = {k: v for k, v in threads.items() if k in default_steps(cfg, translator)}
        return build_privgate_family_checks(
            assets=[synthetic_release],
            gate_config=cfg,
            step_threads=threads,
            holdout=bool(privgate.holdout_path),
            translator=translator,
        )
    return build_privgate_checks(
        assets=[synthetic_release], gate_config=cfg, holdout=bool(privgate.holdout_path), translator=translator
    )


def _jobs(published_release: dg.AssetsDefinition) -> tuple[Any, Any]:
    """The evaluate-and-publish job and the re-evaluation job."""
    evaluate_job = dg.define_asset_job(
        EVALUATE_JOB,
        selection=dg.AssetSelection.assets(real_data, synthetic_release, published_release),
        description="Load the release, run the privgate checks, publish it if no blocking check failed.",
    )
    reevaluate_job = dg.define_asset_job(
        REEVALUATE_JOB,
        selection=dg.AssetSelection.assets(synthetic_release),
        description="Re-read a release and re-run its privgate checks (no publication).",
    )
    return evaluate_job, reevaluate_job


def _triggers(
    pick: _Settings,
    evaluate_job: Any,
    reevaluate_job: Any,
    published_release: dg.AssetsDefinition,
    cfg: Any,
    privgate: PrivgateResource,
    *,
    sensor_interval: int | None,
    sensor_settle_seconds: float | None,
    sensor_running: bool | None,
    reevaluation_cron: str | None,
    reevaluate_latest: int | None,
    translator: PrivgateTranslator,
) -> dict[str, list[Any]]:
    """The new-release sensor and the re-evaluation schedule."""
    status = pick(
        None if sensor_running is None else ("running" if sensor_running else "stopped"),
        "PRIVGATE_SENSOR_STATUS",
        "running",
    ).lower()
    # runs started by the sensor and the schedule leave out the rules that cannot apply to them
    # (with / without the configured holdout): not shown as executed for those releases
    planned = applicable_check_keys(
        synthetic_release, cfg, has_holdout=bool(privgate.holdout_path), translator=translator
    )
    sensor = build_releases_sensor(
        evaluate_job,
        asset_selection=[real_data.key, synthetic_release.key, published_release.key],
        asset_check_keys=planned,
        minimum_interval_seconds=int(pick(sensor_interval, "PRIVGATE_SENSOR_INTERVAL", 30)),
        settle_seconds=float(pick(sensor_settle_seconds, "PRIVGATE_SENSOR_SETTLE", 5.0)),
        default_status=(dg.DefaultSensorStatus.STOPPED if status == "stopped" else dg.DefaultSensorStatus.RUNNING),
    )
    schedule = build_reevaluation_schedule(
        reevaluate_job,
        asset_selection=[synthetic_release.key],
        asset_check_keys=planned,
        cron_schedule=str(pick(reevaluation_cron, "PRIVGATE_REEVALUATION_CRON", "0 3 * * *")),
        latest=int(pick(reevaluate_latest, "PRIVGATE_REEVALUATE_LATEST", 5)),
    )
    return {"sensors": [sensor], "schedules": [schedule]}


def _add_example_audit(
    pick: _Settings, example_audit: bool | None, assets: list[Any], jobs: list[Any], translator: PrivgateTranslator
) -> None:
    """With ``PRIVGATE_EXAMPLE_AUDIT=1``: the bundled generator audit example and its job."""
    flag = str(pick(None if example_audit is None else int(example_audit), "PRIVGATE_EXAMPLE_AUDIT", "0")).lower()
    if flag not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise ConfigError(f"PRIVGATE_EXAMPLE_AUDIT: must be 1 or 0, got {flag!r}")
    if flag not in ("1", "true", "yes", "on"):
        return
    # building the asset is cheap: the audit runs only when a version is materialised
    from .audit_example import build_example_audit

    audit = build_example_audit(translator=translator)
    assets.append(audit)
    jobs.append(
        dg.define_asset_job(
            AUDIT_EXAMPLE_JOB,
            selection=dg.AssetSelection.assets(audit),
            description="Audit a version of the example generator: plan, runs fanned out by chunk, analysis.",
        )
    )


__all__ = ["AUDIT_EXAMPLE_JOB", "EVALUATE_JOB", "REEVALUATE_JOB", "build_definitions", "build_executor"]
