"""Gate-level scale benchmark (issue 14): the shipped default gate, with a holdout, end to end on
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

Check (``--check-n``, default 100k):
* N ≤ check-n: the gate again with ``exact=True`` end to end; |value − exact| and |excess − exact|
  per metric, and whether the exact value lies in the approximate run's 95 % interval;
* N > check-n: ``evaluate(..., exact=True, sample_real=check-n)`` of the metrics that can be
  estimated on a real-record sample (an exact estimate on check-n real rows searched against all
  N targets, with its interval): is the full approximate value inside it? The other metrics
  (memorisation, nnaa, median_dcr need every record) are compared exact vs approximate on a
  check-n subsample of all three sets, end to end.

    python benchmarks/bench_million.py --n 100000 --threads 1
    python benchmarks/bench_million.py --n 1000000 --threads 2        # the 1M run (hours)
    python benchmarks/bench_million.py --n 1000000 --sample-real 100000 --no-check
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import peak_rss_mib, reset_peak  # noqa: E402
from _reference import gemm_1nn_seconds  # noqa: E402

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


def run_default_gate(paths: dict[str, Path], threads: int, exact: bool, sample_real: int | None,
                     sample="auto"):
    from privgate.gates import DEFAULT_CONFIG_PATH, run_gate

    reset_peak()
    t0 = time.perf_counter()
    outcome = run_gate(DEFAULT_CONFIG_PATH, paths["real"], paths["release"], holdout=paths["holdout"],
                       release_id="bench", record=False, threads=threads, exact=exact,
                       sample_real=sample_real, sample=sample,
                       progress=lambda name, i, total: print(f"    [{i}/{total}] {name} "
                                                             f"({time.perf_counter() - t0:.0f} s)", flush=True))
    return outcome, time.perf_counter() - t0, peak_rss_mib()


def show(outcome, seconds: float, peak: float, ref: float, label: str) -> None:
    print(f"{label}: {seconds:.1f} s = {seconds / ref:.2f}× GEMM; peak RSS {peak / 1024:.2f} GiB; "
          f"decision {outcome.decision} (exit {outcome.exit_code})", flush=True)
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
        print(f"    {name:<16} approx {r.value:.6f} exact {e.value:.6f} |Δ| {abs(r.value - e.value):.2e}"
              f"{dx}; exact inside the approximate 95 % interval: {inside}")


def compare_sampled(main, check) -> None:
    print("  check (exact estimate on the real-record sample, all targets):")
    for name, e in check.items():
        r = main.get(name)
        if r is None:
            continue
        inside = e.ci is not None and e.ci[0] <= r.value <= e.ci[1]
        print(f"    {name:<16} full approx {r.value:.6f}; exact sampled {e.value:.6f} "
              f"[{e.ci[0]:.6f}, {e.ci[1]:.6f}] → full value inside: {inside}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="rows of real, holdout and release each")
    ap.add_argument("--threads", type=int, default=1, help="thread budget of every run (default 1)")
    ap.add_argument("--sample-real", type=int, default=None, help="the main run's sample_real option")
    ap.add_argument("--sample", default="auto", help="the main run's sample option (auto, off or N; default auto)")
    ap.add_argument("--check-n", type=int, default=100_000, help="size of the exact check (see the docstring)")
    ap.add_argument("--no-check", action="store_true", help="skip the exact check")
    ap.add_argument("--ref-queries", type=int, default=20_000, help="real rows the GEMM reference searches")
    ap.add_argument("--workdir", default=None, help="where the Parquet files go (default: a temporary folder)")
    args = ap.parse_args()

    import privgate.metrics  # noqa: F401  (imports are not the gate's work)

    folder = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="privgate-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        paths = texas_like(args.n, folder)
        print(f"data: 3 × {args.n:,} Texas-like rows written in {time.perf_counter() - t0:.1f} s "
              f"({sum(p.stat().st_size for p in paths.values()) / 2**20:.0f} MiB of Parquet)", flush=True)
        ref, q = gemm_reference(paths, args.threads, args.ref_queries)
        print(f"GEMM reference (exact float32 1-NN {args.n:,} × {args.n:,}, from {q:,} queries, "
              f"{args.threads} threads): {ref:.1f} s", flush=True)
        sample = int(args.sample) if args.sample.isdigit() else args.sample
        outcome, seconds, peak = run_default_gate(paths, args.threads, False, args.sample_real, sample)
        show(outcome, seconds, peak, ref, f"default gate with holdout, n = {args.n:,}")
        if args.no_check:
            return
        if args.n <= args.check_n:
            ex, s_ex, p_ex = run_default_gate(paths, args.threads, True, args.sample_real)
            show(ex, s_ex, p_ex, ref, "exact=True")
            compare(outcome.results, ex.results, "exact=True end to end")
            return
        from privgate import evaluate
        from privgate.registry import get_metric

        sampled = [n for n in outcome.results if _samples(get_metric(n).func)]
        t1 = time.perf_counter()
        rep = evaluate(paths["real"], paths["release"], sampled, holdout=paths["holdout"], baseline=True,
                       exact=True, sample_real=args.check_n, threads=args.threads, on_error="record")
        print(f"  exact sampled check: {time.perf_counter() - t1:.1f} s", flush=True)
        compare_sampled(outcome.results, rep.results)
        rest = [n for n in outcome.results if n not in sampled]
        if rest:
            small = _subsample(paths, args.check_n, folder)
            kw = dict(holdout=small["holdout"], baseline=True, threads=args.threads, on_error="record")
            approx = evaluate(small["real"], small["release"], rest, **kw)
            exact = evaluate(small["real"], small["release"], rest, exact=True, **kw)
            compare(approx.results, exact.results, f"metrics without sampling, on a {args.check_n:,} subsample")
    finally:
        if not args.workdir:
            shutil.rmtree(folder, ignore_errors=True)


def _samples(func) -> bool:
    """Whether a metric estimates on ctx.real_sample() (it calls the _common helper)."""
    import inspect

    try:
        return "real_rows(ctx)" in inspect.getsource(func)
    except (OSError, TypeError):
        return False


def _subsample(paths: dict[str, Path], n: int, folder: Path) -> dict[str, Path]:
    import polars as pl

    out = {}
    for role, p in paths.items():
        frame = pl.read_parquet(p)
        rows = np.sort(np.random.default_rng(11).choice(frame.height, n, replace=False))
        out[role] = folder / f"{role}_sub{n}.parquet"
        frame[rows].write_parquet(out[role])
    return out


if __name__ == "__main__":
    main()
