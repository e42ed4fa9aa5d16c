"""The score history store: every gate run and every metric score, in SQLite or PostgreSQL.

``HistoryStore(url)`` opens (and creates or migrates) the tables of :mod:`.schema`:

- ``url=None``: ``$PRIVGATE_HISTORY_URL`` when set, else the SQLite file
  ``./privgate-history.sqlite``;
- a path without ``://``: that SQLite file (parent folders are created);
- any SQLAlchemy URL, e.g. ``postgresql://user@host:5432/db`` (mapped to the installed
  PostgreSQL driver by :func:`privgate.dburl.sqlalchemy_url`; ``postgresql+psycopg2://`` works too).

Concurrency: a run is written in one transaction. On SQLite the store uses WAL journaling, a
busy timeout and ``BEGIN IMMEDIATE`` transactions (writers queue instead of deadlocking) and
retries a write that still finds the file locked; on PostgreSQL schema creation is serialised
with an advisory lock and rows are plain inserts. Several processes writing at the same time
lose no row.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, TypeVar

import polars as pl
import sqlalchemy as sa
from sqlalchemy import event

from ..dburl import sqlalchemy_url
from ..errors import HistoryError
from . import schema as S
from .audits import AuditHistory
from .rows import gate_rows

DEFAULT_SQLITE_FILE = "privgate-history.sqlite"
ENV_URL = "PRIVGATE_HISTORY_URL"
_PG_LOCK_KEY = 0x70726976  # "priv"
_T = TypeVar("_T")

SCORE_COLUMNS = {
    "seq": pl.Int64,
    "run_id": pl.String,
    "release_id": pl.String,
    "created_at": pl.Datetime("us", "UTC"),
    "decision": pl.String,
    "accepted": pl.Boolean,
    "metric": pl.String,
    "value": pl.Float64,
    "raw": pl.Float64,
    "baseline": pl.Float64,
    "excess": pl.Float64,
    "threshold": pl.Float64,
    "severity": pl.String,
    "verdict": pl.String,
    "seconds": pl.Float64,
    "optional": pl.Boolean,
    "error": pl.String,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "baseline_ci_low": pl.Float64,
    "baseline_ci_high": pl.Float64,
    "excess_ci_low": pl.Float64,
    "excess_ci_high": pl.Float64,
    "p_value": pl.Float64,
}
RUN_COLUMNS = {
    "seq": pl.Int64,
    "run_id": pl.String,
    "dataset": pl.String,
    "release_id": pl.String,
    "created_at": pl.Datetime("us", "UTC"),
    "decision": pl.String,
    "exit_code": pl.Int64,
    "accepted": pl.Boolean,
    "config_hash": pl.String,
    "privgate_version": pl.String,
    "has_holdout": pl.Boolean,
    "n_real": pl.Int64,
    "n_synthetic": pl.Int64,
    "n_holdout": pl.Int64,
    "seconds": pl.Float64,
    "fingerprint_json": pl.String,
}
CHECK_COLUMNS = {
    "run_id": pl.String,
    "metric": pl.String,
    "rule": pl.String,
    "value": pl.Float64,
    "compared": pl.Float64,
    "threshold": pl.Float64,
    "severity": pl.String,
    "verdict": pl.String,
    "skipped": pl.Boolean,
    "message": pl.String,
    "decided_on": pl.String,
    "interval_low": pl.Float64,
    "interval_high": pl.Float64,
    "p_value": pl.Float64,
}
REGRESSION_COLUMNS = {
    "run_id": pl.String,
    "release_id": pl.String,
    "created_at": pl.Datetime("us", "UTC"),
    "decision": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "previous_run_id": pl.String,
    "previous_release_id": pl.String,
    "previous_value": pl.Float64,
    "increase": pl.Float64,
}


@dataclass(frozen=True)
class RunRecord:
    """One stored run with its metric values (``metrics``: metric → value, errors omitted)."""

    run_id: str
    dataset: str
    release_id: str
    created_at: datetime
    decision: str
    exit_code: int
    accepted: bool
    config_hash: str | None
    privgate_version: str | None
    fingerprint: dict[str, Any]
    metrics: dict[str, float]


def _stored_number(v: Any) -> Any:
    """A stored score as a float; a cell that is not a number (SQLite keeps text written into a
    REAL column) is returned as it is, for the gate to refuse
    (``privgate.gates.deciding.history_number``)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def resolve_url(url: str | os.PathLike[str] | None) -> str:
    """The SQLAlchemy URL a store opens for ``url`` (see the module docstring)."""
    if url is None:
        url = os.environ.get(ENV_URL) or DEFAULT_SQLITE_FILE
    url = str(url)
    if "://" not in url:
        path = Path(url).expanduser().resolve()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
            why = (
                f"{blocker} is a file, not a folder"
                if blocker is not None
                else f"{type(exc).__name__}: {exc.strerror or exc}"
            )
            raise HistoryError(
                f"history: cannot create the folder of the history database {path}: "
                f"{why}; expected a writable folder (or pass --history / "
                f"${ENV_URL})"
            ) from None
        if path.is_dir():
            raise HistoryError(
                f"history: the history database path {path} is a folder; expected a "
                "SQLite file path or a SQLAlchemy URL"
            )
        return f"sqlite:///{path}"
    return sqlalchemy_url(url)


