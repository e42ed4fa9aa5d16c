"""Reference generators of exactly known ε, to test, benchmark and calibrate a generator audit.

``LaplaceHistogram`` is the Laplace mechanism (Dwork, McSherry, Nissim & Smith, "Calibrating
noise to sensitivity in private data analysis", TCC 2006) on the histogram of the training
records over the cells of a PUBLIC domain, followed by synthetic records drawn from the noisy
histogram. Under add/remove-one-record neighbouring a record changes exactly one cell count by 1
(or none, if it falls outside the domain): the L1 sensitivity is 1, so Laplace noise of scale
1/ε on every cell makes the noisy histogram exactly ε-differentially private, and every release
built from it (rounding, clipping, sampling, placing values within bins) is post-processing and
stays ε-DP. An audit of it must therefore report a lower bound ≤ ε (but for the audit's α).

``GaussianHistogram`` is the Gaussian mechanism on the same histogram, and ``RandomizedResponse``
randomized response on each cell's occupancy bit (exactly ε-DP too).

Two broken versions of the Laplace histogram reproduce the faults audits exist to catch:

- ``noise_factor=0.1``: noise 10× too small, so the true ε is 10× the claim.
- ``domain_from_data=True``: category levels and numeric bin edges taken from the PRIVATE
  training data. A level held by one record exists in the output's domain only when that record
  is in the training data, and an extreme value moves the bin edges, so a single release can
  reveal a record's presence with certainty: not differentially private for any ε. This is the
  implementation fault Annamalai, Ganev & De Cristofaro found in DP synthetic-data libraries
  ("What do you want from theory alone? Experimenting with tight auditing of differentially
  private synthetic data generation", USENIX Security 2024).

Each instance is a callable ``generate(training, n_rows, seed) -> polars.DataFrame`` with the
training frame's columns and dtypes, picklable (for a process pool), vectorised with NumPy and
deterministic for a seed.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from ..errors import ParameterError

MAX_CELLS = 2_000_000
RELEASES = ("sampled", "rounded")


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric()


def _check_edges(column: str, edges: Sequence[float]) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2:
        raise ParameterError(f"domain of numeric column {column!r} needs at least 2 bin edges; got {e.size}")
    if not np.all(np.isfinite(e)) or not np.all(np.diff(e) > 0):
        raise ParameterError(
            f"domain of numeric column {column!r}: the {e.size} bin edges must be finite and strictly increasing"
        )
    return e


class LaplaceHistogram:
    """The Laplace mechanism on a histogram over a public domain, then a synthetic release.

    ``domain`` maps every training column to its public cells: a list of category levels (a
    ``None`` level stands for missing values) or, for a numeric column, sorted bin edges
    (bins ``[e0, e1), [e1, e2), ..., [e_{m-1}, e_m]``). The cells are the cross product; more
    than 2,000,000 cells is refused. A record whose category is not a level (or whose numeric
    value is missing) falls in no cell and is dropped; a numeric value outside the edges is
    clipped into the first or last bin. Either way one record changes at most one count by 1.

    Each cell count gets Laplace(``noise_factor`` / ``epsilon``) noise, so the mechanism is
    exactly ``epsilon / noise_factor``-DP (``true_epsilon``). ``release``:

    - ``"sampled"`` (default): ``n_rows`` records drawn i.i.d. over the cells with probabilities
      ∝ max(0, noisy count) (uniform over the cells when every noisy count is ≤ 0);
    - ``"rounded"``: round(max(0, noisy count)) records of every cell — ``n_rows`` is ignored and
      the release has about as many records as the training data, plus noise records in empty
      cells (E round(max(0, Laplace(1))) ≈ 0.48 per empty cell at noise scale 1, more at larger
      scales): keep the domain small for this release.

    A numeric value is drawn uniformly within its bin (an integer column: uniformly among the
    integers in the bin, or the bin midpoint rounded when the bin holds none), seeded.

    ``domain_from_data=True`` builds the domain from the PRIVATE training data on every call
    (levels = the observed values, edges = as many equal-width bins as ``domain`` gives — or
    ``bins`` — between the observed minimum and maximum): a deliberately broken, non-DP
    version (``true_epsilon`` = inf); ``domain`` (or a column's entry in it) may then be None
    (``bins`` bins for a numeric column).
    ``claimed_epsilon`` is ``epsilon`` in every case.
    """

    def __init__(
        self,
        epsilon: float,
        domain: Mapping[str, Sequence[Any]] | None,
        *,
        release: str = "sampled",
        noise_factor: float = 1.0,
        domain_from_data: bool = False,
        bins: int = 10,
    ) -> None:
        if not (isinstance(epsilon, (int, float)) and 0.0 < epsilon < math.inf):
            raise ParameterError(f"epsilon must be a finite number > 0; got {epsilon!r}")
        if not (isinstance(noise_factor, (int, float)) and 0.0 < noise_factor < math.inf):
            raise ParameterError(f"noise_factor must be a finite number > 0; got {noise_factor!r}")
        if release not in RELEASES:
            raise ParameterError(f"release must be one of {RELEASES}; got {release!r}")
        if int(bins) != bins or bins < 1:
            raise ParameterError(f"bins must be a positive integer; got {bins!r}")
        if domain is None and not domain_from_data:
            raise ParameterError("domain is required unless domain_from_data=True")
        self.epsilon = float(epsilon)
        self.claimed_epsilon = float(epsilon)
        self.noise_factor = float(noise_factor)
        self.release = release
        self.domain_from_data = bool(domain_from_data)
        self.bins = int(bins)
        self.domain: dict[str, tuple | None] | None = (
            None if domain is None else {str(c): (None if v is None else tuple(v)) for c, v in domain.items()}
        )
        if self.domain is not None:
            for c, v in self.domain.items():
                if v is None and not domain_from_data:
                    raise ParameterError(
                        f"domain of column {c!r} is missing (None is allowed only with domain_from_data=True)"
                    )
                if v is not None and len(v) == 0:
                    raise ParameterError(f"domain of column {c!r} is empty")

    # ------------------------------------------------------------------ properties

    @property
    def true_epsilon(self) -> float:
        """The ε the mechanism really satisfies: epsilon / noise_factor, or inf when the domain
        comes from the private data."""
        return math.inf if self.domain_from_data else self.epsilon / self.noise_factor

    @property
    def scale(self) -> float:
        """The Laplace noise scale b on every cell (variance 2b²)."""
        return self.noise_factor / self.epsilon

    def __repr__(self) -> str:
        cols = "from data" if self.domain is None else f"{len(self.domain)} columns"
        return (
            f"LaplaceHistogram(epsilon={self.epsilon:g}, release={self.release!r}, "
            f"noise_factor={self.noise_factor:g}, domain_from_data={self.domain_from_data}, domain={cols})"
        )

    def published_domain(self) -> dict[str, list] | None:
        """The public domain the mechanism counts over — column → levels or numeric bin edges —
        for an audit to craft canaries in its cells and count them there
        (:mod:`privgate.audit.cells`); None when the domain is read from the training data (there
        is no public one to publish)."""
        if self.domain_from_data or self.domain is None:
            return None
        return {c: list(v) for c, v in self.domain.items() if v is not None}

    # ------------------------------------------------------------------ public domain helper

    @classmethod
    def public_domain(cls, frame: pl.DataFrame, bins: int = 10) -> dict[str, list]:
        """A domain from a PUBLIC reference frame (a published table, a schema, a population
        file — never the private training data, or the mechanism is not DP): every observed
        level of a non-numeric column (``None`` among them when the column has missing values)
        and ``bins`` equal-width bins between a numeric column's minimum and maximum."""
        if int(bins) != bins or bins < 1:
            raise ParameterError(f"bins must be a positive integer; got {bins!r}")
        return _domain_of(frame, {c: None for c in frame.columns}, int(bins))

    # ------------------------------------------------------------------ the mechanism

    def _resolve(self, training: pl.DataFrame) -> list[tuple[str, bool, Any]]:
        """[(column, numeric?, levels tuple or edges array)] in training column order."""
        if self.domain_from_data:
            wanted = {c: (self.domain or {}).get(c) for c in training.columns}
            dom = _domain_of(training, wanted, self.bins)
        else:
            assert self.domain is not None
            missing = [c for c in training.columns if c not in self.domain]
            extra = [c for c in self.domain if c not in training.columns]
            if missing or extra:
                raise ParameterError(
                    f"the domain must name exactly the training columns: "
                    f"{len(missing)} training column(s) have no domain {missing[:5]}, "
                    f"{len(extra)} domain column(s) are not in the training data {extra[:5]}"
                )
            dom = self.domain
        out = []
        for c in training.columns:
            numeric = _is_numeric(training.schema[c])
            if numeric:
                out.append((c, True, _check_edges(c, dom[c])))
            else:
                levels = tuple(dom[c])
                if len(levels) == 0:
                    raise ParameterError(f"domain of column {c!r} has no level")
                dtype = training.schema[c]
                base = pl.String if dtype == pl.Categorical or isinstance(dtype, pl.Enum) else dtype
                try:
                    pl.Series(c, list(levels), dtype=base)
                except Exception as exc:
                    raise ParameterError(
                        f"the {len(levels)} levels given for column {c!r} are not all of its dtype {dtype}"
                    ) from exc
                out.append((c, False, levels))
        sizes = [(len(v) - 1 if num else len(v)) for _, num, v in out]
        total = math.prod(sizes) if sizes else 0
        if total > MAX_CELLS:
            raise ParameterError(
                f"the domain has {total:,} cells (levels or bins per column: "
                f"{', '.join(f'{c}={s}' for (c, _, _), s in zip(out, sizes))}); "
                f"at most {MAX_CELLS:,} are allowed"
            )
        if total == 0:
            raise ParameterError("the domain has no cell (no column or an empty column)")
        return out

    def _cells(self, training: pl.DataFrame, resolved) -> tuple[np.ndarray, list[int]]:
        """Cell index of every training record (-1: outside the domain) and the per-column sizes."""
        n = training.height
        idx = np.zeros(n, dtype=np.int64)
        keep = np.ones(n, dtype=bool)
        sizes = []
        for c, numeric, spec in resolved:
            s = training.get_column(c)
            if numeric:
                x = s.cast(pl.Float64).to_numpy()
                m = spec.size - 1
                ok = np.isfinite(x)
                code = np.clip(np.searchsorted(spec, np.where(ok, x, spec[0]), side="right") - 1, 0, m - 1)
                size = m
            else:
                code, ok = _level_codes(c, s, spec)
                size = len(spec)
            keep &= ok
            idx = idx * size + np.where(ok, code, 0)
            sizes.append(size)
        return np.where(keep, idx, -1), sizes

    def noisy_counts(self, training: pl.DataFrame, seed: int) -> np.ndarray:
        """The noisy histogram (one float per cell, row-major over the columns' cells) that a
        release of this seed is drawn from."""
        resolved = self._resolve(training)
        counts, _ = self._counts(training, resolved)
        rng = np.random.default_rng(seed)
        return counts + self._noise(rng, counts.size)

    def _noise(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.laplace(0.0, self.scale, size)

    def _checked_counts(self, training: pl.DataFrame, n_rows: int) -> tuple[Any, np.ndarray, list[int]]:
        """The arguments of a call checked, then the cells resolved and their counts."""
        if not isinstance(training, pl.DataFrame):
            raise ParameterError(f"training must be a polars DataFrame; got {type(training).__name__}")
        if int(n_rows) != n_rows or n_rows < 0:
            raise ParameterError(f"n_rows must be an integer ≥ 0; got {n_rows!r}")
        resolved = self._resolve(training)
        counts, sizes = self._counts(training, resolved)
        return resolved, counts, sizes

    def _counts(self, training: pl.DataFrame, resolved) -> tuple[np.ndarray, list[int]]:
        cell, sizes = self._cells(training, resolved)
        total = math.prod(sizes)
        return np.bincount(cell[cell >= 0], minlength=total).astype(np.float64), sizes

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        resolved, counts, sizes = self._checked_counts(training, n_rows)
        rng = np.random.default_rng(seed)
        noisy = counts + self._noise(rng, counts.size)
        positive = np.maximum(noisy, 0.0)
        if self.release == "rounded":
            reps = np.rint(positive).astype(np.int64)
            cells = np.repeat(np.arange(counts.size, dtype=np.int64), reps)
        else:
            mass = positive.sum()
            p = positive / mass if mass > 0 else None  # None: uniform over the cells
            cells = rng.choice(counts.size, size=int(n_rows), p=p)
        return _decode(training, resolved, sizes, cells, rng)

    generate = __call__


def _domain_of(frame: pl.DataFrame, wanted: Mapping[str, Any], bins: int) -> dict[str, list]:
    """Levels / edges observed in ``frame`` for the columns of ``wanted`` (a numeric column uses
    as many bins as the given edges define, else ``bins``)."""
    out: dict[str, list] = {}
    for c, given in wanted.items():
        if c not in frame.columns:
            raise ParameterError(f"domain column {c!r} is not in the frame")
        s = frame.get_column(c)
        if _is_numeric(s.dtype):
            m = (len(given) - 1) if given is not None and len(given) >= 2 else bins
            x = s.cast(pl.Float64).to_numpy()
            x = x[np.isfinite(x)]
            if x.size == 0:
                raise ParameterError(f"numeric column {c!r} has no finite value to take a range from")
            lo, hi = float(x.min()), float(x.max())
            if hi <= lo:
                hi = lo + 1.0
            out[c] = np.linspace(lo, hi, m + 1).tolist()
        else:
            base = s.cast(pl.String) if s.dtype in (pl.Categorical,) or isinstance(s.dtype, pl.Enum) else s
            levels = base.drop_nulls().unique().sort().to_list()
            if s.null_count() > 0:
                levels.append(None)
            out[c] = levels
    return out


def _level_codes(column: str, s: pl.Series, levels: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Code of each value among ``levels`` and whether it is one of them (vectorised)."""
    base = s.cast(pl.String) if s.dtype == pl.Categorical or isinstance(s.dtype, pl.Enum) else s
    present = [lv for lv in levels if lv is not None]
    codes_present = [i for i, lv in enumerate(levels) if lv is not None]
    null_code = next((i for i, lv in enumerate(levels) if lv is None), -1)
    try:
        code = base.replace_strict(present, codes_present, default=-1, return_dtype=pl.Int64)
    except Exception as exc:  # level values of another type than the column
        raise ParameterError(
            f"the levels of column {column!r} ({len(levels)} given) do not match its dtype {s.dtype}"
        ) from exc
    c = code.fill_null(-1).to_numpy().astype(np.int64, copy=False)
    if s.null_count():
        c = np.where(s.is_null().to_numpy(), null_code, c)
    return c, c >= 0


def _decode(
    training: pl.DataFrame, resolved, sizes: list[int], cells: np.ndarray, rng: np.random.Generator
) -> pl.DataFrame:
    """The synthetic frame of the given cells, in the training columns and dtypes."""
    codes = []
    rest = cells.astype(np.int64, copy=True)
    for size in reversed(sizes):
        codes.append(rest % size)
        rest //= size
    codes.reverse()
    series = []
    for (c, numeric, spec), code in zip(resolved, codes):
        dtype = training.schema[c]
        if numeric:
            lo, hi = spec[code], spec[code + 1]
            u = rng.random(code.size)
            if dtype.is_integer():
                last = code == spec.size - 2
                a = np.ceil(lo)
                b = np.where(last, np.floor(hi), np.ceil(hi) - 1)
                empty = b < a
                mid = np.rint((lo + hi) / 2.0)
                a = np.where(empty, mid, a)
                b = np.where(empty, mid, b)
                vals = a + np.floor(u * (b - a + 1))
                vals = np.minimum(vals, b)
            else:
                vals = lo + u * (hi - lo)
            series.append(pl.Series(c, vals).cast(dtype))
        else:
            base = pl.String if dtype == pl.Categorical or isinstance(dtype, pl.Enum) else dtype
            levels = pl.Series(c, list(spec), dtype=base)
            series.append(levels.gather(pl.Series(code, dtype=pl.UInt32)).cast(dtype))
    return pl.DataFrame(series) if series else pl.DataFrame()


class GaussianHistogram(LaplaceHistogram):
    """The Gaussian mechanism on the same histogram (Dwork & Roth 2014, App. A; Balle & Wang,
    "Improving the Gaussian mechanism for differential privacy", ICML 2018): N(0, σ²) noise on
    every cell count. With L2 sensitivity 1 under add/remove it is exactly μ-GDP with μ = 1/σ
    (Dong, Roth & Su 2022), hence (ε, δ)-DP for ε = ``epsilon_at(δ)`` (the GDP conversion,
    tight), and not ε-DP for any finite ε at δ = 0 (``true_epsilon`` = inf). ``sigma`` is the noise's standard deviation;
    the other arguments are LaplaceHistogram's (``epsilon`` there is unused: pass ``sigma``)."""

    def __init__(
        self, sigma: float, domain: Mapping[str, Sequence[Any]] | None, *, release: str = "sampled", bins: int = 10
    ) -> None:
        if not (isinstance(sigma, (int, float)) and 0.0 < sigma < math.inf):
            raise ParameterError(f"sigma must be a finite number > 0; got {sigma!r}")
        super().__init__(1.0, domain, release=release, bins=bins)
        self.sigma = float(sigma)

    @property
    def mu(self) -> float:
        return 1.0 / self.sigma

    @property
    def true_epsilon(self) -> float:
        return math.inf

    def epsilon_at(self, delta: float) -> float:
        """The smallest ε at which the mechanism is (ε, δ)-DP (inf at δ = 0)."""
        from ..stats.dp_audit import gdp_epsilon

        return gdp_epsilon(self.mu, delta)

    def _noise(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.normal(0.0, self.sigma, size)

    def __repr__(self) -> str:
        return f"GaussianHistogram(sigma={self.sigma:g}, release={self.release!r})"


class RandomizedResponse(LaplaceHistogram):
    """Randomized response (Warner 1965) on the occupancy of every cell of a PUBLIC domain: each
    cell's bit "some training record falls in it" is reported truthfully with probability
    e^ε / (1 + e^ε) and flipped otherwise, independently. Under add/remove-one-record neighbouring
    a record changes at most one cell's bit, and each bit's report is ε-DP randomized response,
    so the reported set of cells is exactly ε-DP (``true_epsilon`` = ``epsilon``). The release,
    post-processing: ``n_rows`` records spread over the reported cells as evenly as possible
    (in cell order; uniform over every cell when none is reported), values placed within their
    bins as :class:`LaplaceHistogram` does. ``domain`` as there; ``release`` is not used."""

    def __init__(self, epsilon: float, domain: Mapping[str, Sequence[Any]] | None, *, bins: int = 10) -> None:
        super().__init__(epsilon, domain, release="sampled", bins=bins)

    @property
    def keep_probability(self) -> float:
        """The probability that a cell's bit is reported as it is."""
        return 1.0 / (1.0 + math.exp(-self.epsilon))

    def __repr__(self) -> str:
        return f"RandomizedResponse(epsilon={self.epsilon:g})"

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        resolved, counts, sizes = self._checked_counts(training, n_rows)
        rng = np.random.default_rng(seed)
        occupied = counts > 0
        flip = rng.random(counts.size) >= self.keep_probability
        reported = np.flatnonzero(occupied ^ flip)
        if reported.size == 0:
            reported = np.arange(counts.size, dtype=np.int64)
        cells = np.resize(reported, int(n_rows))
        return _decode(training, resolved, sizes, cells, rng)

    generate = __call__


class TrainingCopy:
    """A generator with no privacy at all (ε = ∞), the other end of an audit's scale: it
    publishes its training records, every numeric column of int or float dtype moved by
    Gaussian noise of ``noise`` × the column's standard deviation in the training set (0: exact
    copies; integer columns rounded). ``n_rows`` is ignored: the release is the whole training
    set, in its own order. Picklable and deterministic for a seed."""

    claimed_epsilon = math.inf
    true_epsilon = math.inf

    def __init__(self, noise: float = 0.0) -> None:
        if not (isinstance(noise, (int, float)) and 0.0 <= noise < math.inf):
            raise ParameterError(f"noise must be a finite number ≥ 0; got {noise!r}")
        self.noise = float(noise)

    def __repr__(self) -> str:
        return f"TrainingCopy(noise={self.noise:g})"

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        if self.noise == 0.0:
            return training
        rng = np.random.default_rng(seed)
        out = []
        for col, dtype in training.schema.items():
            s = training[col]
            if dtype.is_integer() or dtype.is_float():
                v = s.cast(pl.Float64).to_numpy()
                sd = float(np.nanstd(v)) if np.isfinite(v).any() else 0.0
                moved = v + rng.normal(0.0, self.noise * sd, v.size)
                s = pl.Series(col, np.round(moved) if dtype.is_integer() else moved).cast(dtype, strict=False)
            out.append(s)
        return pl.DataFrame(out)
