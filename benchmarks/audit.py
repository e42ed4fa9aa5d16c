"""The generator audit's soundness, power and cost, measured.

Soundness and tightness: audits of mechanisms of exactly known ε (privgate.audit.mechanisms:
the Laplace histogram over a public domain at several ε and both releases, randomized response
on the cells' occupancy, the Gaussian mechanism at δ = 10⁻⁵) with the claim set to the true ε,
per design (the default — no flag —, the canaries design with one look, the shared design); the
audit's lower bound may exceed the claim in at most 5 % of audits (1 − confidence), and the
median bound / ε says how tight a design is.
Fits: with no flag but the claim, the fits and wall time to prove DataSynthesizer's
domain-from-data fault, and a correct DP generator's (no false alarm).
Power: a mechanism with noise 10× too small (claim 1, true ε 10), the same mechanism with its
domain taken from the private data (not DP), and generators that publish their training records
(exactly, or with small noise): how often the bound exceeds the claim, and the bound and AUC
they reach.
Cost: a generator that takes 0.5 s of CPU to fit and sample 1,000 rows, audited with 200 runs
in one process and on two worker processes; the audit's own seconds as a share of the
generator's, and the two-worker speed-up as a ratio measured in the same run.

Data: four columns of the bundled Adult sample (age binned on public edges, sex, race, income:
200 cells), the population the training sets are drawn from.

    python benchmarks/audit.py --quick             # a reduced soundness run and one seed of fits: minutes
    python benchmarks/audit.py --part soundness --audits 100      # appends to benchmarks/audit_soundness.jsonl
    python benchmarks/audit.py --part soundness --summarise       # the table of what is measured so far
    python benchmarks/audit.py --part soundness --shard 0/2 --out a.jsonl &   # two processes, then
    python benchmarks/audit.py --part soundness --shard 1/2 --out b.jsonl     # --summarise --out a.jsonl,b.jsonl
    python benchmarks/audit.py --part fits --audits 3
    python benchmarks/audit.py --part power --audits 50
    python benchmarks/audit.py --part cost
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PRIVGATE_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from privgate.audit import audit_generator  # noqa: E402
from privgate.audit.mechanisms import LaplaceHistogram, TrainingCopy  # noqa: E402
from privgate.data import load_example  # noqa: E402

COLUMNS = ["age", "sex", "race", "income"]
AGE_EDGES = [17, 25, 30, 35, 40, 45, 50, 55, 60, 70, 91]


def population() -> pl.DataFrame:
    return load_example().select(COLUMNS)


def public_domain(pop: pl.DataFrame) -> dict:
    """The cells a data owner would publish without looking at the records: age on fixed edges,
    the categorical columns' documented levels (here: those of the whole sample)."""
    dom = {c: sorted(pop[c].unique().to_list()) for c in COLUMNS if c != "age"}
    dom["age"] = AGE_EDGES
    return dom


def run_audit(generate, pop, *, seed: int, runs: int | None, claimed: float, training_rows: int = 1000, **kw):
    if runs is not None:
        kw["runs"] = runs
    return audit_generator(
        generate, pop, training_rows=training_rows, claimed_epsilon=claimed, seed=seed, workers=1, threads=1, **kw
    )


#: the soundness rows: (name, generator factory, true ε the claim is set to, δ of the claim)
def soundness_rows(dom: dict) -> list[tuple[str, object, float, float]]:
    from privgate.audit.mechanisms import GaussianHistogram, RandomizedResponse

    gauss = GaussianHistogram(1.0, dom, release="rounded")
    return [
        ("Laplace histogram, rounded, ε 0.5", LaplaceHistogram(0.5, dom, release="rounded"), 0.5, 0.0),
        ("Laplace histogram, rounded, ε 1", LaplaceHistogram(1.0, dom, release="rounded"), 1.0, 0.0),
        ("Laplace histogram, rounded, ε 2", LaplaceHistogram(2.0, dom, release="rounded"), 2.0, 0.0),
        ("Laplace histogram, rounded, ε 4", LaplaceHistogram(4.0, dom, release="rounded"), 4.0, 0.0),
        ("Laplace histogram, 1,000 sampled, ε 1", LaplaceHistogram(1.0, dom, release="sampled"), 1.0, 0.0),
        ("randomized response on cells, ε 1", RandomizedResponse(1.0, dom), 1.0, 0.0),
        ("randomized response on cells, ε 2", RandomizedResponse(2.0, dom), 2.0, 0.0),
        ("Gaussian σ 1, δ 1e-5 (ε(δ) 4.38)", gauss, float(gauss.epsilon_at(1e-5)), 1e-5),
    ]


