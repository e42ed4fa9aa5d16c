"""Runs of equal neighbours are bounded, not materialised: a k-nearest search keeps at most k
copies of each distinct target point (the tie rule never reaches a later copy), searches each
distinct query once, is exact when what is left is small, and the IVF screen's list scan holds
at most its block budget of candidate pairs at once."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from onehot_points import one_hot_blocks

from privgate.context import EvaluationContext
from privgate.neighbours import DEFAULT_SETTINGS, SearchSettings, knn
from privgate.neighbours.duplicates import first_copies

# a screen at every size, calibrated and checked on 100 rows each
SCREEN = SearchSettings(exact_below_pairs=0, ivf_check_rows=100)


def _key_space(n, rng, levels=(4, 3, 5, 2)):
    """All-categorical one-hot rows (like the reconstruction metrics' key space): few distinct
    points, each repeated many times, and many distinct points at equal distances."""
    cols, slices = one_hot_blocks(n, rng, levels)
    return np.hstack(cols), slices


def test_first_copies_keeps_the_k_lowest_rows_of_each_point():
    t = np.array([[0.0], [1.0], [0.0], [0.0], [1.0], [2.0], [0.0]] * 3)
    keep = first_copies(t, 2, DEFAULT_SETTINGS.dedup_max_share)
    # point 0 at rows 0, 2, 3, 6, …; point 1 at rows 1, 4, …; point 2 at rows 5, 12, 19
    np.testing.assert_array_equal(keep, [0, 1, 2, 4, 5, 12])


@pytest.mark.parametrize("k", [2, 3])
def test_folded_search_equals_the_unfolded_one_to_the_last_bit(k):
    rng = np.random.default_rng(5)
    q, slices = _key_space(1300, rng)
    t = _key_space(1000, rng)[0]
    nb = knn(q, t, k, categorical_slices=slices)
    plain = knn(q, t, k, categorical_slices=slices, dedupe=False, grouped=False)
    np.testing.assert_array_equal(nb.idx, plain.idx)
    np.testing.assert_array_equal(nb.dist, plain.dist)
    distinct_t = np.unique(t, axis=0).shape[0]
    assert nb.search["targets_searched"] <= k * distinct_t < t.shape[0]
    assert nb.search["distinct_queries"] == np.unique(q, axis=0).shape[0]


def test_an_approximate_search_that_folds_small_is_exact():
    rng = np.random.default_rng(6)
    q, slices = _key_space(1300, rng)
    t = _key_space(1000, rng)[0]
    exact = knn(q, t, 3, categorical_slices=slices)
    # 1.3M pairs before folding; distinct queries × kept copies are far fewer
    folded = knn(q, t, 3, categorical_slices=slices, approximate=True, settings=SearchSettings(exact_below_pairs=10**5))
    assert folded.search["exact"] is True
    np.testing.assert_array_equal(folded.idx, exact.idx)
    np.testing.assert_array_equal(folded.dist, exact.dist)
    # still too big: every row is screened (recall sampled over rows), over the kept copies only
    screened = knn(q, t, 3, categorical_slices=slices, approximate=True, grouped=False, settings=SCREEN)
    assert "distinct_queries" not in screened.search
    assert screened.search["targets_searched"] <= 3 * np.unique(t, axis=0).shape[0]
    assert (screened.dist >= exact.dist - 1e-12).all()


def test_the_list_scan_holds_at_most_its_budget_of_candidates():
    rng = np.random.default_rng(7)
    # ties everywhere and no folding: each list's whole run of equal distances is a candidate
    q, _ = _key_space(3000, rng)
    t = _key_space(2500, rng)[0]
    block = SCREEN.ivf_candidate_bytes * 20_000
    small = knn(
        q, t, 3, approximate=True, dedupe=False, seed=2, settings=dataclasses.replace(SCREEN, block_bytes=block)
    )
    held = small.search["candidates_held"]
    assert 0 < held <= 20_000
    # parts change no answer (every row's screen is its own)
    whole = knn(q, t, 3, approximate=True, dedupe=False, seed=2, settings=SCREEN)
    assert whole.search["candidates_held"] > held
    np.testing.assert_array_equal(small.idx, whole.idx)
    np.testing.assert_array_equal(small.dist, whole.dist)


def test_attribute_inference_above_the_screen_size_equals_the_exact_value(monkeypatch):
    import privgate.metrics as m
    import privgate.neighbours.settings as settings_mod

    rng = np.random.default_rng(8)

    def frame(n):
        return pl.DataFrame(
            {
                "k1": rng.choice(list("abcd"), n),
                "k2": rng.choice(list("xyz"), n),
                "k3": rng.choice(list("pqrst"), n),
                "s": rng.choice(list("uv"), n),
            }
        )

    real, syn = frame(1200), frame(1100)
    opts = dict(keys=["k1", "k2", "k3"], sensitive="s")
    exact = m.attribute_inference(EvaluationContext(real, syn, exact=True), **opts)
    # every search above the size
    monkeypatch.setattr(settings_mod, "DEFAULT_SETTINGS", SearchSettings(exact_below_pairs=1000))
    ctx = EvaluationContext(real, syn)
    res = m.attribute_inference(ctx, **opts)
    assert res.value == exact.value
    assert res.ci == exact.ci
    search = res.details["neighbour_search"]
    assert search["exact"] is True
    nb = ctx.neighbours(("mixed", ("k1", "k2", "k3")), "real", "synthetic", 3)
    assert nb.search["targets_searched"] <= 3 * 4 * 3 * 5


@pytest.mark.parametrize("k", [2, 3, 5])
def test_a_self_search_of_few_distinct_points_is_folded_and_exact(k):
    """Numeric rows of a few points repeated hundreds of times (every row's run of distance-0
    copies), some distinct rows beside them, and near copies inside the tie tolerance with lower
    indices: the folded self-search gives the unfolded one's lists bit for bit."""
    rng = np.random.default_rng(20 + k)
    t = rng.integers(0, 2, size=(3000, 4)).astype(float)
    t[::9] += rng.normal(size=(t[::9].shape[0], 4)) * 1e-3  # distinct rows
    t[1:40:5] = t[100:140:5] + 1e-12  # tied with copies of higher index
    folded = knn(t, t, k, exclude_self=True)
    plain = knn(t, t, k, exclude_self=True, dedupe=False)
    np.testing.assert_array_equal(folded.idx, plain.idx)
    np.testing.assert_array_equal(folded.dist, plain.dist)
    assert folded.search["rows_behind_copies"] > 2000
    distinct = np.unique(t, axis=0).shape[0]
    assert folded.search["targets_searched"] <= (k + 1) * distinct
    assert (folded.idx != np.arange(t.shape[0])[:, None]).all()


def test_a_screened_self_search_too_large_to_fold_exactly_is_left_to_the_screen():
    rng = np.random.default_rng(30)
    t = rng.integers(0, 2, size=(2000, 4)).astype(float)
    t[::3] += rng.normal(size=(t[::3].shape[0], 4)) * 1e-3
    exact = knn(t, t, 2, exclude_self=True)
    assert exact.search["rows_behind_copies"] > 0
    screened = knn(t, t, 2, exclude_self=True, approximate=True, settings=SCREEN)
    assert "rows_behind_copies" not in screened.search
