"""Classifier metrics: an attacker trains a model to tell real records from synthetic ones
(docs/metrics.md, family re-identification).

* ``detection_mlp`` — DetectionMLP (Qian et al., 2023; PrivEval review §2.2.3): scikit-learn
  MLP, 5-fold stratified cross-validation, mean ROC AUC;
* ``membership_inference`` — Membership Inference Risk (Lautrup et al., 2024; review §2.2.11):
  LightGBM on stratified 70/30 splits, recall of the real class, 5 repetitions.

Features are the mixed space of the context (numerics standardised with the real statistics,
nulls imputed with the real mean, categoricals one-hot × 1/√2). Labels: real = 1, synthetic = 0.
Both train on a seeded sample of at most ``max_records`` records per class (:func:`class_rows`;
docs/performance.md "Sampling"; measured: benchmarks/LOG.md "The classifier metrics on a
sample"); ``None`` or the run's ``sample: off``
use every record.
Every random step (folds, splits, model initialisation) is seeded by the context's seed; both use
the run's thread budget (``ctx.threads``, privgate.threads) unless ``n_jobs`` says otherwise.

Orientation: risk. A classifier that cannot separate the sets (AUC ≈ 0.5, recall ≲ 0.5, as for a
copy) gives value 1; a perfect separator (AUC = 1, recall = 1) gives 0.
"""

from __future__ import annotations

import math

import numpy as np

from .. import seeds, stats
from ..errors import ParameterError, TooFewRowsError
from ..registry import QuerySizes, register_metric
from ..results import MetricResult
from ..stats.metric_intervals import OFF, intervals_on, map_interval, result, set_count_ci, set_no_ci
from ..threads import available_cores, resolve_threads
from .limits import MAX_REPETITIONS, check_work_bound

# work bounds of detection_mlp: folds, epochs and hidden units each multiply its training time
MAX_FOLDS = 20
MAX_EPOCHS = 5000
MAX_HIDDEN_UNITS = 10_000

REVIEW = "Privacy metrics review (PrivEval), §"


def _n_jobs(n_jobs: int | None, default: int | None = None) -> int:
    """Worker threads/processes for a classifier: ``n_jobs`` (negative counts back from the
    available cores, as in joblib) or, when None, the run's thread budget ``default``
    (privgate.threads); never more than the available cores."""
    cores = available_cores()
    if n_jobs is None:
        return min(cores, default) if default is not None else resolve_threads()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ParameterError(f"n_jobs must be a non-zero integer or None; got {n_jobs!r}")
    return min(cores, int(n_jobs)) if n_jobs > 0 else max(1, cores + 1 + int(n_jobs))


