"""The bundled audit example: a Laplace-noised histogram generator audited in Dagster.

The generator (:class:`LaplaceHistogram`) counts the training records in every cell of a public
joint domain, adds Laplace noise of scale 1/ε to every count (a record added or removed changes
one count by 1: ε-DP under add/remove neighbours; Dwork, McSherry, Nissim, Smith, "Calibrating
Noise to Sensitivity in Private Data Analysis", TCC 2006), clips negative counts to 0 and samples
the release from the normalised counts (post-processing). Records with a value outside the domain
contribute nothing. Its ``noise_factor`` makes the broken version of the example: no noise at all
(the noise forgotten), so the release shows which rare cells the training set holds.

:func:`build_example_audit` audits it on three categorical columns of the bundled UCI Adult
sample — a small, fast audit (a run takes milliseconds; the whole audit about 10 s) with two
versions: ``1.0`` (sound, ε = 1) and ``1.1-no-noise`` (claims ε = 1, adds no noise; its audit
proves the violation: ε lower bound 2.12 with the example's 200 runs).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import dagster as dg
import numpy as np
import polars as pl

EXAMPLE_AUDIT = "example_generator_audit"
#: the example's columns of the bundled Adult sample, and their public domain
EXAMPLE_COLUMNS = ("sex", "race", "relationship")
EXAMPLE_VERSIONS = {"1.0": 1.0, "1.1-no-noise": 0.0}
CLAIMED_EPSILON = 1.0


class LaplaceHistogram:
    """``generate(training, n_rows, seed)`` releasing ``n_rows`` records sampled from a
    Laplace-noised histogram over ``domain`` (column → its public levels): ε-DP for
    ``noise_factor`` 1; ``noise_factor`` < 1 scales the noise down, 0 removes it (a broken
    implementation)."""

    def __init__(self, epsilon: float, domain: Mapping[str, Sequence[str]], noise_factor: float = 1.0) -> None:
        if not epsilon > 0:
            raise ValueError(f"epsilon must be positive; got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.domain = {str(c): [str(v) for v in levels] for c, levels in domain.items()}
        self.noise_factor = float(noise_factor)

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        cols = list(self.domain)
        sizes = [len(self.domain[c]) for c in cols]
        codes = (
            training.select(
                [
                    pl.col(c)
                    .cast(pl.String)
                    .replace_strict(
                        self.domain[c], list(range(len(self.domain[c]))), default=None, return_dtype=pl.Int64
                    )
                    for c in cols
                ]
            )
            .drop_nulls()
            .to_numpy()
        )
        cells = int(np.prod(sizes))
        cell = np.ravel_multi_index(codes.T, sizes) if codes.shape[0] else np.zeros(0, dtype=np.int64)
        counts = np.bincount(cell, minlength=cells).astype(np.float64)
        rng = np.random.default_rng(seed)
        noisy = np.clip(counts + rng.laplace(0.0, self.noise_factor / self.epsilon, cells), 0.0, None)
        total = noisy.sum()
        p = noisy / total if total > 0 else np.full(cells, 1.0 / cells)
        drawn = np.unravel_index(rng.choice(cells, size=int(n_rows), p=p), sizes)
        return pl.DataFrame(
            {c: np.asarray(self.domain[c], dtype=object)[i] for c, i in zip(cols, drawn)},
            schema={c: pl.String for c in cols},
        )


def example_real() -> pl.DataFrame:
    """The example's sensitive records: three categorical columns of the bundled Adult sample."""
    from privgate.data import load_example

    return load_example("adult_sample").select(EXAMPLE_COLUMNS)


#: the public domain of the example's columns (the UCI Adult documentation's levels)
EXAMPLE_DOMAIN = {
    "sex": ["Female", "Male"],
    "race": ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"],
    "relationship": ["Husband", "Not-in-family", "Other-relative", "Own-child", "Unmarried", "Wife"],
}


def example_generator(version: str) -> LaplaceHistogram:
    """The example generator of ``version`` (see :data:`EXAMPLE_VERSIONS`)."""
    return LaplaceHistogram(CLAIMED_EPSILON, EXAMPLE_DOMAIN, noise_factor=EXAMPLE_VERSIONS[version])


def build_example_audit(**overrides: Any) -> dg.AssetsDefinition:
    """The bundled example audit (an asset named :data:`EXAMPLE_AUDIT`, one partition per
    version): 200 runs of 500 training rows, 5 targets, in steps of 50 runs."""
    from .audit import build_generator_audit

    kwargs: dict[str, Any] = dict(
        real=example_real,
        generate_for=example_generator,
        claimed_epsilon=CLAIMED_EPSILON,
        runs=200,
        chunk_size=50,
        n_targets=5,
        training_rows=500,
        seed=0,
        versions=list(EXAMPLE_VERSIONS),
        generator_name="privgate.dagster.audit_example.LaplaceHistogram",
    )
    kwargs.update(overrides)
    return build_generator_audit(EXAMPLE_AUDIT, **kwargs)


__all__ = [
    "EXAMPLE_AUDIT",
    "EXAMPLE_DOMAIN",
    "LaplaceHistogram",
    "build_example_audit",
    "example_generator",
    "example_real",
]
