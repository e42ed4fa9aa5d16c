"""History store URLs for the audit tests: SQLite always, PostgreSQL (marked ``postgres``) when
PRIVGATE_TEST_POSTGRES_URL is set."""

from __future__ import annotations

import os
import uuid

import pytest
import sqlalchemy as sa

PG_URL = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path):
    """SQLite file per test; on PostgreSQL a private schema per test (dropped afterwards)."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite")
        return
    if not PG_URL:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL is not set; PostgreSQL history tests skipped")
    schema = f"privgate_audit_test_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(PG_URL)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    with engine.begin() as conn:
        conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    engine.dispose()