#: the designs measured: name → audit_generator keywords (the default: no keyword at all)
SOUNDNESS_DESIGNS = {
    "default": {},
    "canaries, one look": {"design": "canaries", "looks": None},
    "shared": {"design": "shared", "looks": None},
}


def soundness(
    audits: int,
    runs: int,
    designs: list[str],
    out: Path,
    first_seed: int = 1000,
    shard: tuple[int, int] = (0, 1),
    only: list[int] | None = None,
) -> None:
    """Audits of mechanisms of exactly known ε, the claim set to the true ε, round-robin over the
    rows (seed by seed) so that a stopped measurement has every row at about the same count; one
    JSON line per audit appended to ``out`` (a restart skips the (row, design, seed) done).
    ``shard`` (i, n): only the seeds whose offset is i modulo n, so that n processes (one thread
    each, their own ``out`` files) share the measurement; ``only``: these rows of
    :func:`soundness_rows` (by position), all when None."""
    import json

    pop = population()
    rows = soundness_rows(public_domain(pop))
    if only is not None:
        rows = [rows[i] for i in only]
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            d = json.loads(line)
            done.add((d["row"], d["design"], d["seed"]))
    for i in range(shard[0], audits, shard[1]):
        seed = first_seed + i
        for design in designs:
            for name, gen, eps, delta in rows:
                if (name, design, seed) in done:
                    continue
                if SOUNDNESS_DESIGNS[design].get("design") == "canaries" and delta > 0:
                    continue  # the canaries design bounds pure ε only
                start = time.perf_counter()
                r = run_audit(gen, pop, seed=seed, runs=runs, claimed=eps, delta=delta, **SOUNDNESS_DESIGNS[design])
                seq = r.design.get("sequential") or {}
                made = seq.get("stopped_after_runs", r.cost["runs"])
                with out.open("a") as f:
                    f.write(
                        json.dumps(
                            {
                                "row": name,
                                "design": design,
                                "design_used": r.design["design"],
                                "seed": seed,
                                "epsilon": eps,
                                "delta": delta,
                                "bound": r.epsilon_lower,
                                "provable": r.epsilon_provable,
                                "fits": int(made + r.cost["preflight_runs"]),
                                "runs": runs,
                                "seconds": time.perf_counter() - start,
                            }
                        )
                        + "\n"
                    )
        print(f"soundness: seed {seed} done", flush=True)


