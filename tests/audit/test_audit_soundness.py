"""A small, fast version of benchmarks/audit.py: the audit's bound stays at or below the true ε of
exact mechanisms, and catches their broken versions."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.audit import audit_generator
from privgate.audit.mechanisms import LaplaceHistogram

DOMAIN = {"a": list("pqrs"), "b": list("xyz"), "x": [-4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0]}


def data(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "a": rng.choice(list("pqrs"), n, p=[0.4, 0.3, 0.2, 0.1]),
            "b": rng.choice(list("xyz"), n),
            "x": rng.normal(0.0, 1.0, n),
        }
    )


def audit(gen, seed: int, runs: int = 60, claimed: float = 1.0):
    return audit_generator(
        gen,
        data(seed=seed),
        design="shared",
        runs=runs,
        n_targets=4,
        training_rows=150,
        claimed_epsilon=claimed,
        seed=seed,
        workers=1,
        threads=1,
    )


def test_exact_mechanisms_are_not_accused():
    # each audit exceeds the true ε with probability ≤ 5 %: 8 audits at ε = 1 and ε = 4, no more than one
    bounds = [
        audit(LaplaceHistogram(eps, DOMAIN, release="rounded"), seed, claimed=eps).epsilon_lower - eps
        for eps in (1.0, 4.0)
        for seed in range(4)
    ]
    assert sum(b > 0 for b in bounds) <= 1


@pytest.mark.parametrize("broken", [dict(noise_factor=0.05), dict(domain_from_data=True)])
def test_broken_mechanisms_are_caught(broken):
    gen = LaplaceHistogram(1.0, None if broken.get("domain_from_data") else DOMAIN, release="rounded", **broken)
    r = audit(gen, seed=0, runs=100)
    assert r.violation is True and r.epsilon_lower > 1.0
