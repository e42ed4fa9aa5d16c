"""A Gaussian copula built from SDV's own components, Copulas and RDT, without SDV and torch
(extra ``[copulas]``): a generator WITHOUT a DP guarantee, for audits that measure how much a
plain generator discloses, cheap enough to install anywhere.

The model is the Gaussian copula of the Synthetic Data Vault (Patki, Wedge, Veeramachaneni, "The
Synthetic Data Vault", IEEE DSAA 2016): RDT turns each column into a number (numerics as floats,
missing values replaced by the mean and drawn again at the observed rate; categoricals by RDT's
``UniformEncoder``, each level an interval of [0, 1] as wide as its frequency), Copulas'
``GaussianMultivariate`` fits a univariate family per column and the correlation of their normal
scores, and sampling runs the chain backwards.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import polars as pl

from ...errors import ParameterError
from ...threads import limited
from ._common import NUMERIC, Adapter, check_threads, global_seed, missing_extra, restore_types

__all__ = ["CopulaGenerator"]

_FAMILIES = {
    "norm": "copulas.univariate.GaussianUnivariate",
    "beta": "copulas.univariate.BetaUnivariate",
    "truncnorm": "copulas.univariate.TruncatedGaussian",
    "uniform": "copulas.univariate.UniformUnivariate",
    "gamma": "copulas.univariate.GammaUnivariate",
    "gaussian_kde": "copulas.univariate.GaussianKDE",
}


class CopulaGenerator(Adapter):
    """``generate(training, n_rows, seed)`` for the audit: a Gaussian copula (Copulas + RDT) fitted
    on ``training``, then ``n_rows`` records sampled. No privacy guarantee (``claimed_epsilon``
    is None): each numeric column keeps its observed minimum and maximum, each categorical
    column every level seen with its frequency.

    Parameters
    ----------
    domain:
        Column → list of levels (strings; True/False for a boolean column) or ``(low, high)`` for
        a numeric column. Given, numeric values are clipped to the bounds and records with a level
        outside the domain are left out first, as for the DP adapters (the copula still learns
        from the data, so this bounds what it can disclose without making it private). ``None``
        lets the copula learn everything from the training data.
    distribution:
        The univariate family of every column: "beta" (SDV's default), "norm", "truncnorm",
        "uniform", "gamma" or "gaussian_kde".
    threads:
        BLAS/OpenMP threads while fitting and sampling (threadpoolctl).

    Seeding (Copulas 0.14, RDT 1.19): the copula's sampling takes ``seed``; RDT's transformers
    seed themselves from a hash of the data they fit, which ``seed`` cannot change; NumPy's
    global generator is seeded from ``seed`` and restored afterwards. The output is
    deterministic by seed (tested).
    """

    library = "Copulas"
    claimed_epsilon = None
    deterministic_by_seed = True

    def __init__(
        self, *, domain: Mapping[str, Any] | None = None, distribution: str = "beta", threads: int = 1
    ) -> None:
        if distribution not in _FAMILIES:
            raise ParameterError(f"distribution must be one of {sorted(_FAMILIES)}")
        check_threads(threads)
        self.domain = None if domain is None else dict(domain)
        self.distribution = distribution
        self.threads = threads

    def __repr__(self) -> str:
        return f"CopulaGenerator(distribution={self.distribution!r}, domain={self.domain_words})"

    def __call__(self, training: Any, n_rows: int, seed: int) -> pl.DataFrame:
        try:
            from copulas.multivariate import GaussianMultivariate
            from rdt import HyperTransformer
            from rdt.transformers import FloatFormatter, UniformEncoder
        except ImportError:
            raise missing_extra("Copulas and RDT", "copulas") from None
        frame, columns, n_rows, seed = self.inputs(training, n_rows, seed)
        data = frame.to_pandas()
        for c in columns:  # RDT reads text columns as objects
            if c.kind != NUMERIC:
                data[c.name] = data[c.name].astype(object)
        config = {
            "sdtypes": {c.name: "numerical" if c.kind == NUMERIC else "categorical" for c in columns},
            "transformers": {
                c.name: (
                    FloatFormatter(
                        missing_value_replacement="mean", missing_value_generation="random", enforce_min_max_values=True
                    )
                    if c.kind == NUMERIC
                    else UniformEncoder()
                )
                for c in columns
            },
        }
        with warnings.catch_warnings(), limited(self.threads), global_seed(seed):
            warnings.simplefilter("ignore")
            transformer = HyperTransformer()
            transformer.set_config(config)
            encoded = transformer.fit_transform(data)
            copula = GaussianMultivariate(distribution=_FAMILIES[self.distribution], random_state=seed)
            copula.fit(encoded)
            sampled = copula.sample(n_rows)
            release = transformer.reverse_transform(sampled)
        return restore_types(release, columns, n_rows, self.library)
