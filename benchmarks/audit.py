"""The generator audit's soundness, power and cost, measured.

Soundness: audits of mechanisms of exactly known ε (privgate.audit.mechanisms.LaplaceHistogram
over a public domain, both releases) with the claim set to the true ε; the audit's lower bound
may exceed the claim in at most 5 % of audits (1 − confidence).
Power: a mechanism with noise 10× too small (claim 1, true ε 10), the same mechanism with its
domain taken from the private data (not DP), and generators that publish their training records
(exactly, or with small noise): how often the bound exceeds the claim, and the bound and AUC
they reach.
Cost: a generator that takes 0.5 s of CPU to fit and sample 1,000 rows, audited with 200 runs
in one process and on two worker processes; the audit's own seconds as a share of the
generator's, and the two-worker speed-up as a ratio measured in the same run.

Data: four columns of the bundled Adult sample (age binned on public edges, sex, race, income:
200 cells), the population the training sets are drawn from.

    python benchmarks/audit.py                     # everything (about 20 min on 2 quiet cores)
    python benchmarks/audit.py --part soundness --audits 100
    python benchmarks/audit.py --part power --audits 50
    python benchmarks/audit.py --part cost
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PRIVGATE_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from privgate.audit import audit_generator  # noqa: E402
from privgate.audit.mechanisms import LaplaceHistogram, TrainingCopy  # noqa: E402
from privgate.data import load_example  # noqa: E402

COLUMNS = ["age", "sex", "race", "income"]
AGE_EDGES = [17, 25, 30, 35, 40, 45, 50, 55, 60, 70, 91]


def population() -> pl.DataFrame:
    return load_example().select(COLUMNS)


def public_domain(pop: pl.DataFrame) -> dict:
    """The cells a data owner would publish without looking at the records: age on fixed edges,
    the categorical columns' documented levels (here: those of the whole sample)."""
    dom = {c: sorted(pop[c].unique().to_list()) for c in COLUMNS if c != "age"}
    dom["age"] = AGE_EDGES
    return dom


def run_audit(generate, pop, *, seed: int, runs: int, claimed: float, training_rows: int = 1000, **kw):
    return audit_generator(generate, pop, runs=runs, training_rows=training_rows, claimed_epsilon=claimed,
                           seed=seed, workers=1, threads=1, **kw)


def soundness(audits: int, runs: int) -> None:
    pop = population()
    dom = public_domain(pop)
    print(f"## soundness: {audits} audits per row, {runs} runs each, claim = true ε; bound > claim allowed in ≤ 5 %")
    print(f"{'mechanism':34s} {'ε':>5s} {'exceed':>8s} {'rate':>7s} {'mean bound':>11s} {'max bound':>10s} {'s/audit':>8s}")
    for release in ("rounded", "sampled"):
        for eps in (0.5, 1.0, 4.0):
            gen = LaplaceHistogram(eps, dom, release=release)
            bounds = []
            start = time.perf_counter()
            for i in range(audits):
                bounds.append(run_audit(gen, pop, seed=1000 + i, runs=runs, claimed=eps).epsilon_lower)
            b = np.array(bounds)
            k = int((b > eps).sum())
            print(f"{'LaplaceHistogram ' + release:34s} {eps:5.1f} {k:5d}/{audits:<3d} {k / audits:7.3f} "
                  f"{b.mean():11.3f} {b.max():10.3f} {(time.perf_counter() - start) / audits:8.2f}", flush=True)


def power(audits: int, runs: int) -> None:
    pop = population()
    dom = public_domain(pop)
    print(f"\n## power: {audits} audits per row, {runs} runs each (claim 1 unless stated)")
    print(f"{'generator':44s} {'caught':>8s} {'rate':>6s} {'mean bound':>11s} {'min bound':>10s} {'AUC best':>9s}")
    rows = [("noise 10x too small, rounded (true ε 10)", LaplaceHistogram(1.0, dom, release="rounded", noise_factor=0.1), runs),
            ("noise 10x too small, sampled (true ε 10)", LaplaceHistogram(1.0, dom, release="sampled", noise_factor=0.1), runs),
            ("domain from private data (not DP)", LaplaceHistogram(1.0, None, release="rounded", domain_from_data=True), runs),
            ("training copy (ε = ∞)", TrainingCopy(), 2 * runs),
            ("training copy + 5 % noise (ε = ∞)", TrainingCopy(noise=0.05), 2 * runs)]
    for name, gen, n_runs in rows:
        bounds, aucs = [], []
        for i in range(audits):
            r = run_audit(gen, pop, seed=2000 + i, runs=n_runs, claimed=1.0)
            bounds.append(r.epsilon_lower)
            best = r.best or {}
            t = next((t for t in r.targets if t["target"] == best.get("target")), None)
            aucs.append(t["attacks"][best["attack"]]["auc"] if t else float("nan"))
        b = np.array(bounds)
        k = int((b > 1.0).sum())
        print(f"{name + f' [{n_runs} runs]':44s} {k:5d}/{audits:<3d} {k / audits:6.2f} {b.mean():11.3f} {b.min():10.3f} "
              f"{np.nanmean(aucs):9.3f}", flush=True)


class HalfSecondGenerator:
    """Fits for 0.5 s of CPU, then samples n_rows records from independent marginals."""

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        start = time.process_time()
        x = 0.0
        while time.process_time() - start < 0.5:
            x += sum(range(1000))
        rng = np.random.default_rng(seed)
        return pl.DataFrame({c: training[c].to_numpy()[rng.integers(0, training.height, n_rows)]
                             for c in training.columns}).cast(dict(training.schema))


def cost(runs: int) -> None:
    pop = population()
    print(f"\n## cost: a 0.5 s generator, 1,000 training rows, {runs} runs")
    out = {}
    for workers in (1, 2):
        start = time.perf_counter()
        r = audit_generator(HalfSecondGenerator(), pop, runs=runs, training_rows=1000, seed=0, workers=workers,
                            threads=2)
        wall = time.perf_counter() - start
        c = r.cost
        own = c["seconds_features_total"] + c["seconds_analysis"] + c["seconds_prepare"]
        out[workers] = wall
        print(f"workers {workers}: wall {wall:7.1f} s; generator {c['seconds_generate_total']:7.1f} s "
              f"({c['seconds_generate_mean']:.3f} s/run); audit's own work {own:6.1f} s = "
              f"{own / c['seconds_generate_total']:.3f} of the generator's time", flush=True)
    print(f"two workers / one: {out[1] / out[2]:.2f}x faster (same run, same machine)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["soundness", "power", "cost", "all"], default="all")
    ap.add_argument("--audits", type=int, default=None, help="audits per row (soundness 100, power 50)")
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    if a.part in ("soundness", "all"):
        soundness(a.audits or 100, a.runs)
    if a.part in ("power", "all"):
        power(a.audits or 50, a.runs)
    if a.part in ("cost", "all"):
        cost(a.runs)


if __name__ == "__main__":
    main()
