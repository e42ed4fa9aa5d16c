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

* **Sides.** A record is **training-side** when d_T < ρ·d_H and **holdout-side** when
  d_H < ρ·d_T (ρ = ``ratio``, 0.5 by default: the nearest training record at most half as far as
  the nearest holdout record). A distance on the boundary (equal within ``privgate.ties``
  tolerance, e.g. d_T = d_H = 0, an exact copy of a record present on both sides — frequent on
  categorical data) counts **half to each side** it is on the boundary of.
* **Distinct real records.** A side's count is the number of *distinct* real records that are
  the nearest neighbour of a record on that side (a record's weight, 1 or ½, taken once per real
  record: the largest). Honest records far from all real data (outliers of a smoothed or noisy
  generator) all have the same few extreme real records as nearest neighbours, so the side of
  hundreds of synthetic records hangs on which side one real record fell: counted per synthetic
  record, an ε-differentially private release (ε = 1, 4) was flagged in 9–42 % of seeds
  (benchmarks/validity.py; 0 % counted per real record). Memorised records are counted in full: distinct copies have distinct sources
  (a record copied several times counts once).
* Under "no memorisation" the expected training-side count A equals the holdout-side count B
  (symmetry), so B estimates A's chance level. The **memorised share** estimate is
  (A − B) / m (m = release size): the share of the release that reproduces distinct training
  records more closely than chance gives. A population-level tilt of the whole release towards
  the training data (a differentially private release shows one, with a tiny p-value on a
  whole-release nearer-training-vs-nearer-holdout test) barely changes A − B, because it moves
  few records past a factor-2 distance ratio; exact and noisy copies all land there.
* **Tail scan**: the records are ordered by the key r·√u, smallest first, where
  r = min(d_T, d_H) / max(d_T, d_H) is the distance ratio (0 for an exact copy of a record on one
  side only) and u = d / ρ is the **local ratio** of the nearer side: d its distance, ρ the
  distance from that nearest real record to its own nearest *other* record of the same set (the
  local scale of authenticity, Alaa et al., "How faithful is your synthetic data?", ICML 2022).
  A noisy or exact copy sits much nearer its source than the source's own nearest neighbour
  (u ≪ 1); an honest record in a dense region is near a real record whose neighbour is near too
  (u ≈ 1). u = 0 when d = 0, ∞ when d > 0 = ρ (the source has an exact twin in its set); with
  equal distances the smaller u of the tied sides; a record with both distances 0 (a boundary
  tie, counted half to each side) gets ∞ and is never a tail's first pick. The count is made in
  the ``tails`` fractions of the release with the smallest key (default 0.5 %, 1 %, 2 %, 5 % and
  100 %). Honest records merely near real data stay out of the small tails: on Texas 1 % noisy
  copies were detected in 65 % of 20 seeds with nearness tails (min(d_T, d_H)), 85 % with ratio
  tails (r) and 97.5 % of 40 seeds with r·√u (offline comparison of variants in
  docs/validity.md). Only the order uses u; the sides are decided on distances as above. Per tail: an
  exact one-sided binomial test of A against Bin(A + B, 1/2) (fractional half-counts rounded
  half up), and the share (A_q − B_q)/m with a one-sided Clopper–Pearson lower bound at level
  1 − 0.025/K (K tails, Bonferroni) on A_q/(A_q + B_q).
* **Why the scan stays valid.** The tail selection is a function of the unordered pair
  {(d_T, ρ_T), (d_H, ρ_H)} of each record only (its key and its position): the key applies one
  rule to each set — distance to the set's nearest record, that record's distance to its nearest
  other record *of the same set* — and combines the sets symmetrically. The training set and the
  holdout are an exchangeable split of equal size, so under the null the pair of sets, their
  within-set neighbour distances included, is exchangeable; swapping the training and
  holdout labels leaves every tail unchanged and swaps A_q with B_q; the null symmetry therefore
  holds inside every tail, and the multiple tails are paid for by Holm (p-value) and Bonferroni
  (bounds). Distinct counting is the same rule applied to both sides, so it keeps the symmetry.
  The binomial treats the distinct real records' sides as independent fair coins; that is an
  approximation (they share one random split), checked by simulation: honest releases are
  flagged in ≤ 5 % of seeds (docs/validity.md).
