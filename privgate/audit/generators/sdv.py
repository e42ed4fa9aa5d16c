"""SDV's synthesizers as generators to audit (extra ``[sdv]``): generators WITHOUT a DP guarantee,
for audits that measure how much a plain generator discloses.

* :class:`GaussianCopulaGenerator` — the Gaussian copula of the Synthetic Data Vault (Patki,
  Wedge, Veeramachaneni, "The Synthetic Data Vault", IEEE DSAA 2016): each column's marginal is
  fitted (numerics: a parametric family; categoricals: frequencies), the columns are mapped to
  normal scores, and their correlation matrix is estimated; sampling draws normal vectors and
  maps them back.
* :class:`TVAEGenerator` and :class:`CTGANGenerator` — the tabular variational autoencoder and
  the conditional tabular GAN of Xu, Skoularidou, Cuesta-Infante, Veeramachaneni ("Modeling
  Tabular Data using Conditional GAN", NeurIPS 2019), trained with torch on the CPU: numeric
  columns mode-specific normalised (a Bayesian Gaussian mixture per column), categoricals
  one-hot encoded, then ``epochs`` passes of minibatch training.

Every adapter builds SDV's metadata from the training dtypes and fits, seeds and samples the
same way (:class:`_SDVGenerator`); the two torch models add torch's seed and thread count.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager, nullcontext
from typing import Any, ContextManager, Iterator, Mapping

import numpy as np
import polars as pl

from ...errors import ParameterError
from ...threads import limited
from ._common import NUMERIC, Adapter, ColumnDomain, check_threads, global_seed, missing_extra, restore_types

__all__ = ["GaussianCopulaGenerator", "TVAEGenerator", "CTGANGenerator"]

_DISTRIBUTIONS = ("norm", "beta", "truncnorm", "uniform", "gamma", "gaussian_kde")
#: bounds of the torch models' training options (an epoch count or batch beyond them is a typo)
MAX_EPOCHS = 100_000
MAX_BATCH_SIZE = 1_000_000
#: CTGAN's discriminator sees its batch in groups of ``pac`` records (SDV's default, kept)
CTGAN_PAC = 10


def _sdv_metadata(columns: list[ColumnDomain]) -> Any:
    """SDV's single-table metadata built from the training dtypes — numeric → "numerical" (Float),
    text and booleans → "categorical" — never detected: SDV's detection would take a column for a
    personal identifier from its name or values and replace it with fake values."""
    from sdv.metadata import Metadata

    table = {
        c.name: (
            {"sdtype": "numerical", "computer_representation": "Float"}
            if c.kind == NUMERIC
            else {"sdtype": "categorical"}
        )
        for c in columns
    }
    return Metadata.load_from_dict({"columns": table}, single_table_name="training")


class _SDVGenerator(Adapter):
    """What SDV's adapters share: ``generate(training, n_rows, seed)`` fits the synthesizer
    :meth:`_synthesizer` builds on ``training`` and samples ``n_rows`` records.

    The call (SDV 1.32): metadata from the dtypes (:func:`_sdv_metadata`); warnings silenced and
    SDV's usage log (a CSV under the user's data folder) switched off; BLAS/OpenMP limited to
    ``threads`` (threadpoolctl); Python's and NumPy's global generators seeded from ``seed`` and
    restored afterwards; :meth:`_seeded` for what a subclass seeds besides; after the fit the
    model's sampling generator is set from ``seed`` (SDV's ``_set_random_state``, what SDV's own
    ``sample`` does with a fixed seed). RDT's transformers seed themselves from a hash of the
    data they fit, which ``seed`` cannot change. ``claimed_epsilon`` is None: no SDV synthesizer
    claims DP.
    """

    library = "SDV"
    deterministic_by_seed = True
    claimed_epsilon = None
    threads: int = 1

    def _synthesizer(self, metadata: Any) -> Any:  # pragma: no cover - every subclass has one
        raise NotImplementedError

    def _seeded(self, seed: int) -> ContextManager[None]:
        """What the fit and the sampling run inside besides the global seeds (nothing here)."""
        return nullcontext()

    def __call__(self, training: Any, n_rows: int, seed: int) -> pl.DataFrame:
        try:
            import sdv.single_table  # noqa: F401  (imports torch through ctgan)
            from sdv.logging.utils import disable_single_table_logger
        except ImportError:
            raise missing_extra("SDV", "sdv") from None
        frame, columns, n_rows, seed = self.inputs(training, n_rows, seed)
        metadata = _sdv_metadata(columns)
        data = frame.to_pandas()
        with (
            warnings.catch_warnings(),
            limited(self.threads),
            global_seed(seed),
            self._seeded(seed),
            disable_single_table_logger(),
        ):
            warnings.simplefilter("ignore")
            synthesizer = self._synthesizer(metadata)
            synthesizer.fit(data)
            synthesizer._set_random_state(seed)
            release = synthesizer.sample(num_rows=n_rows)
        return restore_types(release, columns, n_rows, self.library)


class GaussianCopulaGenerator(_SDVGenerator):
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

    Metadata, seeding and logging as :class:`_SDVGenerator` says: the copula's sampling
    generator is set from ``seed``. The output is deterministic by seed (tested).
    """

    def __init__(
        self, *, domain: Mapping[str, Any] | None = None, default_distribution: str = "beta", threads: int = 1
    ) -> None:
        if default_distribution not in _DISTRIBUTIONS:
            raise ParameterError(f"default_distribution must be one of {_DISTRIBUTIONS}")
        check_threads(threads)
        self.domain = None if domain is None else dict(domain)
        self.default_distribution = default_distribution
        self.threads = threads

    def __repr__(self) -> str:
        return (
            f"GaussianCopulaGenerator(default_distribution={self.default_distribution!r}, domain={self.domain_words})"
        )

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import GaussianCopulaSynthesizer

        return GaussianCopulaSynthesizer(metadata, default_distribution=self.default_distribution)


