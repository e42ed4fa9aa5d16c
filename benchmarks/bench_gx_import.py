"""What ``import privgate.gx`` costs beyond Great Expectations' own import (target: ≤ 2 s).

Each repetition is a fresh interpreter that first imports GX (the reference), then privgate.gx
(GX already loaded: what remains is privgate's own cost). Prints wall and CPU seconds of both,
the difference and the ratio per repetition, and the medians.

    python benchmarks/bench_gx_import.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, time
w, c = time.perf_counter(), time.process_time()
import great_expectations
gx_w, gx_c = time.perf_counter() - w, time.process_time() - c
w, c = time.perf_counter(), time.process_time()
import privgate.gx
print(json.dumps({"gx_wall": gx_w, "gx_cpu": gx_c,
                  "ours_wall": time.perf_counter() - w, "ours_cpu": time.process_time() - c}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, cwd=REPO).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"{'':6s} {'GX wall':>8s} {'GX cpu':>7s} {'+privgate.gx wall':>18s} {'cpu':>6s} {'ratio':>6s}")
    for i, r in enumerate(rows, 1):
        print(
            f"run {i:<2d} {r['gx_wall']:8.2f} {r['gx_cpu']:7.2f} {r['ours_wall']:18.2f} "
            f"{r['ours_cpu']:6.2f} {r['ours_wall'] / r['gx_wall']:6.2f}"
        )
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(
        f"median {med['gx_wall']:8.2f} {med['gx_cpu']:7.2f} {med['ours_wall']:18.2f} "
        f"{med['ours_cpu']:6.2f} {med['ours_wall'] / med['gx_wall']:6.2f}"
    )
    print(
        f"privgate.gx adds {med['ours_wall']:.2f} s wall ({med['ours_cpu']:.2f} s CPU) to GX's "
        f"{med['gx_wall']:.2f} s (target: at most 2 s beyond GX's own import)"
    )


if __name__ == "__main__":
    main()
