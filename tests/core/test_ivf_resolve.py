"""The IVF screen's uncertain rows searched again exactly: answers identical to the exact search
for every resolved row, intervals not widened when every row is resolved, and widened by (and
reporting) the rows a budget left unresolved."""

import numpy as np
import polars as pl
import pytest

from privgate.context import EvaluationContext
from privgate.neighbours import knn
from privgate.neighbours.settings import SearchSettings


def _clustered(n: int, m: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, d)) * 3
    t = centres[rng.integers(0, 20, m)] + rng.normal(size=(m, d))
    q = centres[rng.integers(0, 20, n)] + rng.normal(size=(n, d))
    return q, t


@pytest.mark.parametrize("k,exclude_self", [(1, False), (3, False), (1, True)])
def test_resolved_rows_equal_the_exact_search(k, exclude_self):
    q, t = _clustered(1500, 3000, 12, 4)
    if exclude_self:
        t = q
    every = SearchSettings(exact_below_pairs=1000, ivf_check_rows=100, ivf_resolve_share=1.0)
    approx = knn(q, t, k, exclude_self=exclude_self, approximate=True, settings=every, grouped=False)
    exact = knn(q, t, k, exclude_self=exclude_self)
    s = approx.search
    assert s["exact"] is False and "ivf_screen" in s["settled_by"]  # the screen was used
    assert s["n_uncertain"] > 0 and s["n_resolved"] == s["n_uncertain"] and s["n_unresolved"] == 0
    assert s["share_rows_possibly_wrong"] == 0.0
    np.testing.assert_array_equal(approx.idx, exact.idx)
    np.testing.assert_array_equal(approx.dist, exact.dist)


def test_a_budget_leaves_rows_unresolved_and_only_those_can_be_wrong():
    q, t = _clustered(2000, 3000, 20, 5)
    none = SearchSettings(exact_below_pairs=1000, ivf_check_rows=100, ivf_resolve_share=0.0)
    some = SearchSettings(exact_below_pairs=1000, ivf_check_rows=100, ivf_resolve_share=0.05)
    exact = knn(q, t, 1)
    unresolved = knn(q, t, 1, approximate=True, settings=none, grouped=False)
    part = knn(q, t, 1, approximate=True, settings=some, grouped=False)
    s0, s1 = unresolved.search, part.search
    assert s0["n_resolved"] == 0 and s0["n_unresolved"] == s0["n_uncertain"] > 0
    # the unresolved rows' share, or the recall's bound on the screened rows when that is smaller
    stat = (1 - s0["recall_ci"][0]) * s0["n_screened"] / 2000
    assert s0["share_rows_possibly_wrong"] == pytest.approx(min(s0["n_unresolved"] / 2000, stat))
    assert (
        s1["n_resolved"] == int(0.05 * s1["n_screened"]) and s1["n_unresolved"] == s1["n_uncertain"] - s1["n_resolved"]
    )
    for nb, s in ((unresolved, s0), (part, s1)):
        wrong = int((nb.idx != exact.idx).any(axis=1).sum())
        assert wrong <= s["n_unresolved"]
    # the rows the budget resolved changed only towards the exact answer
    assert ((part.idx == exact.idx).all(axis=1) >= (unresolved.idx == exact.idx).all(axis=1)).all()


def _frames(seed: int):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(15, 14)) * 3

    def make(n):
        return pl.DataFrame(
            centres[rng.integers(0, 15, n)] + rng.normal(size=(n, 14)), schema=[f"x{c}" for c in range(14)]
        )

    return make(1500), make(1500)


@pytest.mark.parametrize("share,widened", [(1.0, False), (0.0, True)])
def test_intervals_widen_only_for_unresolved_rows(monkeypatch, share, widened):
    import privgate.metrics as m
    import privgate.neighbours.settings as settings_mod

    r, s = _frames(8)
    exact = m.authenticity(EvaluationContext(r, s, exact=True))
    monkeypatch.setattr(
        settings_mod,
        "DEFAULT_SETTINGS",
        SearchSettings(exact_below_pairs=1000, ivf_max_probe_share=1.0, ivf_resolve_share=share),
    )
    approx = m.authenticity(EvaluationContext(r, s))
    searches = approx.details["neighbour_search"]["searches"]
    # the jackknife's batched re-search of the ~1/G rows whose two listed neighbours were both
    # deleted is exact; the two whole searches are screened
    assert searches.pop("jackknife refill")["exact"] is True
    assert len(searches) == 2 and all(x["exact"] is False for x in searches.values())
    if widened:
        assert approx.details["search_error"]["share_rows_possibly_wrong"] == pytest.approx(
            sum(x["share_rows_possibly_wrong"] for x in searches.values())
        )
        assert all(0 < x["share_rows_possibly_wrong"] <= x["n_unresolved"] / 1500 for x in searches.values())
    else:
        assert "search_error" not in approx.details and approx.ci == exact.ci
        assert approx.value == exact.value


def test_a_screen_its_certificate_cannot_prove_declines_to_the_exact_search():
    """Isotropic data in 64 dimensions: the lists' triangle and bisector bounds prove almost no
    screened answer right, so screening and then re-searching nearly every row would cost more
    than the exact search: the screen declines on its calibration rows and every answer is exact."""
    rng = np.random.default_rng(7)
    q, t = rng.normal(size=(1200, 64)), rng.normal(size=(3000, 64))
    settings = SearchSettings(exact_below_pairs=1000, ivf_check_rows=100, ivf_max_probe_share=1.0)
    approx = knn(q, t, 1, approximate=True, settings=settings, grouped=False)
    s = approx.search
    assert s["exact"] is True and "certificate proves only" in s["screen"]
    assert s.get("share_rows_possibly_wrong", 0.0) == 0.0
    exact = knn(q, t, 1)
    np.testing.assert_array_equal(approx.idx, exact.idx)
    np.testing.assert_array_equal(approx.dist, exact.dist)
    # the same search with the rule off keeps its screen and resolves the rows it cannot prove
    kept = knn(
        q,
        t,
        1,
        approximate=True,
        grouped=False,
        settings=SearchSettings(
            exact_below_pairs=1000, ivf_check_rows=100, ivf_max_probe_share=1.0, ivf_max_uncertain_share=1.0
        ),
    )
    assert kept.search["exact"] is False and kept.search["n_uncertain"] > 0.5 * 1000
    assert kept.search["n_unresolved"] == 0 and kept.search["share_rows_possibly_wrong"] == 0.0
    np.testing.assert_array_equal(kept.idx, exact.idx)
