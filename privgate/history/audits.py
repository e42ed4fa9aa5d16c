"""Generator audits in the history store (table ``privgate_audits``, schema versions 3 and 4).

:class:`AuditHistory` gives :class:`~privgate.history.HistoryStore` ``record_audit``,
``audits`` and ``last_audit``. A row holds the audit's decision and its aggregates, the checks
and the :class:`~privgate.audit.AuditResult` as JSON without the ROC score arrays: scores,
counts, target ids and row positions — an audit result holds no value of a record — plus the
generator's digest and the audit rules as JSON (version 4). ``last_audit`` returns the cells as
stored (``AuditRecord.row``): a release gate checks them itself before it trusts any
(:func:`privgate.gates.require_audit.requirement_check`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import polars as pl
import sqlalchemy as sa

from ..errors import HistoryError
from ..finite import finite_or_none
from . import schema as S

AUDIT_COLUMNS = {
    "seq": pl.Int64,
    "run_id": pl.String,
    "generator": pl.String,
    "generator_version": pl.String,
    "dataset": pl.String,
    "created_at": pl.Datetime("us", "UTC"),
    "decision": pl.String,
    "exit_code": pl.Int64,
    "accepted": pl.Boolean,
    "epsilon_lower": pl.Float64,
    "claimed_epsilon": pl.Float64,
    "delta": pl.Float64,
    "confidence": pl.Float64,
    "auc_lower": pl.Float64,
    "max_auc": pl.Float64,
    "mu_lower": pl.Float64,
    "n_audited": pl.Int64,
    "n_targets": pl.Int64,
    "runs": pl.Int64,
    "design": pl.String,
    "seconds": pl.Float64,
    "seconds_generate": pl.Float64,
    "config_hash": pl.String,
    "privgate_version": pl.String,
    "generator_digest": pl.String,
}


@dataclass(frozen=True)
class AuditRecord:
    """One stored audit as read: ``row`` holds every cell as the database returned it (unchecked:
    text where a number belongs stays text); the other fields are convenience reads of it, with
    ``checks`` / ``result`` empty when their JSON cannot be read."""

    run_id: str
    generator: str
    generator_version: str | None
    dataset: str | None
    created_at: datetime
    decision: str
    exit_code: int
    accepted: bool
    epsilon_lower: float | None
    claimed_epsilon: float | None
    delta: float | None
    auc_lower: float | None
    checks: list[dict[str, Any]]
    result: dict[str, Any]
    row: dict[str, Any] = field(default_factory=dict)


class AuditHistory:
    """Audit methods of the history store (mixed into :class:`~privgate.history.HistoryStore`,
    which provides ``engine``, ``url``, ``_retry`` and ``_frame``)."""

    def record_audit(self, outcome: Any, *, dataset: str | None = None) -> str:
        """Store one decided audit (:class:`~privgate.gates.audit_rules.AuditOutcome`) in one
        transaction; returns its run id. An audit without a generator name cannot be recorded."""
        row = audit_row(outcome, dataset)

        def write() -> None:
            with self.engine.begin() as conn:  # type: ignore[attr-defined]
                conn.execute(sa.insert(S.audits), [row])

        try:
            self._retry(write)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(
                f"history: cannot record audit {row['run_id']} of generator {row['generator']!r} "
                f"at {_redacted(self)}: {type(exc).__name__}"
            ) from exc
        outcome.recorded = True
        return row["run_id"]

    def audits(self, generator: str | None = None, version: str | None = None) -> pl.DataFrame:
        """Stored audits (oldest first), of one generator (and version) or all."""
        a = S.audits
        stmt = sa.select(*[a.c[c] for c in AUDIT_COLUMNS]).order_by(a.c.seq)
        if generator is not None:
            stmt = stmt.where(a.c.generator == generator)
        if version is not None:
            stmt = stmt.where(a.c.generator_version == str(version))
        return self._frame(stmt, AUDIT_COLUMNS)  # type: ignore[attr-defined]

    def last_audit(
        self, generator: str, version: str | None = None, *, dataset: str | None = None
    ) -> AuditRecord | None:
        """The most recent audit of ``generator`` (at ``version``; None: any version; on
        ``dataset`` when given), or None."""
        a = S.audits
        # the cells as stored, without SQLAlchemy's conversions (SQLite keeps text written into a
        # boolean or REAL column, which a Boolean type would read as True)
        raw = [sa.type_coerce(c, sa.types.NullType()).label(c.name) for c in a.c]
        stmt = sa.select(*raw).where(a.c.generator == generator)
        if version is not None:
            stmt = stmt.where(a.c.generator_version == str(version))
        if dataset is not None:
            stmt = stmt.where(a.c.dataset == str(dataset))
        stmt = stmt.order_by(a.c.seq.desc()).limit(1)
        try:
            with self.engine.connect() as conn:  # type: ignore[attr-defined]
                row = conn.execute(stmt).mappings().first()
        except Exception as exc:  # noqa: BLE001
            raise HistoryError(f"history: query failed at {_redacted(self)}: {type(exc).__name__}") from exc
        if row is None:
            return None
        cells = dict(row)
        try:
            created = S.utc(cells["created_at"])
        except (TypeError, ValueError):
            created = cells["created_at"]
        return AuditRecord(
            run_id=cells["run_id"],
            generator=cells["generator"],
            generator_version=cells["generator_version"],
            dataset=cells["dataset"],
            created_at=created,
            decision=cells["decision"],
            exit_code=cells["exit_code"],
            accepted=cells["accepted"],
            epsilon_lower=cells["epsilon_lower"],
            claimed_epsilon=cells["claimed_epsilon"],
            delta=cells["delta"],
            auc_lower=cells["auc_lower"],
            checks=_json_or(cells["checks_json"], list),
            result=_json_or(cells["result_json"], dict),
            row=cells,
        )


def audit_row(outcome: Any, dataset: str | None = None) -> dict[str, Any]:
    """The ``privgate_audits`` row of a decided audit."""
    result = outcome.result
    gen = outcome.generator
    if not gen:
        raise HistoryError("history: the audit has no generator name; give generator_name to record it")
    res = result.to_dict()
    res.pop("roc", None)  # score arrays: large, and the aggregates carry the evidence
    created = outcome.created_at
    created = created.astimezone(timezone.utc) if created.tzinfo is not None else created.replace(tzinfo=timezone.utc)
    cost, design = res.get("cost") or {}, res.get("design") or {}
    return {
        "run_id": outcome.run_id,
        "generator": str(gen)[:200],
        "generator_version": None if outcome.generator_version is None else str(outcome.generator_version)[:100],
        "dataset": dataset or outcome.dataset,
        "created_at": created,
        "decision": str(outcome.decision),
        "exit_code": int(outcome.exit_code),
        "accepted": bool(outcome.accepted),
        "epsilon_lower": finite_or_none(res.get("epsilon_lower")),
        "claimed_epsilon": finite_or_none(outcome.claimed_epsilon),
        "delta": finite_or_none(res.get("delta")),
        "confidence": finite_or_none(res.get("confidence")),
        "auc_lower": finite_or_none(res.get("auc_lower")),
        "max_auc": finite_or_none(res.get("max_auc")),
        "mu_lower": finite_or_none(res.get("mu_lower")),
        "n_audited": _i(res.get("n_audited")),
        "n_targets": len(res.get("targets") or []),
        "runs": _i(design.get("total_runs")),
        "design": None if design.get("design") is None else str(design["design"])[:20],
        "seconds": finite_or_none(cost.get("wall_seconds")),
        "seconds_generate": finite_or_none(cost.get("seconds_generate_total")),
        "config_hash": outcome.config.hash if outcome.config is not None else None,
        "config_json": (
            None
            if outcome.config is None
            else json.dumps(outcome.config.to_dict(), sort_keys=True, allow_nan=False, default=str)
        ),
        "generator_digest": _digest_of(outcome),
        "privgate_version": _version(),
        "checks_json": json.dumps([c.to_dict() for c in outcome.checks], allow_nan=False, default=str),
        "result_json": json.dumps(res, allow_nan=False, default=str),
    }


def _digest_of(outcome: Any) -> str | None:
    from ..audit.identity import is_digest

    d = (getattr(outcome.result, "generator", None) or {}).get("digest")
    return d if is_digest(d) else None


def _json_or(text: Any, kind: type) -> Any:
    """The JSON cell parsed, or an empty ``kind`` when it is missing or not JSON of that kind."""
    try:
        x = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        x = None
    return x if isinstance(x, kind) else kind()


def _i(x: Any) -> int | None:
    return None if x is None or isinstance(x, bool) else int(x)


def _redacted(store: Any) -> str:
    try:
        return sa.engine.make_url(store.url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return "<unparseable URL>"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("privgate")
    except Exception:  # noqa: BLE001
        return "unknown"
