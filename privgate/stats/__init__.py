"""Uncertainty and tests, in one place: every metric, attack and gate rule calls these functions;
no metric computes its own interval formula (ARCHITECTURE.md, "Where the next pieces go").

- :mod:`.proportions` — intervals for a share of records (Wilson, Clopper–Pearson) and the
  anonymeter-style Wilson rate with its half-width.
- :mod:`.bootstrap` — seeded bootstrap over records (percentile intervals), vectorised for means.
- :mod:`.combine` — intervals of a difference of two estimates (MOVER) and the control-set risk
  ``(attack − control) / (1 − control)`` with its propagated error.
- :mod:`.testing` — exact binomial tests and multiple-testing corrections (Bonferroni, Holm).

Every interval is a ``(lower, upper)`` tuple of floats at ``level`` (default 0.95); every random
step takes a seed, so the same inputs and seed give the same interval.
"""

from .bootstrap import bootstrap_ci, bootstrap_mean_ci, bootstrap_weights
from .combine import ControlRisk, control_risk, difference_interval
from .proportions import clopper_pearson, wilson, wilson_rate, z_value
from .testing import binomial_test, bonferroni, holm

DEFAULT_LEVEL = 0.95

__all__ = [
    "DEFAULT_LEVEL", "ControlRisk", "binomial_test", "bonferroni", "bootstrap_ci", "bootstrap_mean_ci",
    "bootstrap_weights", "clopper_pearson", "control_risk", "difference_interval", "holm", "wilson",
    "wilson_rate", "z_value",
]
