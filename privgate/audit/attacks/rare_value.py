"""Threshold attack on the count of synthetic records that carry the target's rarest value (a
category level or a value range few people share, or none: a canary's unseen level or
out-of-range value). A generator whose domain or bounds come from the private data, or that
memorises rare values, emits them more often when the target was trained on (the counting
attacks of Stadler et al., USENIX Security 2022; the canaries of Annamalai et al., USENIX
Security 2024). Needs no training; higher score = more records with the value = member."""

from __future__ import annotations

import numpy as np

from ..features import feature_index

_RAREST = feature_index("rarest_value_share")
_TWO = feature_index("two_rarest_share")


def scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    # the pair share only breaks ties between equal counts of the rarest value
    def score(x: np.ndarray) -> np.ndarray:
        return x[:, _RAREST] + 1e-6 * x[:, _TWO]

    return score(fit_x), score(test_x)
