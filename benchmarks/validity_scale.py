"""Scale validity: the default gate's decision on the same kinds of release at every size.

Data (seeded, generated here, unlike the shared files): a latent-class model of 18 columns — 11
categorical of 3–22 levels (88 one-hot features; one with 2 % nulls) and 7 heavy-tailed numeric
(a count, six log-normal amounts, three of them mostly zero, one with 2 % nulls): 95 encoded
features, the shape of hospital-discharge data such as Texas. Each record draws one of 8
classes, then every column independently given its class (class-specific level
probabilities (Dirichlet(5·base), base ∝ 0.4^level),
class-specific log-scale means), so columns are dependent through the class. Real and holdout
are two independent draws of N records.

Releases of N records:
* ``honest``   independent marginals of the real table (privgate.baselines.independent_marginals);
* ``dp``       the ε = 1 DP generator of benchmarks/_dp.py (public domain: a separate draw);
* ``copies``   ``honest`` with 1 % of its rows replaced by exact copies of real rows;
* ``noisy``    ``honest`` with 1 % replaced by real rows with Gaussian noise of 5 % of the column's
               sd on numerics (benchmarks/validity.py ``noisy``).

Each is gated by the shipped default gate with the holdout, one thread (``sample: auto``: above
100,000 rows the sampled metrics use 10,000 query records). Printed per run: the decision, the
rules that fired (the deciding metrics), every gated metric's value, raw value, holdout baseline
and compared quantity, the memorisation interval and the search's unresolved rows, seconds and
CPU seconds — the run's also as a ratio to ref25, one exact GEMM 1-NN of 25,000 × 25,000
records of the same model, timed before and after the run — and each metric's. The decision must be the same at every size: honest and DP pass, copies flagged by
memorisation (warn or block). One JSON line per run is appended to ``--out``.

    python benchmarks/validity_scale.py --sizes 20000,100000 --releases honest,dp,copies,noisy
    python benchmarks/validity_scale.py --sizes 1000000 --releases honest,copies
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _dp  # noqa: E402
from _mem import peak_rss_mib, reset_peak  # noqa: E402
from validity import inject, noisy  # noqa: E402 - the validity benchmark's copies, the same here

from privgate import baselines  # noqa: E402

LEVELS = [3, 3, 4, 5, 5, 6, 6, 7, 9, 18, 22]  # 88 one-hot features
N_NUMERIC = 7
CLASSES = 8
DECAY = 0.4  # level j of a column has base probability ∝ DECAY^j
CONCENTRATION = 5.0  # Dirichlet concentration of each class's level probabilities around the base


def latent_class(n: int, seed: int, model_seed: int = 20260, concentration: float = CONCENTRATION) -> pl.DataFrame:
    """``n`` records of the latent-class model (its parameters from ``model_seed``, the records
    from ``seed``)."""
    par = np.random.default_rng(model_seed)
    rng = np.random.default_rng(seed)
    k = rng.integers(0, CLASSES, n)
    cols: dict[str, pl.Series] = {}
    for j, levels in enumerate(LEVELS):
        base = DECAY ** np.arange(levels)  # a few dominant levels
        p = par.dirichlet(concentration * base / base.sum(), CLASSES)  # each class near them
        cum = np.cumsum(p, axis=1)
        code = (rng.random(n)[:, None] > cum[k]).sum(axis=1).clip(0, levels - 1)
        s = pl.Series(f"c{j}", np.array([f"L{j}_{v}" for v in range(levels)])[code])
        if j == 3:
            s = s.scatter(np.flatnonzero(rng.random(n) < 0.02), None)
        cols[s.name] = s
    for j in range(N_NUMERIC):
        mean = par.normal(0, 1, CLASSES)
        sd = par.uniform(0.5, 1.0, CLASSES)
        v = mean[k] + sd[k] * rng.normal(size=n)
        if j == 0:  # a stay-like count, heavy-tailed
            v = np.round(np.exp(v * 0.8 + 1.0))
        else:  # charge-like amounts: log-normal, the later ones mostly zero
            v = np.round(np.exp(v + 8 + j / 2), 2)
            if j >= 4:
                v = np.where(rng.random(n) < 0.7, 0.0, v)
            if j == 2:
                v = np.where(rng.random(n) < 0.02, np.nan, v)
        s = pl.Series(f"x{j}", v).fill_nan(None)
        cols[s.name] = s
    return pl.DataFrame(list(cols.values()))


def public_domain(seed: int) -> list:
    """The DP generator's public domain: numeric bins from a separate draw of 50,000 records, and
    every categorical column's levels as the model defines them (its schema, public) — a draw
    misses a level of probability below ~1/50,000 that a million records hold."""
    domain = _dp.public_domain(latent_class(50_000, seed + 999))
    out = []
    for col in domain:
        if col.kind == "cat":
            j = int(col.name[1:])
            levels = [f"L{j}_{v}" for v in range(LEVELS[j])] + ([_dp.NULL] if j == 3 else [])
            col = _dp.Column(col.name, "cat", np.array(sorted(levels)), dtype=col.dtype)
        out.append(col)
    return out


def release(kind: str, real: pl.DataFrame, seed: int, share: float = 0.01) -> pl.DataFrame:
    """The release of ``kind`` (module docstring) of the real table's size."""
    n = real.height
    if kind == "dp":
        return _dp.fit_sample(real, n, 1.0, seed, domain=public_domain(seed))
    honest = baselines.independent_marginals(real, seed)
    if kind == "honest":
        return honest
    rng = np.random.default_rng([seed, 7])
    rows = real[np.sort(rng.choice(n, int(round(share * n)), replace=False))]
    if kind == "copies":
        return inject(honest, rows, seed + 1)
    if kind == "noisy":
        return inject(honest, noisy(rows, real, seed + 2), seed + 1)
    raise ValueError(f"unknown release kind {kind!r}")


