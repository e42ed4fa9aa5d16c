"""Scale benchmark: the distance family at growing sizes, the full suite quiet and under
a CPU hog, and detection_mlp's trainer against scikit-learn's — every time printed as a RATIO to a
reference measured in the same run.

Reference ("GEMM 1-NN"): one exact nearest-neighbour search real→synthetic of the same points in
the mixed space by blocked float32 matrix products (BLAS, the run's threads) and an argmin — the
floor of any exact search. ``ref25`` is that search at 25k × 25k, timed right before and right
after every family run (the geometric mean of the two is the ratio's denominator).

Data: real = the Texas 25k file (``--n 25000``) or a Texas-like bootstrap of it with noise (larger
n: rows drawn with replacement, seeded, then privgate.baselines.noisy_copy so that rows are not
exact copies); release = noisy_copy(real, seed=1), row-aligned (hidden_rate paired).

    python benchmarks/bench_scale.py --n 25000 100000          # distance family (+ peak RSS)
    python benchmarks/bench_scale.py --n 100000 --check-exact  # also exact=True, max |Δ value|
    python benchmarks/bench_scale.py --suite                    # full suite quiet vs 2 busy procs
    python benchmarks/bench_scale.py --suite --breakdown-only --values v.json  # per-metric table only
    python benchmarks/bench_scale.py --suite --suite-n 100000 --breakdown-only --threads 1  # at 100k

The suite prints its seconds as × ref25 (timed right before and after the quiet run) and a
per-metric table: wall and main-process CPU seconds (detection_mlp's fold workers are other
processes), share, and the neighbour searches / space builds each metric triggered, timed apart.
    python benchmarks/bench_scale.py --mlp                      # NumPy vs scikit-learn MLP AUC

Targets: 25k family ≤ 4× ref (values unchanged), 100k family ≤ 20× ref25, full suite under a hog
≤ 3× quiet, peak RSS ≤ 8 GiB at 1M.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import peak_rss_mib, reset_peak  # noqa: E402
from _reference import gemm_1nn_seconds  # noqa: E402

TEXAS = Path(__file__).resolve().parents[2] / "shared/data/texas_25k.parquet"
ADULT = Path(__file__).resolve().parents[2] / "shared/data/adult.parquet"
DISTANCE = [
    "common_rows",
    "close_values",
    "distant_values",
    "nsnd",
    "authenticity",
    "identifiability",
    "median_dcr",
    "nnaa",
    "nndr",
    "dcr",
    "hidden_rate",
    "hitting_rate",
]
KEYS = ["DISCHARGE", "SEX_CODE", "PAT_AGE", "RACE", "TYPE_OF_ADMISSION"]
SENSITIVE = ["ILLNESS_SEVERITY", "TOTAL_CHARGES"]


def texas_like(n: int):
    import polars as pl

    from privgate.baselines import noisy_copy

    real = pl.read_parquet(TEXAS)
    if n != real.height:
        rows = np.random.default_rng(0).integers(0, real.height, n)
        real = noisy_copy(real[rows], seed=2)
    return real, noisy_copy(real, seed=1)


def gemm_reference(ctx) -> float:
    """Seconds of one blocked float32 GEMM 1-NN search real→synthetic in the mixed space."""
    sp = ctx.mixed()
    return gemm_1nn_seconds(sp.real, sp.synthetic, ctx.threads)


CPU = {"ref": []}  # CPU seconds of the reference runs (process time), for the CPU ratio


def gemm_reference_cpu(ctx) -> float:
    """gemm_reference, also recording its process CPU seconds in CPU["ref"]: on a shared machine
    wall time stretches with the other jobs' load, CPU time much less (threads=1)."""
    c0 = time.process_time()
    wall = gemm_reference(ctx)
    CPU["ref"].append(time.process_time() - c0)
    return wall


def distance_family(n: int, exact: bool, threads: int | None) -> tuple[float, float, dict, dict]:
    from _reference import load_code

    load_code()  # every metric module and native library: a process pays them once, not the work timed
    from privgate.catalogue import get_metric
    from privgate.context import EvaluationContext
    from privgate.registry import run_spec
    from privgate.threads import limited

    real, syn = texas_like(n)
    reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    ctx = EvaluationContext(real, syn, seed=0, pairing=True, exact=exact, threads=threads)
    values, searches = {}, {}
    with limited(ctx.threads):  # as evaluate() runs metrics
        for name in DISTANCE:
            t1 = time.perf_counter()
            res = run_spec(get_metric(name), ctx, {})
            values[name] = res.value
            print(f"      {name:<16} {time.perf_counter() - t1:6.1f} s", flush=True)
            if "neighbour_search" in res.details:
                searches.update(res.details["neighbour_search"]["searches"])
    CPU["family"] = time.process_time() - c0
    return time.perf_counter() - t0, peak_rss_mib(), values, searches


