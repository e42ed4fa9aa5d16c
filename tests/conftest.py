"""Shared fixtures: the bundled Adult sample, its baselines, and paths to ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

import privgate
from privgate.data import load_example

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

os.environ.setdefault("MPLBACKEND", "Agg")

# Property tests draw from a fixed seed so CI is reproducible; run with
# HYPOTHESIS_PROFILE=explore locally to search new examples.
from hypothesis import settings  # noqa: E402

settings.register_profile("default", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def adult() -> pl.DataFrame:
    return load_example()


@pytest.fixture(scope="session")
def adult_holdout() -> pl.DataFrame:
    return load_example("adult_holdout")


@pytest.fixture(scope="session")
def adult_baselines(adult) -> dict[str, pl.DataFrame]:
    """The four calibration baselines of the Adult sample, in the sanity order (least risky first)."""
    b = privgate.baselines
    return {
        "uniform_random": b.uniform_random(adult, seed=1),
        "independent_marginals": b.independent_marginals(adult, seed=1),
        "noisy_copy": b.noisy_copy(adult, seed=1),
        "copy": b.copy(adult),
    }


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.exists():
        pytest.skip(f"../shared not found at {SHARED}")
    return SHARED


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path):
    """A history store URL: a SQLite file per test, and — when PRIVGATE_TEST_POSTGRES_URL is set
    (skipped otherwise) — a private PostgreSQL schema per test, dropped afterwards."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite")
        return
    pg_url = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")
    if not pg_url:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL is not set; PostgreSQL history tests skipped")
    import uuid

    import sqlalchemy as sa

    schema = f"privgate_test_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in pg_url else "?"
    yield f"{pg_url}{sep}options=-csearch_path%3D{schema}"
    with engine.begin() as conn:
        conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    engine.dispose()
