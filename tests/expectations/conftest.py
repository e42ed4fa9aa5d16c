"""Shared fixtures of the GX expectation tests.

GX takes seconds to import and each context costs time, so the ephemeral context and the data
are session-scoped; file contexts (suite round trip, Data Docs) live in their own module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")

import privgate  # noqa: E402

ADULT = Path(privgate.__file__).parent / "data" / "adult_sample.parquet"
ADULT_HOLDOUT = Path(privgate.__file__).parent / "data" / "adult_holdout.parquet"
N_ROWS = 600  # enough for every metric, small enough to keep the suite fast


def uniform_random(real: pl.DataFrame, n: int, seed: int) -> pl.DataFrame:
    """A release drawn uniformly within each real column's range / levels (METRICS.md §1's
    "scores about 0" reference), seeded: privgate.baselines.uniform_random, with a local
    equivalent only for trees where the baselines module is absent."""
    try:
        from privgate.baselines import uniform_random as pg_uniform  # type: ignore

        return pg_uniform(real, seed=seed, n=n)
    except ImportError:
        pass
    rng = np.random.default_rng(seed)
    cols = {}
    for name, dtype in real.schema.items():
        s = real[name].drop_nulls()
        if dtype.is_numeric():
            lo, hi = float(s.min()), float(s.max())
            x = rng.uniform(lo, hi, n)
            cols[name] = pl.Series(name, np.round(x) if dtype.is_integer() else x).cast(dtype)
        else:
            levels = s.unique().sort().to_list()
            cols[name] = pl.Series(name, [levels[i] for i in rng.integers(0, len(levels), n)])
    return pl.DataFrame(cols)


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
    return uniform_random(adult_small, adult_small.height, seed=7)


@pytest.fixture(scope="session")
def tiny() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Hand-checkable pair: real has 4 records, the release copies exactly one of them.

    real      (1, x) (2, y) (3, x) (4, z)
    synthetic (1.0, x) (2, q) (9, x)
    common_rows: (1, x) has an identical synthetic record (1 == 1.0, METRICS.md §3 rule 14);
    (2, y), (3, x), (4, z) do not → 1/4 = 0.25.
    """
    real = pl.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "z"]})
    synth = pl.DataFrame({"a": [1.0, 2.0, 9.0], "b": ["x", "q", "x"]})
    return real, synth


def has_metric(name: str) -> bool:
    from privgate.registry import metric_names

    return name in metric_names()
