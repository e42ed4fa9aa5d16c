"""Every random stream of a generator audit, derived from the audit's one ``seed``.

Each stream is a :class:`numpy.random.SeedSequence` of ``(seed, stream number, index…)`` — the
``audit.<stream>`` numbers of :data:`privgate.seeds.STREAMS` — so the same audit seed gives the
same targets, design, training sets, generator seeds and shadow-model folds on any machine and in
any process (a worker of a pool or a Dagster step recomputes the seed of its run from the plan
alone).
"""

from __future__ import annotations

import numpy as np

from .. import seeds


def rng(seed: int, stream: str, *index: int) -> np.random.Generator:
    """A generator for one audit stream ("targets", "design", "background", "shuffle",
    "generator", "shadow") and optional indices, e.g. the run number."""
    return seeds.rng(seed, f"audit.{stream}", *index)


def seed_int(seed: int, stream: str, *index: int) -> int:
    """A 31-bit integer seed for one audit stream (what a generator library's ``seed`` accepts)."""
    state = np.random.SeedSequence(seeds.derive(seed, f"audit.{stream}", *index)).generate_state(1)
    return int(state[0] & 0x7FFFFFFF)
