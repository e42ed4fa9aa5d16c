"""The cells of a generator that publishes its public domain, and cell canaries placed in them.

A generator that publishes counts over a PUBLIC domain (a histogram, the marginals of a graphical
model over binned columns) may say which domain by a method ``published_domain()`` returning
``{column: levels}`` for a categorical column and ``{column: bin edges}`` (sorted, at least two)
for an integer or float column — the reference mechanisms of :mod:`privgate.audit.mechanisms`
do. The domain is public by definition (the generator is DP only if it does not depend on the
data), so the audit may use it as any adversary would:

- its **cells become the audit's**: the feature space codes a numeric column by the generator's
  own bin edges instead of the population's quantile bins, so a target's cell count is the
  count of the generator's cell that holds it (a threshold on it is then the likelihood-ratio
  test for Laplace-noised counts; Neyman–Pearson);
- **cell canaries go in distinct cells of that domain** (:func:`domain_cell_canaries`), emptiest
  in the population first, each at a value well inside its bin, so each canary moves one count
  of the generator's by one and no other canary's.

Without the method (any generator of the user's own) the audit uses the population's quantile
bins and :func:`privgate.audit.targets.cell_canaries`. A published domain that does not fit the
population's columns is refused with a clear error (it names columns and counts, never values).

Orientation: nothing here changes what the bound means — the canaries and codes are fixed before
any run, so every guess stays a function of the release and the fit runs; it changes how tight
the bound can be on a generator that counts cells.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import polars as pl

from ..errors import ParameterError
from ..schema import NUMERIC, Schema
from .seeds import rng

#: cells of the published domain scored when looking for canaries (a random sample beyond)
DOMAIN_CANDIDATES = 65_536


def mode_row(pool: pl.DataFrame) -> pl.DataFrame:
    """One record holding every column's most frequent value (ties: the smallest)."""
    return pl.DataFrame(
        {
            c: pool[c].drop_nulls().mode().sort()[:1] if pool[c].null_count() < pool.height else pool[c][:1]
            for c in pool.columns
        }
    ).cast(dict(pool.schema))


def published_domain(generate: Any, pool: pl.DataFrame, schema: Schema) -> dict[str, Any] | None:
    """The domain ``generate.published_domain()`` states, checked against the population: a dict
    column → list of levels (text columns) or float edges array (integer and float columns);
    None when the generator states none. Columns of other kinds (dates) may be left out."""
    method = getattr(generate, "published_domain", None)
    if not callable(method):
        return None
    dom = method()
    if dom is None:
        return None
    if not isinstance(dom, Mapping):
        raise ParameterError(
            f"published_domain() must return a mapping column → levels or bin edges; got {type(dom).__name__}"
        )
    unknown = [c for c in dom if c not in pool.columns]
    if unknown:
        raise ParameterError(f"published_domain() names {len(unknown)} column(s) the population lacks")
    out: dict[str, Any] = {}
    for col in pool.columns:
        dtype = pool.schema[col]
        plain_number = schema.kind(col) == NUMERIC and (dtype.is_integer() or dtype.is_float())
        if col not in dom or dom[col] is None:
            if plain_number or schema.kind(col) != NUMERIC:
                raise ParameterError(f"published_domain() gives no cells for column {col!r}")
            continue
        spec = list(dom[col])
        if plain_number:
            edges = np.asarray(spec, dtype=np.float64)
            if edges.size < 2 or not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
                raise ParameterError(
                    f"published_domain(): column {col!r} needs at least 2 finite, strictly "
                    f"increasing bin edges; got {edges.size}"
                )
            out[col] = edges
        elif schema.kind(col) != NUMERIC:
            levels = [v for v in spec if v is not None]
            if not levels:
                raise ParameterError(f"published_domain(): column {col!r} has no level")
            out[col] = levels
    return out


