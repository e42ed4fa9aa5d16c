"""Re-identification and tracing metrics built on distances between records (docs/metrics.md).

Every metric here is oriented as risk: ``value`` 1 means no privacy (a copy of the real data
scores 1), about 0 for data drawn uniformly at random. ``raw`` is the original definition's value
in its own orientation. Distances are Euclidean in the mixed space unless stated; nearest
neighbours come from the shared engine of the context (each search computed once per evaluation).
Paper references are sections of the PrivEval metrics review ("A Review of Privacy Metrics for
Privacy-Preserving Synthetic Data Generation", with the PrivEval reference app).
"""

from __future__ import annotations

import hashlib

import numpy as np

from .. import seeds, stats
from ..context_spaces import coded_above
from ..errors import NotApplicableError, ParameterError
from ..neighbours import pair_distances, search_k
from ..registry import register_metric
from ..results import MetricResult
from ..spaces import FamdEncoder, famd_encoder, famd_inputs
from ..stats.metric_intervals import (
    BOOT,
    OFF,
    intervals_on,
    jackknife_labels,
    result,
    set_bootstrap_ci,
    set_jackknife_ci,
    set_jackknife_share_ci,
    set_mean_ci,
    set_no_ci,
    set_share_ci,
)
from ..ties import ge, gt, le, lt
from .limits import MAX_REPETITIONS, check_work_bound
from .sampling import mark_sampled, on_rows, real_rows, synthetic_rows
from .search_error import widen_distance_mean_for_search, widen_share_for_search
from .summaries import minmax_normalise, quantile_summary

# why the min–max normalised metrics have no interval
NO_INTERVAL_NORMALISED = (
    "the value depends on the sample's smallest and largest distance (min–max normalisation), and a "
    "bootstrap over records does not reproduce the sampling distribution of an extreme (Bickel & Freedman, "
    "Ann. Statist. 1981): a bootstrap that renormalised each replicate under-covered in a coverage "
    "simulation, with intervals too wide to inform"
)

PRIVEVAL = "Privacy metrics review (PrivEval), §"


# --------------------------------------------------------------------------- exact copies
@register_metric(
    family="re-identification",
    attack="exact copies of real records in the release",
    reference=PRIVEVAL + "2.1.4 Common Rows Proportion",
    orientation="value = share of real records copied; 1 = every real record is in the release",
    spaces=(),
    memory_cost=0.5,
    sampled=("real",),
)
def common_rows(ctx) -> MetricResult:
    """Common Rows Proportion: share of real records (with multiplicity) that have an identical
    synthetic record. Numbers compare by value (1 == 1.0); a null matches only a null.

    With ``sample_real`` the share is estimated on the sampled real records.

    Orientation: risk; raw = value.
    """
    rows = real_rows(ctx, auto=False)  # a join and a group-by: cheap at any size, "auto" keeps it exact
    hit_rows, n_distinct = ctx.copied_real_rows(rows)
    per = np.zeros(ctx.n_real if rows is None else rows.size)
    per[hit_rows if rows is None else np.searchsorted(rows, hit_rows)] = 1.0
    share = float(per.mean())
    res = result(
        ctx,
        "common_rows",
        share,
        share,
        "share of real records with an identical synthetic record",
        details={"n_real_copied": int(per.sum()), "n_distinct_real_copied": n_distinct},
        per_record=per,
        per_record_description="1 if the real record appears verbatim in the release",
    )
    return mark_sampled(set_share_ci(res, per), ctx, rows)


@register_metric(
    family="re-identification",
    attack="a release that carries real records' identifiers",
    reference="privgate: an identifier column (distinct per real record) is a leak in itself",
    orientation="value = share of release records carrying a real identifier value (beyond the share "
    "holdout records carry, with a holdout); 0 when the data have no identifier column",
    self_controlled=True,
    spaces=(),
    memory_cost=0.5,
)
def identifier_reuse(ctx) -> MetricResult:
    """Identifier reuse: the identifier columns (categorical columns distinct in at least 99.9 %
    of the real rows, detected before any metric runs: docs/inputs.md "Identifier columns") are
    left out of every other metric; here a release record counts when, in some identifier
    column, it carries a value that some real record has. raw = the share of release records
    counted. Without a holdout, value = raw. With one, the same share h₀ of the holdout records
    (real people not trained on, whose identifiers are not the training records' unless the
    identifiers are reused numbers such as row positions) is the chance level, and value =
    max(0, (raw − h₀) / (1 − h₀)) (0 when h₀ = 1: the identifiers tell nothing). No identifier
    column: value 0, saying so. Values are never reported, only counts.

    Orientation: risk; a release of fresh identifiers scores 0, one that kept the real
    identifiers of its records 1.
    """
    ids = list(ctx.identifiers)
    details: dict = {
        "identifier_columns": ids,
        "left_out": "these columns are left out of every other metric (distances, copies, attacks)"
        if ids
        else "no identifier column in the data",
    }
    if not ids:
        res = result(ctx, "identifier_reuse", 0.0, 0.0, "no identifier column", details=details)
        return set_no_ci(res, "no identifier column: nothing to measure")
    hits = ctx.identifier_hits("synthetic")
    share = float(hits.mean())
    details["n_release_records_with_real_identifier"] = int(hits.sum())
    if ctx.holdout is None:
        res = result(
            ctx,
            "identifier_reuse",
            share,
            share,
            "share of release records carrying a real record's identifier value",
            details=details,
        )
        return set_share_ci(res, hits)
    chance = ctx.identifier_hits("holdout")
    h0 = float(chance.mean())
    value = min(1.0, max(0.0, (share - h0) / (1.0 - h0))) if h0 < 1.0 else 0.0
    details["chance_share_holdout"] = h0
    res = result(
        ctx,
        "identifier_reuse",
        value,
        share,
        "share of release records carrying a real identifier value, beyond the holdout's share",
        details=details,
    )
    return set_no_ci(res, "a share beyond the holdout's chance level (the release and holdout shares are exact counts)")


# ------------------------------------------------------------- real → synthetic distances
def _check_unit_threshold(metric: str, threshold: float) -> None:
    if not 0 <= threshold <= 1:
        raise ParameterError(f"{metric} threshold must be in [0, 1]; got {threshold}")


def _normalised_dcr(ctx) -> tuple[np.ndarray, np.ndarray, bool]:
    d = ctx.neighbours("mixed", "real", "synthetic", 1).dist[:, 0]
    dn, degenerate = minmax_normalise(d)
    return d, dn, degenerate


