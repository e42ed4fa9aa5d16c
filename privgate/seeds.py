"""Every random stream of privgate, by name, derived from a run's (or an audit's) one seed.

A random step asks this module for its generator (:func:`rng`) or, when it hands the seed to a
function or library that seeds itself (the bootstrap of :mod:`privgate.stats`, scikit-learn's and
LightGBM's ``random_state``), for the seed material (:func:`derive`). ``STREAMS`` names every
stream and says how it is derived:

* a number: the stream is NumPy's :class:`~numpy.random.SeedSequence` of
  ``[seed, number, index…]`` (an index, e.g. an audit's run and target, when the stream has one
  generator per item). Streams with different numbers are independent, so changing one step
  (e.g. an attack's naive baseline) never moves another;
* ``None``: the stream is seeded by the seed itself. These are the steps seeded before numbered
  streams existed; they stay so that the same seed keeps giving the same published numbers
  (they draw from the same generator state, one step each).

The numbers are what the published numbers were computed with: never renumber a stream (a new
stream takes a new number). The attacks' numbers (1–4) and the audit's (1–6) overlap: they
come from different steps seeded by the seed a user passes to each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: stream name → stream number (SeedSequence entropy [seed, number, index…]) or None (the seed itself)
STREAMS: dict[str, int | None] = {
    # ---- seeded by the seed itself
    "bootstrap": None,  # every percentile bootstrap of an interval or a holdout excess
    "holdout_baseline": None,  # which holdout records stand in for the release in the baseline
    "nnaa.subsample": None,  # nnaa with unequal sides: the larger side's random subsets
    "proximity.halves": None,  # proximity_score: the random halves of the real records
    "detection.folds": None,  # detection_mlp: the stratified folds (scikit-learn)
    "detection.mlp": None,  # detection_mlp: initial weights, validation split, batch orders
    "membership.splits": None,  # membership_inference: the seeds of its repeated train/test splits
    "membership.model": None,  # membership_inference: LightGBM's random_state
    "baselines": None,  # the calibration releases of privgate.baselines
    "hitting_rate.sizes": None,  # hitting_rate beyond chance: the larger side's subset of the smaller's size
    # ---- numbered: sampled query records (sample_real / sample) and jackknife partitions
    "sample.real": 0x5A4D,
    "sample.synthetic": 0x5359,
    "jackknife.real": 0x4A4B0001,
    "jackknife.synthetic": 0x4A4B0002,
    # ---- numbered: metrics' own random splits
    "memorisation.parts": 0x3E30,  # the larger of training / holdout split into parts of the other's size
    "label_free.anchors": 0x4C46,  # the label-free view: which release records anchor the level correspondence
    "label_free.maps": 0x4C4D,  # the label-free view: the pairs of anchors each drawn numeric map goes through
    "label_free.tail_maps": 0x4C54,  # the label-free view: the pairs of far records' anchors each drawn map goes through
    "label_free.records": 0x4C52,  # the label-free view: the shuffled anchors that records found disguised must beat
    "dcr.refit_queries": 0x44435201,  # dcr: the real records its FAMD refit change is measured on
    "detection.sample": 0x44455401,  # detection_mlp: records per class above max_records (index 0 real, 1 synth.)
    "membership.sample": 0x4D495301,  # membership_inference: one share of each class above max_records (same)
    # ---- numbered: the anonymeter-style attacks
    "attack.targets": 1,  # which real records are attacked
    "attack.controls": 2,  # which holdout records the control attack targets
    "attack.baseline": 3,  # the naive (random-guess) attack
    "attack.predicates": 4,  # singling_out's candidate predicates
    # ---- numbered, with indices: a generator audit (privgate.audit.seeds)
    "audit.targets": 1,  # which records are sampled when scoring outliers of a large pool
    "audit.design": 2,  # which runs include which target, and which runs fit / test
    "audit.background": 3,  # the background training rows drawn from the pool (per run)
    "audit.shuffle": 4,  # the order of the rows in each run's training frame (per run)
    "audit.generator": 5,  # the seed handed to the user's generator (per run)
    "audit.shadow": 6,  # the shadow model's cross-fitting folds (per target)
}


def derive(seed: Any, stream: str, *index: int) -> Any:
    """The seed material of ``stream``: ``[seed, number, index…]`` for a numbered stream, the
    seed itself for a stream seeded by it (no index allowed). Unknown names raise KeyError."""
    number = STREAMS[stream]
    if number is None:
        if index:
            raise ValueError(f"the random stream {stream!r} is seeded by the seed itself and has no index")
        return seed
    return [int(seed), number, *map(int, index)]


def rng(seed: Any, stream: str, *index: int) -> np.random.Generator:
    """NumPy's generator for ``stream`` (and optional indices) of ``seed``."""
    return np.random.default_rng(derive(seed, stream, *index))