def _values_in_bins(edges: np.ndarray, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """(value, bin) of each bin that can hold a canary: its midpoint (an integer column: the
    integer nearest the midpoint that lies in the bin; bins holding no integer are skipped)."""
    lo, hi = edges[:-1], edges[1:]
    mid = (lo + hi) / 2.0
    if not integer:
        return mid, np.arange(mid.size)
    v = np.floor(mid)
    last = np.arange(mid.size) == mid.size - 1
    inside = (v >= lo) & ((v < hi) | (last & (v <= hi)))
    return v[inside], np.flatnonzero(inside)


def domain_cell_canaries(
    pool: pl.DataFrame, schema: Schema, domain: Mapping[str, Any], n: int, *, seed: int = 0
) -> pl.DataFrame:
    """Up to ``n`` records in distinct cells of the published ``domain``, the cells with the
    fewest population records first (ties at random, seeded): every categorical value one of
    the domain's levels, every numeric value inside one of its bins (see
    :func:`_values_in_bins`), columns outside the domain at the population's most frequent
    value. A frame with no rows when ``n`` ≤ 0."""

    if n <= 0 or pool.height == 0:
        return pool.head(0)
    gen = rng(seed, "targets", 2)
    cols = [c for c in pool.columns if c in domain]
    options, pool_codes = [], []
    for col in cols:
        if isinstance(domain[col], np.ndarray):
            values, code = _numeric_domain_codes(pool[col], domain[col], pool.schema[col].is_integer())
            if values.size == 0:
                return pool.head(0)
            options.append(("numeric", values))
        else:
            levels = list(domain[col])
            code = _level_codes(pool[col], levels)
            options.append(("levels", levels))
        pool_codes.append(code)
    sizes = [len(o[1]) for o in options]
    total = float(np.prod(np.asarray(sizes, dtype=np.float64))) if sizes else 0.0
    if total == 0:
        return pool.head(0)
    digits = _emptiest_cells(pool_codes, sizes, total, n, gen)
    return _domain_canary_frame(pool, cols, options, digits)


def _numeric_domain_codes(values: pl.Series, edges: np.ndarray, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """(canary value per usable bin, each population value's usable-bin number or −1) of a
    numeric column under the published bin ``edges``."""
    inside, bins = _values_in_bins(edges, integer)
    if inside.size == 0:
        return inside, np.zeros(0, dtype=np.int64)
    x = values.cast(pl.Float64).to_numpy()
    code = np.searchsorted(edges[1:-1], x, side="right")  # the generator's bin (values outside: clipped)
    lookup = np.full(edges.size - 1, -1)
    lookup[bins] = np.arange(bins.size)
    c = lookup[code]
    c[np.isnan(x)] = -1
    return inside, c


def _level_codes(values: pl.Series, levels: list) -> np.ndarray:
    """Each population value's position among the published ``levels`` (−1: null or not a level)."""
    index = {v: i for i, v in enumerate(pl.Series(levels).cast(pl.String).to_list())}
    s = values.cast(pl.String).to_list()
    return np.array([index.get(v, -1) if v is not None else -1 for v in s], dtype=np.int64)


def _emptiest_cells(
    pool_codes: list[np.ndarray], sizes: list[int], total: float, n: int, gen: np.random.Generator
) -> np.ndarray:
    """The digits (one column per domain column) of up to ``n`` cells, fewest population records
    first (ties at random): every cell when there are at most ``DOMAIN_CANDIDATES``, else a sample."""
    # the population's count in every cell, by a mixed-radix cell index
    radix = np.cumprod([1] + sizes[:-1]).astype(np.int64)
    known = np.all(np.stack(pool_codes) >= 0, axis=0)
    pool_cell = (np.stack(pool_codes)[:, known] * radix[:, None]).sum(axis=0)
    if total <= DOMAIN_CANDIDATES:
        cand = np.arange(int(total), dtype=np.int64)
    else:
        cand = np.unique(sum(gen.integers(0, k, DOMAIN_CANDIDATES) * r for k, r in zip(sizes, radix)))
    counts = np.zeros(cand.size, dtype=np.int64)
    uniq, per = np.unique(pool_cell, return_counts=True)
    pos = np.searchsorted(uniq, cand)
    hit = (pos < uniq.size) & (uniq[np.minimum(pos, uniq.size - 1)] == cand)
    counts[hit] = per[pos[hit]]
    chosen = cand[np.lexsort((gen.random(cand.size), counts))][: int(n)]
    return (chosen[:, None] // radix[None, :]) % np.asarray(sizes)[None, :]


def _domain_canary_frame(
    pool: pl.DataFrame, cols: list[str], options: list[tuple[str, Any]], digits: np.ndarray
) -> pl.DataFrame:
    """The canaries of the chosen cells' ``digits``: each domain column's picked option, the other
    columns at the population's most frequent value."""
    mode = mode_row(pool)
    frame = {}
    for col in pool.columns:
        if col in cols:
            kind, opts = options[cols.index(col)]
            picked = digits[:, cols.index(col)]
            vals = [opts[i] for i in picked] if kind == "levels" else np.asarray(opts)[picked].tolist()
            frame[col] = pl.Series(col, vals).cast(pool.schema[col])
        else:
            frame[col] = pl.Series(col, [mode[col][0]] * digits.shape[0], dtype=pool.schema[col])
    return pl.DataFrame(frame)