def _labelled(ctx, dtype: type = np.float64, rows: dict | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """The real and synthetic records of the mixed space stacked (as ``dtype``), their labels
    (real 1) and the space's details. ``rows``: {"real": row positions | None, "synthetic": …}
    — only these records are stacked (None: every record of that side). A coded column of the
    space (a categorical column of thousands of levels, held as its level code) is no feature:
    the order of its codes means nothing to a classifier; the details name it."""
    space = ctx.mixed()
    rows = rows or {}
    width = space.dim - len(space.coded_columns)
    parts = [
        (m if rows.get(role) is None else m[rows[role]])[:, :width]
        for role, m in (("real", space.real), ("synthetic", space.synthetic))
    ]
    x = np.vstack(parts, dtype=dtype)
    y = np.concatenate([np.ones(parts[0].shape[0], dtype=np.int64), np.zeros(parts[1].shape[0], dtype=np.int64)])
    details = dict(space.details)
    if space.coded_columns:
        details["not_features"] = {
            "columns": sorted(details.get("coded_columns", {})),
            "why": "categorical columns of more levels than the one-hot limit: compared as "
            "equal or not by the distance metrics, no classifier feature",
        }
    return x, y, details


# ------------------------------------------------------------------ records per class (sample)
#: detection_mlp's records per class by default: above it a seeded sample, so its five MLP fits
#: cost the same at any size (at 1M × 1M they took 1,094 CPU-s and 9 GiB on every record). A
#: detector trained on fewer records is weaker: at 100k × 100k Texas-like rows the AUC was 0.749
#: on every record, 0.737 at 50,000 per class and 0.717 at 25,000 — this cap halves that bias
#: for 4 CPU-s more than 25,000 (benchmarks/LOG.md, "The classifier metrics on a sample")
MAX_DETECTION_RECORDS = 50_000
#: membership_inference's records per class by default: its interval counts one test part's real
#: records (30 %), 15,000 at this cap — a recall interval of at most ±0.008 (±0.011 at 25,000)
MAX_MEMBERSHIP_RECORDS = 50_000
_SIDES = ("real", "synthetic")


def _stacked_share(cap: int, sizes: QuerySizes, *, same_share: bool) -> float:
    """The share of the real and release records a classifier metric stacks (the memory guard's
    ``memory_share``): ``cap`` per class, lowered to the run's explicit query sample; every
    record when the run's ``sample`` is off. ``same_share``: both classes sampled at the same
    share (the smaller), as membership_inference does."""
    if sizes.sample_off:
        return 1.0
    size = cap if sizes.sample is None else min(cap, sizes.sample)
    counts = (max(sizes.n_real, 1), max(sizes.n_synthetic, 1))
    shares = [min(1.0, size / n) for n in counts]
    if same_share:
        shares = [min(shares)] * 2
    return sum(s * n for s, n in zip(shares, counts)) / sum(counts)


def detection_share(sizes: QuerySizes) -> float:
    """detection_mlp's share of the records (at most ``MAX_DETECTION_RECORDS`` per class)."""
    return _stacked_share(MAX_DETECTION_RECORDS, sizes, same_share=False)


def membership_share(sizes: QuerySizes) -> float:
    """membership_inference's share of the records (at most ``MAX_MEMBERSHIP_RECORDS`` per
    class, both classes at the same share)."""
    return _stacked_share(MAX_MEMBERSHIP_RECORDS, sizes, same_share=True)


def _check_max_records(name: str, max_records: int | None) -> None:
    if max_records is not None and (
        isinstance(max_records, bool) or not isinstance(max_records, (int, np.integer)) or max_records < 2
    ):
        raise ParameterError(f"{name} max_records must be an integer ≥ 2 or None; got {max_records!r}")


def class_size(ctx, role: str, max_records: int | None) -> tuple[int | None, bool]:
    """(records of ``role`` a classifier metric trains and tests on — None: every one —, whether
    that is the run's own sample): ``max_records``, lowered to an explicit run sample
    (``sample: N`` / ``sample_real``); no cap at all when the run's ``sample`` is off."""
    n = ctx.n_real if role == "real" else ctx.n_synthetic
    explicit = ctx.sample_size(role, auto=False) if hasattr(ctx, "sample_size") else None
    cap = None if getattr(ctx, "sample", "auto") is None else max_records
    size = min((s for s in (cap, explicit) if s is not None), default=None)
    if size is None or size >= n:
        return None, False
    return int(size), explicit is not None and size == explicit


def class_rows(ctx, max_records: int | None, stream: str, same_share: bool = False) -> tuple[dict, dict]:
    """The seeded sample of each class ({role: sorted row positions | None for every record}) and
    its description ({role: description} of the sampled sides, as ``ctx.sample_description``
    gives). The run's own sample (``ctx.real_sample()`` / ``ctx.synthetic_sample()``) when its
    explicit size is the one used, else a simple random sample without replacement from the seed
    stream ``stream`` (index 0 real, 1 synthetic). ``same_share``: both classes are sampled at the
    same rate (the smaller of their sampled shares), so their ratio is kept — always from
    ``stream``."""
    sizes = {role: class_size(ctx, role, max_records) for role in _SIDES}
    rule = f"at most {max_records:,} records per class (max_records)" if max_records else "explicit sample size"
    if same_share:
        sizes = _same_share(ctx, sizes)
        rule += ", the same share of each class"
    rows, descs = {}, {}
    for index, role in enumerate(_SIDES):
        size, own = sizes[role]
        if size is None:
            rows[role] = None
        elif own:
            rows[role] = ctx.real_sample(auto=False) if role == "real" else ctx.synthetic_sample()
            descs[role] = ctx.sample_description(role)
        else:
            n = ctx.n_real if role == "real" else ctx.n_synthetic
            rows[role] = np.sort(seeds.rng(ctx.seed, stream, index).choice(n, size, replace=False))
            descs[role] = {
                "n": size,
                "of": n,
                "seed": ctx.seed,
                "side": role,
                "method": "simple random sample without replacement",
                "rule": rule,
            }
    return rows, descs


def _same_share(ctx, sizes: dict) -> dict:
    """Per-class sizes lowered to one share of each class (the smallest sampled share)."""
    counts = {"real": ctx.n_real, "synthetic": ctx.n_synthetic}
    share = min((size / counts[role] for role, (size, _) in sizes.items() if size is not None), default=1.0)
    out = {}
    for role, n in counts.items():
        size = min(n, max(2, round(share * n)))
        out[role] = (None if size >= n else size, False)
    return out


def _mark_classes(res: MetricResult, descs: dict) -> MetricResult:
    """``details["sampled"]`` of a metric sampled per class: the first sampled side's description,
    the other's under its role (as privgate.metrics.sampling.mark_sampled writes both sides)."""
    for role in _SIDES:
        if role not in descs:
            continue
        if res.details.get("sampled"):
            res.details["sampled"][role] = descs[role]
        else:
            res.details["sampled"] = dict(descs[role])
    return res


def _check_class_sizes(ctx, name: str, minimum: int) -> None:
    ctx.require_rows("real", minimum, name)
    ctx.require_rows("synthetic", minimum, name)


# ----------------------------------------------------------------------------- detection MLP
@register_metric(
    family="re-identification",
    attack="a neural network trained to tell real from synthetic records",
    reference=REVIEW + "2.2.3 DetectionMLP (Qian et al., 2023)",
    orientation="value = clip(2·(1 − AUC), 0, 1): indistinguishable (AUC ≤ 0.5) → 1, perfectly detectable → 0",
    spaces=("mixed",),
    memory_cost=4.0,
    memory_share=detection_share,
    worker_memory_cost=4.0,
)
def detection_mlp(
    ctx,
    *,
    folds: int = 5,
    hidden_layer_sizes: tuple[int, ...] = (100, 50),
    max_iter: int = 300,
    n_jobs: int | None = None,
    max_records: int | None = MAX_DETECTION_RECORDS,
) -> MetricResult:
    """DetectionMLP: an MLP (hidden layers (100, 50), Adam, batches of 200, early stopping on 10 %
    of the training part, at most 300 epochs — PrivEval's scikit-learn MLPClassifier settings,
    trained by privgate's equivalent NumPy trainer (privgate.metrics._mlp) in float32) is trained
    to tell real (1) from synthetic (0) records in the mixed space; ``folds``-fold stratified
    cross-validation (shuffled, seeded); raw = mean ROC AUC of the held-out folds.
    value = clip(2·(1 − AUC), 0, 1).

    Records: at most ``max_records`` per class (default 50,000) — a class with more is replaced
    by a seeded simple random sample of that many of its records (stream ``detection.sample``),
    drawn before anything is stacked, and the cross-validation runs on the sample; an explicit
    smaller run sample (``sample: N`` / ``sample_real``) is used instead. ``max_records=None``
    or the run's ``sample: off``: every record (PrivEval's definition). Up to 50,000 records per
    class nothing is sampled and the result is that of every record. A detector trained on fewer
    records is typically weaker (a lower AUC), so the sampled value errs high: conservative for
    a risk. The interval is DeLong's over the held-out sampled records, so it contains the
    record-sampling error; the trained models are held fixed. ``details["sampled"]`` says which
    side was sampled, how many of how many records, with which seed.

    Orientation: risk (value); raw = AUC (0.5 = indistinguishable = no privacy signal left).
    """
    hidden = _check_detection_params(ctx, folds, hidden_layer_sizes, max_iter, max_records)
    rows, descs = class_rows(ctx, max_records, "detection.sample")
    # the MLP trains in float32 (half the time, same decisions): the sampled rows are stacked as
    # float32 at once, so no float64 copy of every record is held beside them
    x, y, space_details = _labelled(ctx, np.float32, rows)
    jobs = _n_jobs(n_jobs, getattr(ctx, "threads", None))
    fold_results = _detection_folds(ctx, x, y, folds, hidden, max_iter, jobs)
    aucs = [a for a, _ in fold_results]
    auc = float(np.mean(aucs))
    res = result(
        ctx,
        "detection_mlp",
        _from_rate(auc),
        auc,
        "mean ROC AUC of an MLP telling real from synthetic records",
        params={
            "folds": folds,
            "hidden_layer_sizes": list(hidden_layer_sizes),
            "max_iter": max_iter,
            "max_records": max_records,
            "seed": ctx.seed,
        },
        details={
            "auc_per_fold": [float(a) for a in aucs],
            "n_jobs": jobs,
            "n_features": int(x.shape[1]),
            "mean_imputed": space_details.get("mean_imputed", {}),
        },
    )
    _mark_classes(res, descs)
    if not intervals_on():
        return res.set_ci(None, OFF)
    # the held-out folds are disjoint: the variance of the mean of K fold AUCs is Σ var_k / K²
    var = float(sum(v for _, v in fold_results)) / folds**2
    if not np.isfinite(var):
        return set_no_ci(res, "a held-out fold has fewer than 2 records of a class (no DeLong variance)")
    auc_ci = stats.normal_interval(auc, var)
    res.details["auc_ci"] = list(auc_ci)
    return res.set_ci(map_interval(auc_ci, _from_rate), _detection_ci_method(folds, descs))


def _check_detection_params(
    ctx, folds: int, hidden_layer_sizes, max_iter: int, max_records: int | None
) -> tuple[int, ...]:
    """detection_mlp's parameters within their work bounds and enough rows; the hidden layers."""
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ParameterError(f"detection_mlp folds must be an integer ≥ 2; got {folds!r}")
    check_work_bound("detection_mlp", "folds", folds, MAX_FOLDS)
    check_work_bound("detection_mlp", "max_iter", max_iter, MAX_EPOCHS)
    if isinstance(hidden_layer_sizes, (tuple, list)) and all(
        isinstance(h, (int, np.integer)) and not isinstance(h, bool) for h in hidden_layer_sizes
    ):
        check_work_bound(
            "detection_mlp",
            "hidden_layer_sizes (sum of the layer widths)",
            int(sum(hidden_layer_sizes)),
            MAX_HIDDEN_UNITS,
        )
        check_work_bound("detection_mlp", "hidden_layer_sizes (number of layers)", len(hidden_layer_sizes), 10)
    _check_max_records("detection_mlp", max_records)
    _check_class_sizes(ctx, "detection_mlp", folds)
    return tuple(int(h) for h in hidden_layer_sizes)


def _detection_folds(
    ctx, x: np.ndarray, y: np.ndarray, folds: int, hidden: tuple[int, ...], max_iter: int, jobs: int
) -> list[tuple[float, float]]:
    """(AUC, DeLong variance) of each held-out fold of a seeded stratified ``folds``-fold split."""
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedKFold

    if int(np.bincount(y, minlength=2).min()) < folds:
        raise TooFewRowsError(
            f"detection_mlp with {folds} folds needs at least {folds} sampled records of each "
            f"class; the sample holds {int(y.sum())} real and {int((y == 0).sum())} synthetic"
        )
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seeds.derive(ctx.seed, "detection.folds"))
    seed = ctx.seed
    splits = list(splitter.split(x, y))
    _check_training_parts(splits, y, folds)
    workers = min(jobs, folds)
    if workers == 1:
        return [_mlp_fold(x, y, tr, te, hidden, max_iter, seed) for tr, te in splits]
    # one process per fold, each with single-threaded BLAS: scores do not depend on workers
    return Parallel(n_jobs=workers, backend="loky")(
        delayed(_mlp_fold)(x, y, tr, te, hidden, max_iter, seed) for tr, te in splits
    )


