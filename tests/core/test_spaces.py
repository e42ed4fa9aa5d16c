"""The mixed space and the FAMD projection (docs/metrics.md: the mixed space and FAMD)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.baselines import noisy_copy
from privgate.context import EvaluationContext
from privgate.data import load_example
from privgate.spaces import NULL_LEVEL, famd_inputs, famd_matrix


def test_mixed_space_standardises_with_real_stats_and_a_category_mismatch_adds_one():
    # real a: mean 2, population std sqrt(2); synthetic a = 4 → (4 - 2)/sqrt(2) = sqrt(2)
    r = pl.DataFrame({"a": [0.0, 1, 2, 3, 4], "c": ["x", "y", "x", "y", None], "k": [7.0] * 5})
    s = pl.DataFrame({"a": [4.0, None], "c": ["z", "x"], "k": [1.0, 7.0]})
    sp = EvaluationContext(r, s).mixed()
    assert sp.details["constant_columns"] == ["k"]  # a constant column contributes nothing
    assert sp.details["mean_imputed"] == {"a": {"synthetic": 1}}
    # features: a, then c's levels over the union {x, y, z, null} → 1 + 4 columns
    assert sp.real.shape == (5, 5) and sp.synthetic.shape == (2, 5)
    np.testing.assert_allclose(sp.synthetic[0, 0], np.sqrt(2))
    assert sp.synthetic[1, 0] == 0.0  # null imputed with the real mean
    # real row 0 (0, x) vs real row 2 (2, x): only a differs → d² = (2/sqrt 2)² = 2
    assert np.sum((sp.real[0] - sp.real[2]) ** 2) == pytest.approx(2.0)
    # real row 0 (0, x) vs real row 1 (1, y): 1/2 + 1 (category mismatch)
    assert np.sum((sp.real[0] - sp.real[1]) ** 2) == pytest.approx(0.5 + 1.0)
    # null is its own level: real row 4 vs real row 2 → (2/sqrt2)² + 1
    assert np.sum((sp.real[4] - sp.real[2]) ** 2) == pytest.approx(2.0 + 1.0)


def test_famd_matches_an_independent_pca_of_the_famd_matrix():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    n = 200
    r = pl.DataFrame(
        {"a": rng.normal(size=n), "b": rng.exponential(size=n), "c": rng.choice(["u", "v", "w"], n, p=[0.6, 0.3, 0.1])}
    )
    s = r.with_columns(pl.Series("c", rng.choice(["u", "v", "NEW"], n)))
    sp = EvaluationContext(r, s).famd(2)
    # build the FAMD matrix by hand: standardised numerics, (1{level} - p)/sqrt(p)
    cols = []
    for c in ("a", "b"):
        v = r[c].to_numpy()
        cols.append((v - v.mean()) / v.std())
    for lev in ("u", "v", "w"):
        ind = (r["c"] == lev).to_numpy().astype(float)
        p = ind.mean()
        cols.append((ind - p) / np.sqrt(p))
    z = np.column_stack(cols)
    ref = PCA(n_components=2, svd_solver="full").fit(z)
    scores = z @ ref.components_.T
    for j in range(2):  # equal up to the sign convention
        assert np.allclose(sp.real[:, j], scores[:, j]) or np.allclose(sp.real[:, j], -scores[:, j])
    # a synthetic level unseen in the real data gives an all-zero indicator row
    new = (s["c"] == "NEW").to_numpy()
    zs_a = (s["a"].to_numpy() - r["a"].mean()) / r["a"].std(ddof=0)
    zs_b = (s["b"].to_numpy() - r["b"].mean()) / r["b"].std(ddof=0)
    v = np.linalg.svd(z, full_matrices=False)[2][:2].T
    v = v * np.sign(v[np.abs(v).argmax(axis=0), [0, 1]])
    expected_new = np.column_stack([zs_a, zs_b])[new] @ v[:2]
    np.testing.assert_allclose(sp.synthetic[new], expected_new, atol=1e-10)


def test_famd_signs_are_deterministic_under_row_order():
    rng = np.random.default_rng(5)
    r = pl.DataFrame({"a": rng.normal(size=50), "c": rng.choice(["x", "y"], 50)})
    perm = rng.permutation(50)
    a = EvaluationContext(r, r).famd(2).real
    b = EvaluationContext(r[perm], r).famd(2).real
    np.testing.assert_allclose(a[perm], b, atol=1e-10)


def test_famd_reports_a_degenerate_projection():
    # three equally frequent levels of one column: the indicator block has two equal singular
    # values, so with one numeric column the 2nd and 3rd components tie
    r = pl.DataFrame({"c": ["a", "b", "c"] * 4})
    sp = EvaluationContext(r, r).famd(1)
    assert sp.details["degenerate_projection"] is True
    rng = np.random.default_rng(0)
    r = pl.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40)})
    assert EvaluationContext(r, r).famd(1).details["degenerate_projection"] is False


def test_famd_matrix_is_the_hand_built_famd_input_one_frame_at_a_time():
    adult = load_example()
    real = adult[:600]
    syn = noisy_copy(real, seed=3)[:550]
    ctx = EvaluationContext(real, syn)
    z = famd_inputs({"real": real, "synthetic": syn}, ctx.schema)
    assert np.array_equal(z["synthetic"], famd_matrix(syn, real, ctx.schema))
    # by hand for one categorical and one numeric column
    col = next(c for c in ctx.schema.columns if ctx.schema.kind(c) != "numeric")
    num = next(c for c in ctx.schema.columns if ctx.schema.kind(c) == "numeric")
    from privgate.schema import Schema

    sch = Schema({num: "numeric", col: "categorical"})
    got = famd_matrix(syn, real, sch)
    r = real[num].to_numpy().astype(float)
    v = syn[num].to_numpy().astype(float)
    assert np.array_equal(got[:, 0], (v - r.mean()) / r.std())
    rc, sc = real[col].fill_null(NULL_LEVEL), syn[col].fill_null(NULL_LEVEL)  # null is a level
    levels = sorted(rc.unique().to_list())
    p = np.array([(rc == lv).sum() for lv in levels]) / real.height
    expect = np.array(
        [
            [((s == lv) - pi) / np.sqrt(pi) for lv, pi in zip(levels, p)] if s in levels else [0.0] * len(levels)
            for s in sc.to_list()
        ]
    )
    np.testing.assert_allclose(got[:, 1:], expect, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", [(300, 7), (5, 9), (12, 7)])
def test_the_right_singular_vectors_of_tall_and_wide_inputs_are_those_of_the_full_svd(shape):
    from privgate.spaces import _svd_right

    z = np.random.default_rng(shape[0]).normal(size=shape)
    s, vt = _svd_right(z)
    _, s_ref, vt_ref = np.linalg.svd(z, full_matrices=False)
    np.testing.assert_allclose(s, s_ref, rtol=1e-12)
    signs = np.sign((vt * vt_ref).sum(axis=1))  # each vector up to its sign
    np.testing.assert_allclose(vt * signs[:, None], vt_ref, atol=1e-10)
