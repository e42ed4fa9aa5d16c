"""Structures derived from one matrix alone, kept for the other searches of that matrix.

* :class:`SearchMemo` — per evaluation (the context's): category codes, k-means lists, the
  exact search's target side of targets below ``target_cache_min_rows`` rows, and the content
  digests of the matrices metrics search themselves.
* the target cache — process-wide: the exact search's target side (centred float32 copy and its
  norms) of a target matrix of at least ``target_cache_min_rows`` rows is kept for the next
  search of the SAME matrix object (the context hands the same encoded matrix to every search of
  a set). At most ``target_cache_size`` targets are kept (least recently used first out); an
  entry also goes when its matrix is freed. Results are identical with and without either.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from .settings import SearchSettings

_TARGET_PREP: "OrderedDict[tuple, dict]" = OrderedDict()


def target_prep(t: np.ndarray, settings: SearchSettings, memo: "SearchMemo | None" = None) -> dict | None:
    """The preparation cache entry of target matrix ``t``: in the process-wide target cache from
    ``target_cache_min_rows`` rows, else in the evaluation's ``memo`` (while ``t`` lives; an
    evaluation searches each of its matrices several times, and at 100,000 × 95 a preparation
    costs ~0.07 CPU-s); None without a memo."""
    if t.shape[0] < settings.target_cache_min_rows:
        return None if memo is None else memo.get(t, ("target_prep",), dict)
    key = (id(t), t.shape, t.__array_interface__["data"][0])
    entry = _TARGET_PREP.get(key)
    if entry is None:
        entry = {}
        _TARGET_PREP[key] = entry
        try:
            weakref.finalize(t, _TARGET_PREP.pop, key, None)
        except TypeError:  # not weak-referenceable: do not cache
            _TARGET_PREP.pop(key, None)
            return None
        while len(_TARGET_PREP) > settings.target_cache_size:
            _TARGET_PREP.popitem(last=False)
    else:
        _TARGET_PREP.move_to_end(key)
    return entry


def clear_target_cache() -> None:
    """Forget every cached target preparation (frees their memory)."""
    _TARGET_PREP.clear()


def target_cache_size() -> int:
    """How many target preparations are cached now."""
    return len(_TARGET_PREP)


class SearchMemo:
    """Structures derived from one matrix alone, kept for the other searches of that matrix
    (an evaluation's eight distance searches read four matrices: the real and the synthetic
    records in two spaces). Keyed by the array object itself: an entry is only returned for the
    same, still living array (a weak reference, dropped when the array is freed), so a search of
    other data never reads it. Answers are the same with or without a memo."""

    def __init__(self) -> None:
        self._items: dict[tuple, tuple[weakref.ref, object]] = {}

    def get(self, array: np.ndarray, tag: tuple, build: Callable[[], Any]) -> Any:
        """The value kept for ``array`` under ``tag``, built (and kept) on the first call."""
        key = (id(array), tag)
        hit = self._items.get(key)
        if hit is not None and hit[0]() is array:
            return hit[1]
        value = build()
        items = self._items
        self._items[key] = (weakref.ref(array, lambda _ref, key=key: items.pop(key, None)), value)
        return value

    @staticmethod
    def get_or_build(memo: "SearchMemo | None", array: np.ndarray, tag: tuple, build: Callable[[], Any]) -> Any:
        """``memo.get(...)``, or ``build()`` when there is no memo."""
        return build() if memo is None else memo.get(array, tag, build)