def _redacted(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return "<unparseable URL>"


class HistoryStore(AuditHistory):
    """Score history in SQLite (default) or PostgreSQL; see the module docstring. Generator
    audits: ``record_audit``, ``audits``, ``last_audit`` (:mod:`privgate.history.audits`)."""

    def __init__(self, url: str | os.PathLike[str] | None = None, *, retries: int = 50) -> None:
        self.url = resolve_url(url)
        self._retries = retries
        try:
            self.engine = sa.create_engine(self.url, **self._engine_args())
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(f"history: cannot open {_redacted(self.url)}: {type(exc).__name__}: {exc}") from exc
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        if self.is_sqlite:
            self._install_sqlite_hooks()
        try:
            self._retry(self._ensure_schema)
        except HistoryError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(
                f"history: cannot open or create the tables at {_redacted(self.url)}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            ) from exc

    # -- connection setup -----------------------------------------------------------------
    def _engine_args(self) -> dict[str, Any]:
        if self.url.startswith("sqlite"):
            return {"connect_args": {"timeout": 60}}
        return {"pool_pre_ping": True}

    def _install_sqlite_hooks(self) -> None:
        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # let SQLAlchemy's "begin" hook emit BEGIN
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout = 60000")
            try:
                cur.execute("PRAGMA journal_mode = WAL")
            except Exception:  # noqa: BLE001 - e.g. in-memory databases; rollback journal works too
                pass
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(self.engine, "begin")
        def _on_begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    def _retry(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn``; retry when SQLite reports a locked database (or PostgreSQL a serialisation
        failure), with jittered backoff."""
        for attempt in range(self._retries):
            try:
                return fn()
            except sa.exc.OperationalError as exc:
                text = str(exc).lower()
                transient = "locked" in text or "busy" in text or "could not serialize" in text or "deadlock" in text
                if not transient or attempt == self._retries - 1:
                    raise
                time.sleep(min(1.0, 0.02 * (attempt + 1)) * (0.5 + random.random()))
        raise AssertionError("unreachable")  # pragma: no cover

    def _ensure_schema(self) -> None:
        with self.engine.begin() as conn:
            if not self.is_sqlite and self.engine.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            S.metadata.create_all(conn, checkfirst=True)
            row = conn.execute(sa.select(S.meta.c.value).where(S.meta.c.key == "schema_version")).first()
            if row is None:
                # a new database, or one whose version row was lost: the migrations only add the
                # columns that are missing, so applying all of them brings either to this version
                for v in range(2, S.SCHEMA_VERSION + 1):
                    S.MIGRATIONS[v](conn)
                self._check_columns(conn)
                conn.execute(sa.insert(S.meta).values(key="schema_version", value=str(S.SCHEMA_VERSION)))
                return
            try:
                version = int(row[0])
            except (TypeError, ValueError):
                raise HistoryError(
                    f"history: the schema version stored at {_redacted(self.url)} (privgate_meta, key "
                    f"schema_version) is not a number; set it to the version of the tables (this privgate "
                    f"writes {S.SCHEMA_VERSION}) or delete that row to have it detected"
                ) from None
            if version > S.SCHEMA_VERSION:
                raise HistoryError(
                    f"history: the database at {_redacted(self.url)} has schema version {version}, "
                    f"newer than this privgate supports ({S.SCHEMA_VERSION}); upgrade privgate"
                )
            for v in range(version + 1, S.SCHEMA_VERSION + 1):
                S.MIGRATIONS[v](conn)
            if version != S.SCHEMA_VERSION:
                conn.execute(
                    sa.update(S.meta).where(S.meta.c.key == "schema_version").values(value=str(S.SCHEMA_VERSION))
                )
            self._check_columns(conn)

    def _check_columns(self, conn: sa.Connection) -> None:
        """Refuse tables that lack columns of this schema version (a database altered by hand or
        stamped with a version its tables do not have), naming the table and the columns — they
        are privgate's own names, not data — instead of failing on every later write."""
        inspector = sa.inspect(conn)
        for table in S.metadata.sorted_tables:
            present = {c["name"] for c in inspector.get_columns(table.name)}
            missing = [c.name for c in table.columns if c.name not in present]
            if missing:
                raise HistoryError(
                    f"history: table {table.name} at {_redacted(self.url)} lacks column(s) {', '.join(missing)} "
                    f"of schema version {S.SCHEMA_VERSION} (its privgate_meta schema_version says otherwise: "
                    "the database was altered); restore the columns, or delete the schema_version row of "
                    "privgate_meta to have privgate add the columns it knows how to add"
                )

    @property
    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar_one())

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HistoryStore({_redacted(self.url)!r})"

    # -- writing ---------------------------------------------------------------------------
    def record(self, outcome: Any, *, dataset: str | None = None) -> str:
        """Store one gate outcome (one run row, one score row per configured metric, one row per
        check) in a single transaction; returns the run id."""
        run_row, score_rows, check_rows = gate_rows(outcome, dataset)

        def write() -> None:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(S.runs), [run_row])
                if score_rows:
                    conn.execute(sa.insert(S.scores), score_rows)
                if check_rows:
                    conn.execute(sa.insert(S.checks), check_rows)

        try:
            self._retry(write)
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(
                f"history: cannot record run {run_row['run_id']} of dataset {run_row['dataset']!r} "
                f"at {_redacted(self.url)}: {type(exc).__name__}"
            ) from exc
        return run_row["run_id"]

    # -- reading ---------------------------------------------------------------------------
    def _frame(self, stmt: sa.Select, columns: dict[str, pl.DataType]) -> pl.DataFrame:
        try:
            with self.engine.connect() as conn:
                rows = [dict(r) for r in conn.execute(stmt).mappings().all()]
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(f"history: query failed at {_redacted(self.url)}: {type(exc).__name__}") from exc
        for r in rows:
            if "created_at" in r:
                r["created_at"] = S.utc(r["created_at"])
        return pl.DataFrame(rows, schema=columns, orient="row") if rows else pl.DataFrame(schema=columns)

    def datasets(self) -> list[str]:
        """Dataset names with at least one run, sorted."""
        stmt = sa.select(S.runs.c.dataset).distinct().order_by(S.runs.c.dataset)
        return self._frame(stmt, {"dataset": pl.String})["dataset"].to_list()

    def runs(self, dataset: str | None = None) -> pl.DataFrame:
        """Runs (oldest first), of one dataset or all."""
        cols = [S.runs.c[c] for c in RUN_COLUMNS]
        stmt = sa.select(*cols).order_by(S.runs.c.seq)
        if dataset is not None:
            stmt = stmt.where(S.runs.c.dataset == dataset)
        return self._frame(stmt, RUN_COLUMNS)

    def metric_history(self, dataset: str, metric: str | None = None) -> pl.DataFrame:
        """Every stored score of ``dataset`` (optionally one metric), oldest run first."""
        r, s = S.runs, S.scores
        cols = [(r.c[k] if k in r.c and k not in s.c else s.c[k]) for k in SCORE_COLUMNS]
        stmt = (
            sa.select(*cols)
            .select_from(r.join(s, r.c.run_id == s.c.run_id))
            .where(r.c.dataset == dataset)
            .order_by(r.c.seq, s.c.id)
        )
        if metric is not None:
            stmt = stmt.where(s.c.metric == metric)
        return self._frame(stmt, SCORE_COLUMNS)

    def last_config(self, dataset: str) -> dict[str, Any] | None:
        """The gate configuration (its canonical dict) of the newest run of ``dataset`` that had
        a valid one, or None: what a trend view draws the limits of."""
        r = S.runs
        stmt = (
            sa.select(r.c.config_json)
            .where(r.c.dataset == dataset, r.c.config_json.is_not(None))
            .order_by(r.c.seq.desc())
            .limit(1)
        )
        try:
            with self.engine.connect() as conn:
                text = conn.execute(stmt).scalar()
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(f"history: query failed at {_redacted(self.url)}: {type(exc).__name__}") from exc
        try:
            config = json.loads(text) if text else None
        except (TypeError, ValueError):
            return None
        return config if isinstance(config, dict) else None

    def unscored_runs(self, dataset: str) -> pl.DataFrame:
        """The runs of ``dataset`` that stored no score (they evaluated nothing: an invalid
        configuration, an input that could not be read, a deadline), oldest first, as
        :meth:`metric_history` rows: no metric, verdict ``error`` and the first error check's
        message as ``error``."""
        r, s, c = S.runs, S.scores, S.checks
        first_error = (
            sa.select(c.c.message)
            .where(c.c.run_id == r.c.run_id, c.c.rule == "error")
            .order_by(c.c.id)
            .limit(1)
            .scalar_subquery()
        )
        stmt = (
            sa.select(
                r.c.seq,
                r.c.run_id,
                r.c.release_id,
                r.c.created_at,
                r.c.decision,
                r.c.accepted,
                first_error.label("error"),
            )
            .where(r.c.dataset == dataset, ~sa.exists().where(s.c.run_id == r.c.run_id))
            .order_by(r.c.seq)
        )
        cols = {
            k: SCORE_COLUMNS[k] for k in ("seq", "run_id", "release_id", "created_at", "decision", "accepted", "error")
        }
        frame = self._frame(stmt, cols)
        return frame.with_columns(pl.lit("error", pl.String).alias("verdict")).select(
            [
                pl.col(k) if k in frame.columns or k == "verdict" else pl.lit(None, dtype).alias(k)
                for k, dtype in SCORE_COLUMNS.items()
            ]
        )

    def checks(self, run_id: str) -> pl.DataFrame:
        """The evaluated rules of one run."""
        c = S.checks
        stmt = sa.select(*[c.c[k] for k in CHECK_COLUMNS]).where(c.c.run_id == run_id).order_by(c.c.id)
        return self._frame(stmt, CHECK_COLUMNS)

    def pending_frames(self, outcome: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The rows ``record(outcome)`` would add, as ``runs()`` and ``metric_history()`` frames
        (the run numbered after the last stored one): a report written before its run is
        recorded shows the run in the history it reports."""
        run_row, score_rows, _ = gate_rows(outcome, None)
        last = self.runs(run_row["dataset"])["seq"].max()
        run = {**run_row, "seq": int(last or 0) + 1}
        runs = pl.DataFrame([{k: run.get(k) for k in RUN_COLUMNS}], schema=RUN_COLUMNS, orient="row")
        scores = [{**{k: run.get(k) for k in SCORE_COLUMNS}, **sr} for sr in score_rows]
        frame = (
            pl.DataFrame([{k: r.get(k) for k in SCORE_COLUMNS} for r in scores], schema=SCORE_COLUMNS, orient="row")
            if scores
            else pl.DataFrame(schema=SCORE_COLUMNS)
        )
        return runs, frame

    def get_run(self, run_id: str) -> RunRecord | None:
        stmt = sa.select(S.runs).where(S.runs.c.run_id == run_id)
        return self._one_run(stmt)

    def last_accepted(self, dataset: str, *, before_run: str | None = None) -> RunRecord | None:
        """The most recent run of ``dataset`` whose decision was pass or warn (optionally the last
        one recorded before ``before_run``), or None."""
        stmt = sa.select(S.runs).where(S.runs.c.dataset == dataset, S.runs.c.accepted.is_(True))
        if before_run is not None:
            seq = sa.select(S.runs.c.seq).where(S.runs.c.run_id == before_run).scalar_subquery()
            stmt = stmt.where(S.runs.c.seq < seq)
        return self._one_run(stmt.order_by(S.runs.c.seq.desc()).limit(1))

    def _one_run(self, stmt: sa.Select) -> RunRecord | None:
        try:
            with self.engine.connect() as conn:
                row = conn.execute(stmt).mappings().first()
                if row is None:
                    return None
                vals = conn.execute(
                    sa.select(S.scores.c.metric, S.scores.c.value).where(
                        S.scores.c.run_id == row["run_id"], S.scores.c.value.is_not(None)
                    )
                ).all()
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(f"history: query failed at {_redacted(self.url)}: {type(exc).__name__}") from exc
        try:
            fingerprint = json.loads(row["fingerprint_json"] or "{}")
        except (TypeError, ValueError):
            raise HistoryError(
                f"history: the input fingerprint of run {row['run_id']!r} at {_redacted(self.url)} "
                "is not valid JSON (the history was altered or corrupted); correct or delete "
                "that run"
            ) from None
        return RunRecord(
            run_id=row["run_id"],
            dataset=row["dataset"],
            release_id=row["release_id"],
            created_at=S.utc(row["created_at"]),
            decision=row["decision"],
            exit_code=row["exit_code"],
            accepted=bool(row["accepted"]),
            config_hash=row["config_hash"],
            privgate_version=row["privgate_version"],
            fingerprint=fingerprint if isinstance(fingerprint, dict) else {},
            metrics={m: _stored_number(v) for m, v in vals},
        )

    def regressions(self, dataset: str, metric: str | None = None, *, min_increase: float = 0.0) -> pl.DataFrame:
        """Scores that rose by more than ``min_increase`` against the last accepted run before
        their own run (the comparison a trend rule makes), oldest first."""
        runs = self.runs(dataset).select("seq", "run_id", "release_id", "created_at", "decision", "accepted")
        if runs.is_empty():
            return pl.DataFrame(schema=REGRESSION_COLUMNS)
        runs = runs.sort("seq").with_columns(
            pl.when(pl.col("accepted"))
            .then(pl.col("run_id"))
            .otherwise(None)
            .shift(1)
            .forward_fill()
            .alias("previous_run_id")
        )
        scores = self.metric_history(dataset, metric).select("run_id", "metric", "value").drop_nulls("value")
        prev = scores.rename({"run_id": "previous_run_id", "value": "previous_value"})
        prev_rel = runs.select(
            pl.col("run_id").alias("previous_run_id"), pl.col("release_id").alias("previous_release_id")
        )
        out = (
            runs.join(scores, on="run_id")
            .join(prev, on=["previous_run_id", "metric"])
            .join(prev_rel, on="previous_run_id", how="left")
            .with_columns((pl.col("value") - pl.col("previous_value")).alias("increase"))
            .filter(pl.col("increase") > min_increase)
            .sort("seq", "metric")
        )
        return out.select(list(REGRESSION_COLUMNS)).cast(REGRESSION_COLUMNS)
