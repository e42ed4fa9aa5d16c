"""The neighbour engine's exact search against a plain NumPy GEMM 1-NN on the same data, in one run.

The reference (``_reference.gemm_1nn_seconds``) is the floor of any exact search: blocked float32
products through NumPy's BLAS and an argmin. The engine's exact search (``privgate.neighbours.knn``,
k = 1 and k = 2, random Gaussian points: no duplicates or groups, so every row goes through the
float32 screen and the float64 decision) should cost about the same: the ratio is printed per
repetition and as the median, in CPU seconds of this process (one thread), so a busy machine
stretches both alike. Also prints which kernels each OpenBLAS in the process chose
(threadpoolctl): faiss' bundled OpenBLAS and NumPy's can differ.

    PRIVGATE_THREADS=1 python3 benchmarks/bench_blas.py [--n 25000] [--dim 95] [--repeats 3]

To see what the engine would cost with faiss' generic kernels (as on AVX-512 Xeons faiss' OpenBLAS
0.3.15 does not know), ``--faiss-coretype Prescott`` sets OPENBLAS_CORETYPE after NumPy's BLAS has
loaded and before faiss' does, so only faiss' library reads it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402


def blas_kernels() -> list[str]:
    """'library version: kernel' for every BLAS threadpoolctl finds in this process."""
    from threadpoolctl import threadpool_info

    return [
        f"{Path(i['filepath']).name} {i.get('version')}: {i.get('architecture')}"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]


def cpu_seconds(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=25_000, help="query rows = target rows")
    ap.add_argument("--dim", type=int, default=95)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--faiss-coretype", default=None, help="OPENBLAS_CORETYPE for faiss' bundled OpenBLAS only (e.g. Prescott)"
    )
    args = ap.parse_args(argv)
    if args.faiss_coretype:
        os.environ["OPENBLAS_CORETYPE"] = args.faiss_coretype  # NumPy's BLAS has read it already
    import faiss  # noqa: F401,PLC0415  (loads faiss' OpenBLAS now)
    from _reference import gemm_1nn_seconds  # noqa: PLC0415

    from privgate.neighbours import knn  # noqa: PLC0415
    from privgate.threads import limited  # noqa: PLC0415

    rng = np.random.default_rng(0)
    q = rng.normal(size=(args.n, args.dim))
    t = rng.normal(size=(args.n, args.dim))
    print(f"{args.n:,} × {args.n:,} × {args.dim}, 1 thread, CPU seconds of this process")
    for line in blas_kernels():
        print(f"  BLAS {line}")
    ratios: dict[str, list[float]] = {"k=1": [], "k=2": []}
    with limited(1):
        for r in range(args.repeats):
            ref = cpu_seconds(lambda: gemm_1nn_seconds(q, t, 1))
            one = cpu_seconds(lambda: knn(q, t, 1))
            two = cpu_seconds(lambda: knn(q, t, 2))
            ratios["k=1"].append(one / ref)
            ratios["k=2"].append(two / ref)
            print(
                f"  repeat {r + 1}: GEMM 1-NN {ref:6.2f} s | engine k=1 {one:6.2f} s = {one / ref:4.2f}× | "
                f"engine k=2 {two:6.2f} s = {two / ref:4.2f}×",
                flush=True,
            )
    for name, values in ratios.items():
        print(f"engine exact search {name}: median {np.median(values):.2f}× NumPy GEMM 1-NN")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
