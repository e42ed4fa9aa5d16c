"""Shared fixtures of the GX expectation tests.

GX takes seconds to import and each context costs time, so the ephemeral context and the data
are session-scoped; file contexts (suite round trip, Data Docs) live in their own module.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")

import privgate  # noqa: E402

ADULT = Path(privgate.__file__).parent / "data" / "adult_sample.parquet"
ADULT_HOLDOUT = Path(privgate.__file__).parent / "data" / "adult_holdout.parquet"
N_ROWS = 600  # enough for every metric, small enough to keep the suite fast


@pytest.fixture(scope="session")
def gx_context():
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    try:
        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    return ctx


@pytest.fixture(scope="session")
def adult_small() -> pl.DataFrame:
    if not ADULT.exists():
        pytest.skip(f"bundled example data missing: {ADULT}")
    return pl.read_parquet(ADULT).head(N_ROWS)


@pytest.fixture(scope="session")
def adult_path(adult_small, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("real") / "adult_real.parquet"
    adult_small.write_parquet(path)
    return str(path)


@pytest.fixture(scope="session")
def adult_holdout_path(tmp_path_factory) -> str:
    if not ADULT_HOLDOUT.exists():
        pytest.skip(f"bundled example holdout missing: {ADULT_HOLDOUT}")
    path = tmp_path_factory.mktemp("holdout") / "adult_holdout.parquet"
    pl.read_parquet(ADULT_HOLDOUT).head(N_ROWS).write_parquet(path)
    return str(path)


@pytest.fixture(scope="session")
def adult_random(adult_small) -> pl.DataFrame:
    from privgate.baselines import uniform_random

    return uniform_random(adult_small, seed=7, n=adult_small.height)


@pytest.fixture(scope="session")
def tiny() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Hand-checkable pair: real has 4 records, the release copies exactly one of them.

    real      (1, x) (2, y) (3, x) (4, z)
    synthetic (1.0, x) (2, q) (9, x)
    common_rows: (1, x) has an identical synthetic record (1 == 1.0: numbers compare as numbers);
    (2, y), (3, x), (4, z) do not → 1/4 = 0.25.
    """
    real = pl.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "z"]})
    synth = pl.DataFrame({"a": [1.0, 2.0, 9.0], "b": ["x", "q", "x"]})
    return real, synth