def _detection_ci_method(folds: int, descs: dict) -> str:
    """detection_mlp's interval method; with a sample, what it contains."""
    text = (
        f"DeLong variance of each held-out fold's AUC, combined over the {folds} disjoint folds "
        "(normal interval of the mean AUC), mapped through value = clip(2·(1 − AUC)); "
        "the trained models are held fixed"
    )
    if not descs:
        return text
    sides = ", ".join(f"{d['n']:,} of {d['of']:,} {role} records" for role, d in descs.items())
    return (
        text + f"; the held-out records are a seeded simple random sample of each sampled class ({sides}, "
        "seed " + str(next(iter(descs.values()))["seed"]) + "), so the interval contains the "
        "record-sampling error of the AUC (finite-population correction ignored, which only widens it)"
    )


def _from_rate(rate: float) -> float:
    """The classifier metrics' value from their rate (AUC, recall): clip(2·(1 − rate), 0, 1)."""
    return min(1.0, max(0.0, 2.0 * (1.0 - rate)))


# early stopping holds out ⌈10 %⌉ of a training part, stratified: ≥ 2 records and both classes
_MIN_TRAIN = 11


def _check_training_parts(splits, y: np.ndarray, folds: int) -> None:
    """TooFewRowsError (naming the row counts) when a fold's training part is too small for the
    MLP's stratified early-stopping split, instead of scikit-learn's error from inside a fold."""
    smallest = min(tr.size for tr, _ in splits)
    fewest = min(int(np.bincount(y[tr], minlength=2).min()) for tr, _ in splits)
    if smallest < _MIN_TRAIN or fewest < 2:
        raise TooFewRowsError(
            f"detection_mlp needs each of the {folds} training parts to hold at least {_MIN_TRAIN} records, 2 of "
            f"each class (10 % is held out for early stopping); {int(y.sum())} real and {int((y == 0).sum())} "
            f"synthetic rows give {smallest} records, {fewest} of the smaller class"
        )


