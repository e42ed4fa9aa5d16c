"""SDV's Gaussian copula as a generator to audit (extra ``[sdv]``): a generator WITHOUT a DP
guarantee, for audits that measure how much a plain generator discloses.

The Gaussian copula synthesizer of the Synthetic Data Vault (Patki, Wedge, Veeramachaneni, "The
Synthetic Data Vault", IEEE DSAA 2016): each column's marginal is fitted (numerics: a parametric
family; categoricals: frequencies), the columns are mapped to normal scores, and their
correlation matrix is estimated; sampling draws normal vectors and maps them back.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import polars as pl

from ...errors import ParameterError
from ...threads import limited
from ._common import (NUMERIC, Adapter, check_threads, global_seed, missing_extra, restore_types)

__all__ = ["GaussianCopulaGenerator"]

_DISTRIBUTIONS = ("norm", "beta", "truncnorm", "uniform", "gamma", "gaussian_kde")


class GaussianCopulaGenerator(Adapter):
    """``generate(training, n_rows, seed)`` for the audit: SDV's ``GaussianCopulaSynthesizer``
    fitted on ``training``, then ``n_rows`` records sampled. It has no privacy guarantee
    (``claimed_epsilon`` is None): fitted marginals keep each numeric column's observed minimum
    and maximum (``enforce_min_max_values``) and every categorical level seen, with its frequency.

    Parameters
    ----------
    domain:
        Column → list of levels (strings; True/False for a boolean column) or ``(low, high)`` for
        a numeric column. Given, numeric values are clipped to the bounds and records with a level
        outside the domain are left out before SDV sees them, as for the DP adapters (SDV still
        learns its marginals from the data, so this bounds what it can disclose without making it
        private). ``None`` lets SDV learn everything from the training data.
    default_distribution:
        SDV's family for the numeric marginals ("beta", SDV's default; "norm", "truncnorm",
        "uniform", "gamma", "gaussian_kde").
    threads:
        BLAS/OpenMP threads while fitting and sampling (threadpoolctl).

    The metadata is built from the training dtypes (numeric → "numerical", text and booleans →
    "categorical"), never detected: SDV's detection would take a column for a personal
    identifier from its name or values and replace it with fake values. SDV's usage log (a CSV
    under the user's data folder) is switched off for the call.

    Seeding (SDV 1.32): the copula's sampling generator is set from ``seed`` (SDV's
    ``_set_random_state``, what SDV's own ``sample`` does with a fixed seed); RDT's transformers
    seed themselves from a hash of the data they fit, which ``seed`` cannot change; anything
    drawing from NumPy's global generator is seeded from ``seed`` and restored afterwards. The
    output is deterministic by seed (tested).
    """

    library = "SDV"
    deterministic_by_seed = True
    claimed_epsilon = None

    def __init__(self, *, domain: Mapping[str, Any] | None = None, default_distribution: str = "beta",
                 threads: int = 1) -> None:
        if default_distribution not in _DISTRIBUTIONS:
            raise ParameterError(f"default_distribution must be one of {_DISTRIBUTIONS}")
        check_threads(threads)
        self.domain = None if domain is None else dict(domain)
        self.default_distribution = default_distribution
        self.threads = threads


    def __repr__(self) -> str:
        return (f"GaussianCopulaGenerator(default_distribution={self.default_distribution!r}, "
                f"domain={self.domain_words})")

    def __call__(self, training: Any, n_rows: int, seed: int) -> pl.DataFrame:
        try:
            from sdv.logging.utils import disable_single_table_logger
            from sdv.metadata import Metadata
            from sdv.single_table import GaussianCopulaSynthesizer
        except ImportError:
            raise missing_extra("SDV", "sdv") from None
        frame, columns, n_rows, seed = self.inputs(training, n_rows, seed)
        table = {c.name: ({"sdtype": "numerical", "computer_representation": "Float"} if c.kind == NUMERIC
                          else {"sdtype": "categorical"}) for c in columns}
        metadata = Metadata.load_from_dict({"columns": table}, single_table_name="training")
        data = frame.to_pandas()
        with warnings.catch_warnings(), limited(self.threads), global_seed(seed), disable_single_table_logger():
            warnings.simplefilter("ignore")
            synthesizer = GaussianCopulaSynthesizer(metadata, default_distribution=self.default_distribution)
            synthesizer.fit(data)
            synthesizer._set_random_state(seed)
            release = synthesizer.sample(num_rows=n_rows)
        return restore_types(release, columns, n_rows, self.library)
