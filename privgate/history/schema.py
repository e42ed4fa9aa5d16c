"""The score history's tables (SQLAlchemy Core) and its schema version.

Schema version 4 (version 1 plus the intervals of version 2, the audits table of version 3 and
the audit's evidence columns of version 4;
:data:`MIGRATIONS` upgrades an older database in place):

- ``privgate_meta``: key/value pairs; ``schema_version`` is the version of these tables.
- ``privgate_runs``: one row per gate run — dataset, release id, time (UTC), config hash, input
  fingerprint (JSON: schemas, row counts, content hashes; never data), privgate version,
  decision, exit code, accepted flag.
- ``privgate_scores``: one row per configured metric per run — value, raw, holdout baseline and
  excess, the deciding rule's threshold and severity, the metric's verdict, seconds, error text;
  since version 2 the 95 % intervals of the value, the baseline and the excess (``ci_low`` /
  ``ci_high``, ``baseline_ci_low`` / ``baseline_ci_high``, ``excess_ci_low`` / ``excess_ci_high``)
  and the metric's p-value.
- ``privgate_checks``: one row per evaluated rule (and per failure) — what was compared with
  which limit and the verdict; since version 2 also which end of the interval the rule decided
  on (``decided_on``: estimate / lower / upper), that interval and the rule's p-value.
- ``privgate_audits`` (version 3): one row per generator audit — generator name and version,
  dataset, time, decision, exit code, accepted flag, the ε lower bound, the claim, δ, confidence,
  the AUC lower bound, targets audited and in all, runs, seconds, the checks and the result as
  JSON without the ROC score arrays (scores, counts and row positions; never values); since
  version 4 the generator's digest (``generator_digest``, :mod:`privgate.audit.identity`) and
  the audit rules it was decided under (``config_json``, whose sha256 is ``config_hash``), which
  a release gate's ``require_audit`` re-derives the decision with.

A newer privgate adds its migration to ``MIGRATIONS`` (version → function applied inside the
schema lock) and bumps ``SCHEMA_VERSION``; an older privgate refuses a newer database.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

import sqlalchemy as sa

SCHEMA_VERSION = 4

metadata = sa.MetaData()

meta = sa.Table(
    "privgate_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

runs = sa.Table(
    "privgate_runs",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False, unique=True),
    sa.Column("dataset", sa.String(200), nullable=False, index=True),
    sa.Column("release_id", sa.String(200), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("decision", sa.String(10), nullable=False),
    sa.Column("exit_code", sa.Integer, nullable=False),
    sa.Column("accepted", sa.Boolean, nullable=False),
    sa.Column("config_hash", sa.String(64)),
    sa.Column("config_json", sa.Text),
    sa.Column("fingerprint_json", sa.Text),
    sa.Column("privgate_version", sa.String(50)),
    sa.Column("has_holdout", sa.Boolean, nullable=False, default=False),
    sa.Column("n_real", sa.Integer),
    sa.Column("n_synthetic", sa.Integer),
    sa.Column("n_holdout", sa.Integer),
    sa.Column("seconds", sa.Float),
)

scores = sa.Table(
    "privgate_scores",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), sa.ForeignKey("privgate_runs.run_id"), nullable=False, index=True),
    sa.Column("metric", sa.String(100), nullable=False),
    sa.Column("value", sa.Float),
    sa.Column("raw", sa.Float),
    sa.Column("baseline", sa.Float),
    sa.Column("excess", sa.Float),
    sa.Column("threshold", sa.Float),
    sa.Column("severity", sa.String(10)),
    sa.Column("verdict", sa.String(10), nullable=False),
    sa.Column("seconds", sa.Float),
    sa.Column("optional", sa.Boolean, nullable=False, default=False),
    sa.Column("error", sa.Text),
    # version 2
    sa.Column("ci_low", sa.Float),
    sa.Column("ci_high", sa.Float),
    sa.Column("baseline_ci_low", sa.Float),
    sa.Column("baseline_ci_high", sa.Float),
    sa.Column("excess_ci_low", sa.Float),
    sa.Column("excess_ci_high", sa.Float),
    sa.Column("p_value", sa.Float),
)

checks = sa.Table(
    "privgate_checks",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), sa.ForeignKey("privgate_runs.run_id"), nullable=False, index=True),
    sa.Column("metric", sa.String(100), nullable=False),
    sa.Column("rule", sa.String(20), nullable=False),
    sa.Column("value", sa.Float),
    sa.Column("compared", sa.Float),
    sa.Column("threshold", sa.Float),
    sa.Column("severity", sa.String(10)),
    sa.Column("verdict", sa.String(10), nullable=False),
    sa.Column("skipped", sa.Boolean, nullable=False, default=False),
    sa.Column("message", sa.Text),
    # version 2
    sa.Column("decided_on", sa.String(10)),
    sa.Column("interval_low", sa.Float),
    sa.Column("interval_high", sa.Float),
    sa.Column("p_value", sa.Float),
)

# version 3: one row per generator audit (privgate.audit), decided by privgate.gates.audit_rules
audits = sa.Table(
    "privgate_audits",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(64), nullable=False, unique=True),
    sa.Column("generator", sa.String(200), nullable=False, index=True),
    sa.Column("generator_version", sa.String(100)),
    sa.Column("dataset", sa.String(200)),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("decision", sa.String(10), nullable=False),
    sa.Column("exit_code", sa.Integer, nullable=False),
    sa.Column("accepted", sa.Boolean, nullable=False),
    sa.Column("epsilon_lower", sa.Float),
    sa.Column("claimed_epsilon", sa.Float),
    sa.Column("delta", sa.Float),
    sa.Column("confidence", sa.Float),
    sa.Column("auc_lower", sa.Float),
    sa.Column("max_auc", sa.Float),
    sa.Column("mu_lower", sa.Float),
    sa.Column("n_audited", sa.Integer),
    sa.Column("n_targets", sa.Integer),
    sa.Column("runs", sa.Integer),
    sa.Column("design", sa.String(20)),
    sa.Column("seconds", sa.Float),
    sa.Column("seconds_generate", sa.Float),
    sa.Column("config_hash", sa.String(64)),
    sa.Column("privgate_version", sa.String(50)),
    sa.Column("checks_json", sa.Text),
    sa.Column("result_json", sa.Text),
    # version 4
    sa.Column("generator_digest", sa.String(64)),
    sa.Column("config_json", sa.Text),
)

# columns each version added, per table (nullable: old rows read as NULL)
ADDED_COLUMNS: dict[int, dict[str, list[str]]] = {
    2: {
        "privgate_scores": [
            "ci_low",
            "ci_high",
            "baseline_ci_low",
            "baseline_ci_high",
            "excess_ci_low",
            "excess_ci_high",
            "p_value",
        ],
        "privgate_checks": ["decided_on", "interval_low", "interval_high", "p_value"],
    },
    4: {"privgate_audits": ["generator_digest", "config_json"]},
}


def _add_columns(version: int) -> Callable[[sa.Connection], None]:
    """A migration adding ``ADDED_COLUMNS[version]`` with ALTER TABLE (SQLite and PostgreSQL
    both add a nullable column without rewriting the table)."""

    def migrate(conn: sa.Connection) -> None:
        prep = conn.dialect.identifier_preparer
        for table_name, names in ADDED_COLUMNS[version].items():
            table = metadata.tables[table_name]
            present = {c["name"] for c in sa.inspect(conn).get_columns(table_name)}
            for name in names:
                if name in present:
                    continue
                col = table.c[name]
                conn.execute(
                    sa.text(
                        f"ALTER TABLE {prep.quote(table_name)} ADD COLUMN {prep.quote(name)} "
                        f"{col.type.compile(dialect=conn.dialect)}"
                    )
                )

    return migrate


# version → migration applied to a database at version - 1 (inside the schema lock)
def _create_audits(conn: sa.Connection) -> None:
    """Version 3: the audits table (a new table; the other tables are unchanged)."""
    audits.create(conn, checkfirst=True)


MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {2: _add_columns(2), 3: _create_audits, 4: _add_columns(4)}


def utc(x: Any) -> Any:
    """A time read back from these tables as an aware UTC datetime: SQLite returns it naive (in
    UTC) or as ISO text; anything else is returned as it is."""
    if isinstance(x, datetime):
        return x.replace(tzinfo=timezone.utc) if x.tzinfo is None else x.astimezone(timezone.utc)
    if isinstance(x, str):
        return utc(datetime.fromisoformat(x))
    return x
