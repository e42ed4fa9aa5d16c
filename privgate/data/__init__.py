"""Bundled example data: samples of UCI Adult (CC BY 4.0, see ATTRIBUTION.md)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import polars as pl

EXAMPLE_KEYS = ["age", "sex", "race", "marital_status", "education"]
EXAMPLE_SENSITIVE = ["income"]


def example_path(name: str = "adult_sample") -> Path:
    """Path of a bundled example file: "adult_sample" (real) or "adult_holdout"."""
    p = resources.files(__name__) / f"{name}.parquet"
    path = Path(str(p))
    if not path.exists():
        raise FileNotFoundError(f"no bundled example named {name!r}")
    return path


def load_example(name: str = "adult_sample") -> pl.DataFrame:
    """The bundled example as a Polars DataFrame."""
    return pl.read_parquet(example_path(name))
