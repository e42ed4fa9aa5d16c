"""What an attack sees of one release about each target: a few numbers per (target, release).

The features of TAPAS (Houssiau, Jordon, Cohen, Daniel, Elliott, Geddes, Mole, Rangel-Smith,
Szpruch, "TAPAS: a Toolbox for Adversarial Privacy Auditing of Synthetic Data", NeurIPS 2022
workshop) and of Stadler, Oprisanu, Troncoso ("Synthetic Data – Anonymisation Groundhog Day",
USENIX Security 2022), computed through privgate's data layer and neighbour engine:

- distances from the target to its nearest synthetic records in the mixed space (standardised on
  the population), exact copies, and synthetic records within the target's own isolation radius
  (its distance to the nearest population record) and half of it;
- how often the target's values and value pairs occur in the release: each column's value as a
  code (a category level, or a quantile bin of the population, with two extra bins for values
  below and above every population value), the share of synthetic records with the target's
  rarest value and with its two rarest values together, and the mean and minimum share over its
  values and over pairs of its rarest values;
- how many synthetic records fall in the target's cell (every column's code equal to the
  target's) and in its region (categories equal, numeric bins within one of the target's): for a
  generator that publishes noisy counts, a threshold on the count of the target's cell is the
  likelihood-ratio test of its presence (the Laplace mechanism's output density ratio is
  monotone in the count), so these are counts, not shares;
- the release size (log).

Neither the release's rows nor the targets are looped over in Python (targets in blocks of
about 32M comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import polars as pl

from ..binning import assign_bins, quantile_edges
from ..errors import EmptyInputError, InputError, SchemaMismatchError
from ..io import load_frame
from ..neighbours import knn
from ..schema import NUMERIC, Schema, check_compatible_dtypes, check_finite, check_same_columns, normalise_frame
from ..spaces import NULL_LEVEL, category_codes, mixed_space
from ..ties import REL_TOL

FEATURES = (
    "exact_copies",
    "nearest_distance",
    "second_distance",
    "mean_distance_k",
    "within_radius",
    "within_half_radius",
    "rarest_value_share",
    "two_rarest_share",
    "value_share_mean",
    "value_share_min",
    "pair_share_mean",
    "pair_share_min",
    "release_rows_log",
    "cell_count",
    "region_count",
)
#: nearest synthetic records read per target
K_NEAREST = 16
#: columns (the target's rarest values) whose pairs are counted
PAIR_COLUMNS = 40
#: the distance features of a release with no records
NO_NEIGHBOUR = 1e6
#: target × release-record pairs up to which the nearest-neighbour search is one exact pass
SMALL_SEARCH_PAIRS = 4_000_000
#: (targets × release records × columns) comparisons made at once in the value and cell counts
COMPARE_CELLS = 1 << 25


@dataclass
class FeatureSpace:
    """The population's encoding of the targets, fixed once per audit: standardisation and
    levels of the mixed space, value codes, each target's isolation radius and the order of its
    values from rarest to most common."""

    schema: Schema
    pool: pl.DataFrame  # normalised population (the mixed space's reference)
    targets: pl.DataFrame  # normalised targets
    edges: dict[str, np.ndarray]  # numeric column → quantile edges of the population
    levels: dict[str, list[str]]  # categorical column → population ∪ target levels
    target_codes: np.ndarray  # (T, d) value codes of the targets
    rarity: np.ndarray  # (T, d) column order per target, rarest value first
    radius: np.ndarray  # (T,) distance to the nearest population record
    bins: np.ndarray | None = None  # (d,) numeric columns: their bin count B; categorical: 0
    #: the population's own dtypes, before normalisation: what the generator is given, and so
    #: what a release is checked against (a Boolean column given is a Boolean column returned)
    source_schema: dict[str, pl.DataType] | None = None

    @classmethod
    def build(
        cls, pool: pl.DataFrame, targets: pl.DataFrame, schema: Schema, edges: Mapping[str, np.ndarray] | None = None
    ) -> "FeatureSpace":
        """``pool`` and ``targets`` in their own dtypes (normalised here). ``edges``: bin edges of
        numeric columns to code by instead of the population's quantiles (a generator's
        published domain, :mod:`privgate.audit.cells`)."""
        pool_n = normalise_frame(pool, schema)
        targets_n = normalise_frame(targets, schema)
        given = edges or {}
        edges = {
            c: (np.asarray(given[c], dtype=np.float64) if c in given else quantile_edges(pool_n[c].to_numpy()))
            for c in schema.numeric
        }
        levels = {}
        for c in schema.categorical:
            found = set(pool_n[c].fill_null(NULL_LEVEL).unique().to_list())
            found |= set(targets_n[c].fill_null(NULL_LEVEL).unique().to_list())
            levels[c] = sorted(found)
        space = cls(
            schema,
            pool_n,
            targets_n,
            edges,
            levels,
            np.zeros((0, 0), dtype=np.int64),
            np.zeros((0, 0), dtype=np.int64),
            np.zeros(0),
        )
        space.source_schema = dict(pool.schema)
        space.bins = np.array(
            [max(edges[c].size - 1, 1) if schema.kind(c) == NUMERIC else 0 for c in schema.columns], dtype=np.int64
        )
        space.target_codes = space.codes(targets_n)
        pool_codes = space.codes(pool_n)
        freq = (
            np.stack(
                [_code_shares(pool_codes[:, j], space.target_codes[:, j]) for j in range(pool_codes.shape[1])], axis=1
            )
            if pool_codes.shape[1]
            else np.zeros((targets_n.height, 0))
        )
        space.rarity = np.argsort(freq, axis=1, kind="stable")
        enc = mixed_space({"real": pool_n, "targets": targets_n}, schema)
        space.radius = knn(enc["targets"], enc.real, 1, categorical_slices=enc.categorical_slices).dist[:, 0]
        return space

    def codes(self, frame: pl.DataFrame) -> np.ndarray:
        """(n, d) value codes of a normalised frame: category levels (−1: a level unknown to the
        population and the targets); numeric bins 0..B−1, B null, B+1 below and B+2 above every
        population value."""
        cols = []
        for c in self.schema.columns:
            if self.schema.kind(c) == NUMERIC:
                e = self.edges[c]
                v = frame[c].to_numpy().astype(np.float64, copy=False)
                code = assign_bins(v, e)
                if e.size:
                    n_bins = max(e.size - 1, 1)
                    with np.errstate(invalid="ignore"):
                        code = np.where(v < e[0], n_bins + 1, np.where(v > e[-1], n_bins + 2, code))
                cols.append(code.astype(np.int64))
            else:
                codes, _ = category_codes({"x": frame}, c, self.levels[c])
                cols.append(codes["x"].astype(np.int64))
        return np.stack(cols, axis=1) if cols else np.zeros((frame.height, 0), dtype=np.int64)

    def prepare(self, release: object, role: str = "release") -> pl.DataFrame:
        """A release as a normalised frame in the population's schema; a clear error naming the
        columns when it does not have the population's columns or a compatible dtype."""
        frame = load_frame(release, role=role)
        if frame.width == 0:
            raise EmptyInputError(f"{role}: the release has no columns")
        try:  # "release": real column names are shown only when the release has them too
            check_same_columns({"population": self.pool, "release": frame})
        except SchemaMismatchError as exc:
            raise SchemaMismatchError(f"{role}: {exc}") from None
        frame = frame.select(self.pool.columns)
        # the release is checked against the dtypes the generator was given (the population's
        # own), then normalised exactly as the population was
        given = self.source_schema if self.source_schema is not None else dict(self.pool.schema)
        schemas = {"population": given, role: dict(frame.schema)}
        for c in self.schema.columns:
            check_compatible_dtypes(c, {"population": self.pool, role: frame}, schemas)
            if self.schema.kind(c) == NUMERIC:
                check_finite(c, {role: frame})
        return normalise_frame(frame, self.schema)

    def features(self, release: pl.DataFrame) -> np.ndarray:
        """(T, len(FEATURES)) features of every target on one normalised release."""
        n_t = self.targets.height
        m = release.height
        if m == 0:  # a release with no records (a DP mechanism may publish one): no neighbours
            return empty_release_features(n_t)
        out = np.zeros((n_t, len(FEATURES)))
        enc = mixed_space(
            {"real": self.pool, "targets": self.targets, "synthetic": release},
            self.schema,
            rows={"real": np.zeros(0, dtype=np.int64)},
        )
        k = min(K_NEAREST, m)
        # a small search is fastest as one exact pass: the engine's faiss screen and grouped
        # search pay off on large releases (the answers are the same on every path)
        small = n_t * m <= SMALL_SEARCH_PAIRS
        nb = knn(
            enc["targets"],
            enc.synthetic,
            k,
            categorical_slices=enc.categorical_slices,
            use_faiss=not small,
            grouped=not small,
        )
        d = nb.dist
        tol = REL_TOL * (1.0 + np.abs(d).max(initial=0.0))
        out[:, 0] = (d <= tol).sum(axis=1)
        out[:, 1] = d[:, 0]
        out[:, 2] = d[:, 1] if k > 1 else d[:, 0]
        out[:, 3] = d.mean(axis=1)
        r = self.radius[:, None]
        out[:, 4] = (d <= r + tol).sum(axis=1)
        out[:, 5] = (d <= r / 2 + tol).sum(axis=1)
        codes = self.codes(release)
        out[:, 6:12] = self._value_shares(codes)
        out[:, 12] = np.log(m)
        out[:, 13:15] = self._cell_counts(codes)
        return out

    def _chunks(self, codes: np.ndarray) -> tuple[range, int]:
        """Target blocks whose (targets × records × columns) comparisons stay near 32M cells."""
        per_target = max(codes.shape[0] * max(codes.shape[1], 1), 1)
        step = max(1, COMPARE_CELLS // per_target)
        return range(0, self.target_codes.shape[0], step), step

    def _value_shares(self, codes: np.ndarray) -> np.ndarray:
        """(T, 6): the shares of release records with each target's rarest value, its two rarest
        values, the mean and minimum share over its values and over pairs of its
        ``PAIR_COLUMNS`` rarest values — every target of a block at once."""
        n_t, (m, d) = self.target_codes.shape[0], codes.shape
        out = np.zeros((n_t, 6))
        if d == 0:
            return out
        blocks, step = self._chunks(codes)
        for a in blocks:
            tc = self.target_codes[a : a + step]  # (b, d)
            cols = self.rarity[a : a + step, :PAIR_COLUMNS]  # (b, p)
            eq = codes[None, :, :] == tc[:, None, :]  # (b, m, d)
            out[a : a + step, 2] = eq.mean(axis=(1, 2))
            if d <= 2 * PAIR_COLUMNS:  # every column pair at once, then each target's rarest ones
                ef = eq.astype(np.float32)
                full = np.matmul(ef.transpose(0, 2, 1), ef)  # (b, d, d)
                b = np.arange(cols.shape[0])[:, None, None]
                pairs = full[b, cols[:, :, None], cols[:, None, :]] / m  # (b, p, p)
            else:
                er = np.take_along_axis(eq, cols[:, None, :], axis=2).astype(np.float32)  # (b, m, p)
                pairs = np.matmul(er.transpose(0, 2, 1), er) / m  # (b, p, p)
            shares = np.diagonal(pairs, axis1=1, axis2=2)
            out[a : a + step, 0] = shares[:, 0]
            out[a : a + step, 3] = shares.min(axis=1)
            if cols.shape[1] > 1:
                out[a : a + step, 1] = pairs[:, 0, 1]
                iu = np.triu_indices(cols.shape[1], 1)
                upper = pairs[:, iu[0], iu[1]]
                out[a : a + step, 4] = upper.mean(axis=1)
                out[a : a + step, 5] = upper.min(axis=1)
            else:
                out[a : a + step, 1] = out[a : a + step, 4] = out[a : a + step, 5] = shares[:, 0]
        return out

    def _cell_counts(self, codes: np.ndarray) -> np.ndarray:
        """(T, 2): release records in each target's cell (all codes equal) and region (categories
        equal, numeric bins within one; a null or out-of-range code only equal). Each release
        record's codes become one integer key and the counts are looked up per key (a target's
        region: the keys of its up to 3^k neighbouring cells, k numeric columns); where the keys
        would overflow or the neighbours be too many, every target is compared with every record."""
        bins = self.bins if self.bins is not None else np.zeros(codes.shape[1], dtype=np.int64)
        numeric = bins > 0
        tcodes = self.target_codes
        d = codes.shape[1]
        if d == 0:
            return np.full((tcodes.shape[0], 2), float(codes.shape[0]))
        lo = np.minimum(codes.min(axis=0, initial=0), tcodes.min(axis=0, initial=0)) - 1
        hi = np.maximum(codes.max(axis=0, initial=0), tcodes.max(axis=0, initial=0)) + 1
        size = (hi - lo + 1).astype(np.float64)
        n_numeric = int(numeric.sum())
        if np.prod(size) >= 2.0**62 or tcodes.shape[0] * 3.0**n_numeric > 4e6:
            return self._cell_counts_compared(codes)
        radix = np.concatenate([[1], np.cumprod(size[:-1])]).astype(np.int64)
        keys = ((codes - lo) * radix).sum(axis=1)
        uniq, per = np.unique(keys, return_counts=True)

        def count(k: np.ndarray) -> np.ndarray:
            if uniq.size == 0:
                return np.zeros(k.shape)
            pos = np.minimum(np.searchsorted(uniq, k), uniq.size - 1)
            return np.where(uniq[pos] == k, per[pos], 0)

        tkeys = ((tcodes - lo) * radix).sum(axis=1)
        out = np.zeros((tcodes.shape[0], 2))
        out[:, 0] = count(tkeys)
        # region: every numeric code inside the bins may move by −1, 0 or +1 (staying inside)
        region = np.zeros(tcodes.shape[0])
        cols = np.flatnonzero(numeric)
        for moves in (
            np.array(np.meshgrid(*[[-1, 0, 1]] * cols.size, indexing="ij")).reshape(cols.size, -1).T
            if cols.size
            else [np.zeros(0, dtype=np.int64)]
        ):
            moved = tcodes.copy()
            ok = np.ones(tcodes.shape[0], dtype=bool)
            for j, step in zip(cols, moves):
                if step == 0:
                    continue
                inside = tcodes[:, j] < bins[j]
                target = tcodes[:, j] + step
                ok &= inside & (target >= 0) & (target < bins[j])
                moved[:, j] = target
            region += np.where(ok, count(((moved - lo) * radix).sum(axis=1)), 0)
        out[:, 1] = region
        return out

    def _cell_counts_compared(self, codes: np.ndarray) -> np.ndarray:
        """:meth:`_cell_counts` by comparing every target with every record, in blocks."""
        bins = self.bins if self.bins is not None else np.zeros(codes.shape[1], dtype=np.int64)
        numeric = bins > 0
        inside = numeric & (codes < bins)  # (m, d): a numeric code inside the population's bins
        out = np.zeros((self.target_codes.shape[0], 2))
        blocks, step = self._chunks(codes)
        for a in blocks:
            tc = self.target_codes[a : a + step][:, None, :]  # (b, 1, d)
            equal = codes[None, :, :] == tc
            near = equal | (inside[None] & (tc < bins) & numeric & (np.abs(codes[None, :, :] - tc) <= 1))
            out[a : a + step, 0] = equal.all(axis=2).sum(axis=1)
            out[a : a + step, 1] = near.all(axis=2).sum(axis=1)
        return out


def empty_release_features(n_targets: int) -> np.ndarray:
    """The features of a release with no records (what a failed run counts as): no copies, no
    neighbours (distances ``NO_NEIGHBOUR``), no value shares, log size 0."""
    out = np.zeros((n_targets, len(FEATURES)))
    for name in ("nearest_distance", "second_distance", "mean_distance_k"):
        out[:, FEATURES.index(name)] = NO_NEIGHBOUR
    return out


def _code_shares(pool_codes: np.ndarray, target_codes: np.ndarray) -> np.ndarray:
    """The population share of each target's code in one column."""
    values, counts = np.unique(pool_codes, return_counts=True)
    pos = np.searchsorted(values, target_codes)
    pos = np.clip(pos, 0, max(values.size - 1, 0))
    found = values.size > 0
    hit = (values[pos] == target_codes) if found else np.zeros(target_codes.shape, dtype=bool)
    return np.where(hit, counts[pos] / max(pool_codes.size, 1), 0.0)


def feature_index(name: str) -> int:
    try:
        return FEATURES.index(name)
    except ValueError:
        raise InputError(f"unknown audit feature {name!r}; known: {list(FEATURES)}") from None
