"""Peak memory of the group-by metrics on a large Parquet release, eager vs lazy.

Data: N Texas-like real and release rows (a seeded bootstrap of texas_25k with noisy_copy; the
release = noisy_copy(real) with 10 % exact copies), written to Parquet. Each measurement runs in
a fresh process (peak RSS is per process):

* eager: the frames read with ``pl.read_parquet`` and handed over in memory (what every input was
  before: the whole file materialised, then normalised);
* lazy: the Parquet paths (EvaluationContext keeps them as scans; common_rows and zero_cap
  stream them with the group-by / semi-join queries; generalized_cap, hitting_rate and the
  disclosure metrics read only the columns they use, hitting_rate one column at a time);
* gate: ``run_gate`` with a configuration of those metrics, on frames vs on paths (the fingerprint
  is hashed in batches, so the files are never whole in memory).

Time is printed as a ratio to reading the two files eagerly in the same process.

    python benchmarks/bench_streaming.py --n 1000000
    python benchmarks/bench_streaming.py --n 1000000 --per-metric   # each metric in its own processes
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEXAS = HERE.parents[1] / "shared/data/texas_25k.parquet"
KEYS = ["DISCHARGE", "SEX_CODE", "PAT_AGE", "RACE", "TYPE_OF_ADMISSION"]
SENSITIVE = "ILLNESS_SEVERITY"
METRICS = ["common_rows", "zero_cap", "generalized_cap", "hitting_rate", "disclosure_identity", "disclosure_attribute"]
CALLS = {  # each metric's call on a context (the context's keys and sensitive column)
    "common_rows": lambda m, c: m.common_rows(c),
    "zero_cap": lambda m, c: m.zero_cap(c),
    "generalized_cap": lambda m, c: m.generalized_cap(c),
    "hitting_rate": lambda m, c: m.hitting_rate(c),
    "disclosure_identity": lambda m, c: m.disclosure_identity(c),
    "disclosure_attribute": lambda m, c: m.disclosure_attribute(c),
}


def gate_config(metrics: list[str]) -> dict:
    return {
        "dataset": "stream",
        "seed": 0,
        "keys": KEYS,
        "sensitive": [SENSITIVE],
        "metrics": {name: {"threshold": {"block": 0.999}} for name in metrics},
    }


def write_data(n: int, folder: Path) -> dict[str, str]:
    import polars as pl

    from privgate.baselines import noisy_copy

    base = pl.read_parquet(TEXAS)
    rng = np.random.default_rng(0)
    real = noisy_copy(base[rng.integers(0, base.height, n)], seed=1)
    release = noisy_copy(real, seed=2)
    copies = rng.random(n) < 0.1
    release = pl.concat([real.filter(pl.Series(copies)), release.filter(~pl.Series(copies))])
    paths = {"real": str(folder / "real.parquet"), "synthetic": str(folder / "release.parquet")}
    real.write_parquet(paths["real"])
    release.write_parquet(paths["synthetic"])
    return paths


def child(mode: str, paths: dict[str, str], metrics: list[str]) -> dict:
    """One measurement in this (fresh) process."""
    sys.path.insert(0, str(HERE))
    import polars as pl
    from _mem import peak_rss_mib, reset_peak

    import privgate.metrics as m
    from privgate.context import EvaluationContext
    from privgate.gates import run_gate

    reset_peak()
    base = peak_rss_mib()
    t0 = time.perf_counter()
    if mode.startswith("gate"):
        inputs = paths if mode == "gate-lazy" else {r: pl.read_parquet(p) for r, p in paths.items()}
        out = run_gate(gate_config(metrics), inputs["real"], inputs["synthetic"], release_id="x", threads=1)
        values = {n: [r.value, r.ci] for n, r in out.results.items()}
        values["exit_code"] = out.exit_code
    else:
        inputs = paths if mode == "lazy" else {r: pl.read_parquet(p) for r, p in paths.items()}
        ctx = EvaluationContext(inputs["real"], inputs["synthetic"], keys=KEYS, sensitive=SENSITIVE, threads=1)
        values = {}
        for name in metrics:
            r = CALLS[name](m, ctx)
            values[name] = [r.value, r.ci]
        values["release_loaded"] = ctx.is_loaded("synthetic")
    seconds, peak = time.perf_counter() - t0, peak_rss_mib()
    t0 = time.perf_counter()  # the reference, after the measurement (it would raise the RSS floor)
    pl.read_parquet(paths["real"]), pl.read_parquet(paths["synthetic"])
    ref = time.perf_counter() - t0
    return {"mode": mode, "seconds": seconds, "ref": ref, "peak_mib": peak, "before_mib": base, "values": values}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--modes", default="eager,lazy,gate-eager,gate-lazy")
    ap.add_argument("--metrics", default=",".join(METRICS), help="comma-separated metrics (default: all six)")
    ap.add_argument("--per-metric", action="store_true", help="also run each metric alone in each mode")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], json.loads(args.child[1]), args.child[2].split(","))))
        return
    metrics = args.metrics.split(",")
    unknown = sorted(set(metrics) - set(METRICS))
    if unknown:
        ap.error(f"unknown metric(s) {unknown}; choose from {METRICS}")
    with tempfile.TemporaryDirectory(prefix="privgate-stream-") as d:
        paths = write_data(args.n, Path(d))
        size = sum(Path(p).stat().st_size for p in paths.values()) / 2**20
        print(f"{args.n:,} real + {args.n:,} release rows, {size:.0f} MiB of Parquet", flush=True)
        groups = [("all", metrics)] + ([(name, [name]) for name in metrics] if args.per_metric else [])
        for label, names in groups:
            print(f"-- {label}: {', '.join(names)}", flush=True)
            runs = {}
            for mode in args.modes.split(","):
                out = subprocess.run(
                    [sys.executable, __file__, "--child", mode, json.dumps(paths), ",".join(names)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                r = json.loads(out.stdout.strip().splitlines()[-1])
                runs[mode] = r
                print(
                    f"{mode:<11} peak RSS {r['peak_mib']:7.0f} MiB (process before: {r['before_mib']:5.0f} MiB); "
                    f"{r['seconds']:6.1f} s = {r['seconds'] / r['ref']:5.2f}× reading both files; "
                    f"release loaded: {r['values'].get('release_loaded', '-')}",
                    flush=True,
                )
            for a, b in (("eager", "lazy"), ("gate-eager", "gate-lazy")):
                if a not in runs or b not in runs:
                    continue
                same = {k: v for k, v in runs[a]["values"].items() if k != "release_loaded"} == {
                    k: v for k, v in runs[b]["values"].items() if k != "release_loaded"
                }
                print(
                    f"{b} vs {a}: peak RSS {runs[b]['peak_mib'] / runs[a]['peak_mib']:.2f}×, "
                    f"values and intervals identical: {same}",
                    flush=True,
                )
            print(f"values {runs[next(iter(runs))]['values']}", flush=True)


if __name__ == "__main__":
    main()