@register_metric(
    family="re-identification",
    attack="real records with a very close synthetic record",
    reference=PRIVEVAL + "2.2.1 Close Values Probability",
    orientation="value = share of real records whose normalised distance to the release is ≤ 0.2",
    spaces=("mixed",),
    memory_cost=6.0,
)
def close_values(ctx, *, threshold: float = 0.2) -> MetricResult:
    """Close Values Probability: d = distance of each real record to its nearest synthetic record,
    min–max normalised over the n distances (as synthcity and PrivEval do); value = share with
    normalised d ≤ threshold (0.2). All distances equal → every normalised d is 0 → value 1.

    Orientation: risk; raw = value.
    """
    _check_unit_threshold("close_values", threshold)
    d, dn, degenerate = _normalised_dcr(ctx)
    close_ = le(dn, threshold)
    share = float(close_.mean())
    res = result(
        ctx,
        "close_values",
        share,
        share,
        f"share of real records with normalised DCR ≤ {threshold}",
        params={"threshold": threshold},
        details={"degenerate_normalisation": degenerate, "distance": quantile_summary(d)},
        per_record=close_.astype(float),
        per_record_description="1 if the real record's normalised distance to the release is ≤ threshold",
    )
    return set_no_ci(res, NO_INTERVAL_NORMALISED)


@register_metric(
    family="re-identification",
    attack="real records without a distant synthetic record",
    reference=PRIVEVAL + "2.2.2 Distant Values Probability",
    orientation="value = 1 − share of real records whose normalised distance is ≥ 0.8",
    spaces=("mixed",),
    memory_cost=0.5,
)
def distant_values(ctx, *, threshold: float = 0.8) -> MetricResult:
    """Distant Values Probability: same normalised distances as close_values; raw = share with
    normalised d ≥ threshold (0.8), the original 'to be maximised' probability; value = 1 − raw.

    Orientation: risk (value); raw is a privacy score (higher = more private).
    """
    _check_unit_threshold("distant_values", threshold)
    d, dn, degenerate = _normalised_dcr(ctx)
    far = ge(dn, threshold)
    raw = float(far.mean())
    res = result(
        ctx,
        "distant_values",
        1.0 - raw,
        raw,
        f"share of real records with normalised DCR ≥ {threshold}",
        params={"threshold": threshold},
        details={"degenerate_normalisation": degenerate, "distance": quantile_summary(d)},
        per_record=(~far).astype(float),
        per_record_description="1 if the real record's normalised distance to the release is < threshold",
    )
    return set_no_ci(res, NO_INTERVAL_NORMALISED)


@register_metric(
    family="re-identification",
    attack="synthetic records near real records on average",
    reference=PRIVEVAL + "2.2.6 Nearest Synthetic Neighbour Distance",
    orientation="value = 1 − mean normalised distance of real records to the release",
    spaces=("mixed",),
    memory_cost=0.5,
)
def nsnd(ctx) -> MetricResult:
    """Nearest Synthetic Neighbour Distance: raw = mean of the min–max normalised real→nearest
    synthetic distances; value = 1 − raw (a copy has all distances 0 → value 1).

    Orientation: risk (value); raw is a distance (higher = more private).
    """
    d, dn, degenerate = _normalised_dcr(ctx)
    raw = float(dn.mean())
    res = result(
        ctx,
        "nsnd",
        1.0 - raw,
        raw,
        "mean normalised distance of real records to their nearest synthetic record",
        details={"degenerate_normalisation": degenerate, "distance": quantile_summary(d)},
        per_record=1.0 - dn,
        per_record_description="1 − normalised distance to the release",
    )
    return set_no_ci(res, NO_INTERVAL_NORMALISED)


