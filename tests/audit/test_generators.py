"""Generator adapters: the public domain (clipping, leaving out records with unlisted levels), the
release's types, seeding, and — per library, where it installs — that a canary outside a public
domain never reaches the release while a domain read from the data lets it through."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import polars as pl
import pytest

from privgate.audit.generators import ADAPTERS, _common
from privgate.errors import ParameterError, UnsupportedDtypeError

CANARY_LEVEL = "zz-canary"
CANARY_AGE = 10_000


def _training(n: int = 60, seed: int = 0, canary: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    frame = pl.DataFrame(
        {
            "age": age,
            "income": (age * 500 + rng.normal(0, 3000, n)).round(2),
            "city": rng.choice(["a", "b", "c"], n),
            "member": rng.random(n) < 0.4,
        }
    )
    if canary:
        frame = pl.concat(
            [frame, pl.DataFrame({"age": [CANARY_AGE], "income": [1e9], "city": [CANARY_LEVEL], "member": [True]})]
        )
    return frame


DOMAIN = {"age": (0, 120), "income": (-1e5, 1e5), "city": ["a", "b", "c", "d"], "member": [False, True]}


# ---- the shared public-domain handling (no library needed) ----


def test_public_domain_clips_numbers_and_leaves_out_unlisted_levels():
    frame = pl.DataFrame({"x": [-5, 3, 50], "s": ["a", "q", None], "b": [True, False, True]})
    prepared, cols = _common.prepare_training(frame, domain={"x": (0, 10), "s": ["b", "a"], "b": [True, False]})
    # the "q" record is left out; the null stays (the libraries model missing values); -5 → 0, 50 → 10
    assert prepared.to_dict(as_series=False) == {"x": [0.0, 10.0], "s": ["a", None], "b": ["true", "true"]}
    assert [c.kind for c in cols] == ["numeric", "categorical", "categorical"]
    assert cols[1].levels == ("a", "b") and cols[2].levels == ("false", "true")
    assert (cols[0].low, cols[0].high) == (0.0, 10.0)


def test_domain_read_from_the_data_takes_every_level_and_the_extremes():
    frame = pl.DataFrame({"x": [2.5, -1.0, 7.0], "s": ["b", "a", "b"], "k": [4, 4, 4]})
    cols = _common.resolve_domain(frame, None)
    assert (cols[0].low, cols[0].high) == (-1.0, 7.0)
    assert cols[1].levels == ("a", "b")
    assert (cols[2].low, cols[2].high) == (4.0, 5.0)  # a constant column gets a unit interval


@pytest.mark.parametrize(
    "domain, fragment",
    [
        ({"x": (0, 1)}, "missing: ['s']"),
        ({"x": (0, 1), "s": ["a"], "y": ["a"]}, "does not have: ['y']"),
        ({"x": (1, 0), "s": ["a"]}, "low < high"),
        ({"x": (0, float("inf")), "s": ["a"]}, "finite"),
        ({"x": [0, 1, 2], "s": ["a"]}, "pair (low, high)"),
        ({"x": (0, 1), "s": "abc"}, "list of its levels"),
        ({"x": (0, 1), "s": ["a", "a"]}, "twice"),
        ({"x": (0, 1), "s": [1, 2]}, "strings"),
        ({"x": (0, 1), "s": []}, "no level"),
    ],
)
def test_a_bad_domain_is_refused_naming_the_column(domain, fragment):
    frame = pl.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]})
    with pytest.raises(ParameterError) as info:
        _common.resolve_domain(frame, domain)
    assert fragment in str(info.value)
    assert "'b'" not in str(info.value)  # never a value of a record


def test_unsupported_dtypes_and_arguments_are_refused():
    with pytest.raises(UnsupportedDtypeError, match="'d'"):
        _common.resolve_domain(pl.DataFrame({"d": pl.Series([1, 2]).cast(pl.Date)}), None)
    for bad in (-1, 2**32, 1.5, True, "3"):
        with pytest.raises(ParameterError):
            _common.check_seed(bad)
    for bad in (0, -2, 2.0, False):
        with pytest.raises(ParameterError):
            _common.check_rows(bad)


def test_release_gets_the_training_types_back():
    cols = _common.resolve_domain(
        pl.DataFrame(
            {
                "i": pl.Series([1, 2], dtype=pl.Int32),
                "f": [0.5, 1.5],
                "s": pl.Series(["a", "b"], dtype=pl.Categorical),
                "b": [True, False],
            }
        ),
        None,
    )
    release = pd.DataFrame(
        {
            "b": ["true", "false", None],
            "s": ["b", "a", "a"],
            "f": [1, 2, 3],
            "i": [1.4, 2.6, np.nan],
            "extra": [0, 0, 0],
        }
    )
    out = _common.restore_types(release, cols, 3, "test")
    assert out.columns == ["i", "f", "s", "b"]
    assert out.schema == pl.Schema({"i": pl.Int32, "f": pl.Float64, "s": pl.String, "b": pl.Boolean})
    assert out.to_dict(as_series=False) == {
        "i": [1, 3, None],
        "f": [1.0, 2.0, 3.0],
        "s": ["b", "a", "a"],
        "b": [True, False, None],
    }
    with pytest.raises(ParameterError, match="3 rows; 4 were asked"):
        _common.restore_types(release, cols, 4, "test")


def test_global_seed_restores_the_callers_generators():
    np.random.seed(7)
    expected = np.random.random()
    np.random.seed(7)
    with _common.global_seed(123):
        inside = np.random.random()
    assert np.random.random() == expected
    with _common.global_seed(123):
        assert np.random.random() == inside


def test_adapters_are_listed_by_import_path():
    import importlib

    for name, path in ADAPTERS.items():
        module, _, attr = path.partition(":")
        assert hasattr(importlib.import_module(module), attr), name  # importable without the library


# ---- each library, where it installs ----

# name, module to import (skips where the library is not installed), adapter options: dpmm's
# AIM with few Private-PGM iterations (utility only) to stay fast; its MST is tested once, slow
LIBRARIES = [
    pytest.param("privbayes", "DataSynthesizer", {}, id="datasynthesizer-privbayes"),
    pytest.param("gaussian_copula", "sdv", {}, id="sdv-gaussian-copula"),
    # SDV's torch models, 2 epochs: a fit of 60 records takes well under a second
    pytest.param("tvae", "sdv", {"epochs": 2, "batch_size": 50}, id="sdv-tvae"),
    pytest.param("ctgan", "sdv", {"epochs": 2, "batch_size": 50}, id="sdv-ctgan"),
    pytest.param("copula", "copulas", {}, id="copulas-rdt"),
    pytest.param("dpmm_aim", "dpmm", {"n_iters": 20}, id="dpmm-aim"),
]


def _make(name: str, **kwargs):
    from privgate.audit.generators import load_adapter

    return load_adapter(name)(**kwargs)


@pytest.mark.parametrize("name, library, options", LIBRARIES)
def test_release_has_the_rows_columns_and_dtype_kinds(name, library, options):
    pytest.importorskip(library)
    training = _training(canary=False)
    gen = _make(name, **options)
    for frame in (training, training.to_pandas(), training.to_arrow()):
        out = gen(frame, 25, 3)
        assert isinstance(out, pl.DataFrame) and out.height == 25
        assert out.schema == training.schema


@pytest.mark.parametrize("name, library, options", LIBRARIES)
def test_same_seed_same_release_other_seed_other_release(name, library, options):
    pytest.importorskip(library)
    gen = pickle.loads(pickle.dumps(_make(name, domain=DOMAIN, **options)))  # a process pool pickles it
    training = _training()
    first = gen(training, 30, 11)
    assert not first.equals(gen(training, 30, 12))
    if gen.deterministic_by_seed:
        assert first.equals(gen(training, 30, 11))


@pytest.mark.parametrize("name, library, options", LIBRARIES)
def test_public_domain_keeps_canaries_out(name, library, options):
    pytest.importorskip(library)
    gen = _make(name, domain=DOMAIN, **options)
    for seed in range(3):
        out = gen(_training(seed=seed), 400, seed)
        assert CANARY_LEVEL not in out["city"].to_list()
        assert out["age"].max() <= 120 and out["income"].max() <= 1e5


@pytest.mark.parametrize("name, library, options", LIBRARIES)
def test_domain_from_the_data_lets_canaries_through(name, library, options):
    # the domain read from the data holds the canary's level and stretches age to 10 000: with
    # noise made negligible (ε = 1e6) the level is drawn with probability ≈ 1/61 per record,
    # so 2 000 records hold it (P(none) ≈ e^-30), and ages spread over the stretched range
    pytest.importorskip(library)
    gen = _make(name, **options)
    if not gen.deterministic_by_seed:
        pytest.skip(
            "unseedable noise: whether a rare level is drawn varies run to run; "
            "the domain handed to the library is checked instead"
        )
    if gen.claimed_epsilon is not None:
        gen = _make(name, epsilon=1e6, **options)
    out = gen(_training(), 2000, 0)
    assert CANARY_LEVEL in out["city"].to_list()
    assert out["age"].max() > 120


@pytest.mark.parametrize("public", [True, False])
def test_dpmm_gets_the_public_domain_or_the_one_read_from_the_data(public, monkeypatch):
    pipelines = pytest.importorskip("dpmm.pipelines")
    from privgate.audit.generators.dpmm import AIMGenerator

    seen = {}
    fit = pipelines.AIMPipeline.fit

    def spy(self, df, domain=None, **kwargs):
        seen.update(domain=domain, rows=len(df))
        return fit(self, df, domain=domain, **kwargs)

    monkeypatch.setattr(pipelines.AIMPipeline, "fit", spy)
    AIMGenerator(1.0, domain=DOMAIN if public else None, n_iters=5)(_training(), 10, 0)
    if public:  # the canary's record is left out; the domain is exactly the public one
        assert seen["rows"] == 60
        assert seen["domain"]["city"] == {"categories": ["a", "b", "c", "d"]}
        assert seen["domain"]["age"] == {"lower": 0.0, "upper": 120.0}
    else:  # read from the data: the canary's level and age are in it
        assert seen["rows"] == 61
        assert seen["domain"]["city"] == {"categories": ["a", "b", "c", CANARY_LEVEL]}
        assert seen["domain"]["age"]["upper"] == CANARY_AGE


@pytest.mark.slow
def test_dpmm_mst_keeps_a_canary_out_of_a_public_domain():
    pytest.importorskip("dpmm")
    from privgate.audit.generators.dpmm import MSTGenerator

    gen = MSTGenerator(1.0, 1e-9, domain=DOMAIN, n_iters=20)
    assert gen.claimed_epsilon == 1.0 and not gen.deterministic_by_seed
    out = gen(_training(), 400, 0)
    assert out.schema == _training().schema and out.height == 400
    assert CANARY_LEVEL not in out["city"].to_list() and out["age"].max() <= 120


def test_dpmm_adapters_refuse_bad_parameters():
    from privgate.audit.generators.dpmm import AIMGenerator, MSTGenerator

    assert MSTGenerator(0.5).claimed_epsilon == 0.5
    for bad in (dict(epsilon=-1), dict(delta=0), dict(delta=1), dict(n_bins=1), dict(n_iters=0)):
        with pytest.raises(ParameterError):
            AIMGenerator(**bad)


def test_privbayes_claims_its_epsilon_and_refuses_bad_parameters():
    from privgate.audit.generators.datasynthesizer import PrivBayesGenerator

    gen = PrivBayesGenerator(0.5, domain=DOMAIN)
    assert gen.claimed_epsilon == 0.5 and gen.public_domain
    assert "zz" not in repr(PrivBayesGenerator(1.0, domain={"city": ["zz"]}))
    for bad in (dict(epsilon=0), dict(epsilon=float("nan")), dict(degree=-1), dict(histogram_bins=0)):
        with pytest.raises(ParameterError):
            PrivBayesGenerator(**bad)


def test_copulas_claim_nothing():
    from privgate.audit.generators.copulas import CopulaGenerator
    from privgate.audit.generators.sdv import GaussianCopulaGenerator

    assert GaussianCopulaGenerator().claimed_epsilon is None and CopulaGenerator().claimed_epsilon is None
    with pytest.raises(ParameterError):
        GaussianCopulaGenerator(default_distribution="cauchy")
    with pytest.raises(ParameterError):
        CopulaGenerator(distribution="cauchy")
    with pytest.raises(ParameterError):
        CopulaGenerator(threads=0)


def test_sdv_torch_models_claim_nothing_and_refuse_bad_parameters():
    from privgate.audit.generators.sdv import CTGANGenerator, TVAEGenerator

    assert TVAEGenerator().claimed_epsilon is None and CTGANGenerator().claimed_epsilon is None
    for cls in (TVAEGenerator, CTGANGenerator):
        for option, bad in (
            ("epochs", 0),
            ("epochs", 10**6),
            ("epochs", 2.0),
            ("epochs", True),
            ("batch_size", 0),
            ("batch_size", 10**7),
            ("batch_size", "50"),
            ("threads", 0),
        ):
            with pytest.raises(ParameterError, match=option):
                cls(**{option: bad})
    with pytest.raises(ParameterError, match="batch_size must be a multiple of 10"):
        CTGANGenerator(batch_size=55)
    assert "zz" not in repr(TVAEGenerator(domain={"city": ["zz"]}))


@pytest.mark.parametrize("name", ["tvae", "ctgan"])
def test_sdv_torch_models_restore_torchs_seed_and_threads(name):
    torch = pytest.importorskip("torch")
    pytest.importorskip("sdv")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        torch.manual_seed(5)
        expected = torch.rand(3)
        torch.manual_seed(5)
        out = _make(name, epochs=1, batch_size=50, threads=1)(_training(canary=False), 10, 4)
        assert out.height == 10
        assert torch.equal(torch.rand(3), expected)  # the caller's torch draws are unchanged
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_privbayes_on_one_column_uses_its_noisy_marginal():
    pytest.importorskip("DataSynthesizer")
    from privgate.audit.generators.datasynthesizer import PrivBayesGenerator

    out = PrivBayesGenerator(1.0, domain={"city": ["a", "b"]})(pl.DataFrame({"city": ["a", "b", "q"] * 10}), 50, 0)
    assert out.schema == pl.Schema({"city": pl.String}) and set(out["city"]) <= {"a", "b"}


def test_privbayes_public_level_sorting_last_appears_only_when_a_record_holds_it():
    # DataSynthesizer's noisy tables span bin indices 0..(largest observed), not the public
    # domain: "d" (public, sorts last) is never drawn unless a training record holds it — a DP
    # violation the library has even with a public domain, which an audit should find. "0"
    # (public, unobserved, sorts first) is drawn: the tables do cover unobserved low indices.
    pytest.importorskip("DataSynthesizer")
    from privgate.audit.generators.datasynthesizer import PrivBayesGenerator

    gen = PrivBayesGenerator(1.0, domain={**DOMAIN, "city": ["0", "a", "b", "c", "d"]})
    without = gen(_training(canary=False), 2000, 0)["city"]
    assert "d" not in without.to_list() and "0" in without.to_list()
    held = _training(canary=False).with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("d")).otherwise(pl.col("city")).alias("city")
    )
    assert "d" in gen(held, 2000, 0)["city"].to_list()


def test_privbayes_runs_in_a_daemonic_pool_worker_and_gives_the_same_release():
    # an audit runs generators in worker processes; DataSynthesizer would start a process pool
    # of its own, which a daemonic worker may not do — the adapter runs that map in-process
    pytest.importorskip("DataSynthesizer")
    import multiprocessing

    from privgate.audit.generators.datasynthesizer import PrivBayesGenerator

    gen = PrivBayesGenerator(1.0, domain=DOMAIN)
    training = _training()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out = pool.apply(gen, (training, 20, 5))
    assert out.equals(gen(training, 20, 5))


@pytest.mark.parametrize(
    "name, module, extra",
    [
        ("privbayes", "DataSynthesizer", "datasynthesizer"),
        ("gaussian_copula", "sdv", "sdv"),
        ("tvae", "sdv", "sdv"),
        ("ctgan", "sdv", "sdv"),
        ("copula", "copulas", "copulas"),
        ("dpmm_mst", "dpmm", None),
    ],
)
def test_a_missing_library_names_the_extra_to_install(name, module, extra, monkeypatch):
    import sys

    # None in sys.modules makes an import fail as if not installed; submodules already imported
    # by earlier tests are cached under their own names, so block those too
    for loaded in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, loaded, None)
    # dpmm is no extra: it runs in an environment of its own (privgate.audit.generators.isolated)
    match = rf"privgate\[{extra}\]" if extra else "environment of its own.*IsolatedGenerator"
    with pytest.raises(ImportError, match=match):
        _make(name)(_training(canary=False), 5, 0)
