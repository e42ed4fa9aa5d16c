"""Limits on parameters that multiply a metric's work."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError

# the largest repetition count a metric accepts: each repetition repeats the metric's whole work,
# and its estimate's error shrinks as 1/√repetitions (100 repetitions: a tenth of one's)
MAX_REPETITIONS = 100


def check_work_bound(metric: str, name: str, value: Any, limit: int) -> None:
    """Refuse a parameter that multiplies a metric's work above ``limit``, naming the metric,
    the parameter and the limit (an unbounded value would make the run never end)."""
    if not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value > limit:
        raise ParameterError(
            f"{metric} {name}={int(value)} is above the limit of {limit} "
            f"(it multiplies the work of the metric); use at most {limit}"
        )
