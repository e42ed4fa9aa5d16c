"""Very wide tables: the shipped default gate on R rows × C columns per width, each time also as a
RATIO to a reference measured in the same run right before it (one GEMM 1-NN of the release's
rows against the real rows over the same C columns as numbers, ``_reference.gemm_1nn_seconds``:
linear in the cells, so a gate whose cost is linear in the cells keeps a flat ratio). CPU seconds
of this process (one thread), which a busy shared machine stretches far less than wall time.

Columns are 5-level integer codes (``--kind int``, an exact copy as release) or mixed: every
other column numeric (Gaussian, 3 decimals), the others 5 string levels, with independent release
and holdout draws (``--kind mixed``). Time should grow about linearly with the number of cells
(docs/performance.md, "Wide tables and work bounds"; measurements: benchmarks/LOG.md, "Work bounds
and wide tables").

    PRIVGATE_THREADS=1 python3 benchmarks/bench_wide.py --rows 200 --columns 2000,5000,10000 [--holdout]
    PRIVGATE_THREADS=1 python3 benchmarks/bench_wide.py --kind mixed --rows 2000 --columns 1000,2000 --holdout
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from _reference import gemm_1nn_seconds  # noqa: E402

from privgate.gates import default_gate_config, run_gate  # noqa: E402


def table(kind: str, rows: int, width: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    if kind == "int":
        return pl.DataFrame({f"c{j}": rng.integers(0, 5, rows) for j in range(width)})
    levels = np.array(["a", "b", "c", "d", "e"])
    return pl.DataFrame(
        {
            (f"n{j}" if j % 2 else f"c{j}"): (
                np.round(rng.normal(size=rows), 3) if j % 2 else levels[rng.integers(0, 5, rows)]
            )
            for j in range(width)
        }
    )


def as_numbers(frame: pl.DataFrame) -> np.ndarray:
    """The table's cells as float64 (string levels by their code): the reference's input."""
    return np.column_stack(
        [
            (s.cast(pl.Categorical).to_physical() if s.dtype == pl.String else s).to_numpy().astype(np.float64)
            for s in frame.get_columns()
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--columns", default="1000,2000,5000")
    ap.add_argument("--kind", choices=("int", "mixed"), default="int")
    ap.add_argument("--holdout", action="store_true")
    args = ap.parse_args(argv)
    print("columns  exit  wall s   CPU s  reference CPU s  gate / reference  CPU s per 1,000 cells")
    for w in (int(c) for c in args.columns.split(",")):
        real = table(args.kind, args.rows, w, 1)
        release = real if args.kind == "int" else table(args.kind, args.rows, w, 3)
        holdout = table(args.kind, args.rows, w, 2) if args.holdout else None
        c0 = time.process_time()
        gemm_1nn_seconds(as_numbers(release), as_numbers(real), 1)
        ref = time.process_time() - c0
        start, c0 = time.perf_counter(), time.process_time()
        outcome = run_gate(default_gate_config("wide"), real, release, holdout=holdout, record=False, threads=1)
        took, cpu = time.perf_counter() - start, time.process_time() - c0
        print(
            f"{w:>7,d}  {outcome.exit_code:>4d}  {took:7.1f}  {cpu:7.1f}  {ref:15.3f}  {cpu / max(ref, 1e-9):16.0f}  "
            f"{1000 * cpu / (w * args.rows):.4f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
