"""Float32 targets (compact spaces) searched without per-row copies: the IVF lists read the target
matrix through their list order instead of holding a reordered float32 copy
(privgate.neighbours.ivf_lists.Lists), and the flat screen searches the targets with faiss.knn
instead of copying them into an IndexFlatL2 (privgate.neighbours.screened.knn_flat) — the same
answers, bit for bit, as the copies gave."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from privgate.neighbours import SearchSettings, ivf_lists, knn
from privgate.neighbours.backends import faiss_module
from privgate.neighbours.memo import SearchMemo

SCREEN = SearchSettings(exact_below_pairs=0, ivf_check_rows=100, ivf_max_probe_share=1.0, ivf_max_uncertain_share=1.0)


def _points(n: int, rng: np.random.Generator, decimals: int, d: int = 6) -> np.ndarray:
    """float32 points rounded to ``decimals``: ties and duplicate rows."""
    return np.round(rng.normal(size=(n, d)), decimals).astype(np.float32)


def _built_lists(monkeypatch, copy: bool) -> list:
    """Record every Lists built; with ``copy`` give it the reordered float32 copy (the scan's
    former layout) instead of reading the targets through the list order."""
    built = []
    original = ivf_lists.Lists.__init__

    def init(self, exact, nlist, train_rows, seed):
        original(self, exact, nlist, train_rows, seed)
        if copy and self.in_place:
            self.t32 = np.ascontiguousarray(exact.t32[self.members])
            self.in_place = False
        built.append(self)

    monkeypatch.setattr(ivf_lists.Lists, "__init__", init)
    return built


@pytest.mark.parametrize("k, exclude_self, decimals", [(1, False, 1), (3, False, 1), (3, True, 2), (2, True, 3)])
def test_lists_read_float32_targets_in_place_with_the_copy_s_answers(monkeypatch, k, exclude_self, decimals):
    rng = np.random.default_rng(5)
    q = _points(1500, rng, decimals)
    t = q if exclude_self else _points(2400, rng, decimals)
    runs = {}
    for copy in (True, False):
        with monkeypatch.context() as patch:
            built = _built_lists(patch, copy)
            runs[copy] = knn(q, t, k, exclude_self=exclude_self, approximate=True, seed=4, settings=SCREEN)
        assert len(built) == 1
    np.testing.assert_array_equal(runs[False].idx, runs[True].idx)
    np.testing.assert_array_equal(runs[False].dist, runs[True].dist)
    assert runs[False].search["n_screened"] > 0  # the list scan ran
    lists = built[0]
    assert lists.in_place and lists.t32 is None  # the targets themselves, no reordered copy
    held = [a for a in vars(lists).values() if isinstance(a, np.ndarray)]
    assert all(a.ndim == 1 and a.itemsize <= 8 for a in held)  # per-target scalars only


def test_memoised_lists_do_not_keep_their_float32_targets_alive():
    """The memo holds lists weakly keyed by their target matrix: lists reading that matrix in place
    must not hold it, or neither would ever be freed."""
    rng = np.random.default_rng(9)
    q, t = _points(900, rng, 1), _points(1600, rng, 1)
    memo = SearchMemo()
    first = knn(q, t, 1, approximate=True, seed=2, settings=SCREEN, memo=memo)
    again = knn(q, t, 1, approximate=True, seed=2, settings=SCREEN, memo=memo)  # the memo's lists
    np.testing.assert_array_equal(first.idx, again.idx)
    assert any(isinstance(v, ivf_lists.Lists) for _, v in memo._items.values())
    gone = weakref.ref(t)
    del t
    gc.collect()
    assert gone() is None and not memo._items


def test_float64_targets_keep_the_reordered_copy(monkeypatch):
    """Float64 inputs are scanned through a centred float32 copy as before (it is the search's)."""
    rng = np.random.default_rng(6)
    q, t = _points(900, rng, 1).astype(np.float64), _points(1600, rng, 1).astype(np.float64)
    with monkeypatch.context() as patch:
        built = _built_lists(patch, copy=False)
        knn(q, t, 2, approximate=True, seed=1, settings=SCREEN)
    assert not built[0].in_place and built[0].t32.shape == t.shape


@pytest.mark.parametrize("k, exclude_self", [(1, False), (3, False), (2, True)])
def test_flat_screen_searches_the_targets_without_an_index_copy(monkeypatch, k, exclude_self):
    rng = np.random.default_rng(8)
    q = _points(1200, rng, 0, d=12)
    t = q if exclude_self else _points(1800, rng, 0, d=12)
    flat = SearchSettings(block_bytes=1 << 16)  # more than one block: the flat screen runs
    faiss = faiss_module()
    calls = {"index": 0, "knn": 0}
    index, search = faiss.IndexFlatL2, faiss.knn

    def counted(name, fn):
        def call(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return call

    with monkeypatch.context() as patch:
        patch.setattr(faiss, "IndexFlatL2", counted("index", index))
        patch.setattr(faiss, "knn", counted("knn", search))
        got = knn(q, t, k, exclude_self=exclude_self, dedupe=False, settings=flat)
    # the flat screen is NumPy's GEMM over the float32 targets in place: no faiss index, no copy
    assert calls == {"index": 0, "knn": 0}
    want = knn(q, t, k, exclude_self=exclude_self, dedupe=False, use_faiss=False, settings=flat)
    np.testing.assert_array_equal(got.idx, want.idx)
    np.testing.assert_array_equal(got.dist, want.dist)
