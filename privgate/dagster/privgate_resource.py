"""``PrivgateResource``: what the privgate asset checks need to gate a release -- the real data,
the holdout, the gate configuration, the score history, report folder, thread settings and
where the evaluation runs (here, or on a Dask cluster: ``executor``, ``sharded``).

Evaluations of one dataset are **serialised and ordered**, so the same releases get the same
verdicts whatever the run timing (a trend rule compares a release with the last *accepted*
release, which a concurrent run of an earlier release may not have recorded yet):

1. a per-dataset lock is held from reading the history to recording the run -- a file lock
   (``flock``) next to a SQLite or default history, a PostgreSQL advisory lock for a PostgreSQL
   history (works across pods);
2. for a partitioned release asset, a trend rule compares with the last accepted release that
   comes **before** this one in partition order (not with whatever was recorded last), and the
   evaluation waits (lock released, up to ``wait_seconds``) while an earlier partition has a run
   in progress, so a release never overtakes its predecessor. When the wait times out the
   evaluation fails (fails closed: nothing downstream runs) instead of deciding without the
   predecessor.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

import dagster as dg
from pydantic import Field

from privgate.errors import PrivgateError
from privgate.names import path_component
from privgate.options import AUTO_SAMPLE_ABOVE, AUTO_SAMPLE_SIZE

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig, GateOutcome
    from privgate.history import HistoryStore
    from privgate.history.store import RunRecord


class EvaluationWaitTimeout(PrivgateError):
    """An earlier release of the dataset was still being evaluated when the wait ran out."""


class PrivgateResource(dg.ConfigurableResource):
    """Gate a synthetic release with privgate (``pip install 'privgate[dagster]'``).

    Every field can be set in the Definitions, from environment variables (``dg.EnvVar``), or per
    run in the launchpad (``resources: privgate: config: ...``).
    """

    real_path: str = Field(description="The real (training) data: Parquet, CSV or Arrow IPC file.")
    holdout_path: Optional[str] = Field(
        default=None, description="Real records NOT used to train the generator (enables baseline rules)."
    )
    gate_config: Optional[str] = Field(
        default=None,
        description=(
            "Gate configuration file (YAML/TOML). Unset: the configuration the "
            "checks were declared from (build_privgate_checks' gate_config)."
        ),
    )
    dataset: Optional[str] = Field(
        default=None, description="Overrides the configuration's dataset name (the score-history key)."
    )
    history_url: Optional[str] = Field(
        default=None,
        description=(
            "Score history (SQLAlchemy URL, sqlite:/// or postgresql://). "
            "Unset: $PRIVGATE_HISTORY_URL, else ./privgate-history.sqlite."
        ),
    )
    reports_dir: Optional[str] = Field(
        default=None, description="Write HTML/JSON reports to <reports_dir>/<dataset>/<release id>/."
    )
    threads: Optional[int] = Field(
        default=1,
        description=(
            "Thread budget of an evaluation: BLAS, OpenMP, faiss and LightGBM. Unset "
            "(null): the gate configuration's options.threads, else privgate's default, "
            "$PRIVGATE_THREADS or the free cores."
        ),
    )
    exact: Optional[bool] = Field(
        default=None,
        description=(
            "True: exact neighbour searches at every size; False: approximate above "
            "~45k × 45k records (measured recall). Unset: the configuration's options.exact."
        ),
    )
    sample_real: Optional[int] = Field(
        default=None,
        description=(
            "Estimate per-real-record means on a seeded sample of this many real records. "
            "Unset: the configuration's options.sample_real (default: as sample says)."
        ),
    )
    sample: Optional[str] = Field(
        default=None,
        description=(
            f"Query-record sampling of both sides: 'auto' (a side of more than {AUTO_SAMPLE_ABOVE:,} rows "
            f"is estimated on {AUTO_SAMPLE_SIZE:,} seeded records), 'off', or a number N per side. "
            "Unset: the configuration's options.sample (default auto)."
        ),
    )
    deadline: Optional[float] = Field(
        default=None,
        description=(
            "Seconds a gate run may take; then it is stopped and the release blocked "
            "(recorded). Unset: the configuration's options.deadline (default 6 hours)."
        ),
    )
    memory_limit: Optional[str] = Field(
        default=None,
        description=(
            "The most memory an evaluation may use ('8G', bytes, 'auto' or 'off'); a run "
            "estimated above it is refused before any metric runs (blocked, recorded, "
            "naming the options that would fit). Unset: the configuration's "
            "options.memory_limit, else $PRIVGATE_MEMORY_LIMIT, else the memory available."
        ),
    )
    executor: Optional[str] = Field(
        default=None,
        description=(
            "Where the evaluation runs: unset or 'local', in the check's process; 'dask://HOST:PORT' "
            "(a Dask scheduler's address, extra [dask]), each metric family on a worker of that "
            "cluster, with the same results and decision (docs/cluster.md)."
        ),
    )
    sharded: bool = Field(
        default=False,
        description=(
            "With a cluster executor: evaluate partition by partition on the workers, no input "
            "loaded here. The real data, the holdout and the release must be Parquet files, "
            "folders or globs the workers can read (the release asset's value a path); a release "
            "given as a frame, or a metric that cannot run sharded, blocks the run "
            "(docs/cluster.md, 'Sharded gate')."
        ),
    )
    wait_seconds: float = Field(
        default=600.0, description="How long to wait for an earlier release of the dataset still being evaluated."
    )
    lock_dir: Optional[str] = Field(
        default=None, description="Folder of the per-dataset lock files (non-PostgreSQL history)."
    )
    work_dir: Optional[str] = Field(
        default=None,
        description=(
            "Where the steps of a by-family evaluation "
            "(build_privgate_family_checks) leave their results for the gate "
            "step; must be a folder every step's pod mounts. Unset: "
            "<temp dir>/privgate-steps (one machine only)."
        ),
    )

    # ----------------------------------------------------------------------------------------
    def load_config(self, declared: "GateConfig | None" = None) -> "GateConfig":
        """The gate configuration of this run: ``gate_config`` when set, else ``declared``, else
        privgate's default; with ``dataset`` applied."""
        from privgate.gates import DEFAULT_CONFIG_PATH, resolve_gate_config

        source = self.gate_config or (declared if declared is not None else DEFAULT_CONFIG_PATH)
        return resolve_gate_config(source, self.dataset)

    def run_options(self) -> dict[str, Any]:
        """The run options this resource sets, as ``run_gate`` keywords (None: not given, the
        configuration's; validated by the run, which blocks on an invalid one), and where the run
        evaluates (``executor``, ``sharded``)."""
        return {
            "threads": self.threads,
            "exact": self.exact,
            "sample_real": self.sample_real,
            "sample": self.sample,
            "deadline": self.deadline,
            "memory_limit": self.memory_limit,
            "executor": self.executor,
            "sharded": self.sharded,
        }

    def _options_for(self, report: Any) -> dict[str, Any]:
        """The run options of one evaluation: with ``report`` (results the by-family steps
        evaluated, which refuse a cluster themselves) nothing is evaluated, so no cluster is
        asked for and the gate decides on the steps' results and errors."""
        options = self.run_options()
        if report is not None:
            options.update(executor=None, sharded=False)
        return options

    def open_history(self) -> "HistoryStore":
        from privgate.history import HistoryStore

        return HistoryStore(url=self.history_url) if self.history_url else HistoryStore()

    def evaluate(
        self,
        release: Any,
        *,
        release_id: str,
        declared: "GateConfig | None" = None,
        earlier_releases: Sequence[str] | None = None,
        earlier_in_progress: Callable[[], Sequence[str]] | None = None,
        holdout_path: str | None = None,
        log: Any = None,
        report: Any = None,
    ) -> "tuple[GateOutcome, dict[str, Path]]":
        """Gate ``release`` (Polars / pandas / Arrow / path) as ``release_id`` and record it.

        ``earlier_releases``: the release ids that come before this one (partition order); the
        trend rules compare with the last accepted one of them. ``earlier_in_progress`` returns
        the earlier release ids that are being evaluated right now (waited for). ``report``:
        results computed beforehand (by the family steps; ``privgate.gates.run_gate(report=)``).
        Returns the gate outcome and the paths of the reports written (``html``, ``json``).
        """
        from privgate.errors import ConfigError
        from privgate.gates import run_gate

        try:
            cfg: Any = self.load_config(declared)
            dataset = cfg.dataset
        except (ConfigError, PrivgateError) as exc:
            # fail closed like the CLI: run_gate records a blocked run naming the bad key
            if log is not None:
                log.error(f"gate configuration {self.gate_config} is invalid: {exc}")
            cfg = self.gate_config
            from privgate.gates.config import declared_dataset
            from privgate.gates.run import UNKNOWN_DATASET

            dataset = self.dataset or (
                declared.dataset if declared is not None else declared_dataset(self.gate_config) or UNKNOWN_DATASET
            )
        holdout = holdout_path if holdout_path is not None else self.holdout_path
        self._tell_in_memory_release(release, log)
        deadline = time.monotonic() + max(0.0, float(self.wait_seconds))
        while True:
            with dataset_lock(dataset, self.history_url, self.lock_dir):
                waiting = list(earlier_in_progress()) if earlier_in_progress is not None else []
                if not waiting:
                    store = self.open_history()
                    try:
                        outcome = run_gate(
                            cfg,
                            self.real_path,
                            release,
                            holdout=holdout or None,
                            release_id=release_id,
                            dataset=dataset,
                            history=ReleaseOrderedHistory(store, earlier_releases),
                            record=False,
                            report=report,
                            **self._options_for(report),
                        )
                        reports = self._write_reports(outcome, store, log)
                    finally:
                        store.close()
                    return outcome, reports
            if time.monotonic() > deadline:
                raise EvaluationWaitTimeout(
                    f"release {release_id!r} of dataset {dataset!r}: earlier release(s) "
                    f"{', '.join(map(repr, waiting[:5]))} still being evaluated after "
                    f"{self.wait_seconds:g} s; not evaluated (re-run it once they finished)"
                )
            if log is not None:
                log.info(f"waiting for the evaluation of earlier release(s) {waiting[:5]} of dataset {dataset!r}")
            time.sleep(1.0)

    def _tell_in_memory_release(self, release: Any, log: Any) -> None:
        """Log why a sharded evaluation of an in-memory release will block: the gate refuses it
        (``run_gate``: a sharded input must be a path the workers read), never evaluating it here."""
        if self.sharded and log is not None and not isinstance(release, (str, Path, list, tuple)):
            log.error(
                f"sharded=True: the release arrived as an in-memory {type(release).__name__}; the "
                "workers read a Parquet file, folder or glob, so the release asset's value must be "
                "that path (or set sharded=False): the release is blocked"
            )

    def _write_reports(self, outcome: "GateOutcome", store: "HistoryStore", log: Any) -> dict[str, Path]:
        """Write the HTML and JSON reports of ``outcome``, then record its final decision
        (:func:`privgate.finalise.finalise_run`, as ``privgate gate`` does): a report that
        cannot be written blocks the release before the run is recorded, so the history row is
        the run's final decision."""
        from privgate.finalise import finalise_run

        def tell(path: Any, kind: str, reason: str) -> None:
            if log is not None:
                log.error(f"{kind.upper()} report {path} not written ({reason}): the release is blocked")

        targets: list[tuple[Path, str]] = []
        if self.reports_dir:
            folder = Path(self.reports_dir) / _safe(outcome.dataset) / _safe(outcome.release_id)
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                pass  # the writes below fail, name the path and block
            targets = [(folder / f"{outcome.run_id}.{kind}", kind) for kind in ("json", "html")]
        written = finalise_run(outcome, store, targets, on_report_error=tell)
        return {kind: Path(path) for path, kind in written}


