"""Benchmark of the twelve distance metrics (issue: privgate core).

real = ../shared/data/texas_25k.parquet (25,000 rows × 18 columns), synthetic = a 25,000-row
noisy_copy of it (row-aligned, so hidden_rate runs with paired=True). All twelve metrics share
one EvaluationContext, so each neighbour search runs once. Prints seconds and peak RSS per
metric and in total. Budget: ≤ 30 s and ≤ 4 GiB peak RSS on the 2-core machine.

    python benchmarks/bench_core.py [--real PATH] [--rows N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import peak_rss_mib, reset_peak  # noqa: E402

METRICS = [
    "common_rows",
    "close_values",
    "distant_values",
    "nsnd",
    "authenticity",
    "identifiability",
    "median_dcr",
    "nnaa",
    "nndr",
    "dcr",
    "hidden_rate",
    "hitting_rate",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", default=str(Path(__file__).resolve().parents[2] / "shared/data/texas_25k.parquet"))
    ap.add_argument("--rows", type=int, default=None)
    args = ap.parse_args()

    import polars as pl

    import privgate
    from privgate.catalogue import get_metric
    from privgate.context import EvaluationContext
    from privgate.registry import run_spec

    real = pl.read_parquet(args.real)
    if args.rows:
        real = real.head(args.rows)
    synthetic = privgate.baselines.noisy_copy(real, seed=0)
    print(f"real {real.shape}, synthetic {synthetic.shape} (noisy_copy, seed 0)")
    total_start = time.perf_counter()
    reset_peak()
    t = time.perf_counter()
    ctx = EvaluationContext(real, synthetic, seed=0, pairing=True)
    print(f"{'load + validate':<16} {time.perf_counter() - t:7.2f} s  peak {peak_rss_mib():7.0f} MiB")
    peaks = [peak_rss_mib()]
    for name in METRICS:
        reset_peak()
        t = time.perf_counter()
        res = run_spec(get_metric(name), ctx, {})
        peaks.append(peak_rss_mib())
        print(f"{name:<16} {time.perf_counter() - t:7.2f} s  peak {peaks[-1]:7.0f} MiB  value {res.value:.4f}")
    total = time.perf_counter() - total_start
    print(f"{'TOTAL':<16} {total:7.2f} s  peak RSS {max(peaks):7.0f} MiB (budget 30 s, 4096 MiB)")


if __name__ == "__main__":
    main()
