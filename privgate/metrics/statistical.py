"""Statistical-similarity metrics: how closely each column's synthetic distribution follows the
real one (docs/metrics.md, family statistical; the privacy/utility metric-comparison
thesis, §5, Algorithms 5 and 9–11, after Qian et al.'s
synthcity).

Every metric is computed per column and averaged; ``per_attribute`` holds each column's value in
the metric's risk orientation (so ``value`` is their mean) and ``details["raw_per_column"]`` the
column's statistic in its own orientation. Numeric columns are binned into the 10 quantile bins
of the real data (:mod:`privgate.binning`, null its own bin) except for the Kolmogorov–Smirnov statistic, which
uses the raw non-null values. Categorical columns count each level, null a level.

Orientation: risk. A copy scores 1 (identical marginals); synthetic data with very different
marginals scores about 0. These metrics see marginals only: a release with the right marginals
and no joint structure (independent marginals) also scores about 1 — by construction, not a bug.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._lazy import lazy_module
from ..binning import binned_codes
from ..registry import register_metric
from ..results import MetricResult
from ..schema import NUMERIC
from ..spaces import category_codes
from ..stats.metric_intervals import result, set_no_ci

stats = lazy_module("scipy.stats")  # imported on first use (import time)
_special = lazy_module("scipy.special")

THESIS = "Metric comparison thesis §5, "


def _counts(ctx, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Real and synthetic counts over the categories present in either frame (numeric columns:
    real quantile bins with null a bin; categorical: levels with null a level)."""
    if ctx.schema.kind(column) == NUMERIC:
        rc, sc, n_levels = binned_codes(ctx.real[column], ctx.synthetic[column])
    else:
        codes, levels = category_codes({"real": ctx.real, "synthetic": ctx.synthetic}, column)
        rc, sc, n_levels = codes["real"], codes["synthetic"], len(levels)
    r = np.bincount(rc, minlength=n_levels).astype(np.float64)
    s = np.bincount(sc, minlength=n_levels).astype(np.float64)
    present = (r > 0) | (s > 0)
    return r[present], s[present]


def _per_column(
    ctx,
    name: str,
    column_fn: Callable[[str], tuple[float, float]],
    raw_description: str,
    params: dict | None = None,
    extra: dict | None = None,
) -> MetricResult:
    """Apply ``column_fn(column) -> (value, raw)`` to every column and average both."""
    values, raws = {}, {}
    for col in ctx.schema.columns:
        v, r = column_fn(col)
        values[col], raws[col] = float(v), float(r)
    value = float(np.mean(list(values.values())))
    raw = float(np.mean(list(raws.values())))
    details = {"raw_per_column": raws}
    details.update(extra or {})
    res = result(ctx, name, value, raw, raw_description, params=params, details=details, per_attribute=values)
    return set_no_ci(res, NO_INTERVAL)


# why the statistical family has no interval
NO_INTERVAL = (
    "a resemblance (utility) measure of marginals, not a share or mean over records; its plug-in "
    "divergences are biased away from 0 at finite sizes (and a p-value has no estimand), so a "
    "percentile bootstrap would not cover the population value"
)


