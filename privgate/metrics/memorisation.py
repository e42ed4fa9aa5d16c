"""``memorisation``: a membership test built for the tail of the release.

For every synthetic record, d_T = the distance to its nearest training record and d_H = the
distance to its nearest holdout record (Euclidean, mixed space). Training and holdout records are
an exchangeable random split of one population, so for a synthetic record that does not depend
on *which* records were trained on, (d_T, d_H) has the same distribution as (d_H, d_T): the two
sides are symmetric. A generator that memorised training records breaks the symmetry in one
place — the records that are *much* nearer to a training record than to any holdout record.

This is the distance-to-closest-record membership idea of Chen et al., "GAN-Leaks" (CCS 2020)
and the DCR-vs-holdout comparison of Platzer & Reutterer ("Holdout-based empirical assessment of
mixed-type synthetic data", Front. Big Data 2021), made into a two-sided tail test with an
effect size: a mirrored count.

* A record is **training-side** when d_T < ρ·d_H and **holdout-side** when d_H < ρ·d_T
  (ρ = ``ratio``, 0.5 by default: the nearest training record at most half as far as the nearest
  holdout record). A distance on the boundary (equal within ``privgate.ties`` tolerance, e.g.
  d_T = d_H = 0, an exact copy of a record present on both sides — frequent on categorical data)
  counts **half to each side**.
* Under "no memorisation" the expected training-side count A equals the holdout-side count B
  (symmetry), so B estimates A's chance level. The **memorised share** estimate is
  (A − B) / m (m = release size): the share of the release much nearer to a training record
  than chance gives. A population-level tilt of the whole release towards the training data (a
  differentially private release shows one, with a tiny p-value on a whole-release
  nearer-training-vs-nearer-holdout test) barely changes A − B, because it moves few records
  past a factor-2 distance ratio; exact and noisy copies all land there.
* **Tail scan**: the records are ordered by their distance to any real record, min(d_T, d_H)
  (a symmetric function, so the null symmetry holds within every tail), and the count is made in
  the closest ``tails`` fractions of the release (default 1 %, 2 %, 5 %, 10 %, 100 %). Per tail:
  an exact one-sided binomial test of A against Bin(A + B, 1/2) (fractional half-counts rounded
  half up), and the share (A_q − B_q)/m with a one-sided Clopper–Pearson lower bound at level
  1 − 0.025/K (K tails, Bonferroni) on A_q/(A_q + B_q).
* ``p_value`` = the smallest **Holm**-adjusted tail p-value (family-wise error over the scan).
  ``value`` = the share estimate of the tail with the highest lower bound (0 when no tail has a
  positive estimate), ``ci`` = (that highest lower bound, the whole release's one-sided 97.5 %
  upper bound): a simultaneous 95 % interval (union bound over the K lower and one upper bound),
  clipped to [0, 1]. Every tail's expected excess is at most the release's, so the highest lower
  bound is a valid lower bound of the memorised share; it is what a gate should decide on
  (``on: lower``).

**Sizes.** The symmetry needs as many training as holdout records. With n_T = n_H the cached
synthetic→training and synthetic→holdout searches of the context are used; otherwise the larger
side is subsampled to the smaller side's size without replacement (seeded by the context's seed)
and the release is searched against that subsample (same neighbour engine).
``details["subsampled"]`` says which. A larger holdout costs nothing but the dropped holdout
records. A larger training set costs power: a copy of a training record left out of the
subsample looks like any other record, so only a share n_H/n_T of the memorised records can be
counted and the shares (estimate and bounds) are multiplied by n_T/n_H (unbiased; the p-value
is unchanged). Give a holdout as large as the training set for the full power.

Orientation: risk; value = estimated share of the release memorised (0 = no more records much
nearer to the training data than to the holdout than chance gives; 1 = every record); raw = the
whole release's (A − B)/m, unclipped.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import NotApplicableError, ParameterError, TooFewRowsError
from ..registry import register_metric
from ..results import MetricResult
from ..stats import binomial_test, clopper_pearson, holm
from ..ties import close, lt
from ._common import result

MIN_ROWS = 50
DEFAULT_TAILS = (0.01, 0.02, 0.05, 0.10, 1.0)
ALPHA = 0.05  # the interval is a simultaneous 95 % interval
MAX_LISTED_ROWS = 1000


def _check_params(ratio: float, tails: tuple[float, ...]) -> tuple[float, ...]:
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise ParameterError(f"memorisation ratio must be a number in (0, 1]; got {ratio!r}")
    try:
        t = tuple(float(x) for x in tails)
    except (TypeError, ValueError):
        raise ParameterError(f"memorisation tails must be fractions in (0, 1]; got {tails!r}") from None
    if not t or any(not 0 < x <= 1 for x in t) or len(set(t)) != len(t):
        raise ParameterError(f"memorisation tails must be distinct fractions in (0, 1]; got {tails!r}")
    return tuple(sorted(t))


def _distances(ctx) -> tuple[np.ndarray, np.ndarray, str | None, float]:
    """(d_T, d_H) per synthetic record, with the larger real side subsampled to the smaller's
    size, a note saying which, and the factor the share is scaled by (n_T / n_H when training was
    subsampled: only copies of the kept training records can be counted)."""
    n_t, n_h = ctx.n_real, ctx.n_holdout
    if n_t == n_h:
        d_t = ctx.neighbours("mixed", "synthetic", "real", 1).dist[:, 0]
        d_h = ctx.neighbours("mixed", "synthetic", "holdout", 1).dist[:, 0]
        return d_t, d_h, None, 1.0
    rng = np.random.default_rng(ctx.seed)
    if n_t > n_h:
        rows = np.sort(rng.choice(n_t, n_h, replace=False))
        d_t = ctx.neighbours("mixed", "synthetic", "real", 1, target_rows=rows).dist[:, 0]
        d_h = ctx.neighbours("mixed", "synthetic", "holdout", 1).dist[:, 0]
        return d_t, d_h, (f"training subsampled from {n_t} to {n_h} records (the holdout's size); "
                          f"shares scaled by {n_t}/{n_h}"), n_t / n_h
    rows = np.sort(rng.choice(n_h, n_t, replace=False))
    d_t = ctx.neighbours("mixed", "synthetic", "real", 1).dist[:, 0]
    d_h = ctx.neighbours("mixed", "synthetic", "holdout", 1, target_rows=rows).dist[:, 0]
    return d_t, d_h, f"holdout subsampled from {n_h} to {n_t} records (the training set's size)", 1.0


def side_counts(d_t: np.ndarray, d_h: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Per synthetic record: (training-side, holdout-side) weight — 1 when strictly inside the
    ratio, 0.5 on the boundary (ties within tolerance), 0 otherwise."""
    a = lt(d_t, ratio * d_h) + 0.5 * close(d_t, ratio * d_h)
    b = lt(d_h, ratio * d_t) + 0.5 * close(d_h, ratio * d_t)
    return a.astype(np.float64), b.astype(np.float64)


