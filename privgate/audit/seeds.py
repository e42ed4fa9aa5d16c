"""Every random stream of a generator audit, derived from the audit's one ``seed``.

Each stream is a :class:`numpy.random.SeedSequence` of ``(seed, stream number, index…)``, so the
same audit seed gives the same targets, design, training sets, generator seeds and shadow-model
folds on any machine and in any process (a worker of a pool or a Dagster step recomputes the seed
of its run from the plan alone).
"""

from __future__ import annotations

import numpy as np

#: stream numbers: one per kind of random step
STREAMS = {
    "targets": 1,      # which records are sampled when scoring outliers of a large pool
    "design": 2,       # which runs include which target, and which runs fit / test
    "background": 3,   # the background training rows drawn from the pool
    "shuffle": 4,      # the order of the rows in each run's training frame
    "generator": 5,    # the seed handed to the user's generator in each run
    "shadow": 6,       # the shadow model's cross-fitting folds
}


def rng(seed: int, stream: str, *index: int) -> np.random.Generator:
    """A generator for one stream (and optional indices, e.g. the run number)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), STREAMS[stream], *map(int, index)]))


def seed_int(seed: int, stream: str, *index: int) -> int:
    """A 31-bit integer seed for one stream (what a generator library's ``seed`` accepts)."""
    state = np.random.SeedSequence([int(seed), STREAMS[stream], *map(int, index)]).generate_state(1)
    return int(state[0] & 0x7FFFFFFF)
