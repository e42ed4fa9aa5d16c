"""Intervals of quantities built from two estimates.

- ``difference_interval``: MOVER, the method of variance estimates recovery (Zou & Donner,
  "Construction of confidence limits about effect measures", Stat. Med. 2008; Newcombe's
  hybrid score interval for proportions, Stat. Med. 1998, is its special case with Wilson
  limits). From a and b with their own intervals it gives an interval of a − b assuming the two
  are independent; when they are positively correlated (both scored against the same real
  records) it is conservative.
- ``control_risk``: the residual risk of an attack over the same attack on a control set of
  real non-members, ``(attack − control) / (1 − control)``, with the error propagated as
  anonymeter does (Giomi et al., PoPETs 2023, §4; anonymeter's ``residual_success``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .proportions import wilson_rate


def difference_interval(
    a: float, a_ci: tuple[float, float], b: float, b_ci: tuple[float, float]
) -> tuple[float, float]:
    """MOVER interval of a − b from the two estimates and their (same-level) intervals."""
    la, ua = a_ci
    lb, ub = b_ci
    d = a - b
    lo = d - math.sqrt(max(a - la, 0.0) ** 2 + max(ub - b, 0.0) ** 2)
    hi = d + math.sqrt(max(ua - a, 0.0) ** 2 + max(b - lb, 0.0) ** 2)
    return (float(lo), float(hi))


@dataclass(frozen=True)
class ControlRisk:
    """The attack and control success rates (Wilson centres with half-widths) and the residual
    risk with its interval, clipped to [0, 1] (risk below 0 means the attack did no better than
    on people who were not in the training data)."""

    attack_rate: float
    attack_error: float
    control_rate: float
    control_error: float
    risk: float
    ci: tuple[float, float]


def control_risk(
    attack_successes: float, n_attacks: int, control_successes: float, n_control: int, level: float = 0.95
) -> ControlRisk:
    """Residual risk of an attack over its control, anonymeter's definition: Wilson rates
    (centre ± half-width) for attack and control, risk = (a − c)/(1 − c), error propagated to
    first order; the interval is risk ± error, clipped to [0, 1]. ``risk`` is the unclipped
    point value; clip it for a [0, 1] metric value."""
    a, da = wilson_rate(attack_successes, n_attacks, level)
    c, dc = wilson_rate(control_successes, n_control, level)
    if c >= 1.0:  # the control succeeds always: no residual risk can be measured
        return ControlRisk(a, da, c, dc, 0.0, (0.0, 1.0))
    risk = (a - c) / (1.0 - c)
    d_a = 1.0 / (1.0 - c)
    d_c = (a - 1.0) / (1.0 - c) ** 2
    err = math.sqrt((da * d_a) ** 2 + (dc * d_c) ** 2)
    lo = min(1.0, max(0.0, risk - err))
    hi = min(1.0, max(0.0, risk + err))
    return ControlRisk(a, da, c, dc, float(risk), (float(lo), float(hi)))
