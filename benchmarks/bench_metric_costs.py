"""Time and peak memory of every registered metric at one size (the per-metric cost table).

Runs ``evaluate`` with every registered metric these inputs feed (keys, sensitive columns,
pairing; with ``--holdout`` also n holdout rows, so memorisation, the attacks and every holdout
baseline run too — ``--no-baseline`` leaves the baselines out, as ``privgate evaluate --holdout``
does without ``--baseline``) on n Texas-like real and release rows (``bench_scale.texas_like``) and
prints, per metric in the order evaluate runs them, the wall and CPU seconds, the peak resident
memory reached during it (the counter is reset when the metric starts, so the peak includes what
earlier metrics left held: encoded spaces, cached searches) and that peak minus the base before
any metric, as a ratio to one frame's encoded mixed space (n × features × 8 bytes), the unit the
memory guard's coefficients are in (``privgate.memory_guard``). It also prints the guard's
estimate for the same run, to compare with the measured peak, whether each result has an interval
and the sampling it used (``details["sampled"]``), and with ``--ref25`` the run's seconds as a
ratio to one exact float32 GEMM 1-NN search of 25k × 25k Texas-like rows timed right before and
right after it (their geometric mean; wall and CPU).

Run each size in its own process under a memory cap, e.g.

    PRIVGATE_THREADS=1 prlimit --as=8000000000 python benchmarks/bench_metric_costs.py --n 50000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import current_rss_mib, peak_rss_mib, reset_peak  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=25_000, help="real = release rows")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--metrics", default=None, help="comma-separated metric names (default: all)")
    ap.add_argument("--json", default=None, help="write the table (and values) to this file")
    ap.add_argument("--holdout", action="store_true", help="also n holdout rows (real people not trained on)")
    ap.add_argument("--ref25", action="store_true", help="time the 25k GEMM 1-NN reference before and after")
    ap.add_argument("--sample", default="auto", help="the run's sample option (auto | off | N)")
    ap.add_argument(
        "--baseline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --holdout, also score every holdout baseline (default; --no-baseline: the "
        "suite as `privgate evaluate --holdout` runs it, without --baseline)",
    )
    args = ap.parse_args()

    from _reference import load_code

    load_code()  # every metric module and native library: a process pays them once, not the work timed
    from bench_scale import KEYS, SENSITIVE, texas_like

    from privgate import evaluate
    from privgate.context import EvaluationContext
    from privgate.memory_guard import estimate_run

    real, syn = texas_like(args.n)
    holdout = holdout_like(args.n) if args.holdout else None
    baseline = holdout is not None and args.baseline
    ref_before = reference_seconds(args.threads) if args.ref25 else None
    features = EvaluationContext(real.head(20_000), syn.head(20_000)).mixed().dim
    unit = args.n * features * 8 / 2**20
    rows: list[dict] = []
    state = {"name": None, "t": 0.0, "c": 0.0}

    def close() -> None:
        if state["name"] is not None:
            rows.append(
                {
                    "metric": state["name"],
                    "wall_s": time.perf_counter() - state["t"],
                    "cpu_s": time.process_time() - state["c"],
                    "peak_mib": peak_rss_mib(),
                    "rss_after_mib": current_rss_mib(),
                }
            )

    def progress(name: str, i: int, total: int) -> None:
        close()
        reset_peak()
        state.update(name=name, t=time.perf_counter(), c=time.process_time())

    base = current_rss_mib()
    metrics = args.metrics.split(",") if args.metrics else None
    t0 = time.perf_counter()
    c0 = time.process_time()
    sample = int(args.sample) if args.sample.isdigit() else args.sample
    rep = evaluate(
        real,
        syn,
        metrics,
        holdout=holdout,
        keys=KEYS,
        sensitive=SENSITIVE,
        pairing=True,
        seed=0,
        threads=args.threads,
        on_error="record",
        progress=progress,
        memory_limit=None,
        sample=sample,
        baseline=baseline,
    )
    close()
    total = time.perf_counter() - t0
    total_cpu = time.process_time() - c0
    guess = estimate_run(
        EvaluationContext(real, syn, holdout=holdout, keys=KEYS, sensitive=SENSITIVE, pairing=True, seed=0),
        [r["metric"] for r in rows],
        baseline=baseline,
    )  # the run scores the baselines: so does its estimate
    for r in rows:
        res = rep.results.get(r["metric"])
        r["interval"] = bool(res is not None and res.ci is not None)
        sampled = (res.details or {}).get("sampled") if res is not None else None
        r["sampled"] = _sampled_text(sampled)
    print(
        f"n = {args.n:,}; mixed space {features} features, one frame = {unit:.0f} MiB; base RSS {base:.0f} MiB; "
        f"total {total:.1f} s; errors: {sorted(rep.errors) or 'none'}"
    )
    print(
        f"{'metric':<26} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9} {'(peak-base)/unit':>17} {'guard est MiB':>14}"
        f"  ci   sampled"
    )
    for r in rows:
        r["ratio"] = (r["peak_mib"] - base) / unit
        r["estimate_mib"] = guess.per_metric.get(r["metric"], float("nan")) / 2**20
        print(
            f"{r['metric']:<26} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['peak_mib']:9.0f} {r['ratio']:17.2f} "
            f"{r['estimate_mib']:14.0f}  {'yes' if r['interval'] else 'no ':<4} {r['sampled']}"
        )
    top = max(r["peak_mib"] for r in rows)
    print(
        f"peak {top:.0f} MiB; guard estimate {guess.peak / 2**20:.0f} MiB; total {total:.1f} s wall, "
        f"{total_cpu:.1f} s CPU"
    )
    ref = None
    if ref_before is not None:
        after = reference_seconds(args.threads)
        ref = {"wall": (ref_before[0] * after[0]) ** 0.5, "cpu": (ref_before[1] * after[1]) ** 0.5}
        print(
            f"ref25 (GEMM 1-NN 25k x 25k) {ref['wall']:.2f} s wall, {ref['cpu']:.2f} s CPU: the run is "
            f"{total / ref['wall']:.1f}x ref25 wall, {total_cpu / ref['cpu']:.1f}x ref25 CPU"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "n": args.n,
                    "features": features,
                    "base_mib": base,
                    "total_s": total,
                    "total_cpu_s": total_cpu,
                    "holdout": args.holdout,
                    "baseline": baseline,
                    "ref25": ref,
                    "peak_mib": top,
                    "rows": rows,
                    "values": {k: v.value for k, v in rep.results.items()},
                },
                indent=1,
                default=float,
            )
        )


def holdout_like(n: int):
    """n Texas-like holdout rows: a bootstrap of Texas independent of the real rows' draw."""
    import numpy as np
    import polars as pl
    from bench_scale import TEXAS

    from privgate.baselines import noisy_copy

    texas = pl.read_parquet(TEXAS)
    rows = np.random.default_rng(7).integers(0, texas.height, n)
    return noisy_copy(texas[rows], seed=3)


def reference_seconds(threads: int) -> tuple[float, float]:
    """Wall and CPU seconds of one exact float32 GEMM 1-NN search, 25k x 25k Texas-like rows."""
    from bench_scale import gemm_reference, texas_like

    from privgate.context import EvaluationContext

    real, syn = texas_like(25_000)
    ctx = EvaluationContext(real, syn, threads=threads)
    ctx.mixed()
    c0 = time.process_time()
    wall = gemm_reference(ctx)
    return wall, time.process_time() - c0


def _sampled_text(sampled) -> str:
    """'n of N' per sampled side, or '-'."""
    if not isinstance(sampled, dict):
        return "-"
    if "n" in sampled:
        return f"{sampled.get('n'):,} of {sampled.get('of'):,}" + (f" ({sampled['side']})" if "side" in sampled else "")
    return "; ".join(f"{k}: {_sampled_text(v)}" for k, v in sampled.items() if isinstance(v, dict)) or "-"


if __name__ == "__main__":
    main()
