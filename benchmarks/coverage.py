"""Do privgate's 95 % intervals cover the value they estimate? A simulation where the truth is
known, and what the intervals cost.

Population: ../shared/data/texas_25k.parquet (25,000 hospital discharges; keys PAT_AGE,
SEX_CODE, RACE, ETHNICITY, TYPE_OF_ADMISSION, sensitive ILLNESS_SEVERITY for the reconstruction
and disclosure metrics).

1. **Value intervals** (``ci``), conditional on one release, as the bootstrap over real records
   intends: a release S of n population records is drawn once; each replicate draws n real
   records R from the whole population (so R shares about n²/N records with S by chance — real
   copies, e.g. common_rows ≈ 2 % at n = 500) and scores R against S with the replicate's seed.
   Truth = the metric's expected value at this n given S, estimated by the mean over the
   replicates (its own standard error, sd/√reps, is printed as a share of the mean half-width;
   "interval s.e. / sd" = mean half-width/1.96 over the values' standard deviation: 1 when the
   intervals are calibrated, above 1 conservative, below 1 too narrow);
   for metrics whose per-record value depends only on the record and S (common_rows, zero_cap,
   generalized_cap) also the exact population value (the metric on all 25,000 records against S).
2. **Excess intervals** (``excess_ci``) for an honest release: each replicate draws disjoint R,
   S, H (n each) from the population; S and the holdout H are exchangeable, so the true excess
   of value(R, S) over the baseline value(R, H) is 0.
3. **Cost**: the shipped default gate on Texas (``--cost-n`` records, default 25,000: all as the
   real data without a holdout, and half real + half holdout; a noisy copy as the release) with
   intervals and without
   (``privgate.stats.metric_intervals.without_intervals``), as a ratio in the same run: CPU seconds of
   this process (robust to other processes on a shared machine) and wall seconds, best of two
   alternated runs each.

Not simulated: the classifier metrics (detection_mlp, membership_inference: model fits per
replicate are too slow for hundreds of replicates here), hidden_rate (needs a generator's
pairing), and the metrics without an interval (close_values, distant_values, nsnd, the
statistical family).

    python benchmarks/coverage.py [--n 500] [--reps 120] [--cost-n 25000] [--only coverage|cost]
                                  [--metrics a,b,...] [--write-doc]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import privgate  # noqa: E402
from privgate import baselines  # noqa: E402
from privgate.catalogue import get_metric  # noqa: E402
from privgate.gates import default_gate_config, run_gate  # noqa: E402
from privgate.stats.metric_intervals import without_intervals  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "texas_25k.parquet"
KEYS = ["PAT_AGE", "SEX_CODE", "RACE", "ETHNICITY", "TYPE_OF_ADMISSION"]
SENSITIVE = ["ILLNESS_SEVERITY"]
# every metric with an interval but the classifiers (close_values, distant_values and nsnd have none)
METRICS = [
    "common_rows",
    "authenticity",
    "identifiability",
    "median_dcr",
    "nnaa",
    "nndr",
    "dcr",
    "hitting_rate",
    "zero_cap",
    "generalized_cap",
    "attribute_inference",
    "proximity_score",
    "disclosure_identity",
    "disclosure_attribute",
]
# per-record value depends on the record and the release only: the population value is exact truth
POPULATION_TRUTH = ["common_rows", "zero_cap", "generalized_cap"]
# value interval includes the release's sampling (synthetic records as queries: its registry
# declaration samples the synthetic side): also simulated with the release redrawn in every replicate
RELEASE_SAMPLED = [m for m in METRICS if "synthetic" in get_metric(m).sampled]


def _evaluate(real, syn, seed, metrics=None, **kw):
    rep = privgate.evaluate(real, syn, metrics or METRICS, keys=KEYS, sensitive=SENSITIVE, seed=seed, **kw)
    return rep.results


def _short(method: str) -> str:
    for key, short in (
        ("effective sample size", "share at jackknife effective size"),
        ("grouped jackknife", "grouped jackknife"),
        ("Clopper", "share (Wilson / Clopper–Pearson)"),
        ("Wilson", "share (Wilson / Clopper–Pearson)"),
        ("paired", "paired bootstrap"),
        ("MOVER", "MOVER"),
        ("stratified", "two-sample bootstrap"),
        ("weighted mean", "weighted-mean bootstrap"),
        ("of the mean", "mean bootstrap"),
        ("normalises", "renormalising bootstrap"),
        ("bootstrap", "statistic bootstrap"),
    ):
        if key in method:
            return short
    return method[:30]


def value_coverage(pop: pl.DataFrame, n: int, reps: int, redraw_release: bool = False) -> list[dict]:
    """``redraw_release``: every replicate also draws a fresh release, for the metrics whose value
    interval includes the release's sampling (``RELEASE_SAMPLED``; truth = the mean over
    replicates of both draws)."""
    metrics = [m for m in METRICS if m in RELEASE_SAMPLED] if redraw_release else METRICS
    rng = np.random.default_rng(20261123 + redraw_release)
    syn = pop[np.sort(rng.choice(pop.height, n, replace=False))]
    rows: dict[str, dict[str, list]] = {m: {"value": [], "lo": [], "hi": [], "method": []} for m in metrics}
    for r in range(reps):
        real = pop[np.sort(rng.choice(pop.height, n, replace=False))]
        if redraw_release:
            syn = pop[np.sort(rng.choice(pop.height, n, replace=False))]
        for m, res in _evaluate(real, syn, seed=r, metrics=metrics).items():
            rows[m]["value"].append(res.value)
            rows[m]["lo"].append(res.ci[0] if res.ci else np.nan)
            rows[m]["hi"].append(res.ci[1] if res.ci else np.nan)
            rows[m]["method"].append(res.details["ci_method"])
    exact = (
        {
            m: res.value
            for m, res in privgate.evaluate(pop, syn, POPULATION_TRUTH, keys=KEYS, sensitive=SENSITIVE).results.items()
        }
        if POPULATION_TRUTH and not redraw_release
        else {}
    )
    out = []
    for m in metrics:
        v, lo, hi = (np.asarray(rows[m][k]) for k in ("value", "lo", "hi"))
        truth = float(v.mean())
        half = float(np.nanmean(hi - lo) / 2)
        row = {
            "metric": m,
            "method": _short(rows[m]["method"][0]),
            "truth": truth,
            "coverage": float(np.mean((lo <= truth) & (truth <= hi))),
            "width": 2 * half,
            "truth_se_share": float(v.std(ddof=1) / np.sqrt(reps) / half) if half > 0 else float("nan"),
            "se_ratio": _se_ratio(v, half),
        }
        if m in exact:
            row["exact_truth"] = exact[m]
            row["coverage_exact"] = float(np.mean((lo <= exact[m]) & (exact[m] <= hi)))
        out.append(row)
    return out


def _se_ratio(values: np.ndarray, half: float) -> float:
    """The intervals' implied standard error (mean half-width / 1.96) over the values' standard
    deviation across the replicates: about 1 for a well-calibrated interval, > 1 conservative."""
    sd = float(np.std(values, ddof=1))
    return half / 1.959964 / sd if sd > 0 else float("nan")


def excess_coverage(pop: pl.DataFrame, n: int, reps: int) -> list[dict]:
    rng = np.random.default_rng(20261124)
    rows: dict[str, dict[str, list]] = {m: {"lo": [], "hi": [], "method": [], "excess": []} for m in METRICS}
    for r in range(reps):
        idx = rng.permutation(pop.height)[: 3 * n]
        real, syn, hold = pop[idx[:n]], pop[idx[n : 2 * n]], pop[idx[2 * n :]]
        for m, res in _evaluate(real, syn, seed=r, holdout=hold, baseline=True).items():
            rows[m]["excess"].append(res.excess)
            rows[m]["lo"].append(res.excess_ci[0] if res.excess_ci else np.nan)
            rows[m]["hi"].append(res.excess_ci[1] if res.excess_ci else np.nan)
            rows[m]["method"].append(res.details["excess_ci_method"])
    out = []
    for m in METRICS:
        lo, hi = np.asarray(rows[m]["lo"]), np.asarray(rows[m]["hi"])
        out.append(
            {
                "metric": m,
                "method": _short(rows[m]["method"][0]),
                "coverage": float(np.mean((lo <= 0) & (0 <= hi))),
                "width": float(np.nanmean(hi - lo)),
                "se_ratio": _se_ratio(np.asarray(rows[m]["excess"]), float(np.nanmean(hi - lo) / 2)),
            }
        )
    return out


def _timed_gates(real, syn, holdout) -> dict:
    cfg = default_gate_config("coverage-cost")
    cpu: dict[str, list[float]] = {"without": [], "with": []}
    wall: dict[str, list[float]] = {"without": [], "with": []}
    for label in ("without", "with", "without", "with"):  # alternated: the machine's load drifts
        t, c = time.perf_counter(), time.process_time()
        if label == "without":
            with without_intervals():
                run_gate(cfg, real, syn, holdout=holdout, release_id="cost")
        else:
            run_gate(cfg, real, syn, holdout=holdout, release_id="cost")
        cpu[label].append(time.process_time() - c)
        wall[label].append(time.perf_counter() - t)
    out = {}
    for name, d in (("cpu", cpu), ("wall", wall)):
        best = {k: min(v) for k, v in d.items()}
        out[name] = (best["with"], best["without"], best["with"] / best["without"])
    return out


def cost(pop: pl.DataFrame, n: int) -> list[tuple[str, dict]]:
    """The default gate with and without intervals: n real records without a holdout, and n/2
    real records with the other n/2 as the holdout (baselines and excess intervals)."""
    real = pop.head(n)
    half = n // 2
    return [
        (f"{n:,} real records, no holdout", _timed_gates(real, baselines.noisy_copy(real, seed=1), None)),
        (
            f"{half:,} real + {n - half:,} holdout records",
            _timed_gates(real[:half], baselines.noisy_copy(real[:half], seed=1), real[half:]),
        ),
    ]


def cost_text(runs: list[tuple[str, dict]]) -> str:
    lines = [
        "Cost of the intervals: the default gate on Texas with a noisy copy as the release "
        "(python benchmarks/coverage.py --only cost; best of two alternated runs each):",
        "",
        "| inputs | CPU with / without intervals | CPU ratio | wall with / without | wall ratio |",
        "|---|---|---|---|---|",
    ]
    for label, c in runs:
        lines.append(
            f"| {label} | {c['cpu'][0]:.1f} s / {c['cpu'][1]:.1f} s | **{c['cpu'][2]:.2f}×** | "
            f"{c['wall'][0]:.1f} s / {c['wall'][1]:.1f} s | {c['wall'][2]:.2f}× |"
        )
    return "\n".join(lines)


def tables(
    values: list[dict], excess: list[dict], n: int, reps: int, redrawn: list[dict] | None = None, load: str = ""
) -> str:
    se = np.sqrt(0.95 * 0.05 / reps)
    lines = [
        f"Texas 25k population, n = {n} real and {n} synthetic records, {reps} replicates per table "
        f"(python benchmarks/coverage.py --n {n} --reps {reps}); binomial standard error of a 95 % "
        f"coverage at {reps} replicates: {se:.1%}" + (f"; {load}" if load else "") + ".",
        "",
        "Value intervals, one fixed release (truth = mean over the replicates; exact = the population value):",
        "",
        "| metric | interval | truth | coverage | mean width | interval s.e. / sd | truth s.e. / half-width "
        "| exact truth | coverage of exact |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in values:
        ex = f"{r['exact_truth']:.4f} | {r['coverage_exact']:.1%}" if "exact_truth" in r else "– | –"
        lines.append(
            f"| `{r['metric']}` | {r['method']} | {r['truth']:.4f} | {r['coverage']:.1%} | {r['width']:.4f} | "
            f"{r['se_ratio']:.2f} | {r['truth_se_share']:.2f} | {ex} |"
        )
    if redrawn:
        lines += [
            "",
            "Value intervals that include the release's sampling, the release redrawn in every replicate "
            "(truth = mean over the replicates):",
            "",
            "| metric | interval | truth | coverage | mean width | interval s.e. / sd | truth s.e. / half-width |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in redrawn:
            lines.append(
                f"| `{r['metric']}` | {r['method']} | {r['truth']:.4f} | {r['coverage']:.1%} | "
                f"{r['width']:.4f} | {r['se_ratio']:.2f} | {r['truth_se_share']:.2f} |"
            )
    lines += [
        "",
        "Excess intervals for an honest release (release and holdout exchangeable: true excess 0):",
        "",
        "| metric | excess interval | coverage of 0 | mean width | interval s.e. / sd |",
        "|---|---|---|---|---|",
    ]
    for r in excess:
        lines.append(
            f"| `{r['metric']}` | {r['method']} | {r['coverage']:.1%} | {r['width']:.4f} | {r['se_ratio']:.2f} |"
        )
    return "\n".join(lines)


def _load() -> str:
    """The machine's 1-minute load average and core count, for the record."""
    try:
        return f"machine load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end of the run"
    except OSError:
        return ""


