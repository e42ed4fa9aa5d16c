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
