"""Threshold attack on the distance from the target to its nearest synthetic record: a generator
that memorises the target puts a record at or near it (the closest-record attack of Stadler,
Oprisanu, Troncoso, USENIX Security 2022, and of the distance metrics' DCR). Needs no training;
higher score = nearer = member."""

from __future__ import annotations

import numpy as np

from ..features import feature_index

_NEAREST = feature_index("nearest_distance")


def scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return -fit_x[:, _NEAREST], -test_x[:, _NEAREST]