# ------------------------------------------------------------ real → real comparisons
def _rs_rr(ctx, space: str, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    ctx.require_rows("real", 2, "this metric (nearest other real record)")
    d_rs = ctx.neighbours(space, "real", "synthetic", 1, rows=rows).dist[:, 0]
    # a jackknife over the real records (full evaluations only) reads k-lists of real → real
    k_rr = 1 if rows is not None else search_k(jackknife_labels(ctx, "real", ctx.n_real))
    d_rr = ctx.neighbours(space, "real", "real", k_rr, rows=rows).dist[:, 0]
    return d_rs, d_rr


def _rr_without_groups(ctx, space: str, labels: np.ndarray) -> np.ndarray:
    """(G, n): each real record's distance to its nearest other real record once jackknife group
    g of the real records is deleted (NaN for the deleted records themselves) — the real records
    are the reference set of this search too, so the jackknife deletes them there as well."""
    sp = ctx.space(_space_key(space))
    nb = ctx.neighbours(space, "real", "real", search_k(labels))
    return ctx.nearest_outside_groups(
        nb,
        labels,
        sp.real,
        sp.real,
        same=True,
        categorical_slices=sp.categorical_slices,
        coded_columns=sp.coded_columns,
    )[0]


def _space_key(space) -> tuple:
    return (space, None) if isinstance(space, str) else space


# what the jackknife intervals of the real → real metrics hold fixed
_RR_FIXED = "the release and the space's scaling (fitted on all real records) held fixed"


@register_metric(
    family="re-identification",
    attack="synthetic records closer to a real record than its real neighbours",
    reference=PRIVEVAL + "2.2.4 Authenticity (Alaa et al., 2022)",
    orientation="value = 1 − authenticity = share of real records whose nearest synthetic record is not farther than their nearest other real record",
    spaces=("mixed",),
    memory_cost=7.0,
    sampled=("real",),
)
def authenticity(ctx) -> MetricResult:
    """Authenticity: raw = share of real records whose nearest other real record is strictly
    closer than their nearest synthetic record (authentic); value = 1 − raw. Computed per real
    record in the mixed space (:mod:`privgate.spaces`).

    Orientation: risk (value); raw is a privacy score.
    """
    rows = real_rows(ctx)
    d_rs, d_rr = _rs_rr(ctx, "mixed", rows)
    authentic = lt(d_rr, d_rs)
    raw = float(authentic.mean())
    res = result(
        ctx,
        "authenticity",
        1.0 - raw,
        raw,
        "share of real records whose nearest other real record is strictly closer than the release",
        details={"dcr_real_synthetic": quantile_summary(d_rs), "dcr_real_real": quantile_summary(d_rr)},
        per_record=(~authentic).astype(float),
        per_record_description="1 if the nearest synthetic record is not farther than the nearest other real record",
    )
    if rows is not None:  # estimated on a sample of real records: the share rule over the sample
        return mark_sampled(widen_share_for_search(set_share_ci(res, ~authentic)), ctx, rows)
    return widen_share_for_search(
        _rr_share_ci(res, ctx, "mixed", d_rs, ~authentic, lambda d_rr_g: ~lt(d_rr_g, d_rs[None, :]))
    )


def _rr_share_ci(
    res: MetricResult, ctx, space: str, d_rs: np.ndarray, flags: np.ndarray, flags_without
) -> MetricResult:
    """The share interval of authenticity / identifiability: each real record is a query (its
    flag) and a reference point (other records' nearest real record), so the flags are
    dependent; a grouped jackknife of the real records recomputes every flag with the deleted
    group's records gone from the real → real search (``flags_without`` maps the (G, n) nearest
    other-real distances to flags), giving an effective sample size for the Wilson /
    Clopper–Pearson rule. Fewer than 25 real records: the plain share rule."""
    labels = jackknife_labels(ctx, "real", ctx.n_real)
    if labels is None:
        return set_share_ci(res, flags)
    reps = stats.group_deleted_means(flags_without(_rr_without_groups(ctx, space, labels)).astype(float), labels)
    return set_jackknife_share_ci(res, ctx, flags, reps, what="real records", note=_RR_FIXED)


@register_metric(
    family="re-identification",
    attack="re-identification of real records through close synthetic records, weighted towards rare attributes",
    reference=PRIVEVAL + "2.2.5 Identifiability score (Yoon et al., ADS-GAN 2020)",
    orientation="value = share of identifiable real records",
    spaces=("identifiability",),
    memory_cost=4.0,
    sampled=("real",),
)
def identifiability(ctx) -> MetricResult:
    """Identifiability score (ADS-GAN): the authenticity test in the mixed space with every
    column's features multiplied by 1/H (H = the real column's entropy, natural log; numerics over
    10 quantile bins; H = 0 → weight 0). A real record is identifiable unless its nearest other
    real record is strictly closer than its nearest synthetic record. The paper's eq. 19 inverts
    the weight its own text asks for; privgate follows the text (1/H). On exact ties (duplicate
    real records) the record counts as identifiable, so that a copy scores 1.

    Orientation: risk; raw = value.
    """
    rows = real_rows(ctx)
    d_rs, d_rr = _rs_rr(ctx, "identifiability", rows)
    ident = le(d_rs, d_rr)
    share = float(ident.mean())
    ent = ctx.entropies()
    res = result(
        ctx,
        "identifiability",
        share,
        share,
        "share of identifiable real records",
        details={"entropy": ent, "zero_weight_columns": [c for c, h in ent.items() if h <= 0]},
        per_record=ident.astype(float),
        per_record_description="1 if the real record is identifiable (weighted space)",
    )
    if rows is not None:  # estimated on a sample of real records: the share rule over the sample
        return mark_sampled(widen_share_for_search(set_share_ci(res, ident)), ctx, rows)
    return widen_share_for_search(
        _rr_share_ci(res, ctx, "identifiability", d_rs, ident, lambda d_rr_g: le(d_rs[None, :], d_rr_g))
    )


@register_metric(
    family="re-identification",
    attack="release closer to real records than real records are to each other",
    reference=PRIVEVAL + "2.2.9 Median Distance to Closest Record",
    orientation="value = 2·(1 − σ(r)), r = median DCR(real→synthetic) / median DCR(real→real)",
    spaces=("mixed",),
    memory_cost=4.0,
    sampled=("real",),
)
def median_dcr(ctx) -> MetricResult:
    """Median DCR: r = median(real→nearest synthetic) / median(real→nearest other real), mixed
    space (medians of even counts = mean of the two middle values). value = 2·(1 − σ(r)):
    r = 0 (copy) → 1, r → ∞ → 0. Both medians 0 → value 1 (r undefined); only the real–real
    median 0 → r = ∞ → value 0.

    Sampled (``ctx.real_sample()``, e.g. ``sample: auto`` on more than 100,000 real records): both
    medians over the sampled real records, each searched against every synthetic / other real
    record; the interval is the percentile bootstrap of both medians over the sampled records,
    which contains the sampling error of a median of a simple random sample (the real records'
    second role, reference points of the real → real search, is held fixed — at 10,000 sampled
    of more than 100,000 that error is far smaller than the sample's).

    Orientation: risk (value); raw = r (higher = more private).
    """
    rows = real_rows(ctx)
    d_rs, d_rr = _rs_rr(ctx, "mixed", rows)
    m_rs, m_rr = float(np.median(d_rs)), float(np.median(d_rr))
    r = float("nan") if m_rr == 0.0 and m_rs == 0.0 else (float("inf") if m_rr == 0.0 else m_rs / m_rr)
    value = float(_median_dcr_value(np.array([m_rs]), np.array([m_rr]))[0])
    res = result(
        ctx,
        "median_dcr",
        value,
        r,
        "median DCR real→synthetic / median DCR real→real",
        details={"median_real_synthetic": m_rs, "median_real_real": m_rr},
    )
    labels = jackknife_labels(ctx, "real", ctx.n_real) if rows is None else None
    if rows is not None:
        return mark_sampled(
            set_bootstrap_ci(
                res,
                ctx,
                lambda idx: _median_dcr_value(np.median(d_rs[idx], axis=1), np.median(d_rr[idx], axis=1)),
                rows.size,
                what="sampled real records (both medians of each replicate from the same records)",
            ),
            ctx,
            rows,
        )
    if labels is None:
        # both medians from the same resampled real records (each record carries both distances)
        return set_bootstrap_ci(
            res,
            ctx,
            lambda idx: _median_dcr_value(np.median(d_rs[idx], axis=1), np.median(d_rr[idx], axis=1)),
            ctx.n_real,
            what="real records (both medians of each replicate from the same records)",
        )
    # the real records are queries of both medians and the reference set of the real → real one:
    # each jackknife replicate deletes a group from both roles
    d_rr_g = _rr_without_groups(ctx, "mixed", labels)
    keep = labels[None, :] != np.arange(d_rr_g.shape[0])[:, None]
    reps = _median_dcr_value(
        np.nanmedian(np.where(keep, d_rs[None, :], np.nan), axis=1),
        np.nanmedian(np.where(keep, d_rr_g, np.nan), axis=1),
    )
    return set_jackknife_ci(res, ctx, {"real": reps}, what={"real": "real records"}, note=_RR_FIXED)


def _median_dcr_value(m_rs: np.ndarray, m_rr: np.ndarray) -> np.ndarray:
    """median_dcr's value 2·(1 − σ(m_rs/m_rr)) for arrays of medians: both 0 → 1, only m_rr 0 → 0."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        r = m_rs / np.where(m_rr == 0.0, 1.0, m_rr)
        v = 2.0 * (1.0 - 1.0 / (1.0 + np.exp(-r)))
    return np.where(m_rr == 0.0, np.where(m_rs == 0.0, 1.0, 0.0), v)


# ---------------------------------------------------------------------------- NNAA
def _not_farther(d_rs, d_rr, d_sr, d_ss) -> tuple[np.ndarray, np.ndarray]:
    """Per real and per synthetic record, 1 when the nearest record of the other set is not
    farther than the nearest of its own set: 1 − AA = ½(mean of the first + mean of the second)."""
    return (~gt(d_rs, d_rr)).astype(float), (~gt(d_sr, d_ss)).astype(float)


@register_metric(
    family="tracing",
    attack="a nearest-neighbour classifier telling real from synthetic records",
    reference=PRIVEVAL + "2.2.10 Nearest Neighbour Adversarial Accuracy (Yale et al., 2020)",
    orientation="value = 1 − AA; a copy gives AA = 0 → 1, perfectly separable data AA = 1 → 0",
    spaces=("mixed",),
    memory_cost=8.0,
    sampled=("real", "synthetic"),
)
def nnaa(ctx, *, repetitions: int = 10) -> MetricResult:
    """NN Adversarial Accuracy: AA = ½[P(d_RS > d_RR) + P(d_SR > d_SS)] (strict >) in the mixed
    space. When the sizes differ, the larger set is subsampled without replacement to the smaller
    size with a generator seeded by the context's seed, ``repetitions`` times (10), mean AA; the
    mixed space is fitted once on all real records.

    Sampled (equal sizes; ``ctx.real_sample()`` / ``ctx.synthetic_sample()``, e.g. ``sample:
    auto`` above 100,000 rows): each side's share over its seeded sample of query records, each
    searched against every record of both sets — an unbiased estimate of each side's share; the
    interval is the stratified bootstrap of the two samples' flags (each side resampled on its
    own), which contains both samples' sampling error (the records' role as reference points held
    fixed). Sizes that differ are never sampled: their repetitions already subsample.

    Orientation: risk (value = 1 − AA); raw = AA (0.5 = ideal, 0 = copy).
    """
    check_work_bound("nnaa", "repetitions", repetitions, MAX_REPETITIONS)
    ctx.require_rows("real", 2, "nnaa")
    ctx.require_rows("synthetic", 2, "nnaa")
    if ctx.n_real != ctx.n_synthetic:
        return _nnaa_subsampled(ctx, repetitions)
    rows_r, rows_s = real_rows(ctx), synthetic_rows(ctx)
    if rows_r is not None or rows_s is not None:
        return _nnaa_sampled(ctx, rows_r, rows_s)
    labels = jackknife_labels(ctx, "real", ctx.n_real)
    d_rs = ctx.neighbours("mixed", "real", "synthetic", 1).dist[:, 0]
    d_rr = ctx.neighbours("mixed", "real", "real", search_k(labels)).dist[:, 0]
    d_sr = ctx.neighbours("mixed", "synthetic", "real", 1).dist[:, 0]
    d_ss = ctx.neighbours("mixed", "synthetic", "synthetic", 1).dist[:, 0]
    real_side, syn_side = _not_farther(d_rs, d_rr, d_sr, d_ss)
    aa = 1.0 - 0.5 * (real_side.mean() + syn_side.mean())
    res = _nnaa_result(ctx, aa, [aa], subsampled=None, repetitions=1, per=real_side)
    if labels is not None:
        return widen_share_for_search(_nnaa_jackknife_ci(res, ctx, labels, d_rs, real_side, syn_side))
    return widen_share_for_search(_nnaa_ci(res, ctx, [(real_side, syn_side)]))


def _nnaa_subsampled(ctx, repetitions: int) -> MetricResult:
    """nnaa when the sizes differ: the larger set subsampled to the smaller size ``repetitions``
    times (seeded by the context's seed), mean AA."""
    if repetitions < 1:
        raise ParameterError(f"nnaa repetitions must be ≥ 1; got {repetitions}")
    space = ctx.mixed()
    r, s = space.real, space.synthetic
    rng = seeds.rng(ctx.seed, "nnaa.subsample")
    size = min(len(r), len(s))
    subsampled = "real" if len(r) > len(s) else "synthetic"
    reps, sides = [], []
    note = f"nnaa mixed, {subsampled} records subsampled to {size}"

    def nearest(query: np.ndarray, target: np.ndarray, what: str, exclude_self: bool = False) -> np.ndarray:
        return ctx.search(
            query,
            target,
            1,
            name=f"{note}: {what}",
            exclude_self=exclude_self,
            categorical_slices=space.categorical_slices,
            coded_columns=space.coded_columns,
        ).dist[:, 0]

    for _ in range(repetitions):
        if subsampled == "real":
            rr = r[np.sort(rng.choice(len(r), size, replace=False))]
            ss = s
        else:
            rr = r
            ss = s[np.sort(rng.choice(len(s), size, replace=False))]
        sides.append(
            _not_farther(
                nearest(rr, ss, "real→synthetic"),
                nearest(rr, rr, "real→real", True),
                nearest(ss, rr, "synthetic→real"),
                nearest(ss, ss, "synthetic→synthetic", True),
            )
        )
        reps.append(1.0 - 0.5 * (sides[-1][0].mean() + sides[-1][1].mean()))
    res = _nnaa_result(ctx, float(np.mean(reps)), reps, subsampled=subsampled, repetitions=repetitions, per=None)
    return widen_share_for_search(_nnaa_ci(res, ctx, sides))


def _nnaa_result(
    ctx, aa: float, reps: list[float], *, subsampled: str | None, repetitions: int, per: np.ndarray | None
) -> MetricResult:
    """nnaa's result: value 1 − AA, raw AA, the repetitions' AA."""
    return result(
        ctx,
        "nnaa",
        1.0 - aa,
        aa,
        "nearest-neighbour adversarial accuracy AA",
        params={"repetitions": repetitions if subsampled else 1},
        details={"subsampled": subsampled, "aa_per_repetition": [float(a) for a in reps]},
        per_record=per,
        per_record_description="1 if the real record's nearest synthetic record is not farther than its "
        "nearest other real record",
    )


def _nnaa_sampled(ctx, rows_r: np.ndarray | None, rows_s: np.ndarray | None) -> MetricResult:
    """nnaa on sampled query records of either side (None: that side's every record)."""
    d_rs, d_rr = _rs_rr(ctx, "mixed", rows_r)
    d_sr = ctx.neighbours("mixed", "synthetic", "real", 1, rows=rows_s).dist[:, 0]
    d_ss = ctx.neighbours("mixed", "synthetic", "synthetic", 1, rows=rows_s).dist[:, 0]
    real_side, syn_side = _not_farther(d_rs, d_rr, d_sr, d_ss)
    aa = 1.0 - 0.5 * (real_side.mean() + syn_side.mean())
    res = result(
        ctx,
        "nnaa",
        1.0 - aa,
        aa,
        "nearest-neighbour adversarial accuracy AA",
        params={"repetitions": 1},
        details={
            "subsampled": None,
            "aa_per_repetition": [float(aa)],
            "real_side_share": float(real_side.mean()),
            "synthetic_side_share": float(syn_side.mean()),
        },
        per_record=real_side,
        per_record_description="1 if the real record's nearest synthetic record is not farther than its nearest other real record",
    )
    if intervals_on():
        ci = stats.bootstrap_means_ci(
            [real_side, syn_side], [0.5, 0.5], seeds.derive(ctx.seed, "bootstrap"), n_boot=BOOT
        )
        res.set_ci(
            ci,
            f"stratified percentile bootstrap ({BOOT} replicates, seed {ctx.seed}) of ½·share over "
            f"{real_side.size} real + ½·share over {syn_side.size} synthetic records (each side "
            "resampled on its own; nearest-neighbour flags held fixed)",
        )
    else:
        res.set_ci(None, OFF)
    res = mark_sampled(res, ctx, rows_r, "real") if rows_r is not None else res
    res = mark_sampled(res, ctx, rows_s, "synthetic")
    return widen_share_for_search(res)


def _nnaa_jackknife_ci(
    res: MetricResult, ctx, labels: np.ndarray, d_rs: np.ndarray, real_flags: np.ndarray, syn_flags: np.ndarray
) -> MetricResult:
    """1 − AA = ½·(mean real-side flag) + ½·(mean synthetic-side flag), with delete-a-group
    replicates for two independent sources (variances added, Satterthwaite df):

    * the real records: a real record is a query of the real side and the reference point of
      other real records' nearest real record, so each group is deleted from both roles (the
      real → real search's nearest neighbour outside the group from its k-list);
    * the synthetic records (the release is one draw from the generator): each group is deleted
      as queries of the synthetic side — the mean synthetic-side flag of the records left — from
      the flags already computed, no search.

    Held fixed (each would need a k > 1 search of its own, measured too costly on Texas 25k —
    the synthetic → real one cost more than the rest of the interval): the real records' role as
    the nearest real record of synthetic records, and the synthetic records' roles as the nearest
    synthetic record of real records and the nearest other synthetic record of synthetic
    records. Coverage measured with benchmarks/coverage.py: docs/intervals.md."""
    d_rr_g = _rr_without_groups(ctx, "mixed", labels)
    real_side = stats.group_deleted_means((~gt(d_rs[None, :], d_rr_g)).astype(float), labels)
    sources = {"real": 0.5 * (real_side + syn_flags.mean())}
    what = {"real": "real records"}
    lab_s = jackknife_labels(ctx, "synthetic", ctx.n_synthetic)
    if lab_s is not None:
        syn_side = stats.leave_group_out_means(syn_flags, lab_s, int(lab_s.max()) + 1)
        sources["synthetic"] = 0.5 * (real_flags.mean() + syn_side)
        what["synthetic"] = "synthetic records (as queries)"
    return set_jackknife_ci(res, ctx, sources, what=what, note=_NNAA_FIXED)


# what nnaa's grouped jackknife holds fixed (a k > 1 search each)
_NNAA_FIXED = (
    "the space's scaling (fitted on all real records) held fixed; the records' roles as reference points across the two sets held fixed (the nearest real record of "
    "each synthetic record, the nearest synthetic record of each real record and the nearest other "
    "synthetic record of each synthetic record: recomputing them needs a k > 1 search, measured too "
    "costly)"
)


def _nnaa_ci(res: MetricResult, ctx, sides: list[tuple[np.ndarray, np.ndarray]]) -> MetricResult:
    """1 − AA = ½·mean(real-side flags) + ½·mean(synthetic-side flags): a bootstrap of the two
    samples of records, each resampled on its own (the neighbour searches held fixed). With
    several subsampled repetitions, each side pools the repetitions' flags and a replicate draws
    one repetition's worth from the pool: the precision of one repetition, conservative for
    their mean."""
    if not intervals_on():
        return res.set_ci(None, OFF)
    size = sides[0][0].size
    real_side = np.concatenate([a for a, _ in sides])
    syn_side = np.concatenate([b for _, b in sides])
    ci = stats.bootstrap_means_ci(
        [real_side, syn_side], [0.5, 0.5], seeds.derive(ctx.seed, "bootstrap"), sizes=[size, size], n_boot=BOOT
    )
    method = (
        f"stratified percentile bootstrap ({BOOT} replicates, seed {ctx.seed}) of ½·share over {size} real "
        f"+ ½·share over {size} synthetic records (nearest-neighbour flags held fixed)"
    )
    if len(sides) > 1:
        method += f"; {len(sides)} subsampled repetitions pooled, one repetition's size drawn per side"
    return res.set_ci(ci, method)


# ------------------------------------------------------------ projected-space metrics
@register_metric(
    family="re-identification",
    attack="synthetic records that single out one real record",
    reference=PRIVEVAL + "2.2.7 Nearest Neighbour Distance Ratio",
    orientation="value = 1 − mean d1/d2 over synthetic records (FAMD 2-D space)",
    spaces=("famd",),
    memory_cost=4.0,
)
def nndr(ctx, *, n_components: int = 2) -> MetricResult:
    """NN Distance Ratio: in the FAMD projection (fitted on the real data, ``n_components``
    components), per synthetic record d1/d2 = distances to its two nearest real records
    (0/0 counts 1); raw = mean ratio; value = 1 − raw.

    Orientation: risk (value); raw = mean ratio (1 = private).
    """
    ctx.require_rows("real", 2, "nndr")
    nb = ctx.neighbours(("famd", n_components), "synthetic", "real", 2)
    d1, d2 = nb.dist[:, 0], nb.dist[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(d2 == 0.0, 1.0, d1 / np.where(d2 == 0.0, 1.0, d2))
    raw = float(ratio.mean())
    res = result(
        ctx,
        "nndr",
        1.0 - raw,
        raw,
        "mean ratio of the nearest to the second-nearest real record, per synthetic record",
        params={"n_components": n_components},
        details={"ratio": quantile_summary(ratio), "famd": ctx.famd(n_components).details},
    )
    return set_mean_ci(res, ctx, 1.0 - ratio, what="synthetic records (1 − d1/d2)")


@register_metric(
    family="re-identification",
    attack="synthetic records near real records in the projected space",
    reference=PRIVEVAL + "2.2.8 Distance to Closest Record (avatar paper)",
    orientation="value = 1 − σ(ln m̄) = 1/(1 + m̄), m̄ = mean real→synthetic distance (FAMD 2-D space)",
    spaces=("famd",),
    memory_cost=2.0,
    sampled=("real",),
)
def dcr(ctx, *, n_components: int = 2) -> MetricResult:
    """Distance to Closest Record: m̄ = mean distance of each real record to its nearest
    synthetic record in the FAMD projection; value = 1/(1 + m̄) (copy → 1).

    Orientation: risk (value); raw = m̄ (higher = more private).
    """
    # sampled under "auto" as the other per-real-record means: the 2-D search is cheap, but the
    # jackknife's FAMD refits search the release again per group (40 of the 58 CPU-s at 1M); on a
    # sample the interval is the sample's mean interval with the FAMD axes, fitted on every real
    # record, held fixed — their refit moves a mean over > 100,000 records far less than the sample
    rows = real_rows(ctx)
    d = ctx.neighbours(("famd", n_components), "real", "synthetic", 1, rows=rows).dist[:, 0]
    m = float(d.mean())
    res = result(
        ctx,
        "dcr",
        1.0 / (1.0 + m),
        m,
        "mean distance of real records to their nearest synthetic record (FAMD space)",
        params={"n_components": n_components},
        details={"distance": quantile_summary(d), "famd": ctx.famd(n_components).details},
        per_record=1.0 / (1.0 + d),
        per_record_description="1/(1 + distance to the nearest synthetic record)",
    )
    labels = jackknife_labels(ctx, "real", ctx.n_real, max_groups=DCR_GROUPS) if rows is None else None
    if labels is None:
        res = set_mean_ci(
            res,
            ctx,
            d,
            what="real records' distances",
            transform=lambda x: 1.0 / (1.0 + x),
            transform_text="value = 1/(1 + m̄)",
            note="FAMD projection held fixed",
        )
    else:
        reps = _dcr_without_groups(ctx, labels, ctx.famd(n_components).details["n_components"], d)
        res = set_jackknife_ci(
            res,
            ctx,
            {"real": reps},
            what={"real": "real records"},
            note="FAMD axes refitted without each group (the encoding's means, standard "
            "deviations and level shares held fixed; the refit's effect on the distances "
            f"measured on min(n, {DCR_REFIT_QUERIES}) real records); the release held fixed",
        )
    res = widen_distance_mean_for_search(res, d, lambda x: 1.0 / (1.0 + x), lambda v: 1.0 / max(v, 1e-300) - 1.0)
    return mark_sampled(res, ctx, rows)


# real records searched again in each refitted FAMD space (all of them up to this many), and at
# most this many groups (each group refits the axes and searches again; dcr is a mean, for which
# a few groups suffice — the √n rule is for medians)
DCR_REFIT_QUERIES = 2000
DCR_GROUPS = 20


def _dcr_without_groups(ctx, labels: np.ndarray, n_components: int, d: np.ndarray) -> np.ndarray:
    """dcr's value without each jackknife group of real records. The FAMD projection is fitted on
    the real records, so its axes are refitted without the group (the leading eigenvectors of
    ZᵀZ − Z_gᵀZ_g, Z the FAMD input matrix of the real records), and the replicate is
    1/(1 + m̄₍g₎ + Δ₍g₎): m̄₍g₎ the mean of the distances ``d`` (full projection) over the records
    left, Δ₍g₎ the mean change of a record's distance to the release when the axes are refitted —
    exact when n ≤ ``DCR_REFIT_QUERIES`` (then 1/(1 + mean refitted distance of the records left)),
    else measured on a seeded sample of that many real records (the change is a paired
    difference of the same records' distances in two projections, so a sample estimates its mean
    closely at a fraction of G searches of every record).

    The refitted distances come from the context's ``famd_refit_nearest`` when it has one (a
    sharded context refits from sums over its partitions — Gram matrices, or with coded columns
    the Lanczos iteration's products — :mod:`privgate.sharded.famd`), else from
    :func:`_refit_nearest`; the replicates from them are computed here, one way for both."""
    n = ctx.n_real
    q = (
        np.arange(n)
        if n <= DCR_REFIT_QUERIES
        else np.sort(seeds.rng(ctx.seed, "dcr.refit_queries").choice(n, DCR_REFIT_QUERIES, replace=False))
    )
    refit = getattr(ctx, "famd_refit_nearest", None)
    near = refit(labels, n_components, q) if refit is not None else _refit_nearest(ctx, labels, n_components, q)
    groups = int(labels.max()) + 1
    shift = np.empty(groups)
    for g in range(groups):  # a loop over ≤ 50 groups, not records
        left = labels[q] != g
        shift[g] = (near[g, left] - d[q[left]]).mean()
    return 1.0 / (1.0 + stats.leave_group_out_means(d, labels, groups) + shift)


def _refit_nearest(ctx, labels: np.ndarray, n_components: int, q: np.ndarray) -> np.ndarray:
    """(groups, q.size): per jackknife group g, the distance of each real record ``q`` outside g to
    its nearest release record in the FAMD projection refitted without g (NaN for the records of
    g), from the whole real input matrix held here (:func:`_dcr_without_groups`)."""
    encoder = famd_encoder(ctx.real, ctx.schema, coded_above())
    if encoder.coded:
        return _refit_nearest_coded(ctx, encoder, labels, n_components, q)
    z = famd_inputs({"real": ctx.real, "synthetic": ctx.synthetic}, ctx.schema)
    zr, zs = z["real"], z["synthetic"]
    wide = zr.shape[1] > ctx.n_real  # more FAMD inputs than records: the p × p matrix would dwarf the data
    # wide: the records' n × n Gram matrix instead (computed once; a group's is a sub-matrix of it)
    gram = zr @ zr.T if wide else zr.T @ zr
    groups = int(labels.max()) + 1
    near = np.full((groups, q.size), np.nan)
    for g in range(groups):  # a loop over ≤ 50 groups, not records
        if wide:  # the same axes from the records left, in time linear in the inputs (signs are free)
            v = _leading_axes_wide(zr, gram, np.flatnonzero(labels != g), n_components)
        else:
            zg = zr[labels == g]
            _, vecs = np.linalg.eigh(gram - zg.T @ zg)
            v = vecs[:, ::-1][:, :n_components]
        left = labels[q] != g
        near[g, left] = ctx.search(zr[q[left]] @ v, zs @ v, 1, name="dcr refitted famd real→synthetic").dist[:, 0]
    return near


def _refit_nearest_coded(ctx, encoder: FamdEncoder, labels: np.ndarray, n_components: int, q: np.ndarray) -> np.ndarray:
    """:func:`_refit_nearest` when the FAMD input has coded columns (a categorical column of
    thousands of levels): each group's axes are the leading right singular vectors of the FAMD
    input of the records left, found by a Lanczos iteration on the input as an operator
    (:meth:`privgate.spaces.FamdInputs.leading_axes`), so no indicator block of levels × records
    is written; the rest as there. Each refit's iteration starts from the whole fit's axes
    (the same axes to machine precision in fewer products), and the release is projected on
    every group's axes at once (one pass over its codes)."""
    zr, zs = encoder.inputs(ctx.real), encoder.inputs(ctx.synthetic)
    groups = int(labels.max()) + 1
    near = np.full((groups, q.size), np.nan)
    # the axes depend on the real records and the labels only: shared with the holdout baseline's
    # context (the same real records and jackknife groups)
    axes = ctx._shared.setdefault("dcr_refit_axes", {})
    tag = (n_components, hashlib.blake2b(labels.tobytes(), digest_size=16).hexdigest())
    start = ctx.famd(n_components).axes
    for g in range(groups):  # a loop over ≤ 50 groups, not records
        if (tag, g) not in axes:
            axes[(tag, g)] = zr.leading_axes(n_components, rows=np.flatnonzero(labels != g), start=start)[1]
    every = np.hstack([axes[(tag, g)] for g in range(groups)])
    projected, queries = zs.project(every), zr.matvec(every, q)
    ends = np.cumsum([axes[(tag, g)].shape[1] for g in range(groups)])
    for g in range(groups):
        cols = slice(int(ends[g]) - axes[(tag, g)].shape[1], int(ends[g]))
        left = labels[q] != g
        near[g, left] = ctx.search(
            np.ascontiguousarray(queries[left, cols]),
            np.ascontiguousarray(projected[:, cols]),
            1,
            name="dcr refitted famd real→synthetic",
        ).dist[:, 0]
    return near


def _leading_axes_wide(z: np.ndarray, gram_rows: np.ndarray, keep: np.ndarray, n_components: int) -> np.ndarray:
    """The ``n_components`` leading right singular vectors (p × n_components, unit columns, signs
    free) of the records ``keep`` of ``z`` (n × p, p > n), from the records' Gram matrix
    ``gram_rows`` = z zᵀ: the leading eigenvectors u of its (keep, keep) block give the axes zᵀu,
    normalised — the SVD's axes at the cost of one partial n × n eigendecomposition per group
    (measured 18× less than an SVD of 1,900 × 3,000 inputs). A zero singular value (fewer
    independent records than components) gives a zero axis."""
    from scipy.linalg import eigh

    size = keep.size
    low = max(0, size - n_components)
    _, u = eigh(gram_rows[np.ix_(keep, keep)], subset_by_index=[low, size - 1])
    v = z[keep].T @ u[:, ::-1]
    norm = np.linalg.norm(v, axis=0)
    return np.divide(v, norm, out=np.zeros_like(v), where=norm > 0)


@register_metric(
    family="re-identification",
    attack="a synthetic record that betrays the real record it was generated from",
    reference=PRIVEVAL + "2.2.12 Hidden Rate (avatar paper)",
    orientation="value = share of real records whose nearest synthetic record is their own",
    needs=("pairing",),
    spaces=("famd",),
    memory_cost=2.0,
    sampled=("real",),
)
def hidden_rate(ctx, *, paired: bool | None = None, pairing=None, n_components: int = 2) -> MetricResult:
    """Hidden Rate: needs a pairing — which real record each synthetic record was generated from
    (``paired=True``: synthetic row i ↔ real row i, or ``pairing``: per synthetic row the real row
    index). In the FAMD projection, a real record is hit when its nearest synthetic record is one
    of its own (a tie with its own counts as a hit). value = share of real records hit.

    Orientation: risk; raw = value. Not applicable without a pairing.
    """
    pairing = pairing if pairing is not None else ctx.pairing
    if paired or pairing is True:
        if ctx.n_real != ctx.n_synthetic:
            raise ParameterError(
                f"hidden_rate with paired=True needs as many synthetic rows as real rows; "
                f"got {ctx.n_synthetic} synthetic and {ctx.n_real} real"
            )
        pair = np.arange(ctx.n_synthetic)
    elif pairing is None or pairing is False:
        raise NotApplicableError(
            "hidden_rate needs a pairing of synthetic to real records "
            "(paired=True or pairing=[real row per synthetic row])"
        )
    else:
        pair = np.asarray(pairing)
        if pair.shape != (ctx.n_synthetic,) or not np.issubdtype(pair.dtype, np.integer):
            raise ParameterError(
                f"hidden_rate pairing must be {ctx.n_synthetic} integer real-row indices, "
                f"one per synthetic row; got shape {pair.shape} dtype {pair.dtype}"
            )
        if pair.size and (pair.min() < 0 or pair.max() >= ctx.n_real):
            raise ParameterError(
                f"hidden_rate pairing indices must be in [0, {ctx.n_real}); got range [{pair.min()}, {pair.max()}]"
            )
    space = ctx.famd(n_components)
    rows = real_rows(ctx)
    d_nn = ctx.neighbours(("famd", n_components), "real", "synthetic", 1, rows=rows).dist[:, 0]
    d_pair = pair_distances(space.real[pair], space.synthetic)
    own = np.full(ctx.n_real, np.inf)
    np.minimum.at(own, pair, d_pair)
    own = on_rows(own, rows)
    hit = np.isfinite(own) & le(own, d_nn)
    share = float(hit.mean())
    res = result(
        ctx,
        "hidden_rate",
        share,
        share,
        "share of real records whose nearest synthetic record is their own",
        params={"n_components": n_components, "paired": pairing is None or pairing is True},
        details={"n_real_with_own_synthetic": int(np.isfinite(own).sum())},
        per_record=hit.astype(float),
        per_record_description="1 if the real record's nearest synthetic record is its own",
    )
    return mark_sampled(widen_share_for_search(set_share_ci(res, hit)), ctx, rows)


# ---------------------------------------------------------------------- hitting rate
@register_metric(
    family="re-identification",
    attack="synthetic records matching a real record on every attribute up to a small tolerance",
    reference=PRIVEVAL + "2.2.13 Hitting Rate (SynthEval)",
    orientation="value = share of real records hit by some synthetic record",
    spaces=(),
    memory_cost=0.5,
    sampled=("real",),
)
def hitting_rate(ctx, *, tolerance_divisor: float = 30.0, beyond_chance: bool = False) -> MetricResult:
    """Hitting Rate: a real record is hit when some synthetic record has all categorical values
    equal and every numeric value within h = (max − min of the real column)/30, inclusive (the
    paper's eq. 30 has a typo); a numeric null matches only a null; a constant column needs
    equality. value = share of real records hit.

    The share grows with the release's size (more records, more boxes filled: on 18 mostly
    categorical columns an independent-marginals release hits 0.23 of the real records at 20,000
    rows and 0.72 at 1,000,000), so a fixed limit on it is a limit on size. ``beyond_chance``:
    value = the hits beyond chance, (h − h₀)/(1 − h₀) clipped to [0, 1], where h₀ is the share of
    the same real records hit by the other real records — people of the same population, a
    perfect generator's output — at the release's size (the larger of the release and the other
    real records is cut to the smaller's size by a seeded subset, and h is then taken on the
    same subset). Real non-members score ≈ 0 and a copy 1 at every size; a release with a share c
    of copied records ≈ c. The same normalisation as the attacks' residual risk (Giomi et al.
    2023, (attack − control)/(1 − control)).

    Orientation: risk; raw = the share hit (the published definition) in both cases.
    """
    if tolerance_divisor <= 0:
        raise ParameterError(f"hitting_rate tolerance_divisor must be > 0; got {tolerance_divisor}")
    rows = real_rows(ctx)
    # every real record's coordinates only when the other real records are searched too (beyond
    # chance); else the sampled query records' alone
    boxes = ctx.box_query(tolerance_divisor, real_rows=None if beyond_chance else rows)
    hit = boxes.hits(rows, "synthetic", name="hitting_rate box query real→synthetic")
    share = float(hit.mean())
    params = {"tolerance_divisor": tolerance_divisor, "beyond_chance": bool(beyond_chance)}
    if beyond_chance:
        return _hitting_beyond_chance(ctx, params, boxes, rows, hit)
    res = result(
        ctx,
        "hitting_rate",
        share,
        share,
        "share of real records hit by a synthetic record",
        params=params,
        details={"n_hit": int(hit.sum())},
        per_record=hit.astype(float),
        per_record_description="1 if some synthetic record hits the real record",
    )
    return mark_sampled(set_share_ci(res, hit, "tolerances (ranges of the real columns) held fixed"), ctx, rows)


def _release_hits_at_size(
    boxes, rng: np.random.Generator, n_syn: int, query_pos: np.ndarray, size: int, hit_full: np.ndarray
) -> np.ndarray:
    """Which queried real records the release hits, the release cut to ``size`` by a seeded draw."""
    if n_syn <= size:
        return hit_full
    # the release cut to the real data's size
    keep = np.sort(rng.choice(n_syn, size, replace=False))
    return boxes.hits(query_pos, "synthetic", keep, name="hitting_rate box query real→synthetic subset")


def _chance_hits_at_size(boxes, rng: np.random.Generator, n_real: int, query_pos: np.ndarray, size: int) -> np.ndarray:
    """Which queried real records another real record hits, the others cut to ``size`` by a seeded draw."""
    keep = None
    if n_real - 1 > size:  # the other real records cut to the release's size (a query's own row never counts)
        keep = np.sort(rng.choice(n_real, size + 1, replace=False))
    return boxes.hits(query_pos, "real", keep, exclude_self=True, name="hitting_rate box query real→other real records")


def _hitting_beyond_chance(ctx, params: dict, boxes, rows: np.ndarray | None, hit_full: np.ndarray) -> MetricResult:
    """hitting_rate's hits beyond chance (see :func:`hitting_rate`): the release's hits and the
    other real records' hits of the same real records, at one size."""
    n_real, n_syn = ctx.n_real, ctx.n_synthetic
    query_pos = np.arange(n_real) if rows is None else np.asarray(rows)
    size = min(n_syn, n_real)
    rng = seeds.rng(ctx.seed, "hitting_rate.sizes")
    # the release's draw first, then the other real records': the seeded draws keep their order
    hit = _release_hits_at_size(boxes, rng, n_syn, query_pos, size, hit_full)
    chance = _chance_hits_at_size(boxes, rng, n_real, query_pos, size)
    h, h0 = float(hit.mean()), float(chance.mean())
    room = 1.0 - h0
    value = min(1.0, max(0.0, (h - h0) / room)) if room > 0 else 0.0
    share = float(hit_full.mean())
    details = {
        "n_hit": int(hit_full.sum()),
        "share_hit": share,
        "share_hit_at_size": h,
        "chance_share_hit": h0,
        "size_compared": int(size),
    }
    if room <= 0:
        details["no_information"] = "every real record is hit by another real record: hits beyond chance cannot be seen"
    diff = hit.astype(float) - chance.astype(float)
    res = result(
        ctx,
        "hitting_rate",
        value,
        share,
        "share of real records hit beyond chance: (hit − hit by other real records)/(1 − the latter)",
        params=params,
        details=details,
        per_record=diff,
        per_record_description="1 if hit by the release and not by another real record, "
        "−1 if the reverse, 0 otherwise (at one size)",
    )
    if room > 0:
        set_mean_ci(
            res,
            ctx,
            diff,
            transform=lambda x: x / room,
            transform_text=f"x/(1 − {h0:.4g}) (the chance share held fixed), clipped to [0, 1]",
            note="tolerances (ranges of the real columns) held fixed",
        )
        res.details["ci_per_record_mean"] = False
    else:
        set_no_ci(res, "every real record is hit by another real record")
    return mark_sampled(res, ctx, rows)
