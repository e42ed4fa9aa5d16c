"""privgate.seeds: one table of named random streams. The numbers are what published scores were
computed with, so these tests pin them: a renumbered stream changes every score it feeds."""

from __future__ import annotations

import numpy as np
import pytest

from privgate import seeds
from privgate.audit.seeds import seed_int


def test_numbered_stream_is_the_seed_sequence_of_seed_number_and_index():
    got = seeds.rng(7, "attack.targets").integers(0, 10**9, 3)
    assert got.tolist() == [870260047, 770140950, 875856275]
    assert np.array_equal(got, np.random.default_rng(np.random.SeedSequence([7, 1])).integers(0, 10**9, 3))
    assert seeds.derive(7, "jackknife.synthetic") == [7, 0x4A4B0002]
    assert seeds.derive(7, "audit.generator", 3) == [7, 5, 3]
    assert seeds.rng(7, "audit.generator", 3).integers(0, 10**9, 2).tolist() == [640170350, 422555341]
    assert seed_int(11, "generator", 2) == 2104825976


def test_plain_stream_is_the_seed_itself_and_takes_no_index():
    assert seeds.derive(5, "bootstrap") == 5
    assert np.array_equal(seeds.rng(5, "baselines").random(4), np.random.default_rng(5).random(4))
    with pytest.raises(ValueError, match="no index"):
        seeds.derive(5, "bootstrap", 1)
    with pytest.raises(KeyError):
        seeds.rng(5, "no such stream")


def test_streams_of_one_family_are_independent():
    families: dict[str, list[int]] = {}
    for name, number in seeds.STREAMS.items():
        if number is not None:
            families.setdefault(name.split(".")[0], []).append(number)
    for family, numbers in families.items():
        assert len(set(numbers)) == len(numbers), family
    assert seeds.rng(1, "attack.targets").random() != seeds.rng(1, "attack.controls").random()
