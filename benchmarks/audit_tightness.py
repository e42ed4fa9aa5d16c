"""How close the generator audit gets to the true ε, whether it stays sound, and how few generator
fits prove a real fault.

Tightness: the exact Laplace histogram of scale 1/ε over a public domain (exactly ε-DP under
add/remove; privgate.audit.mechanisms.LaplaceHistogram, release of the rounded noisy counts)
audited with the default targets and design at ε = 1, 2, 4: the median lower bound as a share of
ε (the goal: ≥ 0.5), the share of audits above ε (≤ 5 %), the largest bound the runs could show.

Soundness, hidden-mechanism style: exact mechanisms the audit knows nothing about — other ε,
other domains (coarser bins, fewer columns), the sampled release, the Gaussian mechanism
(μ-GDP, audited at δ = 10⁻⁵ against its exact ε(δ)) — and the many-canary design on exact
Laplace histograms; each row counts the audits whose bound exceeds the true ε.

Fits: the histogram whose domain is read from the private data (not DP), claim ε = 1: the
generator fits (runs + preflight) each design needs to prove the violation — today's shared
design, the same with sequential looks, the many-canary design, and the many-canary design with
looks — and the bound per fit.

Data: four columns of the bundled Adult sample (age on public edges, sex, race, income: 200
cells), 1,000 training rows per run. Seeded; one thread.

    python benchmarks/audit_tightness.py --quick          # a few minutes: 1 audit per row
    python benchmarks/audit_tightness.py --part tightness --audits 5 --runs 1000
    python benchmarks/audit_tightness.py --part soundness --audits 20
    python benchmarks/audit_tightness.py --part fits --audits 10
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PRIVGATE_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from audit import AGE_EDGES, population, public_domain  # noqa: E402

from privgate.audit import audit_generator  # noqa: E402
from privgate.audit.mechanisms import GaussianHistogram, LaplaceHistogram  # noqa: E402

DELTA = 1e-5


def one(gen, pop, *, seed: int, runs: int, claimed: float, **kw):
    start = time.perf_counter()
    r = audit_generator(
        gen, pop, runs=runs, training_rows=1000, claimed_epsilon=claimed, seed=seed, workers=1, threads=1, **kw
    )
    return r, time.perf_counter() - start


def fits_of(r) -> int:
    seq = r.design.get("sequential")
    made = seq["stopped_after_runs"] if seq else r.cost["runs"]
    return int(made + r.cost["preflight_runs"])


def tightness(audits: int, runs: int) -> None:
    pop = population()
    dom = public_domain(pop)
    print(
        f"## tightness: exact Laplace histogram (rounded counts), default targets and design, {runs} runs, "
        f"{audits} audits per ε"
    )
    print(
        f"{'ε':>4s} {'median bound':>13s} {'median/ε':>9s} {'min':>7s} {'max':>7s} {'> ε':>6s} "
        f"{'provable (median)':>18s} {'fits':>6s} {'s/audit':>8s}  strongest candidate (first audit)"
    )
    for eps in (1.0, 2.0, 4.0):
        bounds, provable, secs, best = [], [], [], None
        for i in range(audits):
            r, s = one(LaplaceHistogram(eps, dom, release="rounded"), pop, seed=3000 + i, runs=runs, claimed=eps)
            bounds.append(r.epsilon_lower)
            provable.append(r.epsilon_provable or 0.0)
            secs.append(s)
            best = best or f"{r.best['target']} / {r.best['attack']}"
            fits = fits_of(r)
        b = np.array(bounds)
        print(
            f"{eps:4.0f} {np.median(b):13.3f} {np.median(b) / eps:9.2f} {b.min():7.3f} {b.max():7.3f} "
            f"{int((b > eps).sum()):3d}/{audits:<2d} {np.median(provable):18.3f} {fits:6d} {np.mean(secs):8.1f}  {best}",
            flush=True,
        )


def soundness(audits: int, runs: int, canary_audits: int) -> None:
    pop = population()
    dom = public_domain(pop)
    coarse = {**dom, "age": AGE_EDGES[::2] + ([AGE_EDGES[-1]] if AGE_EDGES[::2][-1] != AGE_EDGES[-1] else [])}
    three = pop.select(["age", "sex", "income"])
    dom3 = {c: dom[c] for c in three.columns}
    gauss = GaussianHistogram(1.0, dom, release="rounded")
    rows = [
        ("Laplace ε=0.5, coarse age bins", LaplaceHistogram(0.5, coarse, release="rounded"), pop, 0.5, {}),
        ("Laplace ε=3, three columns", LaplaceHistogram(3.0, dom3, release="rounded"), three, 3.0, {}),
        ("Laplace ε=2, 1,000 sampled records", LaplaceHistogram(2.0, dom, release="sampled"), pop, 2.0, {}),
        (
            f"Gaussian σ=1 at δ=1e-5 (ε={gauss.epsilon_at(DELTA):.2f})",
            gauss,
            pop,
            gauss.epsilon_at(DELTA),
            {"delta": DELTA},
        ),
    ]
    print(
        f"\n## soundness, hidden mechanisms: {audits} audits per row, {runs} runs, default targets; "
        f"bound > true ε allowed in ≤ 5 %"
    )
    print(f"{'mechanism':44s} {'> ε':>7s} {'median bound':>13s} {'max bound':>10s} {'s/audit':>8s}")
    for name, gen, data, eps, kw in rows:
        b, secs = [], []
        for i in range(audits):
            r, s = one(gen, data, seed=4000 + i, runs=runs, claimed=eps, **kw)
            b.append(r.epsilon_lower)
            secs.append(s)
        b = np.array(b)
        print(
            f"{name:44s} {int((b > eps).sum()):4d}/{audits:<2d} {np.median(b):13.3f} {b.max():10.3f} "
            f"{np.mean(secs):8.1f}",
            flush=True,
        )
    print(f"\n## soundness of the many-canary design: {canary_audits} audits per ε, 5 runs, 64 canaries")
    print(f"{'mechanism':44s} {'> ε':>7s} {'median bound':>13s} {'max bound':>10s} {'s/audit':>8s}")
    for eps in (1.0, 2.0, 4.0):
        b, secs = [], []
        for i in range(canary_audits):
            r, s = one(
                LaplaceHistogram(eps, dom, release="rounded"),
                pop,
                seed=5000 + i,
                runs=5,
                claimed=eps,
                design="canaries",
            )
            b.append(r.epsilon_lower)
            secs.append(s)
        b = np.array(b)
        print(
            f"{'Laplace ε=%g, canaries design' % eps:44s} {int((b > eps).sum()):4d}/{canary_audits:<2d} "
            f"{np.median(b):13.3f} {b.max():10.3f} {np.mean(secs):8.1f}",
            flush=True,
        )


def fits(audits: int) -> None:
    pop = population()
    gen = LaplaceHistogram(1.0, None, release="rounded", domain_from_data=True)
    designs = [
        ("shared, 200 runs (the default design)", dict(runs=200)),
        ("shared, 200 runs, 10 sequential looks", dict(runs=200, looks=10)),
        ("canaries, 4 runs", dict(runs=4, design="canaries")),
        ("canaries, 8 runs, sequential looks", dict(runs=8, design="canaries", looks=7)),
    ]
    print(
        f"\n## fits to prove the domain-from-data fault at claim ε = 1: {audits} audits per design "
        f"(fits = generator runs made + preflight runs)"
    )
    print(
        f"{'design':40s} {'proven':>7s} {'median fits':>12s} {'max fits':>9s} {'median bound':>13s} "
        f"{'bound per fit':>14s} {'s/audit':>8s}"
    )
    for name, kw in designs:
        proven, nfits, bounds, secs = 0, [], [], []
        for i in range(audits):
            r, s = one(gen, pop, seed=6000 + i, claimed=1.0, **kw)
            proven += bool(r.violation)
            nfits.append(fits_of(r))
            bounds.append(r.epsilon_lower)
            secs.append(s)
        f, b = np.array(nfits), np.array(bounds)
        print(
            f"{name:40s} {proven:4d}/{audits:<2d} {np.median(f):12.0f} {f.max():9d} {np.median(b):13.3f} "
            f"{np.median(b / f):14.4f} {np.mean(secs):8.1f}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["tightness", "soundness", "fits", "all"], default="all")
    ap.add_argument("--audits", type=int, default=None, help="audits per row (tightness 5, soundness 20, fits 10)")
    ap.add_argument("--runs", type=int, default=1000, help="runs of a tightness audit")
    ap.add_argument("--soundness-runs", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="one audit per row (canary design: 10 per ε), 600 runs")
    a = ap.parse_args()
    if a.quick:
        a.audits = a.audits or 1
        a.runs = 600 if a.runs == 1000 else a.runs
    if a.part in ("tightness", "all"):
        tightness(a.audits or 5, a.runs)
    if a.part in ("soundness", "all"):
        soundness(a.audits or 20, a.soundness_runs, 10 if a.quick else max(a.audits or 40, 40))
    if a.part in ("fits", "all"):
        fits(a.audits or 10)


if __name__ == "__main__":
    main()