def _mlp_fold(x, y, train, test, hidden, max_iter, seed) -> tuple[float, float]:
    """(ROC AUC, DeLong variance) of one held-out fold."""
    from threadpoolctl import threadpool_limits

    from ._mlp import train_mlp

    # small matrix products: one BLAS thread is ~10× faster than several on a busy machine
    with threadpool_limits(1):
        model = train_mlp(x[train], y[train], hidden, max_iter, seed)
        proba = model.predict_proba(x[test])
    return stats.delong_auc(y[test], proba)


# ---------------------------------------------------------------------- membership inference
@register_metric(
    family="tracing",
    attack="a gradient-boosted classifier recognising real records among synthetic ones",
    reference=REVIEW + "2.2.11 Membership Inference Risk (Lautrup et al., 2024)",
    orientation="value = clip(2·(1 − recall of the real class), 0, 1): recall ≤ 0.5 → 1, recall 1 → 0",
    spaces=("mixed",),
    memory_cost=4.0,
    memory_share=membership_share,
)
def membership_inference(
    ctx,
    *,
    repetitions: int = 5,
    test_size: float = 0.3,
    n_jobs: int | None = None,
    max_records: int | None = MAX_MEMBERSHIP_RECORDS,
) -> MetricResult:
    """Membership Inference Risk: LightGBM (default hyper-parameters) trained to tell real (1)
    from synthetic (0) records in the mixed space, on a stratified 70/30 split (seeded, a new
    split per repetition); raw = mean recall of the real class on the test part (threshold 0.5)
    over ``repetitions`` (5). value = clip(2·(1 − recall), 0, 1).

    This is a real-vs-synthetic classifier, as in the review and PrivEval, not a holdout-based
    membership attack: it measures how recognisable real records are, not how close the release
    is. A copy scores 1 (recall ≤ ½ on duplicated records); any detectable artefact scores low —
    e.g. the ``noisy_copy`` baseline's noise turns the exact zeros of Adult's zero-inflated
    capital_gain / capital_loss into small non-zero values, so it scores below
    ``independent_marginals`` there (without those columns the baseline order holds).

    Records: when a class has more than ``max_records`` (default 50,000), both classes are
    replaced by a seeded simple random sample of the same share of their records (stream
    ``membership.sample``; the larger class keeps ``max_records``), drawn before anything is
    stacked — the same share, so the class ratio the recall at threshold 0.5 depends on is kept;
    an explicit smaller run sample (``sample: N`` / ``sample_real``) lowers it.
    ``max_records=None`` or the run's ``sample: off``: every record. Up to 50,000 records per
    class nothing is sampled and the result is that of every record. A classifier trained on
    fewer records is typically weaker (a lower recall), so the sampled value errs high:
    conservative for a risk. The count interval is over the sampled test records, so it contains
    the record-sampling error; ``details["sampled"]`` says which records were used.

    Orientation: risk (value); raw = recall (higher = real records are recognisable).
    """
    _check_max_records("membership_inference", max_records)
    rows, descs = class_rows(ctx, max_records, "membership.sample", same_share=True)
    _check_membership_params(ctx, repetitions, test_size, _sampled_counts(ctx, rows))
    x, y, space_details = _labelled(ctx, np.float64, rows)
    jobs = _n_jobs(n_jobs, getattr(ctx, "threads", None))
    hits, positives = _membership_fits(ctx, x, y, repetitions, test_size, jobs)
    recalls = [h / p for h, p in zip(hits, positives)]
    recall = float(np.mean(recalls))
    res = result(
        ctx,
        "membership_inference",
        _from_rate(recall),
        recall,
        "mean recall of the real class of a LightGBM real-vs-synthetic classifier",
        params={"repetitions": repetitions, "test_size": test_size, "max_records": max_records, "seed": ctx.seed},
        details={
            "recall_per_repetition": recalls,
            "n_jobs": jobs,
            "n_features": int(x.shape[1]),
            "mean_imputed": space_details.get("mean_imputed", {}),
        },
    )
    _mark_classes(res, descs)
    # the repetitions' test parts overlap, so their positives are not independent trials: the
    # interval counts one test part's real records (the mean hit count over them), which is
    # conservative for the mean of several repetitions
    n_pos = float(np.mean(positives))
    note = f"recall over one test part's {n_pos:g} real records (the repetitions overlap; conservative)"
    if descs:
        sides = ", ".join(f"{d['n']:,} of {d['of']:,} {role} records" for role, d in descs.items())
        note += (
            f"; the records are a seeded simple random sample ({sides}), so the interval contains the "
            "record-sampling error (finite-population correction ignored, which only widens it); "
            "the trained models are held fixed"
        )
    return set_count_ci(
        res, recall * n_pos, n_pos, transform=_from_rate, transform_text="value = clip(2·(1 − recall))", note=note
    )