def run_distance(sizes: list[int], check_exact: bool, threads: int | None, ref_each: bool) -> None:
    from privgate.context import EvaluationContext

    real, syn = texas_like(25_000)
    ctx25 = EvaluationContext(real, syn, threads=threads)
    print(
        f"ref25 = GEMM 1-NN 25k×25k, d={ctx25.mixed().dim}, {ctx25.threads} threads, timed right before "
        "and right after each family run; ratios use their geometric mean (the load drifts)",
        flush=True,
    )
    times = {}
    for n in sizes:
        ref_before = gemm_reference_cpu(ctx25)
        ref = (
            None if n == 25_000 or not ref_each else gemm_reference(EvaluationContext(*texas_like(n), threads=threads))
        )
        seconds, peak, values, searches = distance_family(n, False, threads)
        ref_after = gemm_reference_cpu(ctx25)
        ref25 = float(np.sqrt(ref_before * ref_after))
        ref = ref25 if ref is None else ref
        times[n] = seconds
        own = f"{seconds / ref:5.2f}× GEMM({n}) = " if n == 25_000 or ref_each else ""
        print(
            f"n={n:>8,}: distance family {seconds:7.1f} s = {own}{seconds / ref25:6.2f}× ref25 "
            f"(ref25 {ref_before:.2f} s before, {ref_after:.2f} s after); peak RSS {peak / 1024:.2f} GiB",
            flush=True,
        )
        ref_cpu = float(np.sqrt(CPU["ref"][-2] * CPU["ref"][-1]))
        print(
            f"    CPU (process time): family {CPU['family']:.1f} s = {CPU['family'] / ref_cpu:.2f}× ref25 CPU "
            f"({CPU['ref'][-2]:.2f} / {CPU['ref'][-1]:.2f} s)",
            flush=True,
        )
        for name, sd in searches.items():
            extra = (
                ""
                if sd.get("exact", True)
                else f"  recall {sd['recall']:.4f} [{sd['recall_ci'][0]:.4f}, {sd['recall_ci'][1]:.4f}]"
                f" possibly wrong {sd['share_rows_possibly_wrong']:.4f}"
            )
            print(f"    {name:<32} {sd.get('settled_by')}{extra}")
        print("    values: " + ", ".join(f"{k} {v:.6f}" for k, v in values.items()))
        if check_exact:
            s_ex, _, exact_values, _ = distance_family(n, True, threads)
            diff = max(abs(values[k] - exact_values[k]) for k in values)
            print(f"    exact=True: {s_ex:.1f} s = {s_ex / ref25:.2f}× ref25; max |value − exact| = {diff:.2e}")
    if len(times) > 1:
        ns = sorted(times)
        slope = np.polyfit(np.log(ns), np.log([times[n] for n in ns]), 1)[0]
        print(f"growth exponent of the distance family over n = {ns}: {slope:.2f}")


def _spin(stop) -> None:  # a busy process
    x = 0
    while not stop.is_set():
        x += 1