def _half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def tail_test(a: float, b: float, m: int, k_tails: int, alpha: float = ALPHA,
              scale: float = 1.0) -> dict[str, float]:
    """One tail's binomial test and share bounds from its training-side (a) and holdout-side
    (b) counts in a release of m records (see the module docstring); shares are multiplied by
    ``scale`` (n_T / n_H when the training set was subsampled)."""
    k, n = _half_up(a), _half_up(a + b)
    k = min(k, n)
    if n == 0:
        return {"p": 1.0, "share": 0.0, "lower": 0.0, "upper": 0.0}
    p = binomial_test(k, n, 0.5, "greater")
    lo = clopper_pearson(k, n, 1.0 - alpha / k_tails)[0]   # one-sided at alpha / (2K)
    hi = clopper_pearson(k, n, 1.0 - alpha)[1]             # one-sided at alpha / 2
    return {"p": p, "share": scale * (a - b) / m, "lower": scale * n * (2 * lo - 1) / m,
            "upper": scale * n * (2 * hi - 1) / m}


@register_metric(family="tracing", attack="membership: synthetic records much nearer to a training record than to any holdout record",
                 reference="Chen et al., GAN-Leaks (CCS 2020); Platzer & Reutterer, Front. Big Data 2021 (DCR vs holdout); "
                           "mirrored tail test: privgate",
                 orientation="value = estimated share of the release memorised; its interval's lower bound decides",
                 needs=("holdout",), self_controlled=True)