def _sampled_counts(ctx, rows: dict) -> tuple[int, int]:
    """(real, synthetic) records a classifier metric uses: the sampled counts, else every row."""
    return (
        ctx.n_real if rows["real"] is None else int(rows["real"].size),
        ctx.n_synthetic if rows["synthetic"] is None else int(rows["synthetic"].size),
    )


def _check_membership_params(ctx, repetitions: int, test_size: float, counts: tuple[int, int]) -> None:
    """repetitions an integer in [1, MAX_REPETITIONS], test_size in (0, 1), and a stratified
    split that leaves both classes on both sides."""
    if isinstance(repetitions, bool) or not isinstance(repetitions, (int, np.integer)) or repetitions < 1:
        raise ParameterError(f"membership_inference repetitions must be an integer ≥ 1; got {repetitions!r}")
    check_work_bound("membership_inference", "repetitions", repetitions, MAX_REPETITIONS)
    if not 0 < test_size < 1:
        raise ParameterError(f"membership_inference test_size must be in (0, 1); got {test_size!r}")
    _check_class_sizes(ctx, "membership_inference", 2)
    n = sum(counts)
    n_test = math.ceil(test_size * n)
    if n_test < 2 or n - n_test < 2:  # a stratified split needs both classes on both sides
        raise TooFewRowsError(
            f"membership_inference with test_size={test_size} splits {counts[0]} real + {counts[1]} "
            f"synthetic rows into {n - n_test} training and {n_test} test records; each side needs at least 2"
        )


