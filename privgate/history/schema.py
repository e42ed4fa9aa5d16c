"""The score history's tables (SQLAlchemy Core) and its schema version.

Schema version 1:

- ``privgate_meta``: key/value pairs; ``schema_version`` is the version of these tables.
- ``privgate_runs``: one row per gate run — dataset, release id, time (UTC), config hash, input
  fingerprint (JSON: schemas, row counts, content hashes; never data), privgate version,
  decision, exit code, accepted flag.
- ``privgate_scores``: one row per configured metric per run — value, raw, holdout baseline and
  excess, the deciding rule's threshold and severity, the metric's verdict, seconds, error text.
- ``privgate_checks``: one row per evaluated rule (and per failure) — what was compared with
  which limit and the verdict.

A newer privgate adds its migration to ``MIGRATIONS`` (version → function applied inside the
schema lock) and bumps ``SCHEMA_VERSION``; an older privgate refuses a newer database.
"""

from __future__ import annotations

from typing import Callable

import sqlalchemy as sa

SCHEMA_VERSION = 1

metadata = sa.MetaData()

meta = sa.Table(
    "privgate_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

runs = sa.Table(
    "privgate_runs", metadata,
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
    "privgate_scores", metadata,
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
)

checks = sa.Table(
    "privgate_checks", metadata,
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
)

# version → migration applied to a database at version - 1 (inside the schema lock)
MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {}
