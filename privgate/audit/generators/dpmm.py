"""dpmm's marginal-based DP generators, MST and AIM, as generators to audit (in their own environment).

MST (McKenna, Miklau, Sheldon, "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data", Journal of Privacy and Confidentiality 2021) measures the
1-way marginals and a maximum spanning tree of 2-way marginals chosen with the exponential
mechanism; AIM (McKenna, Mullins, Sheldon, Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", VLDB 2022) chooses its marginals adaptively; both fit a
graphical model to the noisy marginals (Private-PGM) and sample it. dpmm (Mahiou, Dizche, Nazari,
Wu, Abbey, Silva, Ganev, "dpmm: Differentially Private Multi-Marginal Models", 2025) packages them
with numeric binning.

dpmm 0.1.9 pins numpy 1.26.4, pandas 2.1.0 and scikit-learn 1.5.0 exactly, so it is no extra of
privgate: it installs in an environment of its own, where :class:`.isolated.IsolatedGenerator`
runs this adapter (docs/audit-generators.md).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Mapping

import polars as pl

from ...errors import ParameterError
from ...threads import limited
from ._common import NUMERIC, DPAdapter, check_epsilon, check_threads, global_seed, restore_types

__all__ = ["MSTGenerator", "AIMGenerator"]


class _DpmmGenerator(DPAdapter):
    """``generate(training, n_rows, seed)`` for the audit: a dpmm pipeline fitted on ``training``
    ((ε, δ)-DP as the library claims, via zero-concentrated DP), then ``n_rows`` records sampled.

    Parameters
    ----------
    epsilon, delta:
        The library's (ε, δ); ``claimed_epsilon`` is ε (numeric bins over public bounds spend
        nothing more).
    domain:
        The PUBLIC domain: column → list of levels (strings; True/False for a boolean column) or
        ``(low, high)`` for a numeric column, binned in ``n_bins`` equal bins over the bounds
        (dpmm's uniform binner; no budget is spent on bins). Numeric values are clipped to their
        bounds and records with a level outside the domain are left out before dpmm sees them.
        ``None`` takes the domain from the training data (levels seen, observed minimum and
        maximum) — what dpmm itself does, with a "PrivacyLeakage" warning, when a column has no
        domain — which BREAKS the DP guarantee; an audit with canaries finds it.
    n_bins:
        Equal-width bins of each numeric column.
    threads:
        BLAS/OpenMP threads while fitting and sampling (threadpoolctl).
    n_iters:
        Iterations of Private-PGM's estimation (dpmm's default is 10 000 for MST, 1 000 for
        AIM; fewer is faster and changes only utility, never privacy).

    What the audit should know about the library (dpmm 0.1.9):

    * Seeding: dpmm takes a NumPy ``RandomState`` for its own draws (the choice of marginals,
      the model's sampling, bin positions); the adapter passes one seeded from ``seed``. Its DP
      noise is drawn by OpenDP's samplers from the operating system's secure generator, which
      cannot be seeded: the output is NOT deterministic by seed (``deterministic_by_seed`` is
      False), as a DP library's noise should be.
    * Cost: MST's choice of marginals runs 2 500 Private-PGM iterations whatever ``n_iters``
      says (about 20 s for 60 records of 4 columns here); AIM with ``n_iters=50`` takes 1–4 s.
    * Threads: ``n_jobs=1`` (dpmm otherwise starts a process pool of all cores but one) and
      ``threads`` BLAS/OpenMP threads (1 by default).
    * Read from its code: a column holding a single value in the private data is released as
      that constant, without noise, and a column with missing values gets an extra indicator
      column only when the private data has one — both data-dependent choices outside the DP
      accounting that an audit may detect.
    """

    library = "dpmm"
    deterministic_by_seed = False
    _pipeline = ""
    _default_iters = 1000

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        *,
        domain: Mapping[str, Any] | None = None,
        n_bins: int = 20,
        n_iters: int | None = None,
        threads: int = 1,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        delta = float(delta)
        if not 0.0 < delta < 1.0:
            raise ParameterError("delta must be in (0, 1)")
        if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 2:
            raise ParameterError("n_bins must be an integer ≥ 2")
        if n_iters is not None and (isinstance(n_iters, bool) or not isinstance(n_iters, int) or n_iters < 1):
            raise ParameterError("n_iters must be a positive integer")
        check_threads(threads)
        self.delta = delta
        self.threads = threads
        self.domain = None if domain is None else dict(domain)
        self.n_bins = n_bins
        self.n_iters = self._default_iters if n_iters is None else n_iters

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon}, delta={self.delta}, domain={self.domain_words})"

    def __call__(self, training: Any, n_rows: int, seed: int) -> pl.DataFrame:
        try:
            import dpmm.pipelines as pipelines
        except ImportError:
            raise ImportError(
                "this generator adapter needs dpmm, which pins NumPy 1.26 and cannot be installed "
                "beside privgate: install it in an environment of its own and audit it through "
                "IsolatedGenerator(python, 'dpmm_mst', ...) (docs/audit-generators.md)"
            ) from None
        from numpy.random import RandomState

        frame, columns, n_rows, seed = self.inputs(training, n_rows, seed)
        domain = {
            c.name: ({"lower": c.low, "upper": c.high} if c.kind == NUMERIC else {"categories": list(c.levels)})
            for c in columns
        }
        data = frame.to_pandas()
        for c in columns:  # dpmm tells numeric from categorical by the pandas dtype
            if c.kind != NUMERIC:
                data[c.name] = data[c.name].astype(object)
        pipeline = getattr(pipelines, self._pipeline)(
            epsilon=self.epsilon,
            delta=self.delta,
            n_jobs=1,
            gen_kwargs={"n_iters": self.n_iters},
            binner_type="uniform",
            proc_epsilon=None,
            n_bins=self.n_bins,
        )
        quiet = logging.getLogger("dpmm")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings(), limited(self.threads), global_seed(seed):
                warnings.simplefilter("ignore")
                pipeline.fit(data, domain=domain, random_state=RandomState(seed))
                release = pipeline.generate(n_records=n_rows, random_state=RandomState(seed ^ 0x5EED))
        finally:
            quiet.setLevel(level)
        return restore_types(release, columns, n_rows, self.library)


class MSTGenerator(_DpmmGenerator):
    __doc__ = "dpmm's MST. " + (_DpmmGenerator.__doc__ or "")
    _pipeline = "MSTPipeline"


class AIMGenerator(_DpmmGenerator):
    __doc__ = "dpmm's AIM. " + (_DpmmGenerator.__doc__ or "")
    _pipeline = "AIMPipeline"
