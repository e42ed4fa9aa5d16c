"""Threshold attacks on how many synthetic records fall in the target's cell (``cell``: every
column's code equal to the target's) or its region (``region``: categories equal, numeric values
within one population quantile bin). For a generator that publishes Laplace-noised counts over a
domain — a histogram, the marginals of a graphical model — and samples records from them, the
likelihood ratio of "target in" against "target out" increases with the count of the target's
cell, so a threshold on that count is the most powerful test of the target's presence
(Neyman–Pearson); a target alone in its cell (a cell canary, :mod:`privgate.audit.targets`)
moves that count by the most one record can. The region count catches a generator whose cells
are wider than the population's quantile bins. Needs no training; higher score = more records
there = member. The scores are the counts themselves, integers: the many-canary analysis shifts
each canary's scores by a count it observed (``privgate.audit.analysis.center_within``), and a
tie-breaking fraction would move a count off the integer its threshold is set at."""

from __future__ import annotations

import numpy as np

from ..features import feature_index

_CELL = feature_index("cell_count")
_REGION = feature_index("region_count")


def cell_scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return fit_x[:, _CELL].astype(np.float64), test_x[:, _CELL].astype(np.float64)


def region_scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return fit_x[:, _REGION].astype(np.float64), test_x[:, _REGION].astype(np.float64)
