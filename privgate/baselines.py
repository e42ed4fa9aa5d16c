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
            vals = (
                pl.select(pl.when(s.is_null()).then(None).when(vals.is_null()).then(s).otherwise(vals))
                .to_series()
                .alias(col)
            )
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


BASELINES = {
    "copy": copy,
    "noisy_copy": noisy_copy,
    "independent_marginals": independent_marginals,
    "uniform_random": uniform_random,
}


DISGUISES = ("permuted", "renamed", "split", "merged")


def disguised_copy(
    real: Any, kind: str = "permuted", seed: int = 0, *, every: int = 1, noise: float = 0.0, junk: int = 0
) -> pl.DataFrame:
    """A copy of the real data whose categorical labels were disguised — what a generator whose
    label encoder is out of step with its decoder releases, or an attacker who wants a copy to
    pass a label-comparing check. Every ``every``-th categorical column (by position) is:

    * ``permuted``: each level mapped to another existing level of the column (a random
      permutation of the levels; no unknown level appears);
    * ``renamed``: each level renamed one to one to a new label;
    * ``split``: each cell's level renamed at random to one of two new labels;
    * ``merged``: the levels paired at random and each pair given one new label.

    ``noise`` adds Gaussian noise of ``noise`` × the column's sd to numerics; ``junk`` sets that
    many cells of each disguised column (seeded positions) to a new label. Row i is real row i
    disguised. Seeded; the labels made are ``"d<column>_<number>"``."""
    if kind not in DISGUISES:
        raise ValueError(f"unknown disguise {kind!r}; expected one of {DISGUISES}")
    frame = load_frame(real, role="real")
    check_not_empty(frame, "real")
    schema = infer_schema({"real": frame})
    rng = seeds.rng(seed, "baselines")
    out = noisy_copy(frame, seed, noise=noise, flip=0.0) if noise > 0 else frame.clone()
    n = frame.height
    for j, col in enumerate(schema.categorical):
        if j % max(1, int(every)):
            continue
        s = out[col].cast(pl.String)
        levels = s.drop_nulls().unique().sort().to_list()
        if kind == "permuted":
            new = [levels[i] for i in rng.permutation(len(levels))]
            s = s.replace_strict(levels, new, default=None)
        elif kind == "renamed":
            s = s.replace_strict(levels, [f"d{j}_{i}" for i in rng.permutation(len(levels))], default=None)
        elif kind == "split":
            base = s.replace_strict(levels, [f"d{j}_{2 * i}" for i in range(len(levels))], default=None)
            second = pl.Series(rng.random(n) < 0.5)
            s = pl.select(
                pl.when(second & base.is_not_null()).then(base.str.replace(r"_(\d+)$", "_x$1")).otherwise(base)
            ).to_series()
        else:  # merged
            pairs = rng.permutation(len(levels)) // 2
            s = s.replace_strict(levels, [f"d{j}_{p}" for p in pairs], default=None)
        if junk:
            at = rng.choice(n, min(int(junk), n), replace=False)
            s = s.scatter(at, [f"d{j}_junk{i}" for i in range(at.size)])
        out = out.with_columns(s.alias(col).cast(frame.schema[col]) if frame.schema[col] == pl.String else s.alias(col))
    return out


#: what :func:`transformed_copy` may do to numeric columns: each an invertible, monotone map
NUMERIC_DISGUISES = ("scaled", "shifted", "standardised", "negated", "log", "power", "affine")


def _transformed(v: np.ndarray, how: str, rng: np.random.Generator) -> np.ndarray:
    """``v`` (float64, NaN for null) under the numeric disguise ``how``."""
    mean, sd = np.nanmean(v), np.nanstd(v)
    lo = np.nanmin(v) if np.isfinite(v).any() else 0.0
    if how == "scaled":
        return v * 1000.0
    if how == "shifted":
        return v + 7.0
    if how == "standardised":
        return (v - mean) / (sd if sd > 0 else 1.0)
    if how == "negated":
        return -v
    if how == "log":
        return np.log1p(v - lo)
    if how == "power":
        return np.power(v - lo, 1.5)
    # affine: a seeded scale (either sign) and shift
    return v * float(rng.choice([-1.0, 1.0]) * rng.uniform(0.01, 100.0)) + float(rng.normal(0.0, 1000.0))


def transformed_copy(
    real: Any,
    numeric: str | None = "scaled",
    *,
    labels: str | None = None,
    columns: list[str] | None = None,
    seed: int = 0,
) -> pl.DataFrame:
    """A copy of the real data (row i ↔ row i) in disguise: every numeric column of ``columns``
    (default: every numeric column) under the invertible map ``numeric`` (one of
    ``NUMERIC_DISGUISES``: ×1000, +7, standardised on its own mean and sd, negated, log(1 + x − min),
    (x − min)^1.5, a seeded affine map; None leaves numerics as they are) and, when ``labels`` is one
    of ``DISGUISES``, every categorical column's levels disguised as :func:`disguised_copy` does —
    what a generator that forgot its inverse transform releases, or a copy made to pass a
    value-comparing check. Numeric columns come back as Float64; nulls stay null."""
    if numeric is not None and numeric not in NUMERIC_DISGUISES:
        raise ValueError(f"unknown numeric disguise {numeric!r}; expected one of {NUMERIC_DISGUISES}")
    frame = load_frame(real, role="real")
    check_not_empty(frame, "real")
    out = disguised_copy(frame, labels, seed) if labels is not None else frame.clone()
    if numeric is None:
        return out
    schema = infer_schema({"real": frame})
    chosen = list(schema.numeric) if columns is None else list(columns)
    rng = seeds.rng(seed, "baselines")
    for col in chosen:
        if schema.kind(col) != NUMERIC or not frame[col].dtype.is_numeric():
            raise ValueError(f"column {col!r} is not a numeric column of the real data")
        v = frame[col].cast(pl.Float64).to_numpy().astype(np.float64, copy=True)
        out = out.with_columns(pl.Series(col, _transformed(v, numeric, rng)).fill_nan(None))
    return out


def with_copies(honest: Any, copies: Any, share: float, seed: int = 0) -> pl.DataFrame:
    """``honest`` with a seeded ``share`` of its rows (seeded) replaced by as many seeded,
    distinct rows of ``copies``, which come last (numerics of both cast to their common type): a release in
    which a minority of the records are (disguised) copies."""
    base = load_frame(honest, role="synthetic")
    extra = load_frame(copies, role="synthetic")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    rng = seeds.rng(seed, "baselines")
    k = min(int(round(share * base.height)), extra.height)
    at = np.sort(rng.choice(base.height, k, replace=False))
    taken = extra[np.sort(rng.choice(extra.height, k, replace=False))]
    keep = np.ones(base.height, dtype=bool)
    keep[at] = False
    # a disguised copy's numerics may be floats where the honest release has integers: both to
    # the common supertype, never truncated
    return pl.concat([base.filter(pl.Series(keep)), taken.select(base.columns)], how="vertical_relaxed")
