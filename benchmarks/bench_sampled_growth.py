"""How a sampled metric's cost grows with the data's size when its query sample is fixed.

A sampled metric searches a fixed number of query records against every record of the sets, so
its cost should grow about linearly with n (only the searched index grows): the exponent
log(CPU(2n)/CPU(n))/log 2 should stay ≤ 1.1. Prints, per metric, the CPU seconds at n and 2n (one
thread, a fresh context each, ``sample`` = the fixed query sample), the exponent, and the search
paths used (from ``details["neighbour_search"]``). Data: benchmarks/validity_scale.py's
latent-class model; release = its independent marginals.

    python benchmarks/bench_sampled_growth.py --n 200000 --sample 20000
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from validity_scale import latent_class, release  # noqa: E402


def cost(n: int, sample: int, metric: str) -> tuple[float, dict]:
    from privgate import evaluate

    real, hold = latent_class(n, 0), latent_class(n, 1)
    syn = release("honest", real, 2)
    c0 = time.process_time()
    rep = evaluate(real, syn, holdout=hold, metrics=[metric], threads=1, sample=sample)
    cpu = time.process_time() - c0
    res = rep.results[metric]
    searches = (res.details.get("neighbour_search") or {}).get("searches") or {}
    paths = {k: v.get("settled_by") or v.get("method") for k, v in searches.items()}
    return cpu, paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--sample", type=int, default=20_000)
    ap.add_argument("--metrics", default="nnaa,authenticity,memorisation,identifiability")
    args = ap.parse_args()
    from _reference import load_code

    load_code()  # one-off imports are not the first size's work
    for metric in args.metrics.split(","):
        a, pa = cost(args.n, args.sample, metric)
        b, pb = cost(2 * args.n, args.sample, metric)
        print(
            f"{metric:<16} {args.n:>9}: {a:7.1f} CPU-s  {2 * args.n:>9}: {b:7.1f} CPU-s  "
            f"growth n^{math.log(b / a, 2):.2f}",
            flush=True,
        )
        print(f"    paths at n: {pa}\n    paths at 2n: {pb}", flush=True)


if __name__ == "__main__":
    main()
