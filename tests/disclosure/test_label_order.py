"""The vectorised R labels of numbers equal the one-by-one rule, and the target levels' order
numbers (what the tables group and sort by) follow Python's code-point order of the labels."""

from __future__ import annotations

import numpy as np
import polars as pl

from privgate.disclosure.labels import r_double_label, r_double_labels
from privgate.disclosure.prepare import LabelledColumn, target_order


def test_vectorised_labels_equal_the_scalar_rule():
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.normal(1e4, 5e3, 3000), np.round(rng.normal(1e4, 5e3, 2000), 2),
        10.0 ** rng.uniform(-320, 308, 3000) * rng.choice([-1, 1], 3000),
        rng.integers(0, 10**17, 500).astype(float), np.arange(1, 2000) * 0.1,
        [0.0, -0.0, np.nan, np.inf, -np.inf, 1e5, 123456.0, 1e15, 1e16, 1234567890123456789.0, 0.1, 2.5,
         1e-5, 1e-4, 5e-324, 1.7976931348623157e308, -1e100, 99999.99999999999, 9.999999999999999e22],
    ])
    want = [r_double_label(float(v)) for v in x]
    assert r_double_labels(x) == want
    assert r_double_labels(list(x[:50])) == want[:50]
    assert "1e+05" in want and "123456" in want and "NA" in want  # both notations are exercised
    assert r_double_labels(np.array([])) == []


def test_target_order_is_python_code_point_order():
    orig = pl.Series(["b", "a | c", "a", "Zeta", "é", "a", "10", "9", "Missing"])
    syn = pl.Series(["a b", "ä", "b", "9", "z"])
    col = LabelledColumn("t", orig, syn, declared_levels=["declared", "a"])
    order = target_order(col)
    want = sorted(set(orig.to_list()) | set(syn.to_list()) | {"declared"})
    assert order.levels.to_list() == want
    assert [want[i] for i in order.orig.to_list()] == orig.to_list()
    assert [want[i] for i in order.syn.to_list()] == syn.to_list()
