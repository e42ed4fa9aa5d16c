"""dpmm's MST/AIM audited from privgate's environment, dpmm running in an environment of its own.

dpmm 0.1.9 pins NumPy 1.26.4, pandas 2.1.0 and scikit-learn 1.5.0, which cannot live beside
privgate's pins, so it is no extra: this script creates its environment with the documented
command (docs/audit-generators.md; needs the package index, minutes the first time):

    python -m venv ENV
    ENV/bin/pip install 'dpmm==0.1.9' 'pyarrow<22' <privgate source folder or wheel>

then audits ``dpmm_aim`` through :class:`privgate.audit.generators.isolated.IsolatedGenerator`
(one subprocess a run, Arrow IPC both ways) with the public domain and with the domain read
from the data (the known fault), and prints the seconds a run takes, each audit's bound and
verdict, and the two environments' NumPy and pyarrow.

    python benchmarks/isolated_dpmm.py --env /tmp/privgate-dpmm --runs 40
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("PRIVGATE_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow  # noqa: E402

from privgate.audit import audit_generator  # noqa: E402
from privgate.audit.generators.isolated import IsolatedGenerator  # noqa: E402


def create(env: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    subprocess.run([str(env / "bin" / "pip"), "install", "--quiet", "dpmm==0.1.9", "pyarrow<22", str(REPO)], check=True)
    return time.perf_counter() - start


def data(n: int = 300, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b", "c"], n), "member": rng.choice(["no", "yes"], n)}
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", type=Path, default=Path("/tmp/privgate-dpmm"))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    python = args.env / "bin" / "python"
    if not python.exists():
        print(f"creating {args.env}: {create(args.env):.0f} s")
    other = subprocess.run(
        [str(python), "-c", "import numpy, pyarrow, dpmm; print(numpy.__version__, pyarrow.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    print(
        f"this environment: numpy {np.__version__}, pyarrow {pyarrow.__version__}; "
        f"dpmm's: numpy {other[0]}, pyarrow {other[1]}"
    )
    domain = {"age": (0, 120), "city": ["a", "b", "c"], "member": ["no", "yes"]}
    for label, dom in (("public domain", domain), ("domain read from the data", None)):
        gen = IsolatedGenerator(python, "dpmm_aim", epsilon=1.0, domain=dom, n_iters=20)
        start = time.perf_counter()
        r = audit_generator(
            gen,
            data(),
            runs=args.runs,
            n_targets=3,
            training_rows=150,
            claimed_epsilon=gen.claimed_epsilon,
            delta=gen.delta,
            seed=0,
            workers=args.workers,
            threads=args.workers,
        )
        wall = time.perf_counter() - start
        print(
            f"AIM ε=1, {label}: {args.runs} runs in {wall:.0f} s ({r.cost['seconds_generate_mean']:.1f} s a run); "
            f"ε lower bound {r.epsilon_lower:.2f}, AUC lower {r.auc_lower:.2f}, violation {r.violation}",
            flush=True,
        )


if __name__ == "__main__":
    main()