# ------------------------------------------------------------------------------- chi-squared
def chi_squared_p(real_counts: np.ndarray, syn_counts: np.ndarray) -> float:
    """p-value of the χ² goodness-of-fit test of the synthetic counts against the real
    frequencies: expected = m·p_k over the categories with real frequency p_k > 0, df = K − 1.
    Synthetic mass in a category with zero real frequency → p = 0; a single category → p = 1."""
    if (syn_counts[real_counts == 0] > 0).any():
        return 0.0
    keep = real_counts > 0
    r, s = real_counts[keep], syn_counts[keep]
    if r.size <= 1:
        return 1.0
    expected = s.sum() * r / r.sum()
    chi2 = float(((s - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(chi2, r.size - 1))


@register_metric(
    family="statistical",
    attack="marginal distributions of the release reproduce the real ones (goodness of fit)",
    reference=THESIS + "Algorithm 5 Chi-Squared Test (Qian et al., 2023)",
    orientation="value = mean over columns of the χ² p-value of the synthetic counts against the real "
    "frequencies; 1 = indistinguishable marginals",
    spaces=(),
    memory_cost=0.5,
)
def chi_squared(ctx) -> MetricResult:
    """Chi-squared test: per column, the p-value of the χ² goodness-of-fit test of the synthetic
    counts against the real frequencies (numerics over the 10 real quantile bins); value = mean
    p-value. Synthetic mass in a category the real data lacks gives p = 0; a column with a single
    category gives p = 1. (The thesis' Algorithm 5 garbles the expected
    frequency; this is the textbook test.)

    Marginals only: a copy scores 1, but so does (about) any release with the right marginals,
    e.g. ``independent_marginals``, which ranks with ``noisy_copy`` in either order; bounded
    per-column similarities keep a uniform release well above 0.

    Orientation: risk; raw = value (mean p-value).
    """
    return _per_column(
        ctx,
        "chi_squared",
        lambda c: (lambda p: (p, p))(chi_squared_p(*_counts(ctx, c))),
        "mean χ² goodness-of-fit p-value over columns",
    )


# --------------------------------------------------------------------------- inverse KL
def inverse_kl_column(real_counts: np.ndarray, syn_counts: np.ndarray, alpha: float = 1.0) -> tuple[float, float]:
    """(1/(1 + KL), KL) with KL(real‖synthetic) in nats after additive smoothing ``alpha`` of both
    sides' counts over the union of categories."""
    k = real_counts.size
    p = (real_counts + alpha) / (real_counts.sum() + alpha * k)
    q = (syn_counts + alpha) / (syn_counts.sum() + alpha * k)
    kl = float(_special.rel_entr(p, q).sum())
    kl = max(kl, 0.0)
    return 1.0 / (1.0 + kl), kl


@register_metric(
    family="statistical",
    attack="marginal distributions of the release reproduce the real ones (Kullback–Leibler)",
    reference=THESIS + "Algorithm 9 Inverse Kullback–Leibler Divergence (Qian et al., 2023)",
    orientation="value = mean over columns of 1/(1 + KL(real‖synthetic)); 1 = identical marginals",
    spaces=(),
    memory_cost=0.5,
)
def inverse_kl(ctx, *, smoothing: float = 1.0) -> MetricResult:
    """Inverse KL divergence: per column 1/(1 + KL(real‖synthetic)), KL in nats on the category
    frequencies after Laplace smoothing (α = 1 added to both sides' counts over the union of
    categories; numerics over the 10 real quantile bins); value = mean over columns.

    Marginals only: a copy scores 1, but so does (about) any release with the right marginals,
    e.g. ``independent_marginals``, which ranks with ``noisy_copy`` in either order; bounded
    per-column similarities keep a uniform release well above 0.

    Orientation: risk; raw = value; details give the per-column KL.
    """
    from ..errors import ParameterError

    if not smoothing > 0:
        raise ParameterError(f"inverse_kl smoothing must be > 0; got {smoothing!r}")
    kls = {}

    def column(c):
        v, kl = inverse_kl_column(*_counts(ctx, c), alpha=smoothing)
        kls[c] = kl
        return v, v

    res = _per_column(
        ctx, "inverse_kl", column, "mean over columns of 1/(1 + KL(real‖synthetic))", params={"smoothing": smoothing}
    )
    res.details["kl_per_column"] = kls
    return res


# ------------------------------------------------------------------------- Jensen-Shannon
def js_distance(real_counts: np.ndarray, syn_counts: np.ndarray) -> float:
    """Jensen–Shannon distance (base 2, in [0, 1]) between the two frequency vectors."""
    p = real_counts / real_counts.sum()
    q = syn_counts / syn_counts.sum()
    m = 0.5 * (p + q)
    js = 0.5 * _special.rel_entr(p, m).sum() + 0.5 * _special.rel_entr(q, m).sum()
    return float(np.sqrt(max(js, 0.0) / np.log(2.0)))


@register_metric(
    family="statistical",
    attack="marginal distributions of the release reproduce the real ones (Jensen–Shannon)",
    reference=THESIS + "Algorithm 10 Jensen–Shannon Distance (Qian et al., 2023)",
    orientation="value = 1 − mean over columns of the Jensen–Shannon distance (base 2)",
    spaces=(),
    memory_cost=0.5,
)
def jensen_shannon(ctx) -> MetricResult:
    """Jensen–Shannon distance: per column, the JS distance (square root of the JS divergence,
    base 2, so in [0, 1]) between the real and synthetic category frequencies (numerics over the
    10 real quantile bins); raw = mean distance; value = 1 − raw.

    Marginals only: a copy scores 1, but so does (about) any release with the right marginals,
    e.g. ``independent_marginals``, which ranks with ``noisy_copy`` in either order; bounded
    per-column similarities keep a uniform release well above 0.

    Orientation: risk (value); raw = mean JS distance (higher = more different = more private).
    """
    return _per_column(
        ctx,
        "jensen_shannon",
        lambda c: (lambda d: (1.0 - d, d))(js_distance(*_counts(ctx, c))),
        "mean Jensen–Shannon distance (base 2) over columns",
    )


# ---------------------------------------------------------------------- Kolmogorov-Smirnov
def ks_column(ctx, column: str) -> float:
    """Numeric: two-sample KS statistic on the non-null values (one side without non-null
    values → 1); categorical: total variation distance of the level frequencies, null a level."""
    if ctx.schema.kind(column) == NUMERIC:
        r = ctx.real[column].drop_nulls().to_numpy().astype(np.float64, copy=False)
        s = ctx.synthetic[column].drop_nulls().to_numpy().astype(np.float64, copy=False)
        if r.size == 0 or s.size == 0:
            return 0.0 if r.size == s.size else 1.0
        # the statistic does not depend on the p-value method; asymp skips the exact p-value
        return float(stats.ks_2samp(r, s, method="asymp").statistic)
    rc, sc = _counts(ctx, column)
    return float(0.5 * np.abs(rc / rc.sum() - sc / sc.sum()).sum())


@register_metric(
    family="statistical",
    attack="marginal distributions of the release reproduce the real ones (Kolmogorov–Smirnov)",
    reference=THESIS + "Algorithm 11 Kolmogorov–Smirnov Test (Qian et al., 2023)",
    orientation="value = 1 − mean over columns of the KS statistic (numeric) / total variation distance (categorical)",
    spaces=(),
    memory_cost=0.5,
)
def kolmogorov_smirnov(ctx) -> MetricResult:
    """Kolmogorov–Smirnov: per numeric column the two-sample KS statistic on the raw non-null
    values, per categorical column the total variation distance of the level frequencies (null a
    level); raw = mean; value = 1 − raw.

    Marginals only: a copy scores 1, but so does (about) any release with the right marginals,
    e.g. ``independent_marginals``, which ranks with ``noisy_copy`` in either order; bounded
    per-column similarities keep a uniform release well above 0.

    Orientation: risk (value); raw = mean statistic (higher = more different).
    """
    return _per_column(
        ctx,
        "kolmogorov_smirnov",
        lambda c: (lambda d: (1.0 - d, d))(ks_column(ctx, c)),
        "mean KS statistic (numeric) / total variation distance (categorical) over columns",
    )
