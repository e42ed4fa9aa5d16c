"""Metrics computed on a seeded sample of real or synthetic records: which rows, and saying so.

docs/performance.md, "Sampling" (the design and its checks: benchmarks/LOG.md, "Sampling real
records" and "Sampling query records"): the sample itself is drawn by the context
(``ctx.real_sample()``, ``ctx.synthetic_sample()``); a metric reads its rows here and marks its
result as sampled, so its interval method says the interval contains the sampling error.
"""

from __future__ import annotations

import numpy as np

from ..results import MetricResult

SAMPLED_NOTE = (
    "per-record terms of a seeded simple random sample of {n} of {of} real records (seed {seed}), "
    "each searched against every target record: the interval contains the sampling error "
    "(finite-population correction ignored, which only widens it)"
)


def real_rows(ctx, auto: bool = True) -> np.ndarray | None:
    """The real rows a metric that is a mean of per-real-record terms computes its terms on:
    ``ctx.real_sample()`` (None: every real record — no sample, or it is ≥ the real row count).
    ``auto=False``: only an explicit sample (``sample_real`` or ``sample: N``), for metrics whose
    full computation is cheap at any size."""
    sample = getattr(ctx, "real_sample", None)
    if not callable(sample):
        return None
    return sample() if auto else sample(auto=False)


def on_rows(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``values`` (one per real record) restricted to ``rows`` (all when None)."""
    return values if rows is None else values[rows]


def synthetic_rows(ctx) -> np.ndarray | None:
    """The synthetic rows a metric that is a mean, share or median over synthetic records computes
    its terms on: ``ctx.synthetic_sample()`` (None: every synthetic record)."""
    sample = getattr(ctx, "synthetic_sample", None)
    return sample() if callable(sample) else None


SAMPLED_SYNTHETIC_NOTE = (
    "per-record terms of a seeded simple random sample of {n} of {of} synthetic records "
    "(seed {seed}), each searched against every real record: the interval contains the "
    "sampling error (finite-population correction ignored, which only widens it)"
)


def mark_sampled(res: MetricResult, ctx, rows: np.ndarray | None, role: str = "real") -> MetricResult:
    """Say that ``res`` was estimated on the sampled ``role`` rows ``rows`` (nothing when None):
    ``details["sampled"] = ctx.sample_description(role)`` (a metric sampled on both sides calls
    this once per side: the second side's description goes under ``details["sampled"][role]``),
    the per-record array's description names its order (real side only: ``per_record`` is per
    real record), and the interval method says the interval contains the sampling error (it
    does: the share rule or the bootstrap was computed over the sampled records' terms)."""
    if rows is None:
        return res
    desc = ctx.sample_description(role)
    if res.details.get("sampled"):
        res.details["sampled"][role] = desc
    else:
        res.details["sampled"] = desc
        res.per_record_description += (
            f" — one entry per sampled {role} record, in the order of the sample's row positions (ctx.{role}_sample())"
        )
    method = res.details.get("ci_method", "")
    note = (SAMPLED_NOTE if role == "real" else SAMPLED_SYNTHETIC_NOTE).format(**desc)
    if res.ci is not None and method and not method.startswith("none"):
        res.details["ci_method"] = method + "; " + note
    return res
