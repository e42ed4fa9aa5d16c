"""The label-free metrics: memorisation, exact copies and authenticity compared up to the
invertible changes of the release's columns that the records show (``privgate.label_free``):
the correspondence between release and reference category levels, the maps of numeric columns
back to the reference's scale, and the records disguised one by one.

A copy of the training data with its category labels permuted, renamed, split or merged, or its
numeric columns scaled, shifted, negated or standardised, keeps every record — only the names
and units changed — yet every metric that compares labels and values as they are sees no copy.
These metrics learn the view from records anchored in a label- and scale-invariant encoding,
put both sides in it and compute the published definitions on the recoded frames:

* ``label_free_memorisation`` — the memorisation test (``privgate.metrics.memorisation``) with
  the correspondence learnt from the training and holdout records pooled: a symmetric function of
  the two sets, so the test's mirrored null (training and holdout exchangeable) holds in the
  recoded view as it does in the plain one.
* ``label_free_copies`` — the Common Rows Proportion (``privgate.metrics.common_rows``) in the
  same view.
* ``label_free_authenticity`` — authenticity (``privgate.metrics.authenticity``) with the same
  correspondence: a disguised copy whose numerics were also slightly perturbed is no exact copy,
  but its records are still nearer their sources than any other real record.

When the view is the identity (a release that kept the reference's labels and scales), the
result IS the plain metric's (the same searches, value, interval and test), so an honest release
meets no second test. A numeric column that no learnt map brings to the real scale makes these
metrics fail (``ForeignScaleError``, naming the column): a gate blocks, never passes; one off
the real scale only in its tails is left out of the view (``details["label_free"]
["left_out_columns"]``).
``details["label_free"]`` says whether the view was the identity and, per recoded column (by
position), how many levels and classes it has, per mapped numeric column the map's kind and
support, and how many records were found disguised — never a level or a value. Orientation:
risk, as the plain metrics.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from ..label_free import Correspondence, learn, recode
from ..registry import register_metric
from ..results import MetricResult
from .distance import authenticity, common_rows
from .memorisation import DEFAULT_TAILS, memorisation

#: the metrics that compare in the label-free view themselves
LABEL_FREE_METRICS = ("label_free_memorisation", "label_free_copies", "label_free_authenticity")

REFERENCE = "label-free view: privgate (levels matched through records anchored on label-invariant coordinates); "


def correspondence(ctx, metric: str | None = None) -> Correspondence:
    """The context's release ↔ reference correspondence, learnt once per context: the reference is
    the training and holdout records pooled when there is a holdout (a symmetric function of the
    two, as memorisation's null needs), else the training records. A holdout baseline's context
    takes its main context's reference codes for both sides (its records are real ones). A sharded
    context learns it from its partitions (``label_free_correspondence``; a view that is not the
    identity is refused there, naming ``metric``)."""
    name = "label_free anchors" + (" (training ∪ holdout)" if ctx.holdout is not None else "")
    on_cluster = getattr(ctx, "label_free_correspondence", None)
    if on_cluster is not None:
        return on_cluster(name=name, metric=metric)
    if "label_free" not in ctx.derived and ctx._encoded_by is not None:
        # a holdout baseline's context (EvaluationContext.holdout_baseline): its "release" is real
        # holdout records, labelled as the reference is, so nothing is learnt — both sides take
        # the main view's reference codes, and the baseline is scored in the same classes
        main = correspondence(ctx._encoded_by[0])
        codes = main.reference_codes
        ctx.derived["label_free"] = Correspondence(codes, codes, main.remapped, main.columns, 0, left_out=main.left_out)
    if "label_free" not in ctx.derived:
        ctx.derived["label_free"] = learn(ctx, ctx.synthetic, reference(ctx), name=name)
    return ctx.derived["label_free"]


def reference(ctx) -> pl.DataFrame:
    """The records the view is learnt against: the training records pooled with the holdout when
    there is one (a symmetric function of the two sets, as memorisation's null needs)."""
    return pl.concat([ctx.real, ctx.holdout]) if ctx.holdout is not None else ctx.real


def recoded_context(ctx, corr: Correspondence, with_holdout: bool):
    """A context on the recoded frames (same schema, seed and options). Its mixed-space searches
    are ``ctx``'s when the view only recodes categories, but for the records whose levels' equalities
    the codes change (:meth:`Correspondence.unchanged_rows`), searched again in the view."""
    from ..context import EvaluationContext  # the metrics are imported by the context's package

    kept = [c for c in ctx.schema.columns if c not in corr.left_out]  # the columns the view compares
    view = EvaluationContext(
        recode(ctx.real, corr.reference_codes).select(kept),
        corr.release_view(ctx.synthetic, reference(ctx)).select(kept),
        holdout=recode(ctx.holdout, corr.reference_codes).select(kept) if with_holdout else None,
        schema=ctx.schema.subset(kept).as_dict(),
        seed=ctx.seed,
        options=replace(ctx.options, threads=ctx.threads),
        _shared={"real_nn": {}, "entropy": {}},
    )
    if (
        type(ctx) is EvaluationContext
        and not corr.numeric_maps
        and corr.records is None
        and not corr.left_out
        and corr.tail_maps is None
    ):
        # only categories recoded: the view's mixed-space searches are ctx's but for the records of
        # levels whose equalities the codes change (searched again in the view)
        frames = {"real": ctx.real, "synthetic": ctx.synthetic}
        if with_holdout:
            frames["holdout"] = ctx.holdout
        view._searches_of = (ctx, lambda q, t: corr.unchanged_rows(frames, q, t))
    return view


def in_view(ctx, metric, name: str, *, with_holdout: bool = False, **params) -> MetricResult:
    """``metric`` (a registered plain metric) on the label-free view of ``ctx``, reported as
    ``name`` with the view's description; the plain metric on ``ctx`` itself when the
    correspondence is the identity."""
    corr = correspondence(ctx, name)
    if corr.identity:
        view = ctx
    else:  # a sharded context recodes its partitions as its workers read them
        on_cluster = getattr(ctx, "label_free_recoded", None)
        view = on_cluster(corr, with_holdout) if on_cluster else recoded_context(ctx, corr, with_holdout=with_holdout)
    res = metric(view, **params)
    return replace(res, name=name, details={**res.details, "label_free": corr.describe(ctx.schema)})


# memory_cost: on a release that kept the labels, the plain metric's searches again (cached: nothing
# more); on a relabelled one, the plain metric on recoded copies of the frames (estimated, not
# measured: the plain metric's cost plus the copies, rounded to nnaa's 8.0)
@register_metric(
    family="tracing",
    attack="membership of copies whose category labels were permuted, renamed, split or merged",
    reference=REFERENCE + "memorisation test as privgate.metrics.memorisation",
    orientation="value = estimated share of the release detectably memorised, comparing categories "
    "up to the learnt level correspondence; its interval's lower bound decides",
    needs=("holdout",),
    self_controlled=True,
    spaces=("mixed",),
    memory_cost=8.0,
    sampled=("synthetic",),
)
def label_free_memorisation(
    ctx, *, ratio: float = 0.5, tails: tuple[float, ...] | list[float] = DEFAULT_TAILS
) -> MetricResult:
    """Memorisation test in the label-free view: the share of the release much nearer to a
    distinct training record than to any holdout record, the categories compared up to the
    correspondence learnt from the training and holdout records pooled. Equals ``memorisation``
    when the correspondence is the identity.

    Orientation: risk; value, raw, interval and p-value as ``memorisation``'s.
    """
    return in_view(ctx, memorisation, "label_free_memorisation", with_holdout=True, ratio=ratio, tails=tails)


@register_metric(
    family="re-identification",
    attack="exact copies of real records whose category labels were permuted, renamed, split or merged",
    reference=REFERENCE + "Common Rows Proportion (PrivEval §2.1.4)",
    orientation="value = share of real records copied, comparing categories up to the learnt level "
    "correspondence; 1 = every real record is in the release",
    spaces=(),
    memory_cost=1.0,
    sampled=("real",),
)
def label_free_copies(ctx) -> MetricResult:
    """Common Rows Proportion in the label-free view: the share of real records with an identical
    release record once the categories are compared up to the correspondence learnt from the
    training (and holdout) records. Equals ``common_rows`` when the correspondence is the identity.

    Orientation: risk; raw = value.
    """
    return in_view(ctx, common_rows, "label_free_copies")


@register_metric(
    family="re-identification",
    attack="near copies of real records whose category labels were permuted, renamed, split or merged",
    reference=REFERENCE + "authenticity (Alaa et al., ICML 2022) as privgate.metrics.authenticity",
    orientation="value = share of real records whose nearest release record is nearer than their nearest "
    "other real record, comparing categories up to the learnt level correspondence; "
    "~0.5 for real non-members, 1 for a copy",
    spaces=("mixed",),
    memory_cost=8.0,
    sampled=("real",),
)
def label_free_authenticity(ctx) -> MetricResult:
    """Authenticity in the label-free view: the share of real records whose nearest release record
    is not farther than their nearest other real record, the categories compared up to the
    correspondence learnt from the training (and holdout) records. Equals ``authenticity`` when the
    correspondence is the identity.

    Orientation: risk; raw and interval as ``authenticity``'s.
    """
    return in_view(ctx, authenticity, "label_free_authenticity")


def view_status(ctx) -> dict:
    """Whether the release's labels or scales differ from the real data's, as the label-free view
    of ``ctx`` sees them (learnt once per context): a metric that compares labels or values as
    they are reads a disguised copy as far from every real record, so its low risk is no evidence
    of privacy. Counts and column positions only."""
    from ..numeric_maps import ForeignScaleError

    order = list(ctx.schema.columns)
    try:
        corr = correspondence(ctx)
    except ForeignScaleError as exc:
        return {
            "differs": True,
            "foreign_scale": True,
            "foreign_column_position": order.index(exc.column) if exc.column in order else None,
            "labels_recoded": 0,
            "numeric_columns_mapped": 0,
            "records_disguised": 0,
            "columns_left_out": 0,
        }
    records = 0 if corr.records is None else int(corr.records.rows.size)
    return {
        "differs": not corr.identity,
        "foreign_scale": False,
        "foreign_column_position": None,
        "labels_recoded": len(corr.remapped),
        "numeric_columns_mapped": len(corr.numeric_maps),
        "records_disguised": records,
        "columns_left_out": len(corr.left_out),
    }
