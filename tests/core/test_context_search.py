"""Searches of matrices a metric makes itself go through the evaluation context
(EvaluationContext.search): the engine's exact answer, made once per evaluation for the same
matrices and reported in the metric's details["neighbour_search"]."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate.context_search as context_mod  # where the context's searches call the engine
from privgate.context import EvaluationContext
from privgate.neighbours import knn, knn_rows
from privgate.neighbours.decide import drop_self


def _ctx(n_real: int = 120, n_syn: int = 120, seed: int = 0) -> EvaluationContext:
    rng = np.random.default_rng(seed)

    def frame(n):
        return pl.DataFrame(
            {
                "a": rng.normal(size=n),
                "b": rng.integers(0, 3, n).astype(float),  # noqa: E731
                "c": rng.choice(list("xyz"), n),
            }
        )

    return EvaluationContext(frame(n_real), frame(n_syn))


def _count_searches(monkeypatch) -> list:
    """The query shapes of the engine searches the context makes from now on."""
    calls = []
    real = context_mod.search_matrices

    def counting(*a, **kw):
        calls.append(a[0].shape)
        return real(*a, **kw)

    monkeypatch.setattr(context_mod, "search_matrices", counting)
    return calls


def test_search_gives_the_engine_answer_once_per_content_and_reports_it(monkeypatch):
    ctx = _ctx()
    rng = np.random.default_rng(1)
    q = np.round(rng.normal(size=(80, 3)), 1)  # ties and duplicates
    t = np.round(rng.normal(size=(90, 3)), 1)
    calls = _count_searches(monkeypatch)
    got = ctx.search(q, t, 2, name="first")
    again = ctx.search(q.copy(), t.copy(), 2, name="second")  # equal content, other objects
    assert len(calls) == 1
    want = knn(q, t, 2)
    for nb in (got, again):
        np.testing.assert_array_equal(nb.idx, want.idx)
        np.testing.assert_array_equal(nb.dist, want.dist)
    ctx.search(q, t + 1.0, 2, name="moved")  # other content: searched again
    assert len(calls) == 2
    report = ctx.take_search_report()
    assert set(report["searches"]) == {"first", "second", "moved"} and report["exact"] is True
    assert ctx.take_search_report() is None


def test_a_holdout_baseline_reuses_the_searches_of_the_same_matrices(monkeypatch):
    """The baseline's context shares the main one's searches of matrices by content: a search
    among real records (the same content) is made once for both; another content is searched."""
    rng = np.random.default_rng(3)
    frame = lambda n: pl.DataFrame({"a": rng.normal(size=n), "c": rng.choice(list("xyz"), n)})  # noqa: E731
    ctx = EvaluationContext(frame(100), frame(100), holdout=frame(100))
    calls = _count_searches(monkeypatch)
    base = ctx.holdout_baseline()
    r = ctx.mixed().real
    main = ctx.search(r[:40], r, 2, name="main")
    again = base.search(base.mixed().real[:40], base.mixed().real, 2, name="baseline")
    assert len(calls) == 1
    np.testing.assert_array_equal(main.idx, again.idx)
    np.testing.assert_array_equal(main.dist, again.dist)
    base.search(base.mixed().real[:40], base.mixed().synthetic, 1, name="baseline holdout")
    assert len(calls) == 2
    assert set(base.take_search_report()["searches"]) == {"baseline", "baseline holdout"}  # each its own report


def test_search_of_rows_excluding_themselves_is_knn_rows():
    ctx = _ctx()
    x = np.round(np.random.default_rng(2).normal(size=(60, 2)), 1)
    rows = np.array([5, 0, 41])
    got = ctx.search(x, x, 3, name="rows", exclude_self=True, rows=rows)
    want = knn_rows(x, rows, 3)
    np.testing.assert_array_equal(got.idx, want.idx)
    assert not (got.idx == rows[:, None]).any()
    whole = ctx.search(x, x, 1, name="all", exclude_self=True)
    np.testing.assert_array_equal(whole.idx, knn(x, x, 1, exclude_self=True).idx)


def test_nnaa_of_unequal_sizes_reports_its_subsample_searches():
    import privgate.metrics as m

    res = m.nnaa(_ctx(120, 90), repetitions=2)
    searches = res.details["neighbour_search"]["searches"]
    assert {name.rsplit(": ", 1)[1] for name in searches} == {
        "real→synthetic",
        "real→real",
        "synthetic→real",
        "synthetic→synthetic",
    }
    assert all(s["exact"] for s in searches.values())


@pytest.mark.parametrize("listed", [True, False])
def test_drop_self_removes_the_own_row_or_the_last_entry(listed):
    """A search of a set against itself drops each row's own entry (wherever it is listed), or,
    when the row is not listed, its last entry; the distances lose the same entries."""
    idx = np.array([[3, 0, 7], [1, 5, 2]]) if listed else np.array([[3, 5, 7], [0, 2, 4]])
    dist = np.array([[0.0, 0.1, 0.2], [1.0, 1.1, 1.2]])
    got_i, got_d = drop_self(np.array([0, 1]), idx, dist)
    if listed:  # row 0 lists itself second, row 1 first
        assert got_i.tolist() == [[3, 7], [5, 2]] and got_d.tolist() == [[0.0, 0.2], [1.1, 1.2]]
    else:
        assert got_i.tolist() == [[3, 5], [0, 2]] and got_d.tolist() == [[0.0, 0.1], [1.0, 1.1]]


def test_hitting_rate_box_query_goes_through_the_context_and_is_reported(monkeypatch):
    """hitting_rate's box query is made by the context (inside its thread budget) and named in
    the metric's details, with the engine's answer."""
    import privgate.metrics as m
    from privgate.neighbours import any_within_box

    ctx = _ctx()
    calls = []
    real_box = context_mod.any_within_box

    def counting(q, t, radius):
        calls.append((q.shape, t.shape, radius))
        return real_box(q, t, radius)

    monkeypatch.setattr(context_mod, "any_within_box", counting)
    res = m.hitting_rate(ctx)
    assert calls and calls[0][2] == 1.0
    searches = res.details["neighbour_search"]["searches"]
    assert list(searches) == ["hitting_rate box query real→synthetic"]
    assert searches["hitting_rate box query real→synthetic"]["n_query"] == 120
    rng = np.random.default_rng(1)
    q, t = rng.normal(size=(50, 3)), rng.normal(size=(40, 3))
    np.testing.assert_array_equal(ctx.any_within_box(q, t, 0.5, name="x"), any_within_box(q, t, 0.5))


def test_search_of_mixed_space_rows_settles_inside_categorical_groups_with_the_same_answers():
    rng = np.random.default_rng(3)
    n = 600

    def frame():
        return pl.DataFrame(
            {
                "a": np.round(rng.normal(size=n), 1),  # noqa: E731
                "c": rng.choice(list("xyz"), n),
                "d": rng.choice(list("pq"), n),
            }
        )

    ctx = EvaluationContext(frame(), frame())
    space = ctx.mixed()
    q, t = space.real[:200], space.synthetic
    flat = knn(q, t, 3)
    grouped = ctx.search(q, t, 3, name="grouped", categorical_slices=space.categorical_slices)
    assert np.array_equal(grouped.idx, flat.idx) and np.array_equal(grouped.dist, flat.dist)
    assert grouped.search["settled_by"].get("grouped", 0) > 0
    own = ctx.search(
        space.real,
        space.real,
        1,
        name="own",
        exclude_self=True,
        rows=np.arange(50),
        categorical_slices=space.categorical_slices,
    )
    want = knn_rows(space.real, np.arange(50), 1)
    assert np.array_equal(own.idx, want.idx) and np.array_equal(own.dist, want.dist)


def test_jackknife_replicates_are_computed_once_for_every_metric_that_reads_them(monkeypatch):
    """authenticity, median_dcr and nnaa delete the same groups of real records from the same
    real → real lists: the (G, n) nearest-outside-group replicates are computed once, reported
    (with the refill search) in each metric's details, and read-only; the values are those of a
    fresh evaluation per metric."""
    import privgate.metrics as m

    calls = []
    real = context_mod.nearest_outside_groups
    monkeypatch.setattr(context_mod, "nearest_outside_groups", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    ctx = _ctx(400, 380, seed=3)
    together = [m.authenticity(ctx), m.median_dcr(ctx), m.nnaa(ctx, repetitions=2)]
    assert len(calls) == 1
    for res in together:
        fresh = getattr(m, res.name)(_ctx(400, 380, seed=3), **({"repetitions": 2} if res.name == "nnaa" else {}))
        assert (res.value, res.ci) == (fresh.value, fresh.ci)
        assert set(res.details["neighbour_search"]["searches"]) == set(fresh.details["neighbour_search"]["searches"])
    key = next(iter(ctx._shared["outside_groups"]))
    assert not key["out"][0].flags.writeable


def test_jackknife_replicates_over_the_cache_budget_are_not_kept(monkeypatch):
    import privgate.metrics as m

    monkeypatch.setattr(context_mod, "OUTSIDE_GROUPS_CACHE_BYTES", 0)
    ctx = _ctx(400, 380, seed=3)
    first = m.authenticity(ctx)
    assert ctx._shared.get("outside_groups") == []
    assert m.median_dcr(ctx).ci == m.median_dcr(_ctx(400, 380, seed=3)).ci and first.ci is not None