def _membership_fits(
    ctx, x: np.ndarray, y: np.ndarray, repetitions: int, test_size: float, jobs: int
) -> tuple[list[int], list[int]]:
    """Per repetition (a seeded stratified split, a LightGBM fit): how many real test records
    are predicted real, and how many real test records there are."""
    import lightgbm as lgb
    from sklearn.model_selection import train_test_split

    hits, positives = [], []
    split_seeds = seeds.rng(ctx.seed, "membership.splits").integers(0, 2**31 - 1, repetitions)
    for rep in range(repetitions):  # a handful of model fits, not a loop over records
        tr, te = train_test_split(
            np.arange(y.size), test_size=test_size, stratify=y, random_state=int(split_seeds[rep])
        )
        # deterministic: the same scores whatever n_jobs (checked equal for 1 and 2 threads).
        # Either histogram layout sums each bin's gradients in row order in one thread, so both
        # give the same model; with several threads only the column-wise one still does (each
        # feature in one thread), and on one thread the row-wise one is ~20 % faster (70,000 ×
        # 95 Texas-like records: 0.88 → 0.74 CPU-s a fit, the same probabilities bit for bit)
        layout = {"force_row_wise": True} if jobs == 1 else {"force_col_wise": True}
        model = lgb.LGBMClassifier(
            verbosity=-1,
            random_state=seeds.derive(ctx.seed, "membership.model"),
            n_jobs=jobs,
            deterministic=True,
            **layout,
        )
        model.fit(x[tr], y[tr])
        pred = model.predict(x[te])
        real_test = y[te] == 1
        hits.append(int((pred[real_test] == 1).sum()))
        positives.append(int(real_test.sum()))
    return hits, positives
