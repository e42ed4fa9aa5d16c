"""The generator audit on a Dask cluster of two workers against the same audit on this machine.

Starts a real cluster here (tests/audit/local_dask.py: a ``dask scheduler`` and two ``dask
worker`` processes of one thread each, joining over TCP on 127.0.0.1) and audits one generator
three ways with the same seed: in one local process (the reference), on two local worker
processes (``workers=2``) and on the cluster (``executor=dask://…``). Prints each wall time, the
ratio to the reference and whether the results are equal (they must be: a run depends on the
plan and its number alone).

Generators (each run of one is slow enough that the per-run overhead is small):
``cpu``: 0.5 s of CPU, then a resample of its training rows' marginals; ``sleep``: sleeps 0.5 s
and does the same (the speed-up a cluster of machines gives, free of this machine's two shared
cores).

    python benchmarks/audit_cluster.py                 # cpu, 40 runs (about 1.5 min)
    python benchmarks/audit_cluster.py --generator sleep --seconds 1 --training-rows 300
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PRIVGATE_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "audit"))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from local_dask import local_dask  # noqa: E402

from privgate.audit import audit_generator  # noqa: E402
from privgate.data import load_example  # noqa: E402

COLUMNS = ["age", "sex", "race", "income"]


class HalfSecond:
    """Spends 0.5 s (of CPU, or asleep), then draws n_rows records from independent marginals
    of its training rows."""

    def __init__(self, how: str, seconds: float = 0.5) -> None:
        self.how = how
        self.seconds = seconds

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        if self.how == "sleep":
            time.sleep(self.seconds)
        else:
            start, x = time.process_time(), 0
            while time.process_time() - start < self.seconds:
                x += sum(range(1000))
        rng = np.random.default_rng(seed)
        return pl.DataFrame(
            {c: training[c].to_numpy()[rng.integers(0, training.height, n_rows)] for c in training.columns}
        ).cast(dict(training.schema))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generator", choices=("cpu", "sleep"), default="cpu")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=0.5, help="a run's seconds in the generator")
    ap.add_argument("--training-rows", type=int, default=1000)
    args = ap.parse_args()
    pop = load_example().select(COLUMNS)
    gen = HalfSecond(args.generator, args.seconds)
    common = dict(runs=args.runs, n_targets=4, training_rows=args.training_rows, seed=0, claimed_epsilon=1.0)
    print(
        f"## a {args.seconds:g} s generator ({args.generator}), {args.runs} runs, {args.training_rows} training "
        "rows, 1 thread a run"
    )
    audit_generator(HalfSecond("sleep", 0.0), pop, **{**common, "runs": 8}, workers=1, threads=1)  # warm-up imports
    walls, runs_phase, results = {}, {}, {}
    with local_dask(n_workers=2, nthreads=1) as cluster:
        ways = {
            "local, 1 process": dict(workers=1, threads=1),
            "local, 2 worker processes": dict(workers=2, threads=2),
            "Dask cluster, 2 workers": dict(executor=cluster.address.replace("tcp://", "dask://"), threads=1),
        }
        for name, how in ways.items():
            start = time.perf_counter()
            r = audit_generator(gen, pop, **common, **how)
            walls[name] = time.perf_counter() - start
            d = r.to_dict()
            d.pop("cost")
            results[name] = d
            runs_phase[name] = walls[name] - r.cost["seconds_prepare"] - r.cost["seconds_analysis"]
            print(
                f"{name:28s} wall {walls[name]:6.1f} s (runs {runs_phase[name]:6.1f} s)  generator "
                f"{r.cost['seconds_generate_total']:6.1f} s  features {r.cost['seconds_features_total']:5.1f} s  "
                f"speed-up {walls['local, 1 process'] / walls[name]:.2f}x "
                f"(runs {runs_phase['local, 1 process'] / runs_phase[name]:.2f}x)",
                flush=True,
            )
    ref = results["local, 1 process"]
    print("results equal to the one-process audit:", all(v == ref for v in results.values()))


if __name__ == "__main__":
    main()
