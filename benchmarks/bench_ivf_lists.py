"""The IVF screen's cost for a fixed number of query rows as the target set grows, with the
lists sized by the targets (⌈2√m⌉, the default) and by the query rows
(``ivf_lists_per_query_root``): CPU seconds (one thread) per search, the growth exponent from m
to 2m, and the rows left uncertain / unresolved. A sampled metric's searches are this shape
(50,000 sampled records against every record).

    python benchmarks/bench_ivf_lists.py --queries 5000 --m 100000,200000
"""

from __future__ import annotations

import argparse
import math
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def data(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(40, d)) * 2
    return (centres[rng.integers(0, 40, n)] + rng.normal(size=(n, d))).astype(np.float32)


def main() -> None:
    from privgate.neighbours import knn
    from privgate.neighbours.settings import SearchSettings
    from privgate.threads import limited

    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--m", default="100000,200000")
    ap.add_argument("--d", type=int, default=95)
    args = ap.parse_args()
    q = data(args.queries, args.d, 1)
    for label, per_query in (("lists by targets", 0.0), ("lists by query rows", 2.0)):
        settings = SearchSettings(exact_below_pairs=1000, ivf_lists_per_query_root=per_query)
        prev = None
        for m in (int(x) for x in args.m.split(",")):
            t = data(m, args.d, 2)
            with limited(1):
                c0 = time.process_time()
                nb = knn(q, t, 1, approximate=True, settings=settings, grouped=False, dedupe=False)
                cpu = time.process_time() - c0
            s = nb.search
            growth = f"n^{math.log(cpu / prev[1], m / prev[0]):.2f}" if prev else ""
            print(
                f"{label:<20} m={m:>8}: {cpu:6.1f} CPU-s {growth:>7}  {s.get('method', s.get('screen'))}; "
                f"uncertain {s.get('n_uncertain')}, unresolved {s.get('n_unresolved')}",
                flush=True,
            )
            prev = (m, cpu)


if __name__ == "__main__":
    main()
