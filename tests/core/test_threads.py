"""privgate.threads: one thread budget per run (explicit > $PRIVGATE_THREADS > free cores),
applied to BLAS/OpenMP/faiss inside `limited`, and OpenMP told not to spin."""

from __future__ import annotations

import os

import pytest

from privgate.errors import ParameterError
from privgate.threads import ENV_VAR, available_cores, free_cores, limited, resolve_threads


def test_budget_order_and_cap(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "1")
    assert resolve_threads() == 1
    assert resolve_threads(10_000) == available_cores()  # explicit wins, capped at the cores
    monkeypatch.delenv(ENV_VAR)
    # free cores = available − 1-minute load, rounded, at least 1 (load fixed: no timing race)
    monkeypatch.setattr("privgate.threads.available_cores", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.6, 0.0, 0.0))
    assert free_cores() == 3 == resolve_threads()
    monkeypatch.setattr(os, "getloadavg", lambda: (1e6, 0.0, 0.0))
    assert free_cores() == 1  # a saturated machine still gets one thread


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "two"])
def test_invalid_budgets_are_named(monkeypatch, bad):
    with pytest.raises(ParameterError, match="threads"):
        resolve_threads(bad)
    monkeypatch.setenv(ENV_VAR, str(bad))
    with pytest.raises(ParameterError, match=ENV_VAR):
        resolve_threads()


def test_limited_sets_blas_openmp_and_faiss_and_restores():
    import faiss
    import numpy as np  # noqa: F401  (loads BLAS)
    from threadpoolctl import threadpool_info

    before = faiss.omp_get_max_threads()
    with limited(1):
        assert faiss.omp_get_max_threads() == 1
        pools = threadpool_info()
        assert pools and all(p["num_threads"] == 1 for p in pools)
    assert faiss.omp_get_max_threads() == before


@pytest.mark.parametrize("given, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_is_told_not_to_spin_unless_the_user_chose(given, expected):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run(
        [sys.executable, "-c", "import os, privgate; print(os.environ['OMP_WAIT_POLICY'])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == expected


@pytest.mark.parametrize("budget, polars_size, expected", [("1", None, 1), ("1", "2", 2), (None, "2", 2)])
def test_polars_pool_takes_the_budget_unless_the_user_sized_it(budget, polars_size, expected):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PRIVGATE_THREADS", "POLARS_MAX_THREADS")}
    if budget:
        env["PRIVGATE_THREADS"] = budget
    if polars_size:
        env["POLARS_MAX_THREADS"] = polars_size
    out = subprocess.run(
        [sys.executable, "-c", "import privgate, polars; print(polars.thread_pool_size())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert int(out) == expected


def test_context_and_evaluate_take_a_budget():
    import polars as pl

    from privgate import evaluate
    from privgate.context import EvaluationContext

    r = pl.DataFrame({"a": [0.0, 1, 2, 3]})
    assert EvaluationContext(r, r, threads=1).threads == 1
    rep = evaluate(r, r, ["membership_inference"], threads=1)
    assert rep.results["membership_inference"].details["n_jobs"] == 1


def test_the_thread_pool_controller_is_made_again_after_an_import(monkeypatch):
    """limited() reuses threadpoolctl's controller until a module is imported (a native library
    loads only through an import), so a pool loaded later is limited too."""
    import sys
    import types

    from privgate import threads

    first = threads._controller()
    assert threads._controller() is first
    monkeypatch.setitem(sys.modules, "privgate_test_fresh_module", types.ModuleType("privgate_test_fresh_module"))
    again = threads._controller()
    assert again is not first and threads._controller() is again
