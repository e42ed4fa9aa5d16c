"""What ``import privgate`` and ``import privgate.dagster`` cost (targets: ≤ 0.5 s and ≤ 1.5 s
beyond Dagster's own import).

Each measurement is a fresh interpreter (``python -c``), so nothing is cached in the process;
the file-system cache is warmed by one untimed run of each command first. Per repetition it
times, in this order: ``pass`` (the interpreter's start-up), ``import numpy``, ``import privgate``,
``import dagster``, ``import privgate.dagster``, and for the two imports also the time measured
inside the child (``time.perf_counter`` around the import statement, start-up excluded). It
prints the medians in seconds and as ratios: privgate against numpy's import, and
privgate.dagster's cost beyond Dagster's. Heavy modules (SciPy's stats/special/sparse,
scikit-learn, LightGBM, faiss, matplotlib, SQLAlchemy, Jinja2, pandas) are loaded on first use;
the last line lists any of them that ``import privgate`` loaded.

    python benchmarks/bench_import.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = (
    "scipy.stats",
    "scipy.special",
    "scipy.sparse",
    "scipy.spatial",
    "sklearn",
    "lightgbm",
    "faiss",
    "matplotlib",
    "sqlalchemy",
    "jinja2",
    "pandas",
)
INSIDE = """
import json, sys, time
t = time.perf_counter()
import {module}
print(json.dumps({{"inside": time.perf_counter() - t,
                  "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""
COMMANDS = {
    "python -c pass": "pass",
    "import numpy": "import numpy",
    "import privgate": INSIDE.format(module="privgate", heavy=HEAVY),
    "import dagster": INSIDE.format(module="dagster", heavy=()),
    "import privgate.dagster": INSIDE.format(module="privgate.dagster", heavy=()),
}


def _run(code: str) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    wall = time.perf_counter() - t
    lines = out.strip().splitlines()
    return wall, (json.loads(lines[-1]) if lines else {})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for code in COMMANDS.values():  # warm the file-system cache
        _run(code)
    walls: dict[str, list[float]] = {k: [] for k in COMMANDS}
    inside: dict[str, list[float]] = {k: [] for k in COMMANDS}
    heavy: list[str] = []
    for _ in range(args.repeat):
        for name, code in COMMANDS.items():
            wall, info = _run(code)
            walls[name].append(wall)
            if "inside" in info:
                inside[name].append(info["inside"])
            if name == "import privgate":
                heavy = info["heavy"]
    med = {k: statistics.median(v) for k, v in walls.items()}
    med_in = {k: statistics.median(v) for k, v in inside.items() if v}
    print(f"{'command':26s} {'wall (process)':>15s} {'import statement':>17s}")
    for name in COMMANDS:
        inner = f"{med_in[name]:17.3f}" if name in med_in else f"{'':17s}"
        print(f"{name:26s} {med[name]:15.3f} {inner}")
    own = med_in["import privgate"]
    print(
        f"import privgate: {own:.3f} s (target ≤ 0.5 s); "
        f"{own / (med['import numpy'] - med['python -c pass']):.2f}× numpy's import; "
        f"process {med['import privgate'] / med['python -c pass']:.2f}× `python -c pass`"
    )
    extra = med_in["import privgate.dagster"] - med_in["import dagster"]
    print(
        f"import privgate.dagster: {extra:.3f} s beyond Dagster's own {med_in['import dagster']:.3f} s (target ≤ 1.5 s)"
    )
    print("heavy modules loaded by import privgate:", ", ".join(heavy) or "none")


if __name__ == "__main__":
    main()
