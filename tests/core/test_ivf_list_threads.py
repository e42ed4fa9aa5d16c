"""The IVF screen's list scan (privgate.neighbours.ivf_lists.Lists._scan_all) split between threads:
the same neighbours and distances, bit for bit, as one thread's scan, and never nearer than the
exact answer."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.neighbours import SearchSettings, knn
from privgate.threads import limited


@pytest.mark.parametrize("k, exclude_self, decimals", [(1, False, 1), (3, False, 1), (3, True, 3), (1, True, 3)])
def test_threaded_list_scan_equals_the_single_thread_scan(k, exclude_self, decimals):
    rng = np.random.default_rng(11)
    q = np.round(rng.normal(size=(1500, 6)), decimals)  # rounded: ties and duplicate rows
    t = q if exclude_self else np.round(rng.normal(size=(2200, 6)), decimals)
    runs = {}
    for threads in (1, 2):
        with limited(threads):
            runs[threads] = knn(
                q,
                t,
                k,
                exclude_self=exclude_self,
                approximate=True,
                seed=4,
                settings=SearchSettings(exact_below_pairs=0, ivf_check_rows=100, ivf_max_uncertain_share=1.0),
            )
    np.testing.assert_array_equal(runs[1].idx, runs[2].idx)
    np.testing.assert_array_equal(runs[1].dist, runs[2].dist)
    assert runs[1].search["n_screened"] > 0  # the list scan ran
    exact = knn(q, t, k, exclude_self=exclude_self)
    assert (runs[2].dist >= exact.dist - 1e-12).all()
    ok = np.isclose(runs[2].dist, exact.dist, rtol=1e-9, atol=0).all(axis=1)
    assert ok.mean() >= 0.9


@pytest.mark.parametrize("k, exclude_self, decimals", [(1, False, 1), (3, False, 2), (3, True, 3), (5, True, 2)])
def test_nearest_list_threshold_changes_no_answer_and_holds_fewer_candidates(k, exclude_self, decimals, monkeypatch):
    """Each row's nearest list sets a threshold that its other lists' pairs must meet: the same
    neighbours, distances and recall, bit for bit, as the scan with every list's own bound
    alone, from fewer candidate pairs; and the same candidates on one thread and two."""
    from privgate.neighbours.ivf_lists import Lists

    rng = np.random.default_rng(5)
    q = np.round(rng.normal(size=(1800, 6)), decimals)  # rounded: ties and duplicate rows
    t = q if exclude_self else np.round(rng.normal(size=(2500, 6)), decimals)
    settings = SearchSettings(exact_below_pairs=0, ivf_check_rows=100, ivf_max_uncertain_share=1.0)

    def search(threads):
        with limited(threads):
            return knn(q, t, k, exclude_self=exclude_self, approximate=True, seed=4, settings=settings)

    filtered = {threads: search(threads) for threads in (1, 2)}
    scan_block = Lists._scan_block

    def own_bound_only(self, probes, lst, ts, te, pos, tb, tightest, lower):
        return scan_block(self, probes, lst, ts, te, pos, tb, np.full_like(tightest, np.inf), False)

    monkeypatch.setattr(Lists, "_scan_block", own_bound_only)
    plain = search(1)
    assert plain.search["n_screened"] > 0
    for run in filtered.values():
        np.testing.assert_array_equal(run.idx, plain.idx)
        np.testing.assert_array_equal(run.dist, plain.dist)
        assert run.search["recall"] == plain.search["recall"]
        assert run.search["candidates_held"] < plain.search["candidates_held"]
    assert filtered[1].search["candidates_held"] == filtered[2].search["candidates_held"]
