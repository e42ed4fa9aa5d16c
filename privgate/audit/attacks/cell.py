"""Threshold attacks on how many synthetic records fall in the target's cell (``cell``: every
column's code equal to the target's) or its region (``region``: categories equal, numeric values
within one population quantile bin). For a generator that publishes Laplace-noised counts over a
domain — a histogram, the marginals of a graphical model — and samples records from them, the
likelihood ratio of "target in" against "target out" increases with the count of the target's
cell, so a threshold on that count is the most powerful test of the target's presence
(Neyman–Pearson); a target alone in its cell (a cell canary, :mod:`privgate.audit.targets`)
moves that count by the most one record can. The region count catches a generator whose cells
are wider than the population's quantile bins. Needs no training; higher score = more records
there = member (the other count breaks ties)."""

from __future__ import annotations

import numpy as np

from ..features import feature_index

_CELL = feature_index("cell_count")
_REGION = feature_index("region_count")
#: weight of the other count, breaking ties only (counts are integers below 1e6)
_TIE = 1e-7


def cell_scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    def score(x: np.ndarray) -> np.ndarray:
        return x[:, _CELL] + _TIE * x[:, _REGION]
    return score(fit_x), score(test_x)


def region_scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    def score(x: np.ndarray) -> np.ndarray:
        return x[:, _REGION] + _TIE * x[:, _CELL]
    return score(fit_x), score(test_x)