def _check_count(value: Any, name: str, high: int) -> int:
    """``value`` as an int in [1, ``high``]; the error names the option."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= int(value) <= high:
        raise ParameterError(f"{name} must be an integer in [1, {high:,}]; got {value!r}")
    return int(value)


@contextmanager
def torch_seeded(seed: int, threads: int) -> Iterator[None]:
    """torch's global generator seeded from ``seed`` (``torch.manual_seed``) and its intra-op
    pool set to ``threads`` (``torch.set_num_threads``); both restored afterwards, so the
    caller's torch draws and thread count are unchanged by the call."""
    import torch

    state = torch.get_rng_state()
    before = torch.get_num_threads()
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_rng_state(state)
        torch.set_num_threads(before)


class _TorchGenerator(_SDVGenerator):
    """SDV's torch models (TVAE, CTGAN): ``epochs``, ``batch_size`` and ``threads``, trained on
    the CPU (``enable_gpu=False``).

    Seeding (SDV 1.32.1 with CTGAN 0.12.1, torch 2.13 CPU): SDV builds the torch model inside
    ``fit``, with no random state of its own, so the fit draws from torch's and NumPy's global
    generators (weights, minibatch order, the GAN's noise and conditional vectors): both are
    seeded from ``seed`` for the call and restored afterwards; RDT's mode-specific normaliser
    (a Bayesian Gaussian mixture per numeric column) seeds itself from a hash of the data; the
    sampling generators are set from ``seed`` after the fit. On the CPU with a fixed ``threads``
    the release is deterministic by seed (tested with one thread; checked by hand with two), but
    NOT across thread counts: the same seed with one and with two threads gave different
    releases (torch splits its float reductions by thread, so the weights drift apart over the
    epochs). An audit's runs all use the adapter's one ``threads``, so they are reproducible.
    torch's and NumPy's global generators and torch's thread count belong to the process: two
    calls at once in one process (a Dask worker with ``--nthreads 2``) would draw from the same
    generators and lose reproducibility (not soundness) — give such workers one thread.
    """

    def __init__(
        self, *, domain: Mapping[str, Any] | None = None, epochs: int = 300, batch_size: int = 500, threads: int = 1
    ) -> None:
        self.domain = None if domain is None else dict(domain)
        self.epochs = _check_count(epochs, "epochs", MAX_EPOCHS)
        self.batch_size = _check_count(batch_size, "batch_size", MAX_BATCH_SIZE)
        self.threads = check_threads(threads)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epochs={self.epochs}, batch_size={self.batch_size}, domain={self.domain_words})"

    def _seeded(self, seed: int) -> ContextManager[None]:
        return torch_seeded(seed, self.threads)


