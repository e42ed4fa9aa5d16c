"""Calibration baselines: synthetic sets of known privacy, all seeded.

Read a metric's score against these four (docs/metrics.md has the table on the bundled Adult
sample): ``uniform_random`` ≲ ``independent_marginals`` ≲ ``noisy_copy`` ≲ ``copy`` in risk.
Each returns a Polars DataFrame with the real frame's columns and dtypes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from . import seeds
from .io import load_frame
from .schema import NUMERIC, check_not_empty, infer_schema


def copy(real: Any, seed: int = 0) -> pl.DataFrame:
    """An exact copy of the real data (row i ↔ row i): the worst possible release."""
    frame = load_frame(real, role="real")
    check_not_empty(frame, "real")
    return frame.clone()


def noisy_copy(real: Any, seed: int = 0, *, noise: float = 0.1, flip: float = 0.1) -> pl.DataFrame:
    """The real records, row for row, with Gaussian noise of ``noise`` × the column's standard
    deviation on numerics (integers rounded back) and each categorical value replaced, with
    probability ``flip``, by a draw from the column's real distribution. Nulls stay null."""
    frame = load_frame(real, role="real")
    check_not_empty(frame, "real")
    schema = infer_schema({"real": frame})
    rng = seeds.rng(seed, "baselines")
    n = frame.height
    cols = []
    for col in frame.columns:
        s = frame[col]
        if schema.kind(col) == NUMERIC and s.dtype.is_numeric():
            v = s.cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
            sd = np.nanstd(v)
            v = v + rng.normal(0.0, noise * sd if sd > 0 else 0.0, n)
            out = pl.Series(col, v)
            if s.dtype.is_integer():
                out = out.round(0)
            cols.append(out.cast(s.dtype, strict=False))
        else:
            replace = rng.random(n) < flip
            donors = rng.integers(0, n, n)
            vals = pl.Series(col, s.gather(np.where(replace, donors, np.arange(n))))
            # nulls stay null, values never become null through a donor
            vals = pl.select(pl.when(s.is_null()).then(None).when(vals.is_null()).then(s).otherwise(vals)).to_series().alias(col)
            cols.append(vals.cast(s.dtype))
    return pl.DataFrame(cols)


def independent_marginals(real: Any, seed: int = 0, *, n: int | None = None) -> pl.DataFrame:
    """Every column drawn independently, with replacement, from its real values (nulls
    included): right marginals, no joint structure."""
    frame = load_frame(real, role="real")
    check_not_empty(frame, "real")
    rng = seeds.rng(seed, "baselines")
    n = frame.height if n is None else int(n)
    return pl.DataFrame([frame[c].gather(rng.integers(0, frame.height, n)) for c in frame.columns])


def uniform_random(real: Any, seed: int = 0, *, n: int | None = None) -> pl.DataFrame:
    """Every numeric column uniform within its real [min, max] (integers rounded), every
    categorical column uniform over its real levels: the release that knows nothing."""
    frame = load_frame(real, role="real")
    check_not_empty(frame, "real")
    schema = infer_schema({"real": frame})
    rng = seeds.rng(seed, "baselines")
    n = frame.height if n is None else int(n)
    cols = []
    for col in frame.columns:
        s = frame[col]
        if schema.kind(col) == NUMERIC and s.dtype.is_numeric():
            v = s.cast(pl.Float64).drop_nulls().to_numpy()
            lo, hi = float(v.min()), float(v.max())
            x = rng.uniform(lo, hi, n) if hi > lo else np.full(n, lo)
            out = pl.Series(col, x)
            if s.dtype.is_integer():
                out = out.round(0)
            cols.append(out.cast(s.dtype, strict=False))
        elif schema.kind(col) == NUMERIC:  # dates and times: uniform over the real range
            phys = s.to_physical().cast(pl.Float64).drop_nulls().to_numpy()
            x = rng.uniform(phys.min(), phys.max(), n) if phys.max() > phys.min() else np.full(n, phys.min())
            cols.append(pl.Series(col, np.round(x)).cast(s.to_physical().dtype).cast(s.dtype))
        else:
            levels = s.unique(maintain_order=False).sort(nulls_last=True)
            cols.append(levels.gather(rng.integers(0, levels.len(), n)).alias(col))
    return pl.DataFrame(cols)


BASELINES = {"copy": copy, "noisy_copy": noisy_copy, "independent_marginals": independent_marginals,
             "uniform_random": uniform_random}
