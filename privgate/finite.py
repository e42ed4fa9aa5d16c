"""A number as privgate records and reports it: a finite float, or None."""

from __future__ import annotations

import math
from typing import Any


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None (None, a bool, text that is not a
    number, NaN and infinities alike)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
