"""Grouping numeric keys/targets with synthpop's exact break rules (synthpop ``group_num`` with
``classInt::classIntervals``).

Breaks come from the original's non-missing values pooled with the non-missing values of **all**
m synthetic sets (``cont_na`` codes and nulls left out); every set is cut with the same breaks:

* ``quantile``: R ``quantile(type = 7)`` at ``seq(0, 1, 1/n)``, then ``unique``;
* if ``n`` exceeds the number of distinct pooled values it is reduced to it, and when they are
  equal each distinct value becomes a class with breaks at the midpoints (extended below the
  minimum and above the maximum by half the mean gap) — classInt's "unique" style;
* if the original's grouped factor has fewer than 3 levels (interval levels plus cont_na levels)
  the grouping is redone with ``equal`` (``seq(min, max, length.out = n + 1)``).

Intervals are ``[b_i, b_{i+1})`` with the last one closed; labels as R's ``cut(dig.lab = 8)``;
cont_na codes keep their own level labelled as R prints the number.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .labels import cut_labels, r_double_label


def r_seq_by(n: int) -> np.ndarray:
    """R ``seq(0, 1, 1/n)``: ``(0:n) * (1/n)`` clipped at 1."""
    by = 1.0 / n
    return np.minimum(np.arange(n + 1, dtype=np.float64) * by, 1.0)


def r_quantile7(x: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R ``quantile(x, probs, type = 7)`` with R's own arithmetic (bit-for-bit)."""
    xs = np.sort(np.asarray(x, dtype=np.float64))
    n = xs.size
    index = 1.0 + max(n - 1, 0) * probs
    lo = np.floor(index)
    hi = np.ceil(index)
    qs = xs[lo.astype(np.int64) - 1]
    x_hi = xs[hi.astype(np.int64) - 1]
    interp = (index > lo) & (x_hi != qs)
    h = index - lo
    out = qs.copy()
    out[interp] = (1.0 - h[interp]) * qs[interp] + h[interp] * x_hi[interp]
    return out


def _r_mean(x: np.ndarray) -> float:
    """R ``mean()`` of doubles: long-double sum / n plus one correction pass."""
    xl = x.astype(np.longdouble)
    n = np.longdouble(x.size)
    s = np.cumsum(xl)[-1] / n
    t = np.cumsum(xl - s)[-1]
    return float(s + t / n)


def r_seq_length(lo: float, hi: float, length_out: int) -> np.ndarray:
    """R ``seq(lo, hi, length.out = k)``."""
    if length_out <= 2:
        return np.array([lo, hi][:length_out], dtype=np.float64)
    if lo == hi:
        return np.full(length_out, lo, dtype=np.float64)
    n1 = length_out - 1
    mid = lo + np.arange(1, n1, dtype=np.float64) * ((hi - lo) / n1)
    return np.concatenate([[lo], mid, [hi]])


def class_breaks(values: np.ndarray, n: int, style: str = "quantile") -> np.ndarray:
    """``classInt::classIntervals(values, n, style)$brks`` (classInt 0.4-9) for finite values."""
    vals = np.asarray(values, dtype=np.float64)
    distinct = np.unique(vals)
    nobs = distinct.size
    if nobs == 0:
        raise ParameterError("cannot group: the variable has no non-missing values")
    if nobs == 1:
        raise ParameterError("cannot group: the variable has a single distinct non-missing value")
    if n < 2:
        raise ParameterError(f"ngroups must be at least 2, got {n}")
    n = min(int(n), nobs)
    if n == nobs:
        gaps = np.diff(distinct)
        half = _r_mean(gaps) / 2.0
        return np.concatenate([[distinct[0] - half], distinct[:-1] + gaps / 2.0, [distinct[-1] + half]])
    if style == "quantile":
        return r_quantile7(vals, r_seq_by(n))
    if style == "equal":
        return r_seq_length(float(vals.min()), float(vals.max()), n + 1)
    raise ValueError(f"unknown style {style!r}")


def cut_codes(x: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """``cut(x, breaks, right = FALSE, include.lowest = TRUE)`` codes 0..nb-2; -1 outside/NaN."""
    nb = breaks.size
    codes = np.searchsorted(breaks, x, side="right") - 1
    codes = np.where(x == breaks[-1], nb - 2, codes)
    return np.where((codes < 0) | (codes > nb - 2) | np.isnan(x), -1, codes)


@dataclass(frozen=True)
class Grouping:
    """Breaks and level labels of one grouped variable."""

    breaks: np.ndarray
    interval_labels: list[str]
    cont_na_values: list[float]
    cont_na_labels: list[str]
    style: str

    @property
    def levels(self) -> list[str]:
        return self.interval_labels + self.cont_na_labels

    def describe(self) -> dict:
        return {
            "style": self.style,
            "n_groups": len(self.interval_labels),
            "n_cont_na_levels": len(self.cont_na_labels),
        }


def make_grouping(orig: np.ndarray, syn_all: np.ndarray, n: int, cont_na: list[float] | None) -> Grouping:
    """Breaks for one variable from the original pooled with every synthetic value.

    ``orig`` and ``syn_all`` are float arrays with NaN for missing; ``cont_na`` the special codes.
    """
    special = np.asarray(sorted(set(cont_na or []), key=list(cont_na or []).index), dtype=np.float64)

    def nonmissing(a: np.ndarray) -> np.ndarray:
        keep = ~np.isnan(a)
        if special.size:
            keep &= ~np.isin(a, special)
        return a[keep]

    pooled = np.concatenate([nonmissing(orig), nonmissing(syn_all)])
    cont_labels = [r_double_label(float(v)) for v in special]
    style = "quantile"
    breaks = np.unique(class_breaks(pooled, n, style))
    labels = cut_labels(breaks)
    if len(labels) + len(cont_labels) < 3:
        style = "equal"
        breaks = np.unique(class_breaks(pooled, n, style))
        labels = cut_labels(breaks)
    return Grouping(
        breaks=breaks,
        interval_labels=labels,
        cont_na_values=[float(v) for v in special],
        cont_na_labels=cont_labels,
        style=style,
    )


def grouped_labels(x: np.ndarray, grouping: Grouping) -> np.ndarray:
    """Label of every value (object array); None for missing (NaN / outside the breaks).

    cont_na codes get their own label; other values the label of their interval.
    """
    interval = np.asarray(grouping.interval_labels + [None], dtype=object)
    codes = cut_codes(x, grouping.breaks)
    out = interval[np.where(codes < 0, len(grouping.interval_labels), codes)]
    for value, label in zip(grouping.cont_na_values, grouping.cont_na_labels):
        out = np.where(x == value, label, out)  # one pass per special code, not per record
    return out
