"""benchmarks/_dp.py, the validity benchmark's ε-DP generator: its budget adds up to ε with the
stated Laplace scales, the public domain is kept (levels, integer levels, log bins, nulls), the
sampled release follows the training data when ε is large, and it is deterministic."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _dp  # noqa: E402


def data(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z"], n, p=[0.6, 0.3, 0.1])
    b = np.where(a == "x", rng.choice(["p", "q"], n, p=[0.9, 0.1]), rng.choice(["p", "q"], n, p=[0.1, 0.9]))
    k = rng.integers(1, 6, n)
    money = np.where(rng.random(n) < 0.3, 0.0, np.exp(rng.normal(8, 2, n)))
    cat = pl.Series("c", rng.choice(["u", "v"], n).tolist()).scatter([0, 1, 2], None)
    return pl.DataFrame({"a": a, "b": b, "k": k, "money": money}).with_columns(cat)


def test_budget_adds_up_with_the_stated_scales():
    b = _dp.budget(1.0, 5)
    assert b["eps_one_way"] + b["eps_select"] + b["eps_two_way"] == pytest.approx(1.0)
    assert b["one_way_scale"] == pytest.approx(5 / 0.1)  # L1 sensitivity d over ε₁
    assert b["two_way_scale"] == pytest.approx(4 / 0.8)  # d − 1 edge tables over ε₃
    assert b["select_eps_per_step"] == pytest.approx(0.1 / 4)  # ε₂ over d − 1 selections


def test_public_domain_and_encoding():
    d = data(500, 0)
    dom = {c.name: c for c in _dp.public_domain(d)}
    assert dom["a"].kind == "cat" and dom["a"].size == 3
    assert dom["c"].kind == "cat" and _dp.NULL in dom["c"].levels  # null is a level
    assert dom["k"].kind == "int" and dom["k"].size == 5 + 1  # 1..5 and null
    assert dom["money"].kind == "bins" and dom["money"].log and dom["money"].size == 13
    x = _dp.encode(d, list(dom.values()))
    assert x.shape == (500, 5) and x.min() >= 0
    assert all(x[:, j].max() < c.size for j, c in enumerate(dom.values()))
    with pytest.raises(ValueError, match="column a"):
        _dp.encode(d.with_columns(pl.lit("new").alias("a")), list(dom.values()))


def test_large_epsilon_follows_the_data_and_is_deterministic():
    train = data(4000, 1)
    dom = _dp.public_domain(data(4000, 2))  # the domain from other (public) records
    syn = _dp.fit_sample(train, 4000, 1e6, seed=3, domain=dom)
    assert syn.columns == train.columns and syn.schema == train.schema
    for c in ("a", "b"):  # one-way and the a–b dependence (the tree must pick that edge)
        assert syn[c].value_counts(normalize=True).sort(c)["proportion"].to_numpy() == pytest.approx(
            train[c].value_counts(normalize=True).sort(c)["proportion"].to_numpy(), abs=0.03
        )
    p_q_given_x = syn.filter(pl.col("a") == "x")["b"].eq("q").mean()
    assert p_q_given_x == pytest.approx(0.1, abs=0.03)
    assert set(syn["k"].unique().to_list()) <= set(range(1, 6))
    assert syn["c"].null_count() <= 40 and syn["money"].min() >= 0
    again = _dp.fit_sample(train, 4000, 1e6, seed=3, domain=dom)
    assert syn.equals(again)
    noisy = _dp.fit_sample(train, 4000, 0.01, seed=3, domain=dom)  # tiny ε: marginals blurred
    dev = abs(noisy["a"].eq("x").mean() - 0.6)
    assert dev > 0.02 and not noisy.equals(syn)
    with pytest.raises(ValueError, match="epsilon"):
        _dp.fit_sample(train, 10, 0.0, seed=0, domain=dom)
