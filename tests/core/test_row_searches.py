"""Searches of a few sampled query rows (the attacks' targets): the row-subset encoding equals the
whole encoding bit for bit, EvaluationContext.neighbours_of_rows gives and caches the same answers
as one neighbours(rows=...) call per role, and the engine's one-block shape rule (k = 1, every
open row's distances in one float32 block → the blocked GEMM path instead of faiss' screen) finds
the same neighbours as faiss and brute force."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.context import EvaluationContext
from privgate.errors import NotApplicableError
from privgate.neighbours import SearchSettings, knn
from privgate.spaces import mixed_space


def _frames(rng, n, levels=("a", "b", "c", None)):
    """Numerics with nulls, a constant column, and categoricals with nulls and few levels (ties)."""
    x = rng.integers(0, 4, n).astype(float)
    x[rng.random(n) < 0.1] = np.nan
    return pl.DataFrame(
        {
            "x": x,
            "y": rng.normal(size=n).round(1),
            "k": np.full(n, 3.0),
            "c": pl.Series([levels[i] for i in rng.integers(0, len(levels), n)], dtype=pl.String),
            "e": pl.Series(rng.choice(["u", "v"], n).tolist(), dtype=pl.String),
        }
    )


@pytest.fixture()
def ctx():
    rng = np.random.default_rng(5)
    real, syn = _frames(rng, 400), _frames(rng, 350)
    hold = _frames(rng, 300, levels=("a", "d", None))  # a level only the holdout has
    return EvaluationContext(real, syn, holdout=hold, seed=3)


def test_row_subset_encoding_equals_the_whole_encoding_bit_for_bit(ctx):
    rows = {"real": np.array([0, 5, 5, 399, 17]), "holdout": np.array([299, 1, 2])}
    for cols, weights in ((None, None), (["c", "x", "e"], {"x": 0.5, "c": 2.0}), (["y", "k"], None)):
        whole = mixed_space(ctx.frames, ctx.schema, cols, weights=weights)
        part = mixed_space(ctx.frames, ctx.schema, cols, weights=weights, rows=rows)
        assert part.categorical_slices == whole.categorical_slices
        for role in ("real", "holdout"):
            assert np.array_equal(part[role], whole[role][rows[role]])
        assert np.array_equal(part["synthetic"], whole["synthetic"])
    # the null counts are those of the encoded rows
    x_nulls = ctx.real["x"].is_null().to_numpy()
    part = mixed_space(ctx.frames, ctx.schema, ["x"], rows={"real": rows["real"]})
    assert part.details["mean_imputed"]["x"].get("real", 0) == int(x_nulls[rows["real"]].sum())


@pytest.mark.parametrize("k", [1, 2])
def test_neighbours_of_rows_equals_one_search_per_role(ctx, k):
    space = ("mixed", ("x", "y", "c", "e"))
    rows = {"real": np.array([3, 8, 9, 100, 250]), "holdout": np.array([0, 7, 299])}
    fresh = EvaluationContext(ctx.real, ctx.synthetic, holdout=ctx.holdout, seed=3)
    expected = {r: fresh.neighbours(space, r, "synthetic", k, rows=idx) for r, idx in rows.items()}
    got = ctx.neighbours_of_rows(space, rows, "synthetic", k)
    assert list(got) == ["real", "holdout"]
    for role in rows:
        np.testing.assert_array_equal(got[role].idx, expected[role].idx)
        np.testing.assert_array_equal(got[role].dist, expected[role].dist)
    assert ("mixed", space[1]) not in ctx._spaces  # only the sampled rows were encoded, not cached as whole
    report = ctx.take_search_report()
    name = f"mixed{list(space[1])}"
    assert set(report["searches"]) == {f"{name} real→synthetic", f"{name} holdout→synthetic"}
    assert all("real+holdout" in s["stacked"] for s in report["searches"].values())
    # cached as neighbours(rows=...) caches it: the same arrays come back, no new search
    again = ctx.neighbours(space, "holdout", "synthetic", k, rows=rows["holdout"])
    assert np.shares_memory(again.idx, got["holdout"].idx)
    # with the whole space built and its whole search made, that search is sliced
    whole = fresh.neighbours(space, "real", "synthetic", k)
    sliced = fresh.neighbours_of_rows(space, {"real": rows["real"]}, "synthetic", k)["real"]
    np.testing.assert_array_equal(sliced.idx, whole.idx[rows["real"]])


def test_neighbours_of_rows_uses_a_built_space_and_searches_its_own_set_apart(ctx):
    ctx.mixed()  # the whole space exists: its rows are used as they are
    rows = {"real": np.array([1, 2, 3]), "holdout": np.array([4, 5])}
    got = ctx.neighbours_of_rows("mixed", rows, "real", 1)
    own = EvaluationContext(ctx.real, ctx.synthetic, holdout=ctx.holdout).neighbours("mixed", "real", "real", 1)
    np.testing.assert_array_equal(got["real"].idx, own.idx[rows["real"]])  # self excluded by index
    assert (got["real"].idx[:, 0] != rows["real"]).all()
    hold = EvaluationContext(ctx.real, ctx.synthetic, holdout=ctx.holdout).neighbours(
        "mixed", "holdout", "real", 1, rows=rows["holdout"]
    )
    np.testing.assert_array_equal(got["holdout"].idx, hold.idx)


def test_neighbours_of_rows_without_holdout_says_so():
    rng = np.random.default_rng(0)
    c = EvaluationContext(_frames(rng, 50), _frames(rng, 40))
    with pytest.raises(NotApplicableError, match="holdout"):
        c.neighbours_of_rows("mixed", {"real": np.arange(3), "holdout": np.arange(3)})


def _brute_tolerant(q, t):
    d = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(-1))
    low = d.min(axis=1, keepdims=True)
    key = np.where(d - low <= 1e-9 * (1 + np.maximum(d, low)), low, d)
    return np.lexsort((np.broadcast_to(np.arange(t.shape[0]), d.shape), key), axis=-1)[:, :1]


def test_flat_screen_and_blocked_path_give_the_brute_force_answers():
    rng = np.random.default_rng(8)
    # integer coordinates: many exact ties, broken by the lowest index on every path
    q = rng.integers(0, 3, size=(120, 7)).astype(float)
    t = rng.integers(0, 3, size=(900, 7)).astype(float)
    screened = knn(q, t, 1, dedupe=False)
    assert screened.search["settled_by"].get("faiss_flat", 0) > 0
    one = knn(q, t, 1, dedupe=False, use_faiss=False)  # 120 × 900 × 4 bytes: one block
    assert one.search["settled_by"] == {"blocked": 120}
    small = knn(q, t, 1, dedupe=False, use_faiss=False, settings=SearchSettings(block_bytes=4 * 900 * 50))
    for other in (one, small):
        np.testing.assert_array_equal(screened.idx, other.idx)
        np.testing.assert_array_equal(screened.dist, other.dist)
    np.testing.assert_array_equal(one.idx, _brute_tolerant(q, t))


def test_grouped_level_one_is_skipped_only_when_the_open_rows_fit_one_block():
    """k = 1: the rows level 0 of the grouped search leaves open go straight to the exact search
    when their distances fit one GEMM block (level 1's per-column trees cost more there); with
    smaller blocks level 1 runs and settles more rows. Both give the brute-force answer."""
    rng = np.random.default_rng(11)
    cols, slices, pos = [rng.integers(0, 6, size=(900, 2)).astype(float)], [], 2
    for n_levels in (3, 2, 4):
        onehot = np.zeros((900, n_levels))
        onehot[np.arange(900), rng.integers(0, n_levels, 900)] = 1 / np.sqrt(2)
        cols.append(onehot)
        slices.append((pos, pos + n_levels))
        pos += n_levels
    x = np.hstack(cols)
    q, t = x[:500], x[500:]
    skip = knn(q, t, 1, categorical_slices=slices, dedupe=False)
    level1 = knn(q, t, 1, categorical_slices=slices, dedupe=False, settings=SearchSettings(block_bytes=4 * 400 * 20))
    assert 0 < skip.search["settled_by"]["grouped"] < level1.search["settled_by"]["grouped"]
    assert set(skip.search["settled_by"]) == {"grouped", "faiss_flat"}
    np.testing.assert_array_equal(skip.idx, level1.idx)
    np.testing.assert_array_equal(skip.dist, level1.dist)
    np.testing.assert_array_equal(skip.idx, _brute_tolerant(q, t))


def test_batched_level_codes_equal_the_per_column_ones(ctx):
    from privgate.spaces import _codes, _levels, category_codes, category_levels

    rows = {"holdout": np.array([5, 0, 299, 5])}
    part = {r: (f[rows[r]] if r in rows else f) for r, f in ctx.frames.items()}
    got = _levels(ctx.frames, ["c", "e"])
    for col in ("c", "e"):
        levels = category_levels(ctx.frames, col)
        codes, _ = category_codes(part, col, levels)
        assert got[col] == levels
        for role in part:
            np.testing.assert_array_equal(_codes(part[role], ["c", "e"], got)[col], codes[role])
    assert "d" in got["c"]  # a level only the holdout has


def test_k_above_one_on_duplicated_queries_searches_distinct_rows_with_every_row_answer_unchanged():
    """k > 1, exact, query set ≠ target set, many duplicate query rows (a key-column space): the
    distinct query rows are searched once each and every row gets its distinct row's k-list —
    equal to searching every row (dedupe=False) and to brute force with the lowest-index tie rule,
    including a query whose k nearest are several copies of one target point."""
    rng = np.random.default_rng(12)
    q = rng.integers(0, 3, size=(1500, 4)).astype(float)  # at most 81 distinct rows
    t = rng.integers(0, 3, size=(1200, 4)).astype(float)
    folded = knn(q, t, 3)
    plain = knn(q, t, 3, dedupe=False)
    assert folded.search["distinct_queries"] == np.unique(q, axis=0).shape[0]
    assert "distinct_queries" not in plain.search
    np.testing.assert_array_equal(folded.idx, plain.idx)
    np.testing.assert_array_equal(folded.dist, plain.dist)
    d = np.sqrt(((q[:, None, :] - t[None, :, :]) ** 2).sum(-1))
    brute = np.lexsort((np.broadcast_to(np.arange(t.shape[0]), d.shape), d), axis=-1)[:, :3]
    np.testing.assert_array_equal(folded.idx, brute)
    # a search within one set (each row excluding itself) is not folded
    assert "distinct_queries" not in knn(q, q, 3, exclude_self=True).search


def test_has_neighbours_says_whether_a_whole_search_is_made_without_making_one(ctx):
    assert not ctx.has_neighbours("mixed", "real", "real", 3)
    ctx.neighbours("mixed", "real", "real", 3, rows=np.arange(10))  # rows only: not the whole search
    assert not ctx.has_neighbours("mixed", "real", "real", 3)
    ctx.neighbours("mixed", "real", "real", 3)
    assert ctx.has_neighbours("mixed", "real", "real", 2) and ctx.has_neighbours("mixed", "real", "real", 3)
    assert not ctx.has_neighbours("mixed", "real", "real", 4)
    assert ctx.has_neighbours("mixed", "real", "real", 3, exact=True)
    assert not ctx.has_neighbours("mixed", "real", "synthetic", 1)
    ctx.neighbours("mixed", "real", "synthetic", 1)
    assert ctx.has_neighbours("mixed", "real", "synthetic", 1)
    # a screened whole search is made but not exact
    full = ctx._nn[(("mixed", None), "real", "synthetic")]
    ctx._nn[(("mixed", None), "real", "synthetic")] = type(full)(full.dist, full.idx, {"exact": False})
    assert ctx.has_neighbours("mixed", "real", "synthetic", 1)
    assert not ctx.has_neighbours("mixed", "real", "synthetic", 1, exact=True)
    assert ctx.take_search_report() is not None  # (the searches made above; has_neighbours notes none)
    ctx.has_neighbours("mixed", "real", "real", 3)
    assert ctx.take_search_report() is None
