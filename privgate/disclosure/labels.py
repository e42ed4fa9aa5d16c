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
    """``as.character`` of each distinct double (called on unique values only): the labels
    :func:`r_double_label` gives, one by one, but with the notation and digit count of every
    value read from one ``%.14e`` pass and each label written by one ``%`` format per (notation,
    digits) pair, so that the Python work per value is two string formats."""
    x = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64).ravel()
    out = np.empty(x.size, dtype=object)
    out[np.isnan(x)] = "NA"
    out[x == np.inf] = "Inf"
    out[x == -np.inf] = "-Inf"
    out[x == 0] = "0"
    plain = np.flatnonzero(np.isfinite(x) & (x != 0))
    if plain.size:
        out[plain] = _finite_labels(x[plain])
    return out.tolist()


def _finite_labels(x: np.ndarray) -> np.ndarray:
    """:func:`r_double_label` of finite non-zero doubles (object array of str)."""
    # "d.dddddddddddddde±XX[X]" of |x|: its digits are those of x's mantissa without the sign
    sci = np.array(["%.14e" % v for v in np.abs(x).tolist()], dtype="S21").view(np.uint8).reshape(x.size, 21)
    digits = sci[:, [0, *range(2, 16)]] != ord("0")
    nsig = 15 - np.argmax(digits[:, ::-1], axis=1)
    three = sci[:, 20] != 0
    exp = (sci[:, 18].astype(np.int64) - 48) * 10 + (sci[:, 19].astype(np.int64) - 48)
    exp = np.where(three, exp * 10 + (sci[:, 20].astype(np.int64) - 48), exp)
    kpower = np.where(sci[:, 17] == ord("-"), -exp, exp)
    neg = (x < 0).astype(np.int64)
    rgt = np.maximum(0, nsig - kpower - 1)
    left = np.where(kpower >= 0, kpower + 1, 1)
    width_fixed = neg + left + np.where(rgt > 0, rgt + 1, 0)
    d = nsig - 1
    width_sci = neg + (d > 0) + d + 4 + np.where(np.abs(kpower) >= 100, 2, 1)
    fixed = width_fixed <= width_sci
    precision = np.where(fixed, rgt, d)
    out = np.empty(x.size, dtype=object)
    # one format per (notation, digits) pair: a loop over at most a few hundred formats, not records
    form = precision * 2 + fixed
    for f in np.unique(form):
        sel = np.flatnonzero(form == f)
        fmt = "%%.%d%s" % (f // 2, "f" if f % 2 else "e")
        out[sel] = [fmt % v for v in x[sel].tolist()]
    return out


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
