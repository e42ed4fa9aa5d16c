"""Where the default gate's memory goes, metric by metric (target: ≤ 8 GiB at 1M × 1M).

Runs the shipped default gate with a holdout on N Texas-like real, holdout and release rows
(``bench_million.texas_like``, Parquet paths) and prints, per metric (its release run and its
holdout baseline, in the order the gate computes them), the wall time, the resident memory after
it and the peak reached during it — and every peak as a RATIO to one frame's encoded mixed
space (N × features × 8 bytes), the unit the gate's memory scales with, so runs of different N
and on different machines compare. Values and intervals are printed for equality checks between
code versions (same data and seed → the same lines).

    python benchmarks/bench_gate_memory.py --n 300000 --threads 2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import current_rss_mib, peak_rss_mib, reset_peak  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300_000, help="rows of real, holdout and release each")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default=None, help="where the Parquet files go (reused when present)")
    args = ap.parse_args()

    import polars as pl
    from _reference import load_code

    load_code()  # every metric module and native library: a process pays them once, not the work timed
    from bench_million import texas_like

    from privgate.context import EvaluationContext
    from privgate.gates import DEFAULT_CONFIG_PATH, run_gate

    folder = Path(args.workdir or tempfile.mkdtemp(prefix="privgate-mem-"))
    folder.mkdir(parents=True, exist_ok=True)
    paths = {r: folder / f"{r}_{args.n}.parquet" for r in ("real", "holdout", "release")}
    if not all(p.exists() for p in paths.values()):
        paths = texas_like(args.n, folder)
    # the unit: one frame's mixed space (features counted on a small sample of the same data)
    features = (
        EvaluationContext(
            pl.read_parquet(paths["real"], n_rows=20_000), pl.read_parquet(paths["release"], n_rows=20_000)
        )
        .mixed()
        .dim
    )
    unit = args.n * features * 8 / 2**20
    print(
        f"n = {args.n:,}; one frame's mixed space = {args.n:,} × {features} float64 = {unit:.0f} MiB "
        f"(the ratios below are peak / that)"
    )
    print(f"imports done: RSS {current_rss_mib():.0f} MiB")
    rows = []
    state = {"name": None, "t": time.perf_counter()}

    def close_previous() -> None:
        if state["name"] is not None:
            rows.append((state["name"], time.perf_counter() - state["t"], current_rss_mib(), peak_rss_mib()))

    def progress(name: str, i: int, total: int) -> None:
        close_previous()
        reset_peak()
        state.update(name=name, t=time.perf_counter())

    reset_peak()
    t0 = time.perf_counter()
    outcome = run_gate(
        DEFAULT_CONFIG_PATH,
        paths["real"],
        paths["release"],
        holdout=paths["holdout"],
        release_id="bench-memory",
        record=False,
        threads=args.threads,
        progress=progress,
    )
    close_previous()
    total = time.perf_counter() - t0
    print(f"{'metric (+ baseline)':<22} {'seconds':>8} {'RSS after':>10} {'peak':>8} {'peak/space':>10}")
    for name, sec, cur, peak in rows:
        print(f"{name:<22} {sec:8.1f} {cur:8.0f} M {peak:6.0f} M {peak / unit:9.2f}×")
    top = max(r[3] for r in rows)
    print(
        f"gate: {total:.0f} s; peak RSS {top / 1024:.2f} GiB = {top / unit:.2f}× one frame's mixed space; "
        f"decision {outcome.decision}"
    )
    for name, r in outcome.results.items():
        print(f"  {name:<18} value {r.value!r} ci {r.ci} excess {r.excess!r}")


if __name__ == "__main__":
    main()
