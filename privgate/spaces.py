"""Encodings of records as points: the mixed space and the FAMD projected space.

* **Mixed space**: numeric columns standardised with the real column's mean and population
  standard deviation (a constant column contributes nothing; nulls imputed with the real mean,
  i.e. 0 after standardising); categorical columns one-hot over the union of all frames' levels
  (null is a level), each indicator multiplied by 1/√2 so that a category mismatch adds exactly 1
  to the squared Euclidean distance. Optional per-column weights multiply a column's features
  (identifiability uses 1/H). A column of more than ``coded_above`` levels (the evaluation
  context's ``HIGH_CARDINALITY_LEVELS``: a postcode, a diagnosis code) is held instead as ONE
  coordinate carrying its integer level code, after every other feature
  (:attr:`EncodedSpace.coded_columns`); the neighbour engine adds its mismatch cost (w², what its
  one-hot block would add) to d² exactly (:mod:`privgate.neighbours.coded`), so distances are the
  one-hot ones without a matrix of levels × records.
* **FAMD projection** (as the paper's Φ^k): PCA, by exact LAPACK SVD, of the standardised
  numerics and the real-level indicators (1{level} − p)/√p; synthetic records are projected with
  the real fit; a level unseen in the real data gives an all-zero indicator row. Component signs
  are fixed (largest absolute loading positive) so the projection is deterministic. The
  indicator block of a column of more than ``coded_above`` levels is never written: the
  leading singular vectors come from a Lanczos solver (ARPACK) applied to the input matrix as an
  operator (its products with a vector cost a pass over the level codes), and the projection of
  a record adds its level's loading — the same projection to the solver's precision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import polars as pl

from .schema import NUMERIC, Schema

NULL_LEVEL = "\x00<null>"
#: a categorical column of more levels than this (over all frames) is coded, not one-hot, in the
#: spaces of an evaluation (mixed, identifiability, FAMD): the same distances without a matrix of
#: levels × records
HIGH_CARDINALITY_LEVELS = 1000
#: the most levels a column may have when a caller asks for one-hot encoding only
#: (``coded_above=None``: the generator audit's feature spaces)
MAX_LEVELS = 2000
INV_SQRT2 = 1.0 / np.sqrt(2.0)
# the kinds of encoded space an evaluation builds (EvaluationContext.space keys, MetricSpec.spaces)
SPACE_KINDS = ("mixed", "identifiability", "famd")


@dataclass
class EncodedSpace:
    """One encoding of every input frame: role ("real", "synthetic", "holdout") → float64 matrix."""

    name: str
    matrices: dict[str, np.ndarray]
    details: dict = field(default_factory=dict)
    #: feature positions of each one-hot categorical column, as (start, stop) slices — mixed
    #: spaces only; the neighbour engine uses them to search within groups of equal categories
    categorical_slices: list[tuple[int, int]] | None = None
    #: (position, mismatch cost added to d²) of each coordinate holding a categorical column's
    #: integer level code — the last coordinates of a mixed space; searches must hand them to
    #: the neighbour engine (``knn(coded_columns=...)``), which compares them as equal or not
    coded_columns: list[tuple[int, float]] = field(default_factory=list)
    #: a FAMD space fitted on the input as an operator (coded columns): the leading right
    #: singular vectors found by the fit, (width, n_components + 1) as found (signs not fixed) —
    #: where a jackknife's refits start their iteration; None otherwise
    axes: np.ndarray | None = None

    def __getitem__(self, role: str) -> np.ndarray:
        return self.matrices[role]

    @property
    def real(self) -> np.ndarray:
        return self.matrices["real"]

    @property
    def synthetic(self) -> np.ndarray:
        return self.matrices["synthetic"]

    @property
    def holdout(self) -> np.ndarray | None:
        return self.matrices.get("holdout")

    @property
    def dim(self) -> int:
        return int(self.real.shape[1])


def numeric_block(
    frames: Mapping[str, pl.DataFrame],
    column: str,
    reference: pl.DataFrame | None = None,
    stats: tuple[float, float] | None = None,
) -> tuple[dict[str, np.ndarray], dict]:
    """Standardised values of a numeric column in every frame (real mean, population std; nulls
    → the real mean; a constant real column → all zeros). ``reference``: the whole real frame the
    mean and std come from, when ``frames`` hold only some of its rows (default: frames["real"]);
    ``stats``: that (mean, std) given instead (a sharded evaluation merges it from its partitions)."""
    mean, std = stats if stats is not None else _real_stats(frames["real"] if reference is None else reference, column)
    out = {}
    nulls = {}
    for role, frame in frames.items():
        v = frame[column].to_numpy().astype(np.float64, copy=True)
        miss = np.isnan(v)
        nulls[role] = int(miss.sum())
        v[miss] = mean
        out[role] = (v - mean) / std if std > 0 else np.zeros_like(v)
    info = {"mean_imputed": {r: c for r, c in nulls.items() if c}, "constant": std == 0}
    return out, info


def category_levels(frames: Mapping[str, pl.DataFrame], column: str) -> list[str]:
    """The sorted union of a categorical column's levels over all frames, null its own level."""
    return sorted(set().union(*(f[column].fill_null(NULL_LEVEL).unique().to_list() for f in frames.values())))