class ReleaseOrderedHistory:
    """The history as a gate run of one release must see it: ``last_accepted`` is the last
    accepted release among ``earlier`` (release order, the latest evaluation of each release
    deciding whether it is accepted), not the last run recorded; ``None`` = no order known, the
    store's own answer. Everything else goes to the store."""

    def __init__(self, store: "HistoryStore", earlier: Sequence[str] | None) -> None:
        self._store = store
        self._earlier = None if earlier is None else list(earlier)

    def last_accepted(self, dataset: str, *, before_run: str | None = None) -> "RunRecord | None":
        if self._earlier is None:
            return self._store.last_accepted(dataset, before_run=before_run)
        if not self._earlier:
            return None
        import polars as pl

        runs = self._store.runs(dataset)
        if runs.is_empty():
            return None
        order = {rid: i for i, rid in enumerate(self._earlier)}
        latest = (
            runs.filter(pl.col("release_id").is_in(list(order)))
            .with_row_index("_seq")
            .sort("_seq")
            .group_by("release_id", maintain_order=True)
            .last()
            .filter(pl.col("accepted"))
        )
        if latest.is_empty():
            return None
        best = max(latest.iter_rows(named=True), key=lambda r: order[r["release_id"]])
        return self._store.get_run(best["run_id"])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@contextlib.contextmanager
def dataset_lock(dataset: str, history_url: str | None, lock_dir: str | None = None) -> Iterator[None]:
    """Hold the per-dataset evaluation lock: a PostgreSQL advisory lock when the history is in
    PostgreSQL (shared by every host), else an exclusive ``flock`` on a file (shared by every
    process and thread of this host)."""
    from privgate.history.store import resolve_url

    url = resolve_url(history_url)
    key = hashlib.sha256(f"{url}\x00{dataset}".encode()).digest()
    if url.startswith("postgresql"):
        import sqlalchemy as sa

        lock_id = int.from_bytes(key[:8], "big", signed=True)
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": lock_id})
                try:
                    yield
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": lock_id})
                    conn.commit()
        finally:
            engine.dispose()
        return
    folder = Path(lock_dir) if lock_dir else Path(tempfile.gettempdir()) / "privgate-locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key.hex()[:32]}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _safe(name: str) -> str:
    """A name as one path component (no separators, no leading dots)."""
    return path_component(name, "dataset")