def write_doc(tag: str, text: str) -> None:
    """Put a result into its section of docs/intervals.md."""
    sys.path.insert(0, str(ROOT / "docs"))
    from make_metrics_doc import write_section

    write_section(ROOT / "docs" / "intervals.md", tag, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--reps", type=int, default=120)
    ap.add_argument("--cost-n", type=int, default=25000)
    ap.add_argument("--only", choices=("coverage", "cost"), default=None)
    ap.add_argument("--metrics", default=None, help="comma-separated subset of the simulated metrics")
    ap.add_argument("--write-doc", action="store_true", help="write the results into docs/intervals.md")
    args = ap.parse_args()
    if args.metrics:
        chosen = [m.strip() for m in args.metrics.split(",") if m.strip()]
        unknown = sorted(set(chosen) - set(METRICS))
        if unknown:
            sys.exit(f"not simulated here: {unknown}; choose from {METRICS}")
        if args.write_doc:
            sys.exit("--write-doc writes the full tables: run it without --metrics")
        METRICS[:] = chosen
        POPULATION_TRUTH[:] = [m for m in POPULATION_TRUTH if m in chosen]
    if not DATA.exists():
        sys.exit(f"population not found at {DATA}")
    pop = pl.read_parquet(DATA)
    start = time.perf_counter()
    if args.only != "cost":
        values = value_coverage(pop, args.n, args.reps)
        print(f"value coverage: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        redrawn = (
            value_coverage(pop, args.n, args.reps, redraw_release=True)
            if any(m in RELEASE_SAMPLED for m in METRICS)
            else None
        )
        print(f"value coverage, release redrawn: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        excess = excess_coverage(pop, args.n, args.reps)
        print(f"excess coverage: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        text = tables(values, excess, args.n, args.reps, redrawn, _load())
        print(text, flush=True)
        if args.write_doc:
            write_doc("coverage", text)
    if args.only != "coverage":
        text = cost_text(cost(pop, args.cost_n))
        print(text)
        if args.write_doc:
            write_doc("cost", text)


if __name__ == "__main__":
    main()