def category_codes(
    frames: Mapping[str, pl.DataFrame], column: str, levels: list[str] | None = None
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Integer codes of a categorical column over ``levels`` (default: sorted union of all frames'
    levels with null as its own level). Values outside ``levels`` get code -1."""
    series = {r: f[column].fill_null(NULL_LEVEL) for r, f in frames.items()}
    if levels is None:
        levels = category_levels(frames, column)
    lookup = pl.DataFrame({"__v": levels, "__code": np.arange(len(levels), dtype=np.int64)})
    codes = {}
    for role, s in series.items():
        joined = s.to_frame("__v").join(lookup, on="__v", how="left", maintain_order="left")
        codes[role] = joined["__code"].fill_null(-1).to_numpy()
    return codes, levels


def mixed_space(
    frames: Mapping[str, pl.DataFrame],
    schema: Schema,
    columns: list[str] | None = None,
    weights: Mapping[str, float] | None = None,
    name: str = "mixed",
    rows: Mapping[str, np.ndarray] | None = None,
    dtype: type = np.float64,
    coded_above: int | None = None,
    fit: "SpaceFit | None" = None,
) -> EncodedSpace:
    """Encode ``columns`` (default: all) of every frame in the mixed space.

    ``dtype``: the matrices' element type — float64, or float32 for inputs too large to hold
    twice (the evaluation context's ``COMPACT_SPACES_ABOVE`` rule): each coordinate is then the
    float32 nearest the float64 one, and the searches compute their float64 distances from those
    coordinates.

    ``rows`` (role → row positions): encode only these rows of those frames (the others whole),
    e.g. the few hundred records an attack samples. The standardisation and the levels still come
    from the whole frames, so each encoded row equals that row of the whole encoding, bit for bit;
    the null counts in ``details["mean_imputed"]`` are those of the encoded rows.

    ``coded_above``: a categorical column of more levels is one coordinate holding its level
    code (module docstring; None: every categorical column one-hot).

    ``fit``: the real columns' (mean, std) and every categorical column's levels, given instead
    of computed from ``frames`` (:class:`SpaceFit`): a sharded evaluation encodes each partition
    alone with the statistics merged over all of them, so every partition is encoded as it would
    be in the whole encoding; ``frames`` then need not hold the real frame."""
    columns = list(columns) if columns is not None else schema.columns
    weights = dict(weights or {})
    whole = frames
    if rows:
        frames = {r: (f[np.asarray(rows[r], dtype=np.int64)] if r in rows else f) for r, f in frames.items()}
    cat = [c for c in columns if schema.kind(c) != NUMERIC and float(weights.get(c, 1.0)) != 0.0]
    levels = {c: fit.levels[c] for c in cat} if fit is not None else _levels(whole, cat)
    stats = (lambda col: fit.stats[col]) if fit is not None else (lambda col: _real_stats(whole["real"], col))
    if coded_above is None:
        for c in cat:
            _check_levels(c, len(levels[c]))
    # the layout: per numeric feature (first feature, column, weight), per categorical column
    # (first feature, column, scale); a constant or zero-weight numeric column has no feature
    numeric_at: list[tuple[int, str, float]] = []
    codes_at: list[tuple[int, str, float]] = []
    coded = [c for c in cat if coded_above is not None and len(levels[c]) > coded_above]
    constant: list[str] = []
    n_features = 0
    slices: list[tuple[int, int]] = []
    for col in columns:
        w = float(weights.get(col, 1.0))
        if schema.kind(col) == NUMERIC:
            if stats(col)[1] == 0:
                constant.append(col)
            elif w != 0.0:
                numeric_at.append((n_features, col, w))
                n_features += 1
        elif w != 0.0 and col not in coded:
            codes_at.append((n_features, col, INV_SQRT2 * w))
            slices.append((n_features, n_features + len(levels[col])))
            n_features += len(levels[col])
    coded_at = [(n_features + j, col, float(weights.get(col, 1.0)) ** 2) for j, col in enumerate(coded)]
    n_features += len(coded)
    mats = {
        r: _mixed_matrix(r, frame, n_features, dtype, numeric_at, codes_at, coded_at, levels, stats)
        for r, frame in frames.items()
    }
    details = {
        "columns": columns,
        "n_features": n_features,
        "mean_imputed": _nulls(frames, columns, schema),
        "constant_columns": constant,
    }
    if np.dtype(dtype) != np.float64:
        details["dtype"] = np.dtype(dtype).name
    if weights:
        details["weights"] = {c: float(weights.get(c, 1.0)) for c in columns}
    if coded:
        details["coded_columns"] = {col: len(levels[col]) for col in coded}
    return EncodedSpace(
        name, mats, details, categorical_slices=slices, coded_columns=[(j, cost) for j, _, cost in coded_at]
    )


def _mixed_matrix(
    role: str,
    frame: pl.DataFrame,
    n_features: int,
    dtype: type,
    numeric_at: list[tuple[int, str, float]],
    codes_at: list[tuple[int, str, float]],
    coded_at: list[tuple[int, str, float]],
    levels: Mapping[str, list],
    stats: Any,
) -> np.ndarray:
    """One frame's matrix of the mixed space, written feature block by feature block (no
    per-column one-hot blocks stacked afterwards): only this frame's columns are held beside it."""
    mat = np.zeros((frame.height, n_features), dtype=dtype)
    for j, col, w in numeric_at:
        mat[:, j] = numeric_block({role: frame}, col, stats=stats(col))[0][role] * w
    codes = _codes(frame, [col for _, col, _ in codes_at] + [col for _, col, _ in coded_at], levels)
    for start, col, scale in codes_at:
        mat[np.arange(mat.shape[0]), start + codes[col]] = scale
    for j, col, _ in coded_at:
        mat[:, j] = codes[col]
    return mat


def _real_stats(real: pl.DataFrame, column: str) -> tuple[float, float]:
    """A numeric column's real mean and population standard deviation over its non-null values
    (0, 0 when it has none): what :func:`numeric_block` standardises with. A column whose values
    are all equal has std exactly 0 (:func:`fitted_std`)."""
    v = real[column].to_numpy().astype(np.float64, copy=False)
    v = v[~np.isnan(v)]
    if not v.size:
        return 0.0, 0.0
    return float(v.mean()), fitted_std(float(v.std()), float(v.min()), float(v.max()))


def fitted_std(std: float, low: float, high: float) -> float:
    """The standard deviation a column is standardised with: 0 when its smallest and largest
    values are equal — a constant column, whose float std can come out a few ulps above 0 (the
    rounded mean differs from the value) and would otherwise scale rounding noise into a
    coordinate — else ``std``. The whole-frame and the sharded fits both go through here."""
    return 0.0 if low == high else std


@dataclass(frozen=True)
class SpaceFit:
    """What :func:`mixed_space` fits on the whole data, given from outside: per numeric column the
    real (mean, std), per categorical column the sorted levels over all frames (null a level)."""

    stats: Mapping[str, tuple[float, float]]
    levels: Mapping[str, list[str]]


def _nulls(frames: Mapping[str, pl.DataFrame], columns: list[str], schema: Schema) -> dict[str, dict[str, int]]:
    """Per numeric column with nulls, the null count of each frame that has some (the values
    :func:`numeric_block` imputes with the real mean)."""
    out = {}
    for col in columns:
        if schema.kind(col) != NUMERIC:
            continue
        counts = {r: int(np.isnan(f[col].to_numpy().astype(np.float64, copy=False)).sum()) for r, f in frames.items()}
        if any(counts.values()):
            out[col] = {r: c for r, c in counts.items() if c}
    return out


def _levels(whole: Mapping[str, pl.DataFrame], columns: list[str]) -> dict[str, list[str]]:
    """What :func:`category_levels` gives for each of ``columns`` (the sorted union over the
    ``whole`` frames, null a level), with one Polars query per frame for all columns."""
    if not columns:
        return {}
    found = [
        f.select([pl.col(c).fill_null(NULL_LEVEL).unique().implode() for c in columns]).row(0) for f in whole.values()
    ]
    levels = {}
    for j, col in enumerate(columns):
        levels[col] = sorted(set().union(*(u[j] for u in found)))
    return levels


def _codes(frame: pl.DataFrame, columns: list[str], levels: Mapping[str, list[str]]) -> dict[str, np.ndarray]:
    """What :func:`category_codes` gives for ``frame``'s ``columns`` over ``levels``, with one
    Polars query: an Enum's physical value is the position of the value in its categories."""
    if not columns:
        return {}
    codes = frame.select([pl.col(c).fill_null(NULL_LEVEL).cast(pl.Enum(levels[c])).to_physical() for c in columns])
    return {c: codes[c].to_numpy().astype(np.int64) for c in columns}


def _check_levels(column: str, n_levels: int) -> None:
    """Refuse a one-hot block of more than :data:`MAX_LEVELS` levels (asked for with
    ``coded_above=None``; an evaluation codes such a column instead)."""
    if n_levels > MAX_LEVELS:
        from .errors import HighCardinalityError

        raise HighCardinalityError(
            f"categorical column {column!r} has {n_levels} levels (more than {MAX_LEVELS}) and this encoding "
            "is one-hot only; an evaluation compares such a column as equal or not (coded_above)"
        )


def famd_space(
    frames: Mapping[str, pl.DataFrame],
    schema: Schema,
    n_components: int = 2,
    name: str = "famd",
    block_rows: int | None = None,
    coded_above: int | None = None,
) -> EncodedSpace:
    """FAMD fitted on the real frame, every frame projected with that fit. One frame's input
    matrix exists at a time (the real one while the SVD runs), not every frame's at once.

    ``block_rows``: encode and project the frames in blocks of this many rows instead, and
    take the singular values and right singular vectors from the R factor of a blocked QR
    (TSQR: the R of the stacked blocks' R factors; Z = QR gives Z's singular values and right
    vectors as R's) — no input matrix of a whole frame, nor the SVD's n × p left factor, is held.
    The projection then agrees with the unblocked one to rounding (the evaluation context's
    ``COMPACT_SPACES_ABOVE`` rule uses it for large inputs only).

    ``coded_above``: the indicator blocks of categorical columns of more real levels are never
    written (:class:`FamdInputs`; module docstring)."""
    encoder = famd_encoder(frames["real"], schema, coded_above)
    if encoder.coded:
        return _famd_space_coded(frames, encoder, n_components, name, coded_above)
    if block_rows is None:
        zr = encoder.encode(frames["real"])
        s, vt = _svd_right(zr)
    else:
        zr = None
        parts = [np.linalg.qr(z, mode="r") for z in _famd_blocks(encoder, frames["real"], block_rows)]
        _, s, vt = np.linalg.svd(np.linalg.qr(np.vstack(parts), mode="r"), full_matrices=False)
    v, details = famd_axes(s, vt, n_components, frames["real"].height, encoder.width)
    nc = v.shape[1]
    if zr is not None:
        real_projected = zr @ v
        del zr  # before the other frames are encoded
        mats = {r: real_projected if r == "real" else encoder.encode(f) @ v for r, f in frames.items()}
    else:
        mats = {
            r: np.vstack([z @ v for z in _famd_blocks(encoder, f, block_rows)]) if f.height else np.empty((0, nc))
            for r, f in frames.items()
        }
    if block_rows is not None:
        details["fit"] = f"blocked QR (TSQR) of {block_rows:,}-row blocks, then the SVD of R"
    return EncodedSpace(name, mats, details)


def famd_axes(s: np.ndarray, vt: np.ndarray, n_components: int, height: int, width: int) -> tuple[np.ndarray, dict]:
    """(the FAMD axes, (width, nc) with fixed signs; the fit's details) from the real input's
    singular values ``s`` and right singular vectors ``vt`` (as rows), ``height`` real records and
    ``width`` input features — whichever factorisation of the input gave them."""
    nc = int(min(n_components, vt.shape[1], height))
    v = _fixed_signs(vt[:nc].T)
    total = float((s**2).sum())
    explained = [float(x) for x in (s[:nc] ** 2 / total)] if total > 0 else [0.0] * nc
    # A tie between the last kept and the first dropped singular value leaves the projection
    # undefined (any rotation within the tied subspace is an equally valid PCA): reported, since
    # metrics in this space then depend on LAPACK's arbitrary choice (row/column order).
    degenerate = bool(nc < s.size and s[nc - 1] > 0 and abs(s[nc - 1] - s[nc]) <= 1e-9 * s[0])
    details = {
        "n_components": nc,
        "explained_variance_ratio": explained,
        "n_input_features": width,
        "degenerate_projection": degenerate,
    }
    return v, details


def famd_encoder(real: pl.DataFrame, schema: Schema, coded_above: int | None) -> "FamdEncoder":
    """The FAMD encoder of ``real``: when some categorical column has more than ``coded_above``
    levels, EVERY categorical column is held as codes (the operator's products then cost a pass
    over the numerics and one gather per categorical column, not a pass over every one-hot
    column); else the written encoding."""
    encoder = FamdEncoder(real, schema, coded_above=coded_above)
    if encoder.coded and encoder.width > len(schema.numeric):
        encoder = FamdEncoder(real, schema, coded_above=0)
    return encoder


def _famd_space_coded(
    frames: Mapping[str, pl.DataFrame], encoder: "FamdEncoder", n_components: int, name: str, coded_above: int
) -> EncodedSpace:
    """:func:`famd_space` when some categorical columns are coded: the leading right singular
    vectors of the real FAMD input as an operator (:meth:`FamdInputs.leading_axes`), every frame
    projected through it."""
    real = encoder.inputs(frames["real"])
    nc, k = famd_coded_sizes(n_components, encoder.full_width, frames["real"].height)
    s, found = real.leading_axes(k)
    v, details = famd_coded_axes(s, found, nc, real.squared_norm(), encoder, coded_above)
    mats = {r: real.project(v) if r == "real" else encoder.inputs(f).project(v) for r, f in frames.items()}
    return EncodedSpace(name, mats, details, axes=found)


def famd_coded_sizes(n_components: int, width: int, height: int) -> tuple[int, int]:
    """(components kept, singular vectors found) of a FAMD fit with coded columns: one more than
    kept, to tell a tie of the last kept value (``degenerate_projection``), where the input allows."""
    nc = int(min(n_components, width, height))
    return nc, nc + 1 if nc + 1 < min(height, width) else nc


def famd_coded_axes(
    s: np.ndarray, found: np.ndarray, nc: int, total: float, encoder: "FamdEncoder", coded_above: int
) -> tuple[np.ndarray, dict]:
    """(the FAMD axes with fixed signs, the fit's details) of a fit with coded columns from the
    singular values ``s`` and right vectors ``found`` (columns) its Lanczos iteration found and
    the input's squared norm ``total`` — whichever machine ran it."""
    v = _fixed_signs(found[:, :nc])
    explained = [float(x) for x in (s[:nc] ** 2 / total)] if total > 0 else [0.0] * nc
    degenerate = bool(nc < s.size and s[nc - 1] > 0 and abs(s[nc - 1] - s[nc]) <= 1e-9 * s[0])
    details = {
        "n_components": nc,
        "explained_variance_ratio": explained,
        "n_input_features": encoder.full_width,
        "degenerate_projection": degenerate,
        "coded_columns": {c: len(levels) for c, levels, _ in encoder.coded if len(levels) > coded_above},
        "fit": "Lanczos (ARPACK) singular vectors of the input as an operator: the coded columns' "
        "indicator blocks are never written",
    }
    return v, details


def _svd_right(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(singular values, right singular vectors as rows) of ``z``. For a matrix of at least twice
    as many rows as columns, those of its QR factor R: LAPACK's SVD (gesdd) of such a tall matrix
    itself starts from that QR, so the values are the same, without the n × p left factor (a
    100,000 × 95 FAMD input: 0.95 → 0.55 CPU-s, and bit for bit the same values with NumPy's
    OpenBLAS LAPACK)."""
    if z.shape[0] >= 2 * z.shape[1]:
        z = np.linalg.qr(z, mode="r")
    _, s, vt = np.linalg.svd(z, full_matrices=False)
    return s, vt


def _fixed_signs(v: np.ndarray) -> np.ndarray:
    """Deterministic signs: the largest absolute loading of each component is positive."""
    nc = v.shape[1]
    pivot = np.abs(v).argmax(axis=0)
    signs = np.sign(v[pivot, np.arange(nc)])
    signs[signs == 0] = 1.0
    return v * signs


def _famd_blocks(encoder: "FamdEncoder", frame: pl.DataFrame, block_rows: int):
    """The FAMD input matrix of ``frame`` block by block of ``block_rows`` rows."""
    for start in range(0, frame.height, block_rows):
        yield encoder.encode(frame.slice(start, block_rows))


def famd_inputs(frames: Mapping[str, pl.DataFrame], schema: Schema) -> dict[str, np.ndarray]:
    """The FAMD input matrix of every frame (:func:`famd_matrix`): the projection is its leading
    right singular vectors on the real rows (:func:`famd_space`; a jackknife refits them without
    a group of real rows)."""
    encoder = FamdEncoder(frames["real"], schema)
    return {r: encoder.encode(f) for r, f in frames.items()}


def famd_matrix(frame: pl.DataFrame, real: pl.DataFrame, schema: Schema) -> np.ndarray:
    """The FAMD input matrix of one frame: numerics standardised, categoricals as centred
    indicators scaled by 1/√p (p the real level shares; a level the real data lacks gives an
    all-zero indicator row), both with the ``real`` frame's statistics — written block by block
    into one preallocated matrix."""
    return FamdEncoder(real, schema).encode(frame)


class FamdEncoder:
    """The real frame's statistics FAMD encodes with (per numeric column its mean and population
    standard deviation, per categorical column its levels and their shares p), computed once,
    and :meth:`encode`, which writes any frame's (or block's) FAMD input matrix with them.

    ``coded_above``: a categorical column of more real levels is not part of :meth:`encode`'s
    matrix but in :attr:`coded` (column, levels, shares); :meth:`inputs` gives a frame's whole
    input as a :class:`FamdInputs` operator."""

    def __init__(self, real: pl.DataFrame, schema: Schema, coded_above: int | None = None) -> None:
        self.blocks: list[tuple[str, object]] = []
        self.coded: list[tuple[str, list[str], np.ndarray]] = []
        width = 0
        for col in schema.columns:
            if schema.kind(col) == NUMERIC:
                # as numeric_block: real mean, population std (0 for a constant column,
                # fitted_std), nulls → the mean
                mean, std = _real_stats(real, col)
                self.blocks.append((col, (mean, std)))
                width += 1
            else:
                real_codes, levels = category_codes({"real": real}, col)
                p = np.bincount(real_codes["real"], minlength=len(levels)) / real.height
                if coded_above is not None and len(levels) > coded_above:
                    self.coded.append((col, levels, p))
                    continue
                if coded_above is None:
                    _check_levels(col, len(levels))
                self.blocks.append((col, (levels, p)))
                width += len(levels)
        self.width = width
        #: the width of the whole FAMD input, coded columns' indicator blocks included
        self.full_width = width + sum(len(levels) for _, levels, _ in self.coded)

    @classmethod
    def from_blocks(
        cls, blocks: list[tuple[str, object]], coded: list[tuple[str, list[str], np.ndarray]] | None = None
    ) -> "FamdEncoder":
        """An encoder of these statistics (:attr:`blocks`: per numeric column (mean, std), per
        written categorical column (levels, shares); :attr:`coded`: (column, levels, shares) of
        the coded ones) fitted elsewhere — a sharded evaluation merges them from the real
        partitions."""
        encoder = cls.__new__(cls)
        encoder.blocks, encoder.coded = list(blocks), list(coded or [])
        encoder.width = sum(1 if isinstance(stats[0], float) else len(stats[0]) for _, stats in blocks)
        encoder.full_width = encoder.width + sum(len(levels) for _, levels, _ in encoder.coded)
        return encoder

    def inputs(self, frame: pl.DataFrame) -> "FamdInputs":
        """``frame``'s whole FAMD input as an operator: the written part and the coded columns'
        level codes (-1: a level the real data lacks, an all-zero indicator row)."""
        codes = [category_codes({"f": frame}, col, levels)[0]["f"] for col, levels, _ in self.coded]
        return FamdInputs(self.encode(frame), codes, [p for _, _, p in self.coded])

    def encode(self, frame: pl.DataFrame) -> np.ndarray:
        """The FAMD input matrix of ``frame``, block by block into one preallocated matrix."""
        out = np.empty((frame.height, self.width))
        start = 0
        for col, stats in self.blocks:
            if isinstance(stats[0], float):
                mean, std = stats
                v = frame[col].to_numpy().astype(np.float64, copy=True)
                v[np.isnan(v)] = mean
                out[:, start] = (v - mean) / std if std > 0 else 0.0
                start += 1
                continue
            levels, p = stats
            c = category_codes({"frame": frame}, col, levels)[0]["frame"]
            sq = np.sqrt(p)
            mat = out[:, start : start + len(levels)]
            mat[:] = -p / sq
            seen = c >= 0
            mat[np.flatnonzero(seen), c[seen]] += 1.0 / sq[c[seen]]
            mat[~seen] = 0.0  # unseen level: all-zero indicator row
            start += len(levels)
        return out


#: whether a jackknife refit's axes (every row but a minority) are found from the whole input's
#: cross-products less the minority's (:meth:`FamdInputs._leading_axes_without`) — off only to
#: compare with the Lanczos iteration on the rows kept
GRAM_REFITS = True


@dataclass
class FamdInputs:
    """One frame's FAMD input Z = [dense | one indicator block per coded column] without the
    indicator blocks written: block c of row i is (1{level} − p)/√p at the row's level code, all
    zero for a code of -1 (a level the real data lacks). Products with vectors, the leading right
    singular vectors and the projection cost passes over the codes, never levels × records."""

    dense: np.ndarray
    codes: list[np.ndarray]
    shares: list[np.ndarray]

    @property
    def shape(self) -> tuple[int, int]:
        return self.dense.shape[0], self.dense.shape[1] + sum(p.size for p in self.shares)

    def _parts(self, x: np.ndarray) -> list[np.ndarray]:
        cuts = np.cumsum([self.dense.shape[1]] + [p.size for p in self.shares])[:-1]
        return np.split(x, cuts, axis=0)

    def _global(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(every coded column's codes offset into one level axis, (n, h); √p of every level), when
        every row's levels are seen — the real records — so that a product is one gather or one
        bincount for all columns; None otherwise."""
        if not hasattr(self, "_global_codes"):
            seen = all(c.size == 0 or c.min() >= 0 for c in self.codes)
            if not self.codes or not seen:
                self._global_codes = None
            else:
                offsets = np.cumsum([0] + [p.size for p in self.shares])[:-1]
                codes = np.column_stack([c + o for c, o in zip(self.codes, offsets)])
                self._global_codes = (codes, np.sqrt(np.concatenate(self.shares)))
        return self._global_codes

    def matvec(self, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Z x (x: a vector or a matrix of columns), over ``rows`` only when given."""
        if rows is not None:
            return self.rows(rows).matvec(x)
        wd = self.dense.shape[1]
        out = self.dense @ x[:wd]
        fast = self._global()
        if fast is not None:
            codes, sq = fast
            xc = x[wd:]
            if xc.ndim == 1:
                out += (xc / sq)[codes].sum(axis=1)
            else:  # one column's gather at a time: the same sums in the same order, no (n, h, j) copy
                scaled = xc / sq[:, None]
                total = np.take(scaled, codes[:, 0], axis=0)  # (np.take: a row gather ~7× faster)
                for j in range(1, codes.shape[1]):
                    total += np.take(scaled, codes[:, j], axis=0)
                out += total
            out -= sq @ xc
            return out
        for code, p, xc in zip(self.codes, self.shares, self._parts(x)[1:]):
            sq = np.sqrt(p)
            scaled = xc / (sq if xc.ndim == 1 else sq[:, None])
            # every row gathered (an unseen level at code -1 reads the last level, then zeroed):
            # the sums of the seen rows' own gather, without gathering the rows twice by a mask
            block = np.take(scaled, code, axis=0)
            block -= sq @ xc
            block[code < 0] = 0.0
            out += block
        return out

    def rmatvec(self, y: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Zᵀ y (y: a vector over the rows, or over ``rows`` only when given)."""
        if rows is not None:
            return self.rows(rows).rmatvec(y)
        out = [self.dense.T @ y]
        fast = self._global()
        if fast is not None:
            codes, sq = fast
            sums = np.bincount(codes.ravel(), weights=np.repeat(y, codes.shape[1]), minlength=sq.size)
            out.append(sums / sq - sq * y.sum())
            return np.concatenate(out)
        for code, p in zip(self.codes, self.shares):
            sq = np.sqrt(p)
            seen = code >= 0
            out.append(np.bincount(code[seen], weights=y[seen], minlength=p.size) / sq - sq * y[seen].sum())
        return np.concatenate(out)

    def leading_axes(
        self, n: int, rows: np.ndarray | None = None, start: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(the ``n`` largest singular values, descending; their right singular vectors as the
        columns of a (width, n) matrix) of Z — of its ``rows`` when given — by ARPACK's Lanczos
        iteration on the operator (products: :meth:`_products`), started from a fixed vector
        (deterministic), to machine precision (tol=0). ``start``: axes (width, j) near the answer
        (a jackknife refit starts from the whole fit's): the iteration starts from their sum
        instead — the same answer to the same precision, in fewer products (114 → 80 on 25,000
        Texas-like records)."""
        from scipy.sparse.linalg import LinearOperator, svds

        if rows is not None:
            not_given = np.ones(self.shape[0], dtype=bool)
            not_given[rows] = False
            left = np.flatnonzero(not_given)  # a sort-free setdiff1d
            if GRAM_REFITS and 2 * left.size < self.shape[0] and self._global() is not None:
                return self._leading_axes_without(n, left, start)
            return self.rows(rows).leading_axes(n, start=start)  # its own operator, sliced once
        n_rows, width = self.shape
        matvec, rmatvec = self._products()
        op = LinearOperator(
            (n_rows, width),
            dtype=np.float64,
            matvec=lambda x: matvec(np.ravel(x)),
            rmatvec=lambda y: rmatvec(np.ravel(y)),
        )
        if n >= min(n_rows, width):  # ARPACK needs n < min(shape): a tiny input, written whole
            s, vt = _svd_right(self.matvec(np.eye(width)))
            return s[:n], vt[:n].T
        v0 = np.full(min(n_rows, width), 1.0) + np.linspace(0.0, 1.0, min(n_rows, width))
        if start is not None:
            # ARPACK iterates on ZᵀZ when Z is tall, else on ZZᵀ (whose vectors are Z v)
            warm = start.sum(axis=1) if width <= n_rows else self.matvec(start.sum(axis=1))
            if np.all(np.isfinite(warm)) and np.linalg.norm(warm) > 0:
                v0 = warm
        _, s, vt = svds(op, k=n, tol=0, v0=v0, solver="arpack")
        order = np.argsort(-s, kind="stable")
        return s[order], vt[order].T

    def _leading_axes_without(
        self, n: int, left: np.ndarray, start: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`leading_axes` of every row but ``left`` (a minority of them: a jackknife
        group), as SciPy's ``svds`` finds them — ARPACK's Lanczos iteration on the Gram matrix of
        the rows kept, then one SVD of their coordinates on the vectors found — but with that
        Gram matrix's products taken as ZᵀZ x − Z_leftᵀ(Z_left x): ZᵀZ from the whole input's
        cross-products (:meth:`_gram`, computed once, (width)² at most in its dense part, the
        coded blocks' as a sparse contingency matrix), the left rows' from their own few rows.
        A product costs the dense part's width times the coded levels instead of two passes
        over every record (at 100,000 Texas-like records with 25,000 coded levels, ~5× fewer
        operations). The same answer to the same precision (tol=0)."""
        from scipy.linalg import svd
        from scipy.sparse.linalg import LinearOperator, eigsh

        n_rows, width = self.shape
        if n >= width:
            return self.rows(np.setdiff1d(np.arange(n_rows), left)).leading_axes(n, start=start)
        gram = self._gram()
        out, out_t = self.rows(left)._products()
        op = LinearOperator(
            (width, width), dtype=np.float64, matvec=lambda x: gram(np.ravel(x)) - out_t(out(np.ravel(x)))
        )
        v0 = np.full(width, 1.0) + np.linspace(0.0, 1.0, width)
        if start is not None and np.all(np.isfinite(start.sum(axis=1))) and np.linalg.norm(start.sum(axis=1)) > 0:
            v0 = start.sum(axis=1)
        _, vecs = eigsh(op, k=n, tol=0, v0=v0)
        vecs, _ = np.linalg.qr(vecs)  # (as svds: ARPACK's vectors orthonormal to rounding only)
        kept = np.ones(n_rows, dtype=bool)
        kept[left] = False
        _, s, vt = svd(self.matvec(vecs)[kept], full_matrices=False, overwrite_a=True)
        vt = vt @ vecs.T
        order = np.argsort(-s, kind="stable")
        return s[order], vt[order].T

    def _gram(self):
        """x ↦ ZᵀZ x for the whole input, every row's levels seen (the real records), from its
        cross-products kept on this object: with Z = [D | S − 1 √pᵀ] (S the coded indicators'
        entries 1/√p, sparse), and u = Z x never written, Dᵀu = DᵀD x₁ + DᵀS x₂ − Dᵀ1 (√p·x₂) and
        the coded part Sᵀu − √p (1ᵀu), Sᵀu = SᵀD x₁ + SᵀS x₂ − Sᵀ1 (√p·x₂), 1ᵀu = 1ᵀD x₁ + 1ᵀS x₂
        − n (√p·x₂)."""
        if not hasattr(self, "_gram_parts"):
            from scipy import sparse

            codes, sq = self._global()
            n, h = codes.shape
            ind = sparse.csr_matrix(
                ((1.0 / sq)[codes].ravel(), codes.ravel(), np.arange(0, n * h + 1, h)), shape=(n, sq.size)
            )
            dense = self.dense
            self._gram_parts = (
                dense.T @ dense,
                np.asarray(ind.T @ dense),  # SᵀD: (levels, dense width)
                (ind.T @ ind).tocsr(),
                dense.sum(axis=0),
                np.asarray(ind.sum(axis=0)).ravel(),
                n,
                sq,
            )
        dd, sd, ss, dsum, ssum, n, sq = self._gram_parts
        wd = dd.shape[0]

        def product(x: np.ndarray) -> np.ndarray:
            x1, x2 = x[:wd], x[wd:]
            t = sq @ x2
            ones_u = dsum @ x1 + ssum @ x2 - n * t
            coded = sd @ x1 + ss @ x2 - ssum * t - sq * ones_u
            return np.concatenate([dd @ x1 + sd.T @ x2 - dsum * t, coded])

        return product

    def _products(self):
        """(Z x, Zᵀ y) for the Lanczos iteration: when every row's levels are seen (the real
        records), through the coded blocks' indicators as one sparse matrix S of the entries
        1/√p (Z x = D x + S x − √p·x, Zᵀ y = [Dᵀ y; Sᵀ y − √p Σy]; 2.5× faster products than the
        gathers of :meth:`matvec`, equal to rounding); else :meth:`matvec` / :meth:`rmatvec`."""
        fast = self._global()
        if fast is None:
            return self.matvec, self.rmatvec
        from scipy import sparse

        codes, sq = fast
        n, h = codes.shape
        ind = sparse.csr_matrix(
            ((1.0 / sq)[codes].ravel(), codes.ravel(), np.arange(0, n * h + 1, h)), shape=(n, sq.size)
        )
        dense, wd = self.dense, self.dense.shape[1]

        def matvec(x: np.ndarray) -> np.ndarray:
            return dense @ x[:wd] + ind @ x[wd:] - sq @ x[wd:]

        def rmatvec(y: np.ndarray) -> np.ndarray:
            return np.concatenate([dense.T @ y, ind.T @ y - sq * y.sum()])

        return matvec, rmatvec

    def rows(self, rows: np.ndarray) -> "FamdInputs":
        """The input of these rows only (the real statistics kept)."""
        return FamdInputs(np.take(self.dense, rows, axis=0), [c[rows] for c in self.codes], self.shares)

    def project(self, v: np.ndarray) -> np.ndarray:
        """Z v: the records' coordinates on the axes ``v`` (width, n)."""
        return self.matvec(v)

    def squared_norm(self) -> float:
        """‖Z‖²_F: the written part's plus, per coded column, Σ over seen rows of (1 − p)/p at
        the row's level (Σ over levels of the indicator block's squared entries)."""
        total = float(np.einsum("ij,ij->", self.dense, self.dense))
        for code, p in zip(self.codes, self.shares):
            seen = code[code >= 0]
            total += float(((1.0 - p[seen]) / p[seen]).sum())
        return total


def column_entropy(real: pl.Series, kind: str) -> float:
    """Natural-log entropy of a real column (numerics over the 10 real-quantile bins of privgate.binning, null a
    bin; categoricals over their levels, null a level)."""
    from .binning import assign_bins, quantile_edges

    if kind == NUMERIC:
        v = real.to_numpy().astype(np.float64, copy=False)
        codes = assign_bins(v, quantile_edges(v))
    else:
        codes = (
            real.fill_null(NULL_LEVEL).to_physical().to_numpy()
            if isinstance(real.dtype, pl.Categorical)
            else real.fill_null(NULL_LEVEL).rank("dense").to_numpy()
        )
    _, counts = np.unique(codes, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())