def summarise_soundness(out: Path) -> None:
    """The table of the JSON lines in ``out``: per row and design, the audits, how many bounds
    exceeded the true ε (allowed: 5 %), the median bound / ε, the largest bound, fits."""
    import json

    recs = [json.loads(line) for f in str(out).split(",") for line in Path(f).read_text().splitlines()]
    groups: dict[tuple[str, str], list[dict]] = {}
    for d in recs:
        groups.setdefault((d["design"], d["row"]), []).append(d)
    print(
        "| design | mechanism (claim = true ε) | audits | bound > ε | median bound | median / ε | largest | "
        "median fits | s an audit |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (design, row), ds in sorted(groups.items()):
        b = np.array([d["bound"] for d in ds])
        eps = ds[0]["epsilon"]
        k = int((b > eps).sum())
        used = ds[0]["design_used"]
        print(
            f"| {design}{'' if used in design else f' ({used})'} | {row} | {len(ds)} | {k} / {len(ds)} "
            f"({k / len(ds):.1%}) | {np.median(b):.3f} | {np.median(b) / eps:.2f} | {b.max():.3f} | "
            f"{int(np.median([d['fits'] for d in ds]))} | {np.mean([d['seconds'] for d in ds]):.1f} |"
        )


#: five categorical Adult columns for the DataSynthesizer rows of ``fits``
DS_COLUMNS = ["workclass", "education", "marital_status", "race", "income"]


def fits(audits: int, only: list[int] | None = None) -> None:
    """With no flag but the claim (the default design, sequential by default): the fits and wall
    time a real fault takes to prove — DataSynthesizer's PrivBayes reading its domain from the
    data, the Laplace histogram doing the same — and what correct DP generators cost, with no
    false alarm: PrivBayes over a public domain and the exact Laplace histogram. Claim ε = 1;
    fits are the generator runs made plus the preflight run. ``only``: these rows (by position:
    DataSynthesizer from the data, DataSynthesizer public, Laplace from the data, Laplace public)."""
    pop = population()
    dom = public_domain(pop)
    rows: list[tuple[str, object, pl.DataFrame]] = [
        (
            "Laplace histogram, domain from the data (not DP)",
            LaplaceHistogram(1.0, None, release="rounded", domain_from_data=True),
            pop,
        ),
        ("Laplace histogram, public domain (exactly 1-DP)", LaplaceHistogram(1.0, dom, release="rounded"), pop),
    ]
    try:
        from privgate.audit.generators.datasynthesizer import PrivBayesGenerator

        adult = load_example().select(DS_COLUMNS).drop_nulls()
        ds_dom = {c: adult[c].unique().sort().to_list() for c in DS_COLUMNS}
        PrivBayesGenerator(1.0)(adult.head(50), 5, 0)  # the library is installed (else ImportError)
        rows = [
            ("DataSynthesizer PrivBayes, domain from the data", PrivBayesGenerator(1.0), adult),
            ("DataSynthesizer PrivBayes, public domain", PrivBayesGenerator(1.0, domain=ds_dom), adult),
        ] + rows
    except ImportError as exc:
        print(f"(DataSynthesizer rows skipped: {exc})")
    if only is not None:
        rows = [rows[i] for i in only if i < len(rows)]
    print(f"\n## fits: claim ε = 1, no flag but the claim, {audits} seed(s) per row")
    print("| generator | seed | violation | ε lower | fits | wall s | evidence |")
    print("|---|---|---|---|---|---|---|")
    for name, gen, data in rows:
        for seed in range(audits):
            start = time.perf_counter()
            r = audit_generator(gen, data, claimed_epsilon=1.0, seed=seed, workers=1, threads=1)
            wall = time.perf_counter() - start
            seq = r.design.get("sequential") or {}
            made = seq.get("stopped_after_runs", r.cost["runs"]) + r.cost["preflight_runs"]
            best = r.best or {}
            print(
                f"| {name} | {seed} | {r.violation} | {r.epsilon_lower:.3f} | {made} | {wall:.1f} | "
                f"{best.get('target', '-')}, {best.get('attack', '-')} |",
                flush=True,
            )


def power(audits: int, runs: int) -> None:
    pop = population()
    dom = public_domain(pop)
    print(f"\n## power: {audits} audits per row, {runs} runs each (claim 1 unless stated)")
    print(f"{'generator':44s} {'caught':>8s} {'rate':>6s} {'mean bound':>11s} {'min bound':>10s} {'AUC best':>9s}")
    rows = [
        (
            "noise 10x too small, rounded (true ε 10)",
            LaplaceHistogram(1.0, dom, release="rounded", noise_factor=0.1),
            runs,
        ),
        (
            "noise 10x too small, sampled (true ε 10)",
            LaplaceHistogram(1.0, dom, release="sampled", noise_factor=0.1),
            runs,
        ),
        (
            "domain from private data (not DP)",
            LaplaceHistogram(1.0, None, release="rounded", domain_from_data=True),
            runs,
        ),
        ("training copy (ε = ∞)", TrainingCopy(), 2 * runs),
        ("training copy + 5 % noise (ε = ∞)", TrainingCopy(noise=0.05), 2 * runs),
    ]
    for name, gen, n_runs in rows:
        bounds, aucs = [], []
        for i in range(audits):
            r = run_audit(gen, pop, seed=2000 + i, runs=n_runs, claimed=1.0, design="shared", looks=None)
            bounds.append(r.epsilon_lower)
            best = r.best or {}
            t = next((t for t in r.targets if t["target"] == best.get("target")), None)
            aucs.append(t["attacks"][best["attack"]]["auc"] if t else float("nan"))
        b = np.array(bounds)
        k = int((b > 1.0).sum())
        print(
            f"{name + f' [{n_runs} runs]':44s} {k:5d}/{audits:<3d} {k / audits:6.2f} {b.mean():11.3f} {b.min():10.3f} "
            f"{np.nanmean(aucs):9.3f}",
            flush=True,
        )


class HalfSecondGenerator:
    """Fits for 0.5 s of CPU, then samples n_rows records from independent marginals."""

    def __call__(self, training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
        start = time.process_time()
        x = 0.0
        while time.process_time() - start < 0.5:
            x += sum(range(1000))
        rng = np.random.default_rng(seed)
        return pl.DataFrame(
            {c: training[c].to_numpy()[rng.integers(0, training.height, n_rows)] for c in training.columns}
        ).cast(dict(training.schema))


def cost(runs: int) -> None:
    pop = population()
    print(f"\n## cost: a 0.5 s generator, 1,000 training rows, {runs} runs")
    out = {}
    for workers in (1, 2):
        start = time.perf_counter()
        r = audit_generator(
            HalfSecondGenerator(),
            pop,
            runs=runs,
            training_rows=1000,
            seed=0,
            workers=workers,
            threads=2,
            design="shared",
        )
        wall = time.perf_counter() - start
        c = r.cost
        own = c["seconds_features_total"] + c["seconds_analysis"] + c["seconds_prepare"]
        out[workers] = wall
        print(
            f"workers {workers}: wall {wall:7.1f} s; generator {c['seconds_generate_total']:7.1f} s "
            f"({c['seconds_generate_mean']:.3f} s/run); audit's own work {own:6.1f} s = "
            f"{own / c['seconds_generate_total']:.3f} of the generator's time",
            flush=True,
        )
    print(f"two workers / one: {out[1] / out[2]:.2f}x faster (same run, same machine)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["soundness", "fits", "power", "cost", "all"], default="all")
    ap.add_argument("--audits", type=int, default=None, help="audits per row (soundness 100, fits 3, power 50)")
    ap.add_argument("--runs", type=int, default=None, help="runs per audit (default: the audit's own, 200)")
    ap.add_argument("--designs", default="default", help=f"soundness: comma-separated, of {list(SOUNDNESS_DESIGNS)}")
    ap.add_argument(
        "--out",
        default="benchmarks/audit_soundness.jsonl",
        help="soundness: the JSON lines file audits are appended to (a restart goes on from it)",
    )
    ap.add_argument(
        "--summarise",
        action="store_true",
        help="soundness: only print the table of --out (comma-separated files: every shard's)",
    )
    ap.add_argument(
        "--rows",
        default=None,
        help="soundness and fits: comma-separated positions of the rows to measure (default: every row)",
    )
    ap.add_argument(
        "--shard",
        default="0/1",
        help="soundness: i/n — this process makes the seeds i, i + n, … (run n processes, each "
        "with its own --out, and summarise them together)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a reduced run in a few minutes: 2 audits per soundness row at 40 runs, 1 seed of fits",
    )
    a = ap.parse_args()
    out = Path(a.out)
    if a.summarise:
        summarise_soundness(out)
        return
    if a.quick:
        out = Path(a.out if a.out != ap.get_default("out") else "/tmp/privgate_audit_soundness_quick.jsonl")
        out.unlink(missing_ok=True)
    if a.part in ("soundness", "all"):
        designs = [d.strip() for d in a.designs.split(",") if d.strip()]
        i, n = (int(v) for v in a.shard.split("/"))
        soundness(
            a.audits or (2 if a.quick else 100),
            40 if a.quick else a.runs,
            designs,
            out,
            shard=(i, n),
            only=None if a.rows is None else [int(v) for v in a.rows.split(",")],
        )
        summarise_soundness(out)
    if a.part in ("fits", "all"):
        fits(a.audits or (1 if a.quick else 3), only=None if a.rows is None else [int(v) for v in a.rows.split(",")])
    if a.part in ("power", "all") and not a.quick:
        power(a.audits or 50, a.runs or 200)
    if a.part in ("cost", "all") and not a.quick:
        cost(a.runs or 200)


if __name__ == "__main__":
    main()
