"""Level labels exactly as R writes them (synthpop tabulates strings, so labels decide matching).

* ``r_double_labels`` — R's ``as.character(<double>)`` (R 4.2): 15 significant digits, trailing
  zeros dropped, fixed notation unless scientific is strictly narrower (``scipen = 0``):
  ``57``, ``23.5``, ``1e+05``, ``123456``.
* ``r_integer_labels`` — ``as.character(<integer>)``: plain digits.
* ``formatc_g`` — ``formatC(x, digits = d, width = 1)`` for doubles, i.e. C ``%.{d}g``; used by
  ``cut(dig.lab = 8)`` for interval labels.

Formatting runs once per *distinct* value (labels are joined back to records by Polars), never
per record.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

MISSING = "Missing"


def r_double_label(x: float) -> str:
    """``as.character(x)`` of one R double (R 4.2 semantics, 15 significant digits)."""
    if math.isnan(x):
        return "NA"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    sci = "%.14e" % x
    mantissa, exp = sci.split("e")
    kpower = int(exp)
    digits = mantissa.replace("-", "").replace(".", "").rstrip("0")
    nsig = max(len(digits), 1)
    neg = 1 if x < 0 else 0
    # fixed notation width
    rgt = max(0, nsig - kpower - 1)
    left = kpower + 1 if kpower >= 0 else 1
    width_fixed = neg + left + (rgt + 1 if rgt > 0 else 0)
    # scientific notation width: mantissa digits, point, "e+XX" (3-digit exponents take one more)
    d = nsig - 1
    e = 2 if abs(kpower) >= 100 else 1
    width_sci = neg + (1 if d > 0 else 0) + d + 4 + e
    if width_fixed <= width_sci:
        return "%.*f" % (rgt, x)
    return "%.*e" % (d, x)


def r_double_labels(values: Iterable[float]) -> list[str]:
    """``as.character`` of each distinct double (called on unique values only)."""
    return [r_double_label(float(v)) for v in values]


def r_integer_labels(values: Iterable[float]) -> list[str]:
    """``as.character`` of each distinct R integer."""
    return [str(int(v)) for v in values]


def formatc_g(values: np.ndarray, digits: int) -> list[str]:
    """``formatC(0 + x, digits = digits, width = 1)`` for doubles: C ``%.{digits}g``."""
    return ["%.*g" % (digits, float(v) + 0.0) for v in values]


def cut_labels(breaks: np.ndarray, dig_lab: int = 8) -> list[str]:
    """Labels of ``cut(x, breaks, right = FALSE, include.lowest = TRUE, dig.lab = dig_lab)``.

    ``[b1,b2)``, ..., ``[b_{n-1},b_n]``; digits grow from ``dig_lab`` up to 12 until adjacent
    break labels differ; if they never do, R falls back to ``Range_1``, ``Range_2``, ...
    """
    nb = len(breaks)
    ok = False
    ch: list[str] = []
    for dig in range(dig_lab, max(12, dig_lab) + 1):
        ch = formatc_g(breaks, dig)
        if all(ch[i] != ch[i + 1] for i in range(nb - 1)):
            ok = True
            break
    if not ok:
        return [f"Range_{i + 1}" for i in range(nb - 1)]
    labels = [f"[{ch[i]},{ch[i + 1]})" for i in range(nb - 1)]
    labels[-1] = labels[-1][:-1] + "]"
    return labels
