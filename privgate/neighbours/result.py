"""What a neighbour search returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Neighbours:
    """k nearest neighbours of each query row: ``dist`` (n, k) float64, ``idx`` (n, k) int64,
    sorted by distance (ties by lowest index)."""

    dist: np.ndarray
    idx: np.ndarray
    #: how the search was made: {"exact": bool, "settled_by": {path: rows}, and for an approximate
    #: screen "recall" (measured on a seeded sample of queries checked exactly), "n_checked", ...}
    search: dict = field(default_factory=lambda: {"exact": True})

    @property
    def k(self) -> int:
        return int(self.idx.shape[1])

    @property
    def exact(self) -> bool:
        return bool(self.search.get("exact", True))

    def first(self, k: int) -> "Neighbours":
        if k > self.k:
            raise ValueError(f"asked for {k} neighbours, only {self.k} computed")
        return Neighbours(self.dist[:, :k], self.idx[:, :k], self.search)
