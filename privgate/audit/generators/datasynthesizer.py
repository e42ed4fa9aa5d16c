"""DataSynthesizer's PrivBayes as a generator to audit (extra ``[datasynthesizer]``).

PrivBayes (Zhang, Cormode, Procopiuc, Srivastava, Xiao, "PrivBayes: Private Data Release via
Bayesian Networks", SIGMOD 2014 / TODS 2017) as implemented by DataSynthesizer (Ping, Stoyanovich,
Howe, "DataSynthesizer: Privacy-Preserving Synthetic Datasets", SSDBM 2017), in its "correlated
attribute mode": a Bayesian network of degree ``degree`` chosen with the exponential mechanism
(ε/2), its conditional distributions noised with Laplace noise (ε/2).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping
from unittest import mock

import numpy as np
import polars as pl

from ...errors import ParameterError
from ...threads import limited
from ._common import (
    NUMERIC,
    ColumnDomain,
    DPAdapter,
    check_epsilon,
    check_threads,
    global_seed,
    missing_extra,
    restore_types,
)

__all__ = ["PrivBayesGenerator"]


class _SerialPool:
    """Stands in for ``multiprocessing.Pool`` inside DataSynthesizer's network search: the same
    ``map``, run in this process (one thread; no child processes inside an audit's worker)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> "_SerialPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def map(self, func, iterable):  # noqa: ANN001 - mirrors multiprocessing.Pool.map
        return list(map(func, iterable))


class PrivBayesGenerator(DPAdapter):
    """``generate(training, n_rows, seed)`` for the audit: DataSynthesizer's PrivBayes trained on
    ``training`` (ε-DP as the library claims), then ``n_rows`` records sampled.

    Parameters
    ----------
    epsilon:
        The library's ε; also ``claimed_epsilon``, the claim the audit tests.
    degree:
        The network's degree k (most parents per attribute); 0 lets DataSynthesizer choose.
    domain:
        The PUBLIC domain: column → list of levels (strings; True/False for a boolean column) or
        ``(low, high)`` for a numeric column. Numeric values are clipped to their bounds (they are
        binned in ``histogram_bins`` equal bins over them) and records with a level outside the
        domain are left out before the library sees the data. ``None`` takes the domain from the
        training data — every level seen, the observed minimum and maximum — which BREAKS the DP
        guarantee: a record's rare level or extreme value then shows in the release's domain. An
        audit with canaries finds that; use it to see an audit catch a real fault.
    histogram_bins:
        Bins of each numeric column.
    threads:
        BLAS/OpenMP threads (threadpoolctl); the network search itself runs in this process.

    What the audit should know about the library (DataSynthesizer 0.1.13):

    * Seeding: every draw goes through Python's and NumPy's *global* generators, which the
      library seeds itself; the adapter seeds them from ``seed`` and restores their previous
      states afterwards. The output is deterministic by seed (same training, same seed → the
      same frame; tested) — within one process at a time: two threads calling it at once would
      share the global generators.
    * Threads: the network search starts a ``multiprocessing.Pool`` of one process per core; the
      adapter runs that map in-process instead (one thread; a pool inside an audit's worker
      process would oversubscribe the machine and cannot start from a daemonic worker).
    * Accounting, read from its code: the per-attribute marginals of the "independent attribute
      mode" are noised with another ε (sensitivity 2/n) and are read when sampling an attribute
      whose parents' values have no conditional distribution (for example a missing value), so a
      strict composition gives up to 2ε. The noisy tables of the network span the bin indices
      from 0 to the largest one observed in the private data, not the public domain's, so a
      level that sorts after every observed one can only appear when a record holds it (tested),
      and missing values (encoded after the last level) only when a record has one.
      ``claimed_epsilon`` stays the library's own figure: the audit is the judge.
    """

    library = "DataSynthesizer"
    deterministic_by_seed = True

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        degree: int = 2,
        domain: Mapping[str, Any] | None = None,
        histogram_bins: int = 20,
        threads: int = 1,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 0:
            raise ParameterError("degree must be a non-negative integer (0: the library chooses)")
        if isinstance(histogram_bins, bool) or not isinstance(histogram_bins, int) or histogram_bins < 1:
            raise ParameterError("histogram_bins must be a positive integer")
        check_threads(threads)
        self.degree = degree
        self.threads = threads
        self.domain = None if domain is None else dict(domain)
        self.histogram_bins = histogram_bins

    def __repr__(self) -> str:
        return f"PrivBayesGenerator(epsilon={self.epsilon}, degree={self.degree}, domain={self.domain_words})"

    def __call__(self, training: Any, n_rows: int, seed: int) -> pl.DataFrame:
        try:
            from DataSynthesizer import DataDescriber as describer_module
            from DataSynthesizer.DataGenerator import DataGenerator
            from DataSynthesizer.lib import PrivBayes as privbayes_module
        except ImportError:
            raise missing_extra("DataSynthesizer", "datasynthesizer") from None
        frame, columns, n_rows, seed = self.inputs(training, n_rows, seed)
        fit_seed, sample_seed = (int(s) for s in np.random.SeedSequence(seed).generate_state(2))

        class _FrameDescriber(describer_module.DataDescriber):
            # DataDescriber reads a CSV file; handing it the frame keeps every dtype as declared
            def read_dataset_from_csv(self, file_name=None):  # noqa: ANN001 - library signature
                self.df_input = frame.to_pandas()

        datatypes = {c.name: _datatype(c) for c in columns}
        categorical = {c.name: c.kind != NUMERIC for c in columns}
        keys = {c.name: False for c in columns}  # a "candidate key" would be generated from the data
        ranges = {c.name: [c.low, c.high] for c in columns if c.kind == NUMERIC}
        levels = {c.name: list(c.levels) for c in columns if c.kind != NUMERIC}
        quiet = io.StringIO()
        with (
            tempfile.TemporaryDirectory(prefix="privgate-ds-") as tmp,
            limited(self.threads),
            global_seed(seed),
            mock.patch.object(privbayes_module, "Pool", _SerialPool),
            contextlib.redirect_stdout(quiet),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            domain_file = Path(tmp) / "levels.json"
            domain_file.write_text(json.dumps(levels))
            description = Path(tmp) / "description.json"
            describer = _FrameDescriber(histogram_bins=self.histogram_bins, category_threshold=0)
            common = dict(
                attribute_to_datatype=datatypes,
                attribute_to_is_categorical=categorical,
                attribute_to_is_candidate_key=keys,
                categorical_attribute_domain_file=str(domain_file) if levels else None,
                numerical_attribute_ranges=ranges,
                seed=fit_seed,
            )
            generator = DataGenerator()
            if len(columns) >= 2:
                describer.describe_dataset_in_correlated_attribute_mode(
                    "training", k=self.degree, epsilon=self.epsilon, **common
                )
                describer.save_dataset_description_to_file(str(description))
                generator.generate_dataset_in_correlated_attribute_mode(n_rows, str(description), seed=sample_seed)
            else:  # a network needs two attributes: one column is its noisy marginal
                describer.describe_dataset_in_independent_attribute_mode("training", epsilon=self.epsilon, **common)
                describer.save_dataset_description_to_file(str(description))
                generator.generate_dataset_in_independent_mode(n_rows, str(description), seed=sample_seed)
            release = generator.synthetic_dataset
        return restore_types(_plain_columns(release), columns, n_rows, self.library)


def _datatype(col: ColumnDomain) -> str:
    if col.kind != NUMERIC:
        return "String"
    return "Integer" if col.integer else "Float"


def _plain_columns(release: Any) -> Any:
    """DataSynthesizer builds columns from Python objects (object dtype, None for missing):
    make each one a plain pandas dtype polars converts."""
    out = release.copy()
    for name in out.columns:
        col = out[name]
        if col.dtype == object:
            try:
                out[name] = col.astype("float64")
            except (TypeError, ValueError):
                out[name] = col.astype("string")
    return out