class TVAEGenerator(_TorchGenerator):
    """``generate(training, n_rows, seed)`` for the audit: SDV's ``TVAESynthesizer`` (a
    variational autoencoder over the mode-normalised, one-hot encoded table; Xu et al., NeurIPS
    2019) trained ``epochs`` passes of ``batch_size`` records on ``training``, then ``n_rows``
    records decoded from normal noise. No privacy guarantee (``claimed_epsilon`` is None): the
    one-hot layer holds every level seen, and numbers are clipped to the observed range
    (``enforce_min_max_values``).

    Parameters
    ----------
    domain:
        as :class:`GaussianCopulaGenerator`'s (clipping to public bounds and leaving out records
        with a level outside the public levels; the model still learns from the data).
    epochs:
        training passes over the data, in [1, 100,000] (SDV's default 300; a fit's time grows
        with it linearly).
    batch_size:
        records per minibatch, in [1, 1,000,000] (SDV's default 500; the last batch of an
        epoch may be smaller).
    threads:
        torch's intra-op threads and BLAS/OpenMP threads while fitting and sampling.

    Seeding and determinism: see :class:`_TorchGenerator` (deterministic by seed on the CPU at a
    fixed ``threads``; tested with one).
    """

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import TVAESynthesizer

        return TVAESynthesizer(metadata, epochs=self.epochs, batch_size=self.batch_size, enable_gpu=False)


class CTGANGenerator(_TorchGenerator):
    """``generate(training, n_rows, seed)`` for the audit: SDV's ``CTGANSynthesizer`` (a
    conditional Wasserstein GAN with gradient penalty over the mode-normalised, one-hot encoded
    table, training-by-sampling of the categorical levels; Xu et al., NeurIPS 2019) trained
    ``epochs`` epochs on ``training``, then ``n_rows`` records generated. No privacy guarantee
    (``claimed_epsilon`` is None): the conditional vector draws every level seen, rare ones at
    their log frequency.

    Parameters
    ----------
    domain:
        as :class:`GaussianCopulaGenerator`'s.
    epochs:
        training epochs, in [1, 100,000] (SDV's default 300).
    batch_size:
        records per step, a multiple of 10 in [10, 1,000,000] (SDV's default 500): the
        discriminator judges records in packs of 10 (SDV's ``pac``, kept at its default).
    threads:
        torch's intra-op threads and BLAS/OpenMP threads while fitting and sampling.

    Seeding and determinism: see :class:`_TorchGenerator`.
    """

    def __init__(
        self, *, domain: Mapping[str, Any] | None = None, epochs: int = 300, batch_size: int = 500, threads: int = 1
    ) -> None:
        super().__init__(domain=domain, epochs=epochs, batch_size=batch_size, threads=threads)
        if self.batch_size % CTGAN_PAC:
            raise ParameterError(
                f"batch_size must be a multiple of {CTGAN_PAC} for CTGAN (its discriminator "
                f"judges packs of {CTGAN_PAC} records); got {self.batch_size}"
            )

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import CTGANSynthesizer

        return CTGANSynthesizer(
            metadata, epochs=self.epochs, batch_size=self.batch_size, pac=CTGAN_PAC, enable_gpu=False
        )