* ``p_value`` = the smallest **Holm**-adjusted tail p-value (family-wise error over the scan).
  ``value`` = the share estimate of the tail with the highest lower bound (0 when no tail has a
  positive estimate), ``ci`` = (that highest lower bound, the whole release's one-sided 97.5 %
  upper bound): a simultaneous 95 % interval (union bound over the K lower and one upper bound),
  clipped to [0, 1]. Every tail's expected excess is at most the release's, so the highest lower
  bound is a valid lower bound of the memorised share; it is what a gate should decide on
  (``on: lower``).

**Sizes.** The symmetry needs sets of equal size. With n_T = n_H the cached synthetic→training
and synthetic→holdout searches of the context are used. Otherwise the larger side is split at
random (seeded by the context's seed) into k = ⌊n_large / n_small⌋ disjoint parts of the smaller
side's size (the remainder, fewer than n_small records, is left out), and every part is searched
(same neighbour engine). There are then G = k + 1 equally sized, exchangeable sets; a record's
distance to set g is D_g, and the two-set rule generalises with min over the other sets:
set g wins the record when D_g < ρ·min_{h≠g} D_h (½ on the boundary). Under the null every set
wins with the same expectation, so with k_T training sets and k_H holdout sets
E[A] = (k_T/k_H)·E[B]: the test is A against Bin(A + B, p₀ = k_T/(k_T + k_H)), the share is
(A − (k_T/k_H)·B)/m and its bound n·(π − p₀)/((1 − p₀)·m) from the Clopper–Pearson bound π of
A/n, n = A + B. The tails order records by r·√u with r = min_g D_g / (second smallest D_g) and u the
local ratio of the nearest set, its local scale measured *within its part* (a part's records
against that part only: the whole training set, denser than a part, would give training records
smaller scales and break the symmetry) — again one rule per set, symmetric in the sets. With the training set split, every copy of a training record is
counted (its part wins), not only copies of a subsample (comparing with one subsample of the
training set's size detects 1 % copies with half the holdout in 55–60 % of seeds; the parts in
100 %); copies of the left-out remainder
are not, so the shares are multiplied by n_T / (k_T·n_H) (1 when n_T is a multiple of n_H).
``details["parts"]`` says how the sets were made.

**Sampled release** (``ctx.synthetic_sample()``: ``sample: auto`` on a release of more than
100,000 records, or an explicit ``sample``): the test runs on a seeded simple random sample of
m' release records, each searched against ALL training and holdout records (local scales read
for the nearest records found). The symmetry argument is untouched: the sample is drawn from
the release's row positions by a seed, independently of which real records were trained on, so
swapping the training and holdout labels still leaves the sample and every tail unchanged and
swaps A_q with B_q — the binomial test of each tail is exact conditionally on the sample, as it
is on the release. The shares are (A_q − B_q)/m' — unbiased for the release's per-record share
(distinct counting only merges the sample's repeats of one source, rarer than in the release) —
and each tail's lower bound (the upper bound) moves out by z·s/√m' (z at the bound's one-sided
level, s the standard deviation of the per-record contributions to that tail's share): the
record-sampling error that the binomial bounds, conditional on A_q + B_q, leave out. Adding
the two half-widths is conservative. ``flagged_rows`` are release row positions of flagged
sampled records; ``details["sampled"]`` describes the sample.

Orientation: risk; value = estimated share of the release memorised (0 = no more distinct
training records much nearer than chance gives; 1 = every record); raw = the whole release's
(A − (k_T/k_H)·B)/m, unclipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import seeds
from ..errors import NotApplicableError, ParameterError, TooFewRowsError
from ..neighbours import search_k
from ..registry import register_metric
from ..results import MetricResult
from ..stats import holm, mirrored_share, mirrored_tail_test, sampled_share_halfwidth, tail_quantiles
from ..stats.metric_intervals import jackknife_labels, result
from ..ties import close, lt
from .sampling import mark_sampled, synthetic_rows
from .search_error import widen_share_for_search

MIN_ROWS = 50
DEFAULT_TAILS = (0.005, 0.01, 0.02, 0.05, 1.0)
ALPHA = 0.05  # the interval is a simultaneous 95 % interval
MAX_LISTED_ROWS = 1000
# what the value and its interval estimate, in words (details["estimates"], shown in reports)
ESTIMATES = (
    "the share of the release detectably memorised — records much nearer (distance ratio < {ratio:g}) to "
    "a distinct training record than to any holdout record, beyond the mirrored chance count; a lower "
    "bound on the memorised share: memorised records changed enough to be no nearer to their source "
    "than to the holdout are not counted, and the 95 % interval covers the detectable share, not theirs"
)


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


def _parts(n_large: int, n_small: int, seed: int) -> list[np.ndarray]:
    """k = n_large // n_small disjoint random parts of n_small positions each (sorted)."""
    perm = seeds.rng(seed, "memorisation.parts").permutation(n_large)
    return [np.sort(perm[j * n_small : (j + 1) * n_small]) for j in range(n_large // n_small)]


def _within(ctx, role: str, rows: np.ndarray | None, n: int, at: np.ndarray | None = None) -> np.ndarray:
    """Per record of ``role`` (full length n): the distance to its nearest OTHER record of the same
    set — the whole set (rows None) or the part ``rows`` (NaN outside it). ``at``: only these
    records of the whole set are needed (a sampled release reads the local scales of its sampled
    records' nearest records only): they are searched alone, NaN elsewhere."""
    if rows is None:
        if at is not None:
            need = np.unique(at)
            out = np.full(n, np.nan)
            out[need] = ctx.neighbours("mixed", role, role, 1, rows=need).dist[:, 0]
            return out
        # the whole training set's real → real search is the one authenticity, identifiability,
        # median_dcr and nnaa read with the k their jackknife needs: ask for the same k, so it is
        # computed once (and described the same) whichever metric runs first
        k = search_k(jackknife_labels(ctx, "real", n)) if role == "real" else 1
        return ctx.neighbours("mixed", role, role, k).dist[:, 0]
    out = np.full(n, np.nan)
    out[rows] = ctx.neighbours("mixed", role, role, 1, target_rows=rows).dist[:, 0]
    return out


def _sets(
    ctx, sample: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str | None, float]:
    """(D, I, R, is_training, note, scale): per set g and synthetic record (the sampled ones when
    ``sample`` is given), the distance D[g] to and the position I[g] (in the training or holdout
    frame) of the nearest record of set g, and R[g] = that record's distance to its nearest other
    record of set g (the local scale); which sets are training parts; a note on how the sets
    were made; the share scale n_T/(k_T·n_H)."""
    n_t, n_h = ctx.n_real, ctx.n_holdout
    if n_t == n_h:
        groups = [("real", None, True), ("holdout", None, False)]
        note, scale = None, 1.0
    elif n_t > n_h:
        parts = _parts(n_t, n_h, ctx.seed)
        k = len(parts)
        groups = [("real", p, True) for p in parts] + [("holdout", None, False)]
        left = n_t - k * n_h
        note = f"training split at random into {k} parts of {n_h} records (the holdout's size)" + (
            f"; {left} training records left out, shares scaled by {n_t}/{k * n_h}" if left else ""
        )
        scale = n_t / (k * n_h)
    else:
        parts = _parts(n_h, n_t, ctx.seed)
        k = len(parts)
        groups = [("real", None, True)] + [("holdout", p, False) for p in parts]
        left = n_h - k * n_t
        note = f"holdout split at random into {k} parts of {n_t} records (the training set's size)" + (
            f"; {left} holdout records left out" if left else ""
        )
        scale = 1.0
    dist, idx, scl = [], [], []
    for role, rows, _ in groups:
        n = n_t if role == "real" else n_h
        nb = ctx.neighbours("mixed", "synthetic", role, 1, rows=sample, target_rows=rows)
        pos = nb.idx[:, 0] if rows is None else rows[nb.idx[:, 0]]
        dist.append(nb.dist[:, 0])
        idx.append(pos)
        scl.append(_within(ctx, role, rows, n, at=pos if sample is not None else None)[pos])
    return (np.array(dist), np.array(idx), np.array(scl), np.array([g[2] for g in groups]), note, scale)


def tail_contributions(w: np.ndarray, is_tr: np.ndarray, p0: float, sel: np.ndarray, m: int) -> np.ndarray:
    """Per record of the m (sampled) release records: its contribution d_i to a tail's share
    Σ_i d_i / m — (training-side − p0/(1 − p0)·holdout-side weight) when it is in the tail
    ``sel``, 0 otherwise. Counted per record, without the distinct-record rule (which only lowers
    the counts); :func:`privgate.stats.sampled_share_halfwidth` turns them into the
    record-sampling error of the share."""
    d = np.zeros(m)
    d[sel] = w[is_tr][:, sel].sum(axis=0) - p0 / (1.0 - p0) * w[~is_tr][:, sel].sum(axis=0)
    return d


def set_weights(dist: np.ndarray, ratio: float) -> np.ndarray:
    """Per set g (rows) and synthetic record (columns): 1 when the record's distance to set g is
    strictly below ``ratio`` × its distance to the nearest other set, 0.5 on that boundary (ties
    within tolerance), 0 otherwise. With two sets (training, holdout) this is the
    training-side / holdout-side weight of the module docstring."""
    dist = np.asarray(dist, dtype=np.float64)
    srt = np.sort(dist, axis=0)
    first = np.argmin(dist, axis=0)
    others = np.where(np.arange(dist.shape[0])[:, None] == first[None, :], srt[1][None, :], srt[0][None, :])
    return (lt(dist, ratio * others) + 0.5 * close(dist, ratio * others)).astype(np.float64)


def side_counts(d_t: np.ndarray, d_h: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Per synthetic record: (training-side, holdout-side) weight — 1 when strictly inside the
    ratio, 0.5 on the boundary (ties within tolerance), 0 otherwise."""
    w = set_weights(np.array([d_t, d_h], dtype=np.float64), ratio)
    return w[0], w[1]


def distance_ratio(dist: np.ndarray) -> np.ndarray:
    """Per synthetic record: smallest / second smallest of its distances to the sets — a
    symmetric function of the sets' distances (0 for an exact copy of a record of one set only,
    1 when the two smallest are both 0)."""
    srt = np.sort(np.asarray(dist, dtype=np.float64), axis=0)
    d1, d2 = srt[0], srt[1]
    pos = d2 > 0
    return np.where(pos, d1 / np.where(pos, d2, 1.0), 1.0)


def tail_key(dist: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per synthetic record: the tail order's key r·√u, smallest first. r = :func:`distance_ratio`;
    u = D_g / R_g for the nearest set g (the smallest such u among sets tied at the smallest
    distance), R_g the local scale of that set's nearest record (its distance to its nearest other
    record of the set); u = 0 when D_g = 0 and ∞ when D_g > 0 = R_g. Records whose two smallest
    distances are both 0 (a boundary tie, counted half to each side) get ∞: never a tail's first
    pick. The same rule for every set, so a symmetric function of the sets' (D_g, R_g) pairs."""
    dist = np.asarray(dist, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(dist == 0, 0.0, dist / scale)
    d_sorted = np.sort(dist, axis=0)
    u_near = np.where(dist == d_sorted[0][None, :], u, np.inf).min(axis=0)
    with np.errstate(invalid="ignore"):
        key = distance_ratio(dist) * np.sqrt(u_near)
    return np.where(d_sorted[1] == 0, np.inf, key)


def distinct_count(weight: np.ndarray, nearest: np.ndarray) -> float:
    """Σ over distinct nearest real records of the largest weight among the synthetic records
    that have it as their nearest record (records with weight 0 ignored)."""
    keep = weight > 0
    if not keep.any():
        return 0.0
    ids, inv = np.unique(nearest[keep], return_inverse=True)
    best = np.zeros(ids.size)
    np.maximum.at(best, inv, weight[keep])
    return float(best.sum())


@register_metric(
    family="tracing",
    attack="membership: synthetic records much nearer to a training record than to any holdout record",
    reference="Chen et al., GAN-Leaks (CCS 2020); Platzer & Reutterer, Front. Big Data 2021 (DCR vs holdout); "
    "mirrored tail test: privgate",
    orientation="value = estimated share of the release detectably memorised (much nearer to a training "
    "record than to any holdout record): a lower bound on the memorised share; its "
    "interval's lower bound decides",
    needs=("holdout",),
    self_controlled=True,
    spaces=("mixed",),
    memory_cost=7.0,
    sampled=("synthetic",),
)
def memorisation(ctx, *, ratio: float = 0.5, tails: tuple[float, ...] | list[float] = DEFAULT_TAILS) -> MetricResult:
    """Memorisation test: the share of the release much nearer (distance ratio < 0.5) to a
    distinct training record than to any holdout record, beyond the mirrored holdout-side count,
    scanned over the release's 0.5–100 % with the most extreme distance ratio (scaled by the
    local ratio: distance over the nearest record's own nearest-neighbour distance), with an exact
    binomial test per tail (Holm-corrected p-value) and a simultaneous 95 % interval whose lower
    bound decides.

    **What it estimates.** The share of the release that is *detectably* memorised: records much
    nearer to a training record than to any holdout record, beyond chance. That is a **lower
    bound on the memorised share**: a memorised record changed enough (a noisy copy no longer
    twice as near its source as the holdout's nearest record) cannot be told from an honest one
    and is not counted. The interval covers the detectable share; it covers the planted share of
    exact copies, but not that of noisy copies once some are no longer detectable (measured in
    docs/validity.md, "What the value estimates"). ``details["estimates"]`` says so in words.

    Orientation: risk; value = estimated detectably memorised share in [0, 1]; raw = whole-release
    (A − B)/m. See the module docstring for the method and references.
    """
    tails_t = _check_params(ratio, tails)
    _check_sizes(ctx)
    sample = synthetic_rows(ctx)
    dist, idx, local, is_tr, parts_note, scale = _sets(ctx, sample)
    w = set_weights(dist, float(ratio))
    m = dist.shape[1]  # the release's records, or the sampled ones
    scan = _Scan(
        w=w,
        idx=idx,
        is_tr=is_tr,
        order=np.lexsort((np.arange(m), tail_key(dist, local))),
        m=m,
        scale=scale,
        p0=int(is_tr.sum()) / is_tr.size,
        k_tails=len(tails_t),
        sampled=sample is not None,
    )
    per_tail = scan.tails(tails_t)
    chosen = per_tail[max(range(scan.k_tails), key=lambda i: (per_tail[i]["lower"], -i))]
    whole, whole_a, whole_b = scan.whole(per_tail, tails_t)
    res = _result(ctx, scan, float(ratio), tails_t, per_tail, chosen, whole, whole_a, whole_b, sample, parts_note)
    # an approximate search (large inputs) may give a record a wrong nearest record on one side:
    # its side then moves, changing A or B by at most 1 — the share by at most
    # scale·max(1, p0/(1 − p0))/m — so both ends move out by that times the rows possibly wrong
    return widen_share_for_search(res, influence=scale * max(1.0, scan.p0 / (1.0 - scan.p0)))


def _check_sizes(ctx) -> None:
    """A holdout, and at least ``MIN_ROWS`` training, holdout and release rows."""
    if ctx.holdout is None:
        raise NotApplicableError("memorisation needs holdout data (real records not used for training)")
    sizes = f"training {ctx.n_real}, holdout {ctx.n_holdout}, release {ctx.n_synthetic} rows"
    for role, n in (("holdout", ctx.n_holdout), ("training", ctx.n_real), ("release", ctx.n_synthetic)):
        if n < MIN_ROWS:
            raise TooFewRowsError(f"memorisation needs at least {MIN_ROWS} {role} rows for its test; got {sizes}")


@dataclass
class _Scan:
    """The sets' side weights ``w`` (set × record), each record's nearest record ``idx`` per set,
    which sets are training parts, the tail order, the release size m (or the sample's), the
    share scale, the null training share p0 and the number of tails."""

    w: np.ndarray
    idx: np.ndarray
    is_tr: np.ndarray
    order: np.ndarray
    m: int
    scale: float
    p0: float
    k_tails: int
    sampled: bool

    def counts(self, sel: np.ndarray) -> tuple[float, float]:
        """(A, B): distinct training-side and holdout-side counts of the records ``sel``."""
        sides = [distinct_count(self.w[g, sel], self.idx[g, sel]) for g in range(self.is_tr.size)]
        return (
            float(sum(s for s, t in zip(sides, self.is_tr) if t)),
            float(sum(s for s, t in zip(sides, self.is_tr) if not t)),
        )

    def test(self, a: float, b: float) -> dict[str, float]:
        return mirrored_tail_test(a, b, self.m, self.k_tails, ALPHA, scale=self.scale, p0=self.p0)

    def halfwidth(self, sel: np.ndarray, z: float) -> float:
        return sampled_share_halfwidth(tail_contributions(self.w, self.is_tr, self.p0, sel, self.m), z, self.scale)

    def tails(self, tails_t: tuple[float, ...]) -> list[dict]:
        """Per tail: its size, counts, ties and test, the lower bound moved down by the
        record-sampling half-width when sampled, and the Holm-adjusted p-value."""
        per_tail = []
        for q in tails_t:
            size = max(1, int(math.ceil(q * self.m - 1e-9)))
            sel = self.order[:size]
            ta, tb = self.counts(sel)
            per_tail.append(
                {
                    "fraction": q,
                    "size": size,
                    "training_side": ta,
                    "holdout_side": tb,
                    "ties": int(np.count_nonzero((self.w[:, sel] == 0.5).sum(axis=0) >= 2)),
                    **self.test(ta, tb),
                }
            )
        if self.sampled:  # the record-sampling error of each tail's share, outside its binomial bounds
            z_lo = tail_quantiles(ALPHA, self.k_tails)[0]
            for t in per_tail:
                t["sampling_halfwidth"] = self.halfwidth(self.order[: t["size"]], z_lo)
                t["lower"] -= t["sampling_halfwidth"]
        for t, p_adj in zip(per_tail, holm([t["p"] for t in per_tail])):
            t["p_holm"] = float(p_adj)
        return per_tail

    def whole(self, per_tail: list[dict], tails_t: tuple[float, ...]) -> tuple[dict, float, float]:
        """The whole release's test (its upper bound moved up by the sampling half-width when
        sampled) and its counts (A, B)."""
        if tails_t[-1] == 1.0:
            whole_a, whole_b = per_tail[-1]["training_side"], per_tail[-1]["holdout_side"]
            whole = dict(per_tail[-1])
        else:
            whole_a, whole_b = self.counts(np.arange(self.m))
            whole = self.test(whole_a, whole_b)
        if self.sampled:
            whole["upper"] += self.halfwidth(np.arange(self.m), tail_quantiles(ALPHA, self.k_tails)[1])
        return whole, whole_a, whole_b

    def flags(self, chosen: dict) -> tuple[np.ndarray, np.ndarray]:
        """Per record: its training-side flag (capped at 1; 0 unless training-side beats the
        chance share); and the positions of the flagged records in the chosen tail."""
        a_rec, b_rec = self.w[self.is_tr].sum(axis=0), self.w[~self.is_tr].sum(axis=0)
        flags = np.minimum(1.0, a_rec) * (a_rec * (1.0 - self.p0) > b_rec * self.p0)
        in_tail = np.zeros(self.m, dtype=bool)
        in_tail[self.order[: chosen["size"]]] = True
        return flags, np.flatnonzero((flags > 0) & in_tail)


def _result(
    ctx,
    scan: _Scan,
    ratio: float,
    tails_t: tuple[float, ...],
    per_tail: list[dict],
    chosen: dict,
    whole: dict,
    whole_a: float,
    whole_b: float,
    sample: np.ndarray | None,
    parts_note: str | None,
) -> MetricResult:
    """The metric result: value, raw, details, per-record flags and the simultaneous interval."""
    value = min(1.0, max(0.0, chosen["share"]))
    lower = min(1.0, max(0.0, chosen["lower"]))
    upper = min(1.0, max(lower, value, whole["upper"]))
    flags, flagged = scan.flags(chosen)
    raw = float(mirrored_share(whole_a, whole_b, scan.m, scale=scan.scale, p0=scan.p0))
    res = result(
        ctx,
        "memorisation",
        value,
        raw,
        f"whole-release (A − B)/m: distinct training records nearest to a training-side record minus the "
        f"holdout-side count (ratio {ratio:g}), over release size",
        params={"ratio": ratio, "tails": list(tails_t)},
        details=_details(ctx, scan, ratio, per_tail, chosen, lower, whole_a, whole_b, flagged, sample, parts_note),
        per_record=flags,
        per_record_description=(
            f"per synthetic record (by row position; the sampled ones when sampled): 1 if its nearest training record is "
            f"less than {ratio:g}× as far as its nearest holdout record, 0.5 on the boundary"
        ),
    )
    res.p_value = float(min(t["p_holm"] for t in per_tail))
    k_tails = scan.k_tails
    res.set_ci(
        (lower, upper),
        f"simultaneous 95 %: max over {k_tails} tails of one-sided Clopper–Pearson "
        f"lower bounds at 1 − 0.025/{k_tails} (Bonferroni); upper: whole release, "
        "one-sided 97.5 % Clopper–Pearson",
    )
    if sample is not None:
        res.details["n_flagged_in_sample"] = res.details.pop("n_flagged")
        mark_sampled(res, ctx, sample, "synthetic")
        res.details["ci_method"] += (
            "; sampled: each tail's lower bound moved down, and the upper bound up, by "
            "z × the record-sampling standard error of its share (details.tails[].sampling_halfwidth)"
        )
    return res


def _details(
    ctx,
    scan: _Scan,
    ratio: float,
    per_tail: list[dict],
    chosen: dict,
    lower: float,
    whole_a: float,
    whole_b: float,
    flagged: np.ndarray,
    sample: np.ndarray | None,
    parts_note: str | None,
) -> dict:
    return {
        "estimates": ESTIMATES.format(ratio=ratio),
        "p_value_correction": f"Holm over the {scan.k_tails} tails (family-wise error of the scan)",
        "tail_order": (
            "distance ratio min(d_T, d_H) / max(d_T, d_H) × √(local ratio u: distance to the "
            "nearest set's record over that record's distance to its nearest other record "
            "of its set), smallest first"
        ),
        "counting": "distinct nearest real records per side (largest weight each)",
        "selected_tail": chosen["fraction"],
        "lower_bound": lower,
        "tails": per_tail,
        "training_side": whole_a,
        "holdout_side": whole_b,
        "null_training_share": scan.p0,
        "n_flagged": int(flagged.size),
        "flagged_rows": [int(i) for i in (flagged if sample is None else sample[flagged])[:MAX_LISTED_ROWS]],
        "flagged_rows_truncated": bool(flagged.size > MAX_LISTED_ROWS),
        "parts": parts_note,
        "sizes": {"training": ctx.n_real, "holdout": ctx.n_holdout, "release": ctx.n_synthetic},
        "share_scale": scan.scale,
    }
