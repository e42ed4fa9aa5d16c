"""A slow generator end to end: SDV's TVAE (torch, CPU) audited with the many-canary design on a
real Dask cluster of two workers, and the same audit on one local worker process.

The cheapest audit that still says something about a generator that takes seconds to minutes
per fit is the many-canary design (Steinke, Nasr, Jagielski, "Privacy Auditing with One (1)
Training Run", NeurIPS 2023): ``n_targets`` crafted canaries, each in each run independently
with probability 1/2, a handful of runs, every (test run, canary) one guess, the bound from the
guesses pooled. This script

1. times one TVAE fit on a training set of the audit's size in this process (the reference),
2. audits TVAE on a Dask cluster started here (tests/audit/local_dask.py: a scheduler and two
   one-thread worker processes over TCP on 127.0.0.1),
3. audits it again on one local worker process (``--local``), same seed: the result must be the
   same (a run depends on the plan and its number alone, and the adapter is deterministic by
   seed at a fixed thread count),

and prints for each: the fits (design runs + preflight runs), wall time, ε lower bound, the
largest bound these runs could have shown, the evidence, and the wall time in fits.

    python benchmarks/audit_torch.py                       # TVAE, 6 runs, cluster and local
    python benchmarks/audit_torch.py --model ctgan --epochs 300 --batch-size 100 --no-local
    python benchmarks/audit_torch.py --epochs 1000 --n-rows 4000 --no-local   # more records a fit
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PRIVGATE_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "audit"))

import polars as pl  # noqa: E402
from local_dask import local_dask  # noqa: E402

from privgate.audit import audit_generator  # noqa: E402
from privgate.audit.generators.sdv import CTGANGenerator, TVAEGenerator  # noqa: E402
from privgate.data import load_example  # noqa: E402

COLUMNS = ["age", "sex", "race", "education", "hours_per_week", "income"]
MODELS = {"tvae": TVAEGenerator, "ctgan": CTGANGenerator}


def one_fit_seconds(generate: TVAEGenerator | CTGANGenerator, pop: pl.DataFrame, rows: int, n_rows: int) -> float:
    """Seconds of one fit on ``rows`` records and a sample of ``n_rows`` in this process (the
    imports paid before)."""
    type(generate)(epochs=1, batch_size=generate.batch_size)(pop.head(50), 10, 0)  # import torch and SDV
    start = time.perf_counter()
    generate(pop.head(rows), n_rows, 1)
    return time.perf_counter() - start


def summary(name: str, r, wall: float, fit: float) -> dict:
    """The numbers one audit is reported by (no record values)."""
    c = r.cost
    best = r.best or {}
    pooled = [
        {k: p.get(k) for k in ("kind", "attack", "targets", "guesses", "correct", "epsilon_lower", "epsilon_provable")}
        for p in r.pooled
    ]
    return {
        "how": name,
        "fits": c["runs"] + c["preflight_runs"],
        "runs": c["runs"],
        "preflight_runs": c["preflight_runs"],
        "runs_failed": c["runs_failed"],
        "wall_seconds": round(wall, 1),
        "seconds_generate_mean": round(c["seconds_generate_mean"], 2),
        "seconds_generate_total": round(c["seconds_generate_total"], 1),
        "wall_in_fits": round(wall / fit, 2),
        "epsilon_lower": round(r.epsilon_lower, 4),
        "epsilon_provable": None if r.epsilon_provable is None else round(r.epsilon_provable, 3),
        "best": {k: best.get(k) for k in ("target", "kind", "attack", "guesses", "correct")},
        "pooled": pooled,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(MODELS), default="tvae")
    ap.add_argument("--epochs", type=int, default=600)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--n-targets", type=int, default=64)
    ap.add_argument("--training-rows", type=int, default=400)
    ap.add_argument("--n-rows", type=int, default=None, help="records asked of each fit (default: training rows)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deadline", type=float, default=900.0, help="seconds each audit may take")
    ap.add_argument("--no-local", dest="local", action="store_false", help="skip the one-process audit")
    ap.add_argument("--json", type=Path, help="write the summaries here")
    args = ap.parse_args()
    pop = load_example().select(COLUMNS)
    generate = MODELS[args.model](epochs=args.epochs, batch_size=args.batch_size, threads=1)
    # a run trains on the background plus the canaries drawn in (half of them on average)
    rows = args.training_rows + args.n_targets // 2
    fit = one_fit_seconds(generate, pop, rows, args.n_rows or args.training_rows)
    print(
        f"## {generate!r}: {len(COLUMNS)} columns, {args.training_rows} training rows + ~{args.n_targets // 2} "
        f"canaries a run, {args.n_rows or args.training_rows} records asked, design 'canaries' ({args.n_targets} "
        f"canaries), {args.runs} runs, seed {args.seed}; "
        f"one fit here: {fit:.1f} s (1 thread)",
        flush=True,
    )
    common = dict(
        design="canaries",
        runs=args.runs,
        n_targets=args.n_targets,
        training_rows=args.training_rows,
        n_rows=args.n_rows,
        seed=args.seed,
        deadline=args.deadline,
        generator_name=args.model,
    )
    out, results = [], {}
    with local_dask(n_workers=2, nthreads=1) as cluster:
        start = time.perf_counter()
        r = audit_generator(generate, pop, executor=cluster.address.replace("tcp://", "dask://"), threads=1, **common)
        wall = time.perf_counter() - start
    out.append(summary("Dask cluster, 2 workers", r, wall, fit))
    results["cluster"] = r
    print(json.dumps(out[-1]), flush=True)
    if args.local:
        start = time.perf_counter()
        r = audit_generator(generate, pop, workers=1, threads=1, **common)
        wall = time.perf_counter() - start
        out.append(summary("local, 1 worker process", r, wall, fit))
        results["local"] = r
        print(json.dumps(out[-1]), flush=True)

        def comparable(res) -> dict:
            d = res.to_dict()
            d.pop("cost")
            return d

        same = comparable(results["cluster"]) == comparable(results["local"])
        print(f"speed-up of the cluster: {out[1]['wall_seconds'] / out[0]['wall_seconds']:.2f}x; results equal: {same}")
    for s in out:
        print(
            f"{s['how']:26s} fits {s['fits']} ({s['runs']} runs + {s['preflight_runs']} preflight)  "
            f"wall {s['wall_seconds']:.1f} s = {s['wall_in_fits']:.2f} fits  ε lower {s['epsilon_lower']:.3f}  "
            f"provable {s['epsilon_provable']}  evidence {s['best']}"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "one_fit_seconds": fit, "audits": out},
                indent=2,
                default=str,
            )
        )


if __name__ == "__main__":
    main()