class _SuiteClock:
    """Per-metric wall and CPU seconds of one evaluate() run (from its progress callback), with
    the neighbour searches (privgate.neighbours.knn / knn_rows / search_matrices wherever a module
    imported them)
    and the encoded-space builds (privgate.spaces.mixed_space / famd_space) timed apart and
    charged to the metric that triggered them — the context caches both, so the first metric to
    ask pays. Instrumentation only: the wrapped functions are called unchanged."""

    SHARED = {
        "knn": "search",
        "knn_rows": "search",
        "search_matrices": "search",
        "mixed_space": "space",
        "famd_space": "space",
    }

    def __init__(self) -> None:
        self.order: list[str] = []
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.shared: dict[str, dict[str, float]] = {}  # metric → {"search": s, "space": s}
        self.current = "(context)"
        self.calls: list[tuple[str, str, str, float]] = []  # (metric, function, shapes, seconds)
        self._mark = (time.perf_counter(), time.process_time())
        self._depth = 0
        self._undo: list = []

    def progress(self, name: str, i: int, total: int) -> None:
        self._close()
        self.current = name
        self.order.append(name)

    def _close(self) -> None:
        w, c = time.perf_counter(), time.process_time()
        self.wall[self.current] = self.wall.get(self.current, 0.0) + w - self._mark[0]
        self.cpu[self.current] = self.cpu.get(self.current, 0.0) + c - self._mark[1]
        self._mark = (w, c)

    def finish(self) -> None:
        self._close()
        for mod, attr, fn in self._undo:
            setattr(mod, attr, fn)
        self._undo = []

    def install(self) -> None:
        import privgate.metrics  # noqa: F401  (so every module that imported knn is loaded)
        from privgate import neighbours, spaces

        originals = {getattr(neighbours, a): a for a in ("knn", "knn_rows", "search_matrices")}
        originals.update({getattr(spaces, a): a for a in ("mixed_space", "famd_space")})
        for mod in [m for n, m in sys.modules.items() if n.startswith("privgate") and m is not None]:
            for attr, value in list(vars(mod).items()):
                if callable(value) and value in originals and attr in self.SHARED:
                    setattr(mod, attr, self._timed(value, self.SHARED[attr]))
                    self._undo.append((mod, attr, value))

    def _timed(self, fn, kind: str):
        def wrapper(*a, **kw):
            if self._depth:  # a search inside a space build (or vice versa) is counted once
                return fn(*a, **kw)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self._depth -= 1
                d = self.shared.setdefault(self.current, {"search": 0.0, "space": 0.0})
                d[kind] += time.perf_counter() - t0
                self.calls.append((self.current, fn.__name__, _shapes(a, kw), time.perf_counter() - t0))

        return wrapper

    def table(self, total: float, ref25: float) -> str:
        rows = [
            f"    {'metric':<28} {'wall s':>7} {'share':>6} {'×ref25':>7} {'cpu s':>7} "
            f"{'search s':>8} {'space s':>7} {'own s':>7}"
        ]
        names = ["(context)"] + self.order
        for name in sorted(names, key=lambda n: -self.wall.get(n, 0.0)):
            w = self.wall.get(name, 0.0)
            sh = self.shared.get(name, {"search": 0.0, "space": 0.0})
            rows.append(
                f"    {name:<28} {w:7.2f} {100 * w / total:5.1f}% {w / ref25:7.2f} "
                f"{self.cpu.get(name, 0.0):7.2f} {sh['search']:8.2f} {sh['space']:7.2f} "
                f"{w - sh['search'] - sh['space']:7.2f}"
            )
        srch = sum(d["search"] for d in self.shared.values())
        spc = sum(d["space"] for d in self.shared.values())
        rows.append(
            f"    {'all neighbour searches':<28} {srch:7.2f} {100 * srch / total:5.1f}%  "
            f"(charged to the first metric that asked, above)"
        )
        rows.append(f"    {'all space builds':<28} {spc:7.2f} {100 * spc / total:5.1f}%")
        return "\n".join(rows)


def _shapes(args, kwargs) -> str:
    parts = [
        ("×".join(map(str, x.shape)) if hasattr(x, "shape") else repr(x))
        for x in args
        if hasattr(x, "shape") or isinstance(x, int)
    ]
    parts += [f"{k}={v}" for k, v in kwargs.items() if isinstance(v, (int, bool)) and k != "seed"]
    return " ".join(parts)


def full_suite(
    threads: int | None, clock: _SuiteClock | None = None, values: str | None = None, n: int = 25_000
) -> float:
    from _reference import load_code

    from privgate import evaluate

    load_code()  # the process's one-off imports are not the suite's work
    real, syn = texas_like(n)
    if clock is not None:
        clock.install()
    t0 = time.perf_counter()
    try:
        rep = evaluate(
            real,
            syn,
            keys=KEYS,
            sensitive=SENSITIVE,
            pairing=True,
            seed=0,
            threads=threads,
            on_error="record",
            progress=clock.progress if clock is not None else None,
        )
    finally:
        if clock is not None:
            clock.finish()
    seconds = time.perf_counter() - t0
    if rep.errors:
        print("   errors:", rep.errors)
    if values:  # every metric's value, raw value and interval, to compare two versions' results
        import json

        Path(values).write_text(
            json.dumps(
                {
                    n: {
                        "value": r.value,
                        "raw": r.raw,
                        "ci": list(r.ci) if r.ci is not None else None,
                        "excess": getattr(r, "excess", None),
                    }
                    for n, r in rep.results.items()
                },
                indent=1,
                default=float,
            )
        )
    return seconds


def suite_ref25(threads: int | None) -> float:
    """ref25 (GEMM 1-NN 25k×25k in the mixed space) with the suite's thread budget."""
    from privgate.context import EvaluationContext

    return gemm_reference(EvaluationContext(*texas_like(25_000), threads=threads))


