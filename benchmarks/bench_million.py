"""Gate-level scale benchmark: the shipped default gate, with a holdout, end to end on
Texas-like data of N real, N holdout and N release rows — time as a RATIO to a GEMM 1-NN
reference measured in the same run, peak RSS, and every metric's value checked against an exact
computation.

Data (seeded): real and holdout = two independent bootstraps of /work/shared/data/texas_25k.parquet
(rows drawn with replacement) each passed through privgate.baselines.noisy_copy (Gaussian noise of
0.1 sd on numerics, 10 % of categorical values redrawn) so rows are not exact repeats; release =
noisy_copy(real) (a release close to its training data). Written to Parquet and handed to
``run_gate`` as paths, as ``privgate gate`` does.

Reference ("GEMM N"): one exact 1-NN search real→release in the mixed space by blocked float32
matrix products and an argmin (BLAS, the run's threads) — measured on ``--ref-queries`` real rows
against all N release rows and scaled by N / queries (the cost is linear in the queries), so the
reference of a 1M × 1M search does not take an hour.

Sampling: the main run uses the gate's ``sample`` option (``--sample``, default ``auto``: a side of
more than 100,000 rows is estimated on 10,000 seeded query records; docs/performance.md "Sampling").

Check (``--check-n``, default 100k):
* N ≤ check-n: the gate again with ``exact=True`` and ``sample=off`` end to end; |value − exact| and
  |excess − exact| per metric, and whether the exact value lies in the main run's 95 % interval
  (``--sample 25000`` at 100k exercises the sampled path against the exact full values);
* N > check-n: every gate metric with exact searches on check-n query records per side sampled
  with another seed (``--check-seed``): |Δ| then holds both samples' sampling error and the main
  run's search error; with the gate's own seed and sample size (``--check-seed 0 --check-n
  50000`` for ``sample: auto``) the check searches exactly the gate's sampled queries, and |Δ| is
  the search error alone (dcr, which "auto" does not sample, is then sampled in the check only).

    python benchmarks/bench_million.py --n 100000 --threads 1
    python benchmarks/bench_million.py --n 100000 --threads 2 --sample 25000
    python benchmarks/bench_million.py --n 1000000 --threads 2         # sample auto; check ~8 min at 1M
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import peak_rss_mib, reset_peak  # noqa: E402
from _reference import gemm_1nn_seconds  # noqa: E402
from _rss_profile import RssProfile  # noqa: E402

TEXAS = Path(__file__).resolve().parents[2] / "shared/data/texas_25k.parquet"


def texas_like(n: int, folder: Path, seed: int = 0) -> dict[str, Path]:
    """Write real, holdout and release Parquet files of n rows each; returns their paths."""
    import polars as pl

    from privgate.baselines import noisy_copy

    base = pl.read_parquet(TEXAS)
    rng = np.random.default_rng(seed)
    real = noisy_copy(base[rng.integers(0, base.height, n)], seed=seed + 1)
    holdout = noisy_copy(base[rng.integers(0, base.height, n)], seed=seed + 2)
    release = noisy_copy(real, seed=seed + 3)
    paths = {}
    for role, frame in (("real", real), ("holdout", holdout), ("release", release)):
        paths[role] = folder / f"{role}_{n}.parquet"
        frame.write_parquet(paths[role])
    return paths


def gemm_reference(paths: dict[str, Path], threads: int, queries: int) -> tuple[float, int]:
    """Seconds of an exact float32 GEMM 1-NN search of every real row against every release row,
    extrapolated from ``queries`` real rows (returns (seconds, queries measured))."""
    import polars as pl

    from privgate.context import EvaluationContext

    real = pl.read_parquet(paths["real"])
    n = real.height
    q = min(queries, n)
    rows = np.sort(np.random.default_rng(9).choice(n, q, replace=False))
    ctx = EvaluationContext(real[rows], paths["release"], threads=threads)
    sp = ctx.mixed()  # (encoded with the sampled rows' statistics: the cost is the same)
    return gemm_1nn_seconds(sp.real, sp.synthetic, threads) * n / q, q


def run_default_gate(
    paths: dict[str, Path], threads: int, exact: bool, sample_real: int | None, sample="auto", profile: bool = False
):
    from privgate.gates import DEFAULT_CONFIG_PATH, run_gate

    prof = RssProfile().start() if profile else None

    def progress(name: str, i: int, total: int) -> None:
        if prof is not None:
            prof.set_phase(name)
        print(f"    [{i}/{total}] {name} ({time.perf_counter() - t0:.0f} s)", flush=True)

    reset_peak()
    load = os.getloadavg()
    cpu0 = _cpu()
    t0 = time.perf_counter()
    outcome = run_gate(
        DEFAULT_CONFIG_PATH,
        paths["real"],
        paths["release"],
        holdout=paths["holdout"],
        release_id="bench",
        record=False,
        threads=threads,
        exact=exact,
        sample_real=sample_real,
        sample=sample,
        progress=progress,
    )
    seconds = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    if prof is not None:
        prof.stop()
        prof.show()
    print(
        f"    load average (1 min) {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
        f"CPU {cpu:.0f} s (user + system) = {cpu / threads:.0f} s per thread of the {threads}: the wall "
        f"time on {threads} otherwise idle cores is about that",
        flush=True,
    )
    return outcome, seconds, peak_rss_mib()


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its threads so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def show(outcome, seconds: float, peak: float, ref: float, label: str) -> None:
    print(
        f"{label}: {seconds:.1f} s = {seconds / ref:.2f}× GEMM; peak RSS {peak / 1024:.2f} GiB; "
        f"decision {outcome.decision} (exit {outcome.exit_code})",
        flush=True,
    )
    for c in outcome.checks:
        if c.rule == "error":
            print(f"    ERROR {c.metric}: {c.message}")
    for name, r in outcome.results.items():
        ci = f"[{r.ci[0]:.4f}, {r.ci[1]:.4f}]" if r.ci else "-"
        exc = f"{r.excess:+.4f}" if r.excess is not None else "-"
        search = r.details.get("neighbour_search") or {}
        wrong = search.get("share_rows_possibly_wrong")
        extra = f" possibly-wrong ≤ {wrong:.4f}" if wrong else ""
        sampled = r.details.get("sampled")
        extra += f" sampled {sampled['n']}/{sampled['of']}" if sampled else ""
        print(f"    {name:<16} value {r.value:.4f} {ci:<18} excess {exc:<8} {r.seconds:8.1f} s{extra}")


def compare(main, check, label: str) -> None:
    print(f"  check ({label}):")
    for name, r in main.items():
        e = check.get(name)
        if e is None:
            continue
        inside = r.ci is not None and r.ci[0] - 1e-12 <= e.value <= r.ci[1] + 1e-12
        dx = "" if r.excess is None or e.excess is None else f" |Δ excess| {abs(r.excess - e.excess):.2e}"
        print(
            f"    {name:<16} approx {r.value:.6f} exact {e.value:.6f} |Δ| {abs(r.value - e.value):.2e}"
            f"{dx}; exact inside the approximate 95 % interval: {inside}"
        )


def check_sampled(paths: dict[str, Path], outcome, args) -> None:
    """N > check-n: every gate metric again with EXACT searches on ``check-n`` sampled query
    records per side, drawn with another seed (``--check-seed``) than the gate's sample — an
    exact estimate independent of the gate run's sample, so |Δ| contains both runs' sampling
    error and the gate run's search error."""
    from privgate import evaluate
    from privgate.gates import DEFAULT_CONFIG_PATH, evaluation_plan, load_gate_config

    plan = evaluation_plan(load_gate_config(DEFAULT_CONFIG_PATH), True)
    gate_seed = plan.get("seed", 0)
    plan["seed"] = args.check_seed
    reset_peak()
    t1 = time.perf_counter()
    load = os.getloadavg()
    rep = evaluate(
        paths["real"],
        paths["release"],
        holdout=paths["holdout"],
        exact=True,
        sample=args.check_n,
        threads=args.threads,
        on_error="record",
        **plan,
    )
    print(
        f"  exact check on {args.check_n:,} sampled query records per side (seed {args.check_seed}): "
        f"{time.perf_counter() - t1:.1f} s, peak RSS {peak_rss_mib() / 1024:.2f} GiB, load "
        f"{load[0]:.1f} → {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for name, err in rep.errors.items():
        print(f"    ERROR {name}: {err}")
    how = (
        "the gate's own query sample (same seed): |Δ| is the search error alone"
        if args.check_seed == gate_seed and args.check_n == outcome_sample_size(outcome)
        else "independent sample"
    )
    compare(outcome.results, rep.results, f"exact, {args.check_n:,} sampled query records, {how}")


def outcome_sample_size(outcome) -> int | None:
    """The query records per side the gate run sampled (None: every record)."""
    for r in outcome.results.values():
        sampled = r.details.get("sampled")
        if sampled:
            return int(sampled["n"])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="rows of real, holdout and release each")
    ap.add_argument("--threads", type=int, default=1, help="thread budget of every run (default 1)")
    ap.add_argument("--sample-real", type=int, default=None, help="the main run's sample_real option")
    ap.add_argument("--sample", default="auto", help="the main run's sample option (auto, off or N; default auto)")
    ap.add_argument("--check-n", type=int, default=100_000, help="size of the exact check (see the docstring)")
    ap.add_argument("--check-seed", type=int, default=1, help="seed of the exact check's sample (N > check-n)")
    ap.add_argument("--reuse", action="store_true", help="reuse the Parquet files in --workdir if present")
    ap.add_argument("--no-check", action="store_true", help="skip the exact check")
    ap.add_argument("--ref-queries", type=int, default=20_000, help="real rows the GEMM reference searches")
    ap.add_argument(
        "--ref-seconds", type=float, default=None, help="skip the reference: its seconds from an earlier run"
    )
    ap.add_argument(
        "--rss-profile", action="store_true", help="print the main run's peak RSS per metric and where it was reached"
    )
    ap.add_argument("--workdir", default=None, help="where the Parquet files go (default: a temporary folder)")
    args = ap.parse_args()

    from _reference import load_code

    load_code()  # every metric module and native library: a process pays them once, not the work timed

    folder = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="privgate-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        paths = {r: folder / f"{r}_{args.n}.parquet" for r in ("real", "holdout", "release")}
        if not (args.reuse and all(p.exists() for p in paths.values())):
            paths = texas_like(args.n, folder)
        print(
            f"data: 3 × {args.n:,} Texas-like rows written in {time.perf_counter() - t0:.1f} s "
            f"({sum(p.stat().st_size for p in paths.values()) / 2**20:.0f} MiB of Parquet)",
            flush=True,
        )
        ref, q = (args.ref_seconds, 0) if args.ref_seconds else gemm_reference(paths, args.threads, args.ref_queries)
        how = f"from {q:,} queries" if q else "given by --ref-seconds, measured in an earlier run"
        print(
            f"GEMM reference (exact float32 1-NN {args.n:,} × {args.n:,}, {how}, {args.threads} threads): {ref:.1f} s",
            flush=True,
        )
        sample = int(args.sample) if args.sample.isdigit() else args.sample
        outcome, seconds, peak = run_default_gate(
            paths, args.threads, False, args.sample_real, sample, profile=args.rss_profile
        )
        show(outcome, seconds, peak, ref, f"default gate with holdout, n = {args.n:,}")
        if args.no_check:
            return
        if args.n <= args.check_n:
            ex, s_ex, p_ex = run_default_gate(paths, args.threads, True, args.sample_real, "off")
            show(ex, s_ex, p_ex, ref, "exact=True, every record")
            compare(outcome.results, ex.results, "exact=True end to end, every record")
            return
        check_sampled(paths, outcome, args)
    finally:
        if not args.workdir:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