def memorisation(ctx, *, ratio: float = 0.5, tails: tuple[float, ...] | list[float] = DEFAULT_TAILS) -> MetricResult:
    """Memorisation test: the share of the release much nearer (distance ratio < 0.5) to a
    training record than to any holdout record, beyond the mirrored holdout-side count, scanned
    over the release's closest 1–100 % with an exact binomial test per tail (Holm-corrected
    p-value) and a simultaneous 95 % interval whose lower bound decides.

    Orientation: risk; value = estimated memorised share in [0, 1]; raw = whole-release
    (A − B)/m. See the module docstring for the method and references.
    """
    tails_t = _check_params(ratio, tails)
    if ctx.holdout is None:
        raise NotApplicableError("memorisation needs holdout data (real records not used for training)")
    sizes = f"training {ctx.n_real}, holdout {ctx.n_holdout}, release {ctx.n_synthetic} rows"
    for role, n in (("holdout", ctx.n_holdout), ("training", ctx.n_real), ("release", ctx.n_synthetic)):
        if n < MIN_ROWS:
            raise TooFewRowsError(f"memorisation needs at least {MIN_ROWS} {role} rows for its test; got {sizes}")
    d_t, d_h, subsampled, scale = _distances(ctx)
    a, b = side_counts(d_t, d_h, float(ratio))
    m = d_t.size
    order = np.lexsort((np.arange(m), np.minimum(d_t, d_h)))
    k_tails = len(tails_t)
    per_tail = []
    for q in tails_t:
        size = max(1, int(math.ceil(q * m - 1e-9)))
        sel = order[:size]
        ta, tb = float(a[sel].sum()), float(b[sel].sum())
        per_tail.append({"fraction": q, "size": size, "training_side": ta, "holdout_side": tb,
                         "ties": int(np.count_nonzero((a[sel] == 0.5) & (b[sel] == 0.5))),
                         **tail_test(ta, tb, m, k_tails, scale=scale)})
    adjusted = holm([t["p"] for t in per_tail])
    for t, p_adj in zip(per_tail, adjusted):
        t["p_holm"] = float(p_adj)
    best = max(range(k_tails), key=lambda i: (per_tail[i]["lower"], -i))
    chosen = per_tail[best]
    whole = per_tail[-1] if tails_t[-1] == 1.0 else tail_test(float(a.sum()), float(b.sum()), m, k_tails,
                                                              scale=scale)
    value = min(1.0, max(0.0, chosen["share"]))
    lower = min(1.0, max(0.0, chosen["lower"]))
    upper = min(1.0, max(lower, value, whole["upper"]))
    flags = a * (a > b)
    in_tail = np.zeros(m, dtype=bool)
    in_tail[order[:chosen["size"]]] = True
    flagged = np.flatnonzero((flags > 0) & in_tail)
    raw = float(scale * (a.sum() - b.sum()) / m)
    res = result(
        ctx, "memorisation", value, raw,
        f"whole-release (A − B)/m: training-side minus holdout-side records (ratio {ratio:g}) over release size",
        params={"ratio": float(ratio), "tails": list(tails_t)},
        details={
            "p_value_correction": f"Holm over the {k_tails} tails (family-wise error of the scan)",
            "selected_tail": chosen["fraction"],
            "lower_bound": lower,
            "tails": per_tail,
            "training_side": float(a.sum()), "holdout_side": float(b.sum()),
            "n_flagged": int(flagged.size),
            "flagged_rows": [int(i) for i in flagged[:MAX_LISTED_ROWS]],
            "flagged_rows_truncated": bool(flagged.size > MAX_LISTED_ROWS),
            "subsampled": subsampled,
            "sizes": {"training": ctx.n_real, "holdout": ctx.n_holdout, "release": m},
            "share_scale": scale,
        },
        per_record=flags,
        per_record_description=(f"per synthetic record (by row position): 1 if its nearest training record is "
                                f"less than {ratio:g}× as far as its nearest holdout record, 0.5 on the boundary"),
    )
    res.p_value = float(min(adjusted))
    return res.set_ci((lower, upper), f"simultaneous 95 %: max over {k_tails} tails of one-sided Clopper–Pearson "
                                      f"lower bounds at 1 − 0.025/{k_tails} (Bonferroni); upper: whole release, "
                                      "one-sided 97.5 % Clopper–Pearson")
