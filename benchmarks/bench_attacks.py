"""Speed and memory of the three attacks at 25k × 25k, as ratios against anonymeter 1.1 and against
one exact GEMM 1-NN search of the same points, all measured in the same run.

Data (../shared/data/texas_25k.parquet, 25,000 rows × 18 columns, no nulls):
* training ("real") = all 25,000 rows;
* release = a seeded noisy bootstrap of the training rows (25,000 draws with replacement, then
  privgate.baselines.noisy_copy: numeric noise 0.1 sd, 10 % of categorical values redrawn), so the
  release-vs-training work is the full 25k × 25k;
* holdout = 25,000 rows drawn from the training columns' marginals (independent_marginals): the
  file holds no real non-members, so the holdout is a stand-in of the same size — it costs the
  same as a real control set (anonymeter skips its size correction for equal sizes), but the risk
  values printed here illustrate only; docs/attacks.md reports risks measured with a real holdout.

Attack definitions, identical for both tools, n_attacks = 500 (anonymeter's default):
singling_out multivariate over 3 columns with max_attempts = 10,000 candidate predicates for
both tools (the same work; on this release about 0.4 % of candidates isolate one record, so
anonymeter would otherwise try for minutes); linkability of the first 9 columns against the
other 9, k = 1; inference of RISK_MORTALITY from the 17 other columns. privgate is also timed with
its defaults (max_attempts = 100 × n_attacks) against the budget: ≤ 10 s per attack, peak RSS
≤ 2 GiB. Two threads everywhere (OMP, numba, faiss). The machine is shared: read the ratios.
``--rounds R`` repeats the comparison R times, alternating which tool runs first (privgate then
anonymeter in odd rounds, anonymeter then privgate in even ones), and prints each round's ratio,
so that a change of load during the run shows instead of biasing one tool.

    PYTHONPATH=$PWD python3 benchmarks/bench_attacks.py [--anonymeter-python /tmp/anonvenv/bin/python]
        [--rows N] [--rounds R] [--no-anonymeter]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import peak_rss_mib, reset_peak  # noqa: E402
from anonymeter_agreement import run_anonymeter  # noqa: E402

SECRET = "RISK_MORTALITY"
MAX_ATTEMPTS = 10_000


def gemm_1nn_seconds(query, target, block: int = 2048) -> float:
    """Seconds of one exact 1-NN search of every query row among the target rows by blocked
    float64 GEMM (‖q‖² − 2 q·t + ‖t‖², argmin per row): the reference cost of 'one search'."""
    import numpy as np

    start = time.perf_counter()
    tn = np.einsum("ij,ij->i", target, target)
    out = np.empty(query.shape[0], dtype=np.int64)
    for s in range(0, query.shape[0], block):
        q = query[s : s + block]
        d = tn[None, :] - 2.0 * (q @ target.T)
        out[s : s + block] = d.argmin(axis=1)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--real", default=str(Path(__file__).resolve().parents[2] / "shared/data/texas_25k.parquet"))
    ap.add_argument("--rows", type=int, default=None, help="use the first N rows (default: all 25,000)")
    ap.add_argument("--n-attacks", type=int, default=500)
    ap.add_argument("--anonymeter-python", default="/tmp/anonvenv/bin/python")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the comparison, alternating which tool runs first")
    ap.add_argument("--no-anonymeter", action="store_true")
    args = ap.parse_args()

    import numpy as np
    import polars as pl
    from _reference import load_code

    import privgate

    load_code()  # every metric module and native library: a process pays them once, not the work timed
    from privgate.catalogue import get_metric
    from privgate.context import EvaluationContext
    from privgate.registry import run_spec

    try:
        import faiss

        faiss.omp_set_num_threads(2)
    except ImportError:  # pragma: no cover
        pass

    real = pl.read_parquet(args.real)
    if args.rows:
        real = real.head(args.rows)
    n = real.height
    boot = real[np.random.default_rng(0).integers(0, n, n)]
    release = privgate.baselines.noisy_copy(boot, seed=1)
    holdout = privgate.baselines.independent_marginals(real, seed=2, n=n)
    cols = real.columns
    half = (len(cols) + 1) // 2
    specs = {
        "singling_out": {
            "mode": "multivariate",
            "n_cols": 3,
            "n_attacks": args.n_attacks,
            "max_attempts": MAX_ATTEMPTS,
        },
        "linkability": {"aux_cols": [cols[:half], cols[half:]], "n_neighbors": 1, "n_attacks": args.n_attacks},
        "inference": {"secret": SECRET, "aux_cols": [c for c in cols if c != SECRET], "n_attacks": args.n_attacks},
    }
    print(
        f"training {real.shape}, release {release.shape} (noisy bootstrap), holdout {holdout.shape} (stand-in); "
        f"n_attacks {args.n_attacks}; OMP threads {os.environ['OMP_NUM_THREADS']}"
    )

    ctx0 = EvaluationContext(real, release)
    space = ctx0.mixed()
    ref = gemm_1nn_seconds(space["real"], space["synthetic"])
    print(
        f"reference: exact GEMM 1-NN of the {n} training rows among the {n} release rows "
        f"({space.dim} mixed-space features): {ref:.2f} s"
    )

    def run_privgate(defaults: bool) -> dict[str, dict]:
        out = {}
        for name, params in specs.items():
            p = {k: v for k, v in params.items() if k != "max_attempts"} if defaults else dict(params)
            ctx = EvaluationContext(real, release, holdout=holdout, seed=0)  # fresh: no shared cache
            reset_peak()
            start = time.perf_counter()
            res = run_spec(get_metric(name), ctx, p)
            secs = time.perf_counter() - start
            out[name] = {
                "seconds": secs,
                "peak_mib": peak_rss_mib(),
                "risk": res.value,
                "ci": res.ci,
                "n_predicates": res.details.get("n_predicates"),
            }
        return out

    def run_anon() -> dict[str, dict]:
        if args.no_anonymeter:
            return {}
        return run_anonymeter(
            args.anonymeter_python, {"real": real, "synthetic": release, "holdout": holdout}, specs, seed=0
        )

    for rnd in range(1, args.rounds + 1):
        if rnd % 2:
            pg, an = run_privgate(False), run_anon()
            order = "privgate first"
        else:
            an = run_anon()
            pg = run_privgate(False)
            order = "anonymeter first"
        print(f"\nround {rnd} ({order})")
        print(
            f"{'attack':<13} {'privgate s':>10} {'peak MiB':>9} {'× GEMM':>7} {'anonymeter s':>13} {'speed-up':>9}  "
            f"privgate risk [CI] / anonymeter risk [CI]"
        )
        for name in specs:
            p = pg[name]
            a = an.get(name, {})
            a_s = a.get("seconds") if "risk" in a else None
            a_col = f"{a_s:13.2f}" if a_s else f"{'-':>13}"
            up_col = f"{a_s / p['seconds']:8.1f}x" if a_s else f"{'-':>9}"
            an_txt = (
                f"{a['risk']:.3f} [{a['ci'][0]:.3f}, {a['ci'][1]:.3f}]" if "risk" in a else a.get("error", "not run")
            )
            print(
                f"{name:<13} {p['seconds']:10.2f} {p['peak_mib']:9.0f} {p['seconds'] / ref:7.2f} "
                f"{a_col} {up_col}  "
                f"{p['risk']:.3f} [{p['ci'][0]:.3f}, {p['ci'][1]:.3f}] / {an_txt}"
            )
    print("\nprivgate with its defaults (singling_out max_attempts = 100 × n_attacks); budget ≤ 10 s, ≤ 2048 MiB:")
    for name, p in run_privgate(True).items():
        extra = f", {p['n_predicates']} predicates found" if p["n_predicates"] is not None else ""
        ok = "ok" if p["seconds"] <= 10 and p["peak_mib"] <= 2048 else "OVER BUDGET"
        print(
            f"  {name:<13} {p['seconds']:6.2f} s ({p['seconds'] / ref:5.2f} × GEMM 1-NN)  peak {p['peak_mib']:6.0f} MiB"
            f"{extra}  {ok}"
        )


if __name__ == "__main__":
    main()
