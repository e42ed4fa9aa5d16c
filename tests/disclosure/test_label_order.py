"""The vectorised R labels of numbers equal the one-by-one rule, and the target levels' order
numbers (what the tables group and sort by) follow Python's code-point order of the labels."""

from __future__ import annotations

import numpy as np
import polars as pl

from privgate.disclosure.labels import r_double_label, r_double_labels
from privgate.disclosure.prepare import LabelledColumn, target_order


def test_vectorised_labels_equal_the_scalar_rule():
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            rng.normal(1e4, 5e3, 3000),
            np.round(rng.normal(1e4, 5e3, 2000), 2),
            10.0 ** rng.uniform(-320, 308, 3000) * rng.choice([-1, 1], 3000),
            rng.integers(0, 10**17, 500).astype(float),
            np.arange(1, 2000) * 0.1,
            [
                0.0,
                -0.0,
                np.nan,
                np.inf,
                -np.inf,
                1e5,
                123456.0,
                1e15,
                1e16,
                1234567890123456789.0,
                0.1,
                2.5,
                1e-5,
                1e-4,
                5e-324,
                1.7976931348623157e308,
                -1e100,
                99999.99999999999,
                9.999999999999999e22,
            ],
        ]
    )
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


def test_cap_sums_are_those_of_the_label_sort(monkeypatch):
    """The cells sorted by (set, key number, level number) give the CAP sums of the cells sorted
    by (set, key labels, level labels) to the last bit (a group-by on a set column not flagged
    sorted sums in another association)."""
    import privgate.disclosure.api as api
    from privgate.disclosure import measures as me
    from privgate.disclosure import multi_disclosure
    from privgate.disclosure.prepare import ORDER_COL, SYN_COL

    rng = np.random.default_rng(8)
    n = 60_000  # enough cells for the group-by's paths to differ
    real = pl.DataFrame(
        {
            "a": rng.choice(list("abcdefghij"), n),
            "b": rng.choice(list("xyz"), n),
            "c": rng.integers(0, 30, n),
            "t": rng.normal(size=n).round(2),
        }
    )
    syn = real.sample(n, seed=2, with_replacement=True)
    seen = []
    keep = api.compute_measures
    monkeypatch.setattr(api, "compute_measures", lambda *a: seen.append(a) or keep(*a))
    multi_disclosure(real, syn, ["a", "b", "c"], ["t"])
    cells, key_cols, n_orig, n_syn = seen[0]
    per_key = me._key_totals(cells, key_cols)
    by_labels = cells.join(per_key.select(SYN_COL, *key_cols, "dq", "sq"), on=[SYN_COL, *key_cols], how="left").sort(
        [SYN_COL, *key_cols, "__target"]
    )
    d, s, dq, sq = pl.col("d"), pl.col("s"), pl.col("dq"), pl.col("sq")
    ps = pl.when(sq > 0).then(s / sq).otherwise(0.0)
    pd_ = pl.when(dq > 0).then(d / dq).otherwise(0.0)
    want = by_labels.group_by(SYN_COL).agg(
        (pd_ * d).sum().alias("capd"), (ps * s).sum().alias("caps"), (ps * d).sum().alias("dcap")
    )
    ns = pl.DataFrame({SYN_COL: pl.Series([1], dtype=pl.Int32), "__ns": [float(n)]})
    got = me._cell_sums(cells, per_key, key_cols, ns)
    for c in ("capd", "caps", "dcap"):
        assert got[c][0] == want[c][0]
    assert ORDER_COL in cells.columns
