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


def _typed_frame(seed: int, n: int = 200) -> pl.DataFrame:
    """One small table holding every column type Polars reads that privgate gates: Boolean, Date,
    Datetime (naive and UTC), Duration, Time, Decimal, Categorical, Enum, Int8, UInt16, a Float64
    and a String column with nulls; each column drawn on its own from ``seed`` (two seeds give
    two samples of one population, no shared record)."""
    import datetime as dt
    from decimal import Decimal

    import numpy as np

    rng = np.random.default_rng(seed)
    i = [int(v) for v in rng.integers(0, 40, n)]
    j = [int(v) for v in rng.integers(0, 40, n)]
    x = rng.normal(size=n)
    return pl.DataFrame(
        {
            "x": pl.Series([None if v < -1.5 else float(v) for v in x], dtype=pl.Float64),
            "flag": pl.Series([v % 2 == 0 for v in i], dtype=pl.Boolean),
            "born": [dt.date(1950, 1, 1) + dt.timedelta(days=v * 300) for v in j],
            "seen": [dt.datetime(2019, 1, 1) + dt.timedelta(hours=v * 37) for v in i],
            "seen_utc": pl.Series(
                [dt.datetime(2020, 1, 1) + dt.timedelta(hours=v * 11) for v in j]
            ).dt.replace_time_zone("UTC"),
            "stay": [dt.timedelta(minutes=v * 13) for v in rng.integers(0, 40, n).tolist()],
            "at": [dt.time(v % 24, v % 60) for v in rng.integers(0, 40, n).tolist()],
            "price": pl.Series([Decimal(f"{v}.25") for v in rng.integers(0, 40, n).tolist()], dtype=pl.Decimal(10, 2)),
            "kind": pl.Series([f"k{v % 7}" for v in i], dtype=pl.Categorical),
            "grade": pl.Series([f"g{v % 5}" for v in j], dtype=pl.Enum([f"g{g}" for g in range(5)])),
            "small": pl.Series(rng.integers(-50, 50, n), dtype=pl.Int8),
            "count": pl.Series(rng.integers(0, 60, n), dtype=pl.UInt16),
            "city": pl.Series(
                [None if v == 0 else f"c{v % 9}" for v in rng.integers(0, 20, n).tolist()], dtype=pl.String
            ),
        }
    )


@pytest.fixture(scope="session")
def typed_frames() -> dict[str, pl.DataFrame]:
    """``real``, ``holdout`` and an honest ``release`` of one population, each holding every
    column type privgate gates (:func:`_typed_frame`) — for the per-type tests of the adapters."""
    return {"real": _typed_frame(0), "holdout": _typed_frame(1), "release": _typed_frame(2)}
