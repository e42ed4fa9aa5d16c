"""The screen declines, before building its lists, a search of few rows against many targets:
the lists alone cost more than the rows' exact search (an attack's sampled records against a
large release)."""

from __future__ import annotations

import numpy as np

from privgate.neighbours import knn
from privgate.neighbours.ivf import screen_pays
from privgate.neighbours.settings import DEFAULT_SETTINGS, SearchSettings


def test_screen_pays_only_for_many_rows():
    s = DEFAULT_SETTINGS
    # 4,000 attacked records against a million targets in 2,000 lists: the lists cost more
    assert not screen_pays(4_000, 1_000_000, 2_000, s)
    # every record of a million against a million: the screen pays
    assert screen_pays(1_000_000, 1_000_000, 2_000, s)
    # more rows never turn a paying screen into a costly one
    rows = np.array([10, 1_000, 5_000, 20_000, 10**5, 10**6])
    pays = [screen_pays(int(r), 1_000_000, 2_000, s) for r in rows]
    assert pays == sorted(pays)


def _data(n: int, m: int, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 12)), rng.normal(size=(m, 12))


def test_few_rows_against_many_targets_are_searched_exactly():
    q, t = _data(60, 6_000)
    costly = SearchSettings(exact_below_pairs=0, ivf_check_rows=20, ivf_decline_costly_targets=1_000)
    nb = knn(q, t, 2, approximate=True, settings=costly)
    assert nb.search["exact"] is True and nb.search["screen"].startswith("declined")
    assert "ivf_screen" not in nb.search["settled_by"]
    ref = knn(q, t, 2)
    np.testing.assert_array_equal(nb.idx, ref.idx)
    np.testing.assert_array_equal(nb.dist, ref.dist)


def test_below_the_target_size_the_screen_is_kept():
    q, t = _data(60, 6_000)
    kept = SearchSettings(
        exact_below_pairs=0,
        ivf_check_rows=20,
        ivf_max_probe_share=1.0,
        ivf_max_uncertain_share=1.0,
        ivf_decline_costly_targets=10**6,
    )
    nb = knn(q, t, 2, approximate=True, settings=kept)
    assert nb.search["exact"] is False and "ivf_screen" in nb.search["settled_by"]
