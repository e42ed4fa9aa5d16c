"""Benchmark of the reconstruction, statistical, classifier and proximity metrics.

Texas hospital discharges, 25,000 real records vs a 25,000-record ``noisy_copy`` (seed 0);
keys DISCHARGE, SEX_CODE, PAT_AGE, RACE, TYPE_OF_ADMISSION; sensitive ILLNESS_SEVERITY and
TOTAL_CHARGES. Prints the seconds of each metric, of each group against its budget, and the
peak resident memory of the process.

Budgets: reconstruction (3 metrics) ≤ 10 s, statistical (4) ≤ 2 s, detection_mlp +
membership_inference ≤ 60 s, proximity_score ≤ 15 s, peak RSS ≤ 4 GiB.

Run from the repository root: ``python benchmarks/bench_metric_families.py [path/to/texas_25k.parquet]``.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import polars as pl

from privgate.baselines import noisy_copy
from privgate.context import EvaluationContext
from privgate.metrics import (
    attribute_inference,
    chi_squared,
    detection_mlp,
    generalized_cap,
    inverse_kl,
    jensen_shannon,
    kolmogorov_smirnov,
    membership_inference,
    proximity_score,
    zero_cap,
)

KEYS = ["DISCHARGE", "SEX_CODE", "PAT_AGE", "RACE", "TYPE_OF_ADMISSION"]
SENSITIVE = ["ILLNESS_SEVERITY", "TOTAL_CHARGES"]
GROUPS = {
    "reconstruction": ([zero_cap, generalized_cap, attribute_inference], 10.0),
    "statistical": ([chi_squared, inverse_kl, jensen_shannon, kolmogorov_smirnov], 2.0),
    "classifiers": ([detection_mlp, membership_inference], 60.0),
    "proximity": ([proximity_score], 15.0),
}
RSS_BUDGET_GIB = 4.0


def _children_peak_gib() -> float:
    """Sum of the peak RSS (VmHWM) of this process's live descendants (the MLP fold workers stay
    alive for reuse, so RUSAGE_CHILDREN would not see them). Linux only; 0 elsewhere."""
    total_kib = 0
    todo = [os.getpid()]
    seen = set()
    while todo:
        pid = todo.pop()
        try:
            kids = []
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    kids += [int(k) for k in fh.read().split()]
        except OSError:
            continue
        for kid in kids:
            if kid in seen:
                continue
            seen.add(kid)
            todo.append(kid)
            try:
                with open(f"/proc/{kid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmHWM:"):
                            total_kib += int(line.split()[1])
            except OSError:
                pass
    return total_kib / 2**20


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "texas_25k.parquet"
    path = Path(argv[1]) if len(argv) > 1 else default
    if not path.exists():
        print(f"Texas data not found at {path}; pass its path as the first argument")
        return 2
    real = pl.read_parquet(path)
    synthetic = noisy_copy(real, seed=0)
    print(f"real {real.shape}, synthetic noisy_copy {synthetic.shape}")
    ok = True
    for group, (metrics, budget) in GROUPS.items():
        # a fresh context per group: each group pays for the spaces and searches it needs
        ctx = EvaluationContext(real, synthetic, keys=KEYS, sensitive=SENSITIVE, seed=0)
        start = time.perf_counter()
        for metric in metrics:
            t0 = time.perf_counter()
            res = metric(ctx)
            print(
                f"  {res.name:22s} {time.perf_counter() - t0:7.2f} s  value={res.value:.4f} raw={res.raw:.4f}"
                + (
                    f"  per_attribute={ {k: round(v, 4) for k, v in res.per_attribute.items()} }"
                    if res.per_attribute and group == "reconstruction"
                    else ""
                )
            )
        took = time.perf_counter() - start
        within = took <= budget
        ok &= within
        print(f"{group:15s} {took:7.2f} s (budget {budget:.0f} s) {'OK' if within else 'OVER BUDGET'}")
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    workers_gib = _children_peak_gib()
    ok &= peak_gib + workers_gib <= RSS_BUDGET_GIB
    print(
        f"peak RSS {peak_gib:.2f} GiB main process + {workers_gib:.2f} GiB worker processes (sum of their "
        f"peaks) (budget {RSS_BUDGET_GIB:.0f} GiB) {'OK' if peak_gib + workers_gib <= RSS_BUDGET_GIB else 'OVER BUDGET'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
