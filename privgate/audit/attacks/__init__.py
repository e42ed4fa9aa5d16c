"""The attacks of a generator audit, one module each. An attack turns the features of one
target on many releases (:mod:`privgate.audit.features`) into membership scores — higher means
"the target was in the training set" — for the fit runs (out-of-fold for attacks that learn, so
the threshold is chosen on scores the attack did not train on) and for the test runs.

- ``distance`` (:mod:`.distance`): the distance from the target to its nearest synthetic record
  (no training);
- ``rare_value`` (:mod:`.rare_value`): how many synthetic records carry the target's rarest value
  (no training);
- ``cell`` and ``region`` (:mod:`.cell`): how many synthetic records fall in the target's cell or
  its region — the likelihood-ratio test for generators that publish noisy counts (no training);
- ``shadow`` (:mod:`.shadow`): a classifier trained on every feature of the fit runs' releases
  (shadow-model attack).

Another attack is one :func:`register_attack` call (CONTRIBUTING.md).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import ParameterError
from . import cell, distance, rare_value, shadow

#: name → scores(fit_x, fit_y, test_x, seed) -> (fit scores, test scores)
Attack = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]
ATTACKS: dict[str, Attack] = {
    "distance": distance.scores,
    "rare_value": rare_value.scores,
    "shadow": shadow.scores,
    "cell": cell.cell_scores,
    "region": cell.region_scores,
}
DEFAULT_ATTACKS = ("distance", "rare_value", "cell", "region", "shadow")
#: the attacks that learn nothing from fit runs (usable where there are none to learn from)
FIXED_ATTACKS = {"distance", "rare_value", "cell", "region"}


def register_attack(name: str, scores: Attack, *, learns: bool = False) -> Attack:
    """Make ``scores`` the audit attack ``name`` (``audit_generator(..., attacks=[name])``,
    ``privgate audit --attacks``): ``scores(fit_x, fit_y, test_x, seed)`` turns the features of
    one target on the fit and test runs' releases (rows: runs; columns:
    :data:`privgate.audit.features.FEATURES`) into membership scores, higher meaning "the target
    was trained on". ``learns``: it fits on the fit runs (``fit_y``: 1 where the target was in
    the training set), so its fit scores must be out-of-fold; an attack that learns nothing may
    also run where there are no fit runs to learn from. Returns ``scores``."""
    if not name.isidentifier():
        raise ParameterError(f"an attack's name must be a Python identifier, got {name!r}")
    ATTACKS[name] = scores
    if learns:
        FIXED_ATTACKS.discard(name)
    else:
        FIXED_ATTACKS.add(name)
    return scores


def resolve(names: object) -> tuple[str, ...]:
    """The attack names asked for (default: all), checked."""
    if names is None:
        return DEFAULT_ATTACKS
    if isinstance(names, str):
        names = [names]
    names = tuple(names)  # type: ignore[arg-type]
    unknown = [n for n in names if n not in ATTACKS]
    if unknown or not names:
        raise ParameterError(f"attacks must be a non-empty list of {list(ATTACKS)}; got {list(names)}")
    return tuple(dict.fromkeys(names))