def run_suite(threads: int | None, breakdown_only: bool = False, values: str | None = None, n: int = 25_000) -> None:
    ref_before = suite_ref25(threads)
    clock = _SuiteClock()
    quiet = full_suite(threads, clock, values, n)
    ref_after = suite_ref25(threads)
    ref25 = float(np.sqrt(ref_before * ref_after))
    print(
        f"full suite at {n:,} rows, quiet: {quiet:.1f} s = {quiet / ref25:.1f}× ref25 (ref25 {ref_before:.2f} s before, "
        f"{ref_after:.2f} s after; load average {' '.join(f'{x:.1f}' for x in _loadavg())})",
        flush=True,
    )
    print(clock.table(quiet, ref25), flush=True)
    print("    shared calls over 0.2 s (metric, function, arguments, seconds):")
    for metric, fn, shapes, sec in clock.calls:
        if sec > 0.2:
            print(f"      {metric:<22} {fn:<11} {shapes:<60} {sec:6.2f}")
    if breakdown_only:
        return
    stop = mp.Event()
    hogs = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(2)]
    for h in hogs:
        h.start()
    try:
        busy = full_suite(threads, n=n)
    finally:
        stop.set()
        for h in hogs:
            h.join()
    print(f"full suite under 2 busy processes: {busy:.1f} s = {busy / quiet:.2f}× quiet (target ≤ 3×)")


def _loadavg() -> tuple[float, float, float]:
    import os

    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def run_mlp(folds: int) -> None:
    """Mean held-out AUC of scikit-learn's MLPClassifier and privgate's NumPy trainer on the same
    stratified folds (Texas 25k and Adult vs a noisy copy, and vs an independent-marginals
    release), with the seconds of each; the sklearn AUCs over seeds 0–2 give the noise."""
    import polars as pl
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    from privgate.baselines import independent_marginals, noisy_copy
    from privgate.context import EvaluationContext
    from privgate.metrics._mlp import train_mlp

    for label, path in (("texas", TEXAS), ("adult", ADULT)):
        real = pl.read_parquet(path)
        for rel_name, release in (
            ("noisy_copy", noisy_copy(real, seed=0)),
            ("independent_marginals", independent_marginals(real, seed=0)),
        ):
            ctx = EvaluationContext(real, release, seed=0)
            sp = ctx.mixed()
            x = np.vstack([sp.real, sp.synthetic]).astype(np.float32)
            y = np.r_[np.ones(ctx.n_real, dtype=np.int64), np.zeros(ctx.n_synthetic, dtype=np.int64)]
            splits = list(StratifiedKFold(5, shuffle=True, random_state=0).split(x, y))[:folds]
            res = {}
            with threadpool_limits(1), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for seed in (0, 1, 2):
                    for trainer in ("sklearn", "numpy"):
                        t0, aucs = time.perf_counter(), []
                        for tr, te in splits:
                            if trainer == "sklearn":
                                m = MLPClassifier(
                                    (100, 50),
                                    max_iter=300,
                                    random_state=seed,
                                    early_stopping=True,
                                    validation_fraction=0.1,
                                ).fit(x[tr], y[tr])
                                p = m.predict_proba(x[te])[:, 1]
                            else:
                                p = train_mlp(x[tr], y[tr], (100, 50), 300, seed).predict_proba(x[te])
                            aucs.append(roc_auc_score(y[te], p))
                        res.setdefault(trainer, []).append((float(np.mean(aucs)), time.perf_counter() - t0))
            for trainer, rows in res.items():
                aucs = [a for a, _ in rows]
                secs = np.mean([s for _, s in rows])
                print(
                    f"{label:<6} {rel_name:<22} {trainer:<8} AUC seeds 0-2: "
                    + " ".join(f"{a:.4f}" for a in aucs)
                    + f"  mean {np.mean(aucs):.4f}  {secs:6.1f} s / {folds} folds"
                )
            ratio = np.mean([s for _, s in res["sklearn"]]) / np.mean([s for _, s in res["numpy"]])
            print(f"{'':<6} {'':<22} NumPy trainer {ratio:.1f}× faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="*", default=[], help="distance-family sizes (real = release rows)")
    ap.add_argument("--check-exact", action="store_true", help="also run exact=True and print the max value gap")
    ap.add_argument("--ref-each", action="store_true", help="also time the GEMM 1-NN reference at every n")
    ap.add_argument("--suite", action="store_true", help="full suite quiet vs under 2 busy processes")
    ap.add_argument("--suite-n", type=int, default=25_000, help="the suite's rows (real = release rows; default 25k)")
    ap.add_argument(
        "--breakdown-only",
        action="store_true",
        help="with --suite: only the quiet run with its per-metric table (no hog run)",
    )
    ap.add_argument(
        "--values",
        default=None,
        help="with --suite: write every metric's value, raw and interval of the quiet run to this JSON file",
    )
    ap.add_argument("--mlp", action="store_true", help="NumPy vs scikit-learn MLP on Texas and Adult")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="thread budget (default: privgate.threads)")
    args = ap.parse_args()
    if args.n:
        run_distance(args.n, args.check_exact, args.threads, args.ref_each)
    if args.suite:
        run_suite(args.threads, args.breakdown_only, args.values, args.suite_n)
    if args.mlp:
        run_mlp(args.folds)


if __name__ == "__main__":
    main()
