"""Test points shaped like the mixed space's categorical part: one-hot blocks of value 1/√2."""

from __future__ import annotations

import numpy as np


def one_hot_blocks(n: int, rng: np.random.Generator, levels, start: int = 0) -> tuple[list, list]:
    """One random one-hot block per entry of ``levels`` (n × levels, value 1/√2) and each block's
    column slice, the first starting at column ``start``."""
    blocks, slices, pos = [], [], start
    for n_levels in levels:
        onehot = np.zeros((n, n_levels))
        onehot[np.arange(n), rng.integers(0, n_levels, n)] = 1 / np.sqrt(2)
        blocks.append(onehot)
        slices.append((pos, pos + n_levels))
        pos += n_levels
    return blocks, slices
