"""Very wide tables: the shipped default gate on an exact copy of R rows × C integer columns
(5 levels each), with or without a holdout of R rows; wall seconds per width. Time should grow
about linearly with the number of cells (docs/performance.md, "Work bounds and wide tables").

    PRIVGATE_THREADS=1 python3 benchmarks/bench_wide.py --rows 200 --columns 2000,5000,10000 [--holdout]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from privgate.gates import default_gate_config, run_gate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--columns", default="1000,2000,5000")
    ap.add_argument("--holdout", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print("columns  exit  seconds  seconds per 1,000 cells")
    for w in (int(c) for c in args.columns.split(",")):
        real = pl.DataFrame({f"c{j}": rng.integers(0, 5, args.rows) for j in range(w)})
        holdout = pl.DataFrame({f"c{j}": rng.integers(0, 5, args.rows) for j in range(w)}) if args.holdout else None
        start = time.perf_counter()
        outcome = run_gate(default_gate_config("wide"), real, real, holdout=holdout, record=False)
        took = time.perf_counter() - start
        print(f"{w:>7,d}  {outcome.exit_code:>4d}  {took:7.1f}  {1000 * took / (w * args.rows):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
