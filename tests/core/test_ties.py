"""Tolerant comparisons (privgate.ties): lt and le decide most values by one comparison and the
rest by the tolerance itself; they must give the definition's answer for every element."""

from __future__ import annotations

import numpy as np
import pytest

from privgate import ties


def lt_by_definition(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a < b) & ~ties.close(a, b)


def le_by_definition(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a <= b) | ties.close(a, b)


def near_ties(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows of values within a few tolerances of their row's threshold, at every scale, with
    infinities, NaN and signed zeros sprinkled on both sides."""
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 60))
    b = rng.normal(size=(rows, 1)) * 10.0 ** rng.integers(-12, 12)
    a = np.repeat(b, cols, axis=1)
    a = a + rng.normal(size=a.shape) * np.abs(a) * 10.0 ** rng.uniform(-12, -7)
    a = a + rng.normal(size=a.shape) * 10.0 ** rng.uniform(-12, -7)
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    hit = rng.random(a.shape) < 0.05
    a[hit] = rng.choice(specials, int(hit.sum()))
    hit = rng.random(b.shape) < 0.1
    b[hit] = rng.choice(specials, int(hit.sum()))
    return a, b


@pytest.mark.parametrize("seed", range(4))
def test_lt_and_le_equal_their_definition_near_ties(seed):
    rng = np.random.default_rng(seed)
    decided_by_tolerance = 0
    for _ in range(400):
        a, b = near_ties(rng)
        for x, y in ((a, b), (b, a), (a, a[:, :1]), (a[0], b[0, 0]), (float(a[0, 0]), float(b[0, 0]))):
            assert np.array_equal(ties.lt(x, y), lt_by_definition(x, y))
            assert np.array_equal(ties.le(x, y), le_by_definition(x, y))
            assert np.shape(ties.lt(x, y)) == np.shape(lt_by_definition(x, y))
        decided_by_tolerance += int(((a < b) & ties.close(a, b)).sum())
    assert decided_by_tolerance > 100  # the draws do land within the tolerance


def test_lt_and_le_on_hand_made_values():
    t = 1.0
    within = 1.0 - 0.5e-9  # equal to 1 within 1e-9·(1 + 1)
    beyond = 1.0 - 3e-9
    assert not ties.lt(within, t) and ties.lt(beyond, t)
    assert ties.le(1.0 + 0.5e-9, t) and not ties.le(1.0 + 3e-9, t)
    assert list(ties.lt([np.inf, 5.0, -np.inf, np.nan], np.inf)) == [False, True, True, False]
    assert list(ties.le([np.inf, 5.0, -np.inf, np.nan], -np.inf)) == [False, False, True, False]