def searches_unresolved(res) -> tuple[int, float]:
    """Rows the metric's searches left unresolved, and the share its interval was widened by."""
    report = (res.details or {}).get("neighbour_search") or {}
    n = sum(int(s.get("n_unresolved", 0) or 0) for s in (report.get("searches") or {}).values())
    return n, float(((res.details or {}).get("search_error") or {}).get("share_rows_possibly_wrong", 0.0))


def ref25_cpu(seed: int) -> float:
    """CPU seconds of one exact GEMM 1-NN search, 25,000 real records against 25,000 of the
    honest release in the mixed space (benchmarks/_reference.py): the run's reference cost."""
    from _reference import gemm_1nn_seconds

    from privgate.context import EvaluationContext

    real = latent_class(25_000, seed)
    sp = EvaluationContext(real, release("honest", real, seed + 2), threads=1).mixed()
    c0 = time.process_time()
    gemm_1nn_seconds(sp.real, sp.synthetic, 1)
    return time.process_time() - c0


def run_one(n: int, kind: str, seed: int) -> dict:
    from _reference import load_code

    from privgate.gates import DEFAULT_CONFIG_PATH, run_gate

    load_code()
    ref_before = ref25_cpu(seed)
    real = latent_class(n, seed)
    holdout = latent_class(n, seed + 1)
    syn = release(kind, real, seed + 2)
    reset_peak()  # the gate's peak, from the frames in memory on
    t0, c0 = time.perf_counter(), time.process_time()
    last = [t0]
    cpu_at = [c0]
    running = [None]
    per_metric: dict[str, float] = {}

    def close_metric(starting: str | None) -> None:
        """The CPU since the last call goes to the metric that was running (progress is called
        when the next one starts)."""
        now = time.process_time()
        if running[0] is not None:
            per_metric[running[0]] = round(now - cpu_at[0], 1)
        running[0], cpu_at[0] = starting, now

    def progress(name: str, i: int, total: int, *, detail: dict | None = None) -> None:
        now = time.perf_counter()
        if detail is not None:  # inside a metric: its searches' rows done
            print(
                f"        {name}: {detail['done']:,} of {detail['total']:,} {detail['unit']} "
                f"({detail['elapsed']:.0f} s in the metric)",
                flush=True,
            )
            return
        print(f"      [{i}/{total}] {name} ({now - t0:.0f} s, +{now - last[0]:.0f} s)", flush=True)
        last[0] = now
        close_metric(name)

    out = run_gate(
        DEFAULT_CONFIG_PATH,
        real,
        syn,
        holdout=holdout,
        release_id=f"{kind}-{n}",
        record=False,
        threads=1,
        progress=progress,
    )
    close_metric(None)  # the last metric, with the gate's own work after it
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = peak_rss_mib() / 1024
    ref25 = float(np.sqrt(ref_before * ref25_cpu(seed)))
    fired = [f"{c.metric} {c.rule} {c.severity}" for c in out.checks if c.verdict != "pass" and not c.skipped]
    metrics = {}
    for name, res in (out.results or {}).items():
        unresolved, widened = searches_unresolved(res)
        metrics[name] = {
            "value": res.value,
            "raw": res.raw,
            "ci": list(res.ci) if res.ci else None,
            "baseline": res.baseline,
            "excess": res.excess,
            "excess_ci": list(res.excess_ci) if res.excess_ci else None,
            "unresolved_rows": unresolved,
            "widened_by": widened,
            "chance": (res.details or {}).get("chance_share_hit"),
        }
    return {
        "n": n,
        "release": kind,
        "seed": seed,
        "decision": str(out.decision),
        "fired": fired,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "ref25_cpu": round(ref25, 3),
        "x_ref25": round(cpu / ref25, 1),
        "metric_cpu_seconds": per_metric,
        "peak_rss_gib": round(peak, 2),
        "metrics": metrics,
        "errors": [c.message for c in out.checks if c.rule == "error"],
    }


