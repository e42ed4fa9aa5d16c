"""One search as the engine's paths see it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .memo import SearchMemo
from .settings import SearchSettings


@dataclass(frozen=True)
class Problem:
    """The k nearest ``t`` rows of each ``q`` row (both float64, C-contiguous, equal widths);
    with ``exclude_self`` q and t are one set and row i never lists itself (by index)."""

    q: np.ndarray
    t: np.ndarray
    k: int
    exclude_self: bool
    settings: SearchSettings
    memo: SearchMemo | None = None

    @property
    def n(self) -> int:
        return int(self.q.shape[0])

    @property
    def m(self) -> int:
        return int(self.t.shape[0])

    @property
    def available(self) -> int:
        """Candidate rows per query: every target, less the query itself with ``exclude_self``."""
        return self.m - 1 if self.exclude_self else self.m


@dataclass(frozen=True)
class Options:
    """How a search may be made (:func:`privgate.neighbours.knn`'s keyword options but
    ``dedupe``): answers are the same whatever they say, except that ``approximate`` allows the
    measured-recall screen."""

    settings: SearchSettings
    categorical_slices: list[tuple[int, int]] | None = None
    grouped: bool = True
    use_faiss: bool = True
    approximate: bool = False
    seed: int = 0
    memo: SearchMemo | None = None
