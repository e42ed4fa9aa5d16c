"""Soundness and power of the empirical ε lower bound (privgate.stats.dp_audit), by simulation.

An audit of a generator ends in error counts: fp false positives among the held-out runs
without the target, fn false negatives among those with it. Given the attack's true rates, the
counts are binomial, so the bound's behaviour can be simulated exactly without running any
generator.

**Soundness.** For attacks whose true (FPR, FNR) lie ON the (ε, δ)-DP trade-off curve — the
tightest any (ε, δ)-DP mechanism allows: FNR = 1 − δ − e^ε·FPR for several FPR up to the corner
FPR = FNR, and the Laplace mechanism's threshold curve (counts 0 vs 1, noise scale 1/ε, tight
for thresholds in [0, 1]) — the share of 10,000 simulated audits whose bound exceeds the true ε
must be ≤ alpha = 0.05. n is the number of held-out runs on EACH side. The same for the
Gaussian-DP μ bound on the μ-GDP curve FNR = Φ(Φ⁻¹(1 − FPR) − μ).

**Power.** A Laplace mechanism whose noise is 10× too small (true ε = 10 × the claim): the audit
has N generator runs in all, each including the target with probability 1/2; half the runs fit
the attack's threshold (grid of 21 thresholds on the noisy count, the one with the largest
Clopper–Pearson ε bound on the fit runs), the other half count the errors. Reported: the share
of audits whose bound exceeds the claim at alpha = 0.05 and at alpha = 0.05/10 (Bonferroni over
10 targets × attacks), the median bound, and the bound N runs give with no error at all when the
test runs split evenly (an uneven split can give slightly more).

**End to end.** The same game on an exact Laplace mechanism (true ε = claim), threshold chosen on
the fit runs: the share of audits whose bound exceeds the true ε (must be ≤ alpha).

Run: ``python3 benchmarks/audit_bounds.py`` (about a minute on an idle core, 100 s with the machine shared). Seeded.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from statistics import NormalDist

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from privgate.stats import epsilon_lower_bound, gdp_mu_lower_bound  # noqa: E402

ALPHA = 0.05
REPS = 10_000
PHI = NormalDist()


def exceedance(bound, fpr: float, fnr: float, n: int, truth: float, rng: np.random.Generator) -> float:
    fp = rng.binomial(n, fpr, REPS)
    fn = rng.binomial(n, fnr, REPS)
    pairs, inverse = np.unique(np.stack([fp, fn], 1), axis=0, return_inverse=True)
    values = np.array([bound(int(a), n, int(b), n) for a, b in pairs])
    return float(np.mean(values[inverse.ravel()] > truth + 1e-12))


def dp_boundary(eps: float, delta: float) -> list[tuple[str, float, float]]:
    corner = (1 - delta) / (1 + math.exp(eps))
    pts = [(f"line FPR={t:.3g}", t, 1 - delta - math.exp(eps) * t) for t in (0.001, 0.01, 0.3 * corner, corner)]
    if delta == 0.0:
        for c in (0.1, 0.5, 0.9):
            pts.append((f"Laplace thr={c}", 0.5 * math.exp(-eps * c), 0.5 * math.exp(eps * (c - 1))))
    return pts


def soundness() -> float:
    rng = np.random.default_rng(20240601)
    sizes = (50, 100, 200, 500, 1000)
    worst = 0.0
    print(
        f"SOUNDNESS of epsilon_lower_bound (alpha={ALPHA}, {REPS:,} audits per cell; "
        f"share of audits with bound > true ε, worst over the boundary points)"
    )
    print(f"{'ε':>5} {'δ':>7} " + " ".join(f"n={n:<6}" for n in sizes) + "  worst point")
    for eps in (0.5, 1.0, 4.0):
        for delta in (0.0, 1e-5):
            row, worst_pt = [], ("", 0.0)
            for n in sizes:
                cell = 0.0
                for name, fpr, fnr in dp_boundary(eps, delta):
                    f = exceedance(
                        lambda a, b, c, d: epsilon_lower_bound(a, b, c, d, delta=delta, alpha=ALPHA),
                        fpr,
                        fnr,
                        n,
                        eps,
                        rng,
                    )
                    cell = max(cell, f)
                    if f > worst_pt[1]:
                        worst_pt = (f"{name} n={n}", f)
                row.append(cell)
                worst = max(worst, cell)
            print(f"{eps:>5} {delta:>7g} " + " ".join(f"{v:<8.4f}" for v in row) + f"  {worst_pt[0]}")
    print("GDP: gdp_mu_lower_bound on the μ-GDP curve")
    for mu in (0.5, 1.0, 2.0):
        row = []
        for n in sizes:
            cell = 0.0
            for t in (0.001, 0.01, 0.1, 1 - PHI.cdf(mu / 2)):
                fnr = PHI.cdf(PHI.inv_cdf(1 - t) - mu)
                cell = max(
                    cell, exceedance(lambda a, b, c, d: gdp_mu_lower_bound(a, b, c, d, alpha=ALPHA), t, fnr, n, mu, rng)
                )
            row.append(cell)
            worst = max(worst, cell)
        print(f" μ={mu:<4}         " + " ".join(f"{v:<8.4f}" for v in row))
    # the same harness on the plug-in estimate (no confidence), to show what an unsound bound reads
    f = exceedance(lambda a, b, c, d: _plug_in(a, b, c, d), 1 / (1 + math.e), 1 / (1 + math.e), 200, 1.0, rng)
    print(f"(plug-in point estimate at the ε=1 corner, n=200: exceeds in {f:.3f} of audits — unsound)")
    return worst


def _plug_in(fp, neg, fn, pos):
    from privgate.stats import epsilon_estimate

    return epsilon_estimate(fp / neg, fn / pos)


def _bounds(fp: np.ndarray, neg: np.ndarray, fn: np.ndarray, pos: np.ndarray, alpha: float) -> np.ndarray:
    """privgate.stats.epsilon_lower_bound of every (fp, neg, fn, pos) row, computed once per
    distinct row."""
    rows = np.stack([np.ravel(fp), np.ravel(neg), np.ravel(fn), np.ravel(pos)], 1)
    keys, inverse = np.unique(rows, axis=0, return_inverse=True)
    values = np.array([_bound_memo(int(a), int(b), int(c), int(d), alpha) for a, b, c, d in keys])
    return values[inverse.ravel()].reshape(np.shape(fp))


@functools.lru_cache(maxsize=None)
def _bound_memo(fp: int, neg: int, fn: int, pos: int, alpha: float) -> float:
    return epsilon_lower_bound(fp, neg, fn, pos, alpha=alpha)


def power_once(
    claim: float, runs: int, alpha: float, rng: np.random.Generator, reps: int, factor: float = 10.0
) -> tuple[float, float]:
    """Share of `reps` audits with N=`runs` generator runs of a Laplace mechanism at true ε =
    factor·claim whose bound exceeds the claim, and the median bound."""
    scale = 1.0 / (factor * claim)
    grid = np.linspace(-0.5, 1.5, 21)
    fit_n, test_n = runs // 2, runs - runs // 2
    # fit runs: target in with probability 1/2; score = noisy count of the target's cell (0 or 1 + noise)
    inside = rng.random((reps, fit_n)) < 0.5
    score = inside + rng.laplace(0.0, scale, (reps, fit_n))
    pos = inside.sum(1)
    neg = fit_n - pos
    fp = np.empty((reps, grid.size), dtype=np.int64)
    fn = np.empty((reps, grid.size), dtype=np.int64)
    for lo in range(0, reps, 250):  # chunks keep the (reps, runs, thresholds) array small
        sl = slice(lo, lo + 250)
        guess_in = score[sl, :, None] > grid[None, None, :]
        fp[sl] = (guess_in & ~inside[sl, :, None]).sum(1)
        fn[sl] = (~guess_in & inside[sl, :, None]).sum(1)
    fit_bound = _bounds(fp, np.broadcast_to(neg[:, None], fp.shape), fn, np.broadcast_to(pos[:, None], fn.shape), alpha)
    chosen = grid[np.argmax(fit_bound, axis=1)]
    # test runs: counts are binomial at the chosen threshold's exact Laplace rates
    fpr = np.where(chosen >= 0, 0.5 * np.exp(-chosen / scale), 1 - 0.5 * np.exp(chosen / scale))
    d = chosen - 1.0
    fnr = np.where(d <= 0, 0.5 * np.exp(d / scale), 1 - 0.5 * np.exp(-d / scale))
    tpos = rng.binomial(test_n, 0.5, reps)
    tneg = test_n - tpos
    tfp = rng.binomial(tneg, fpr)
    tfn = rng.binomial(tpos, fnr)
    bounds = _bounds(tfp, tneg, tfn, tpos, alpha)
    return float(np.mean(bounds > claim)), float(np.median(bounds))


def power() -> None:
    rng = np.random.default_rng(7)
    print(
        "\nPOWER: Laplace noise 10× too small (true ε = 10 × claim); N runs in all, half fit the "
        "threshold, half count errors; target in each run with probability 1/2"
    )
    print(
        f"{'claim':>5} {'N':>5} {'caught α=.05':>13} {'caught α=.005':>14} {'median bound':>13} {'ceiling':>8}  (ceiling: no errors, test runs split evenly)"
    )
    for claim in (0.5, 1.0, 4.0):
        for runs in (50, 100, 200, 500, 1000, 2000):
            reps = REPS if runs <= 200 else 1_000  # the larger audits are near-certain; keep the runtime short
            p05, med = power_once(claim, runs, ALPHA, rng, reps)
            p005, _ = power_once(claim, runs, ALPHA / 10, rng, reps)
            half = (runs - runs // 2) // 2
            ceiling = epsilon_lower_bound(0, half, 0, (runs - runs // 2) - half, alpha=ALPHA)
            print(f"{claim:>5} {runs:>5} {p05:>13.3f} {p005:>14.3f} {med:>13.2f} {ceiling:>8.2f}")


def end_to_end_soundness() -> None:
    rng = np.random.default_rng(11)
    print(
        "\nEND-TO-END SOUNDNESS: the same game on an exact Laplace mechanism (true ε = claim), "
        "threshold chosen on the fit runs; share of 1,000 audits with bound > true ε"
    )
    for claim in (0.5, 1.0, 4.0):
        cells = [f"N={runs}: {power_once(claim, runs, ALPHA, rng, 1_000, factor=1.0)[0]:.4f}" for runs in (200, 1000)]
        print(f"  ε={claim:<4} " + "   ".join(cells))


def main() -> None:
    t0 = time.perf_counter()
    worst = soundness()
    print(f"({time.perf_counter() - t0:.0f} s)")
    print(
        f"worst exceedance over every cell: {worst:.4f} (must be ≤ {ALPHA}) -> "
        f"{'SOUND' if worst <= ALPHA else 'UNSOUND'}"
    )
    end_to_end_soundness()
    power()
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