def show(row: dict) -> None:
    m = row["metrics"]
    mem = m.get("memorisation", {})
    hr = m.get("hitting_rate", {})
    ci = mem.get("ci") or [float("nan")] * 2
    print(
        f"n={row['n']:>8} {row['release']:<7} {row['decision']:<6} fired={'; '.join(row['fired']) or '-'}  "
        f"memorisation {mem.get('value', float('nan')):.4f} [{ci[0]:.4f}, {ci[1]:.4f}] "
        f"unresolved {mem.get('unresolved_rows')} widened {mem.get('widened_by', 0):.4f}; "
        f"hitting raw {hr.get('raw', float('nan')):.3f} chance {hr.get('chance') or float('nan'):.3f} "
        f"value {hr.get('value', float('nan')):.3f}; {row['seconds']:.0f} s, {row['cpu_seconds']:.0f} CPU-s "
        f"= {row['x_ref25']}× ref25 (GEMM 1-NN 25k × 25k, {row['ref25_cpu']:.2f} CPU-s, before and after); peak RSS {row['peak_rss_gib']:.2f} GiB",
        flush=True,
    )
    print(
        "      CPU-s per metric: "
        + ", ".join(f"{k} {v}" for k, v in sorted(row["metric_cpu_seconds"].items(), key=lambda kv: -kv[1])),
        flush=True,
    )
    for name, r in m.items():
        print(
            f"      {name:<16} value {r['value']:.4f} raw {r['raw'] if r['raw'] is None else round(r['raw'], 4)} "
            f"baseline {r['baseline'] if r['baseline'] is None else round(r['baseline'], 4)} "
            f"excess {r['excess'] if r['excess'] is None else round(r['excess'], 4)}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--releases", default="honest,dp,copies,noisy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="validity_scale.jsonl")
    args = ap.parse_args(argv)
    bad = 0
    for n in (int(x) for x in args.sizes.split(",")):
        for kind in args.releases.split(","):
            row = run_one(n, kind, args.seed)
            show(row)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            flagged = any(x.startswith("memorisation") for x in row["fired"])
            ok = (row["decision"] == "pass") if kind in ("honest", "dp") else flagged
            bad += not ok
            print(f"   -> {'as expected' if ok else 'NOT as expected'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
