"""Validity benchmark: does the shipped default gate catch a generator that memorises a few
percent of its training records, and leave honest releases alone?

For each dataset and seed: the real records are split (seeded, disjoint) into a training set, a
holdout given to the gate, and a pool of fresh non-members (people in neither). A Gaussian copula
(``benchmarks/_copula.py``) fitted on the training set makes the base release (as many records as
the training set). Releases:

* honest: ``copula`` (the base), ``marginals`` (independent marginals of the training set),
  ``non-members`` (fresh real people who were not trained on — a perfect generator's output),
  ``dp ε=1`` and ``dp ε=4`` (``benchmarks/_dp.py``: an ε-differentially private Chow–Liu tree
  of noisy marginals, its domain read from the whole data file as public metadata);
* leaks: the base with p % of its rows replaced by exact training records (``copy``), training
  records with 5 % noise on numerics (Gaussian, sd = 0.05 × the training column's sd, integers
  rounded; ``noisy``), or fresh non-members (``non-member``: an honest change).

Every release is gated with the default configuration and the holdout (``decide`` on the metrics
the configuration runs with a holdout; trend rules have no history here and are skipped). The
holdout baseline of a metric depends only on the training set, the holdout and the seed, so it is
computed once per seed; each release gets one evaluation context that shares the real→real
searches of its seed. Printed per dataset and release kind: the share of seeds the gate flagged
(warn or block) and blocked; memorisation's own rates (lower bound > 0, Holm p < 0.01, estimate
> 0), its mean estimate and, where the memorised share is known (exact copies: p; honest: 0), how
often its 95 % interval covered it; and, for contrast, how often a plain whole-release
nearer-training-vs-nearer-holdout binomial test (ties half) gives p < 0.01. Finally a
reachability check: a copy of the training set must fire every threshold, baseline and test limit
of the default configuration (with and without a holdout).

Disguised copies (``--disguises``): copies of the training set whose category labels were
permuted, renamed, split or merged (``privgate.baselines.disguised_copy``) must all be blocked.

Run small first:  python3 benchmarks/validity.py --datasets bundled --seeds 3 --shares 1
Full:             python3 benchmarks/validity.py --seeds 20
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _dp  # noqa: E402
from _copula import fit_sample  # noqa: E402

from privgate import baselines  # noqa: E402
from privgate.catalogue import get_metric  # noqa: E402
from privgate.context import EvaluationContext  # noqa: E402
from privgate.data import load_example  # noqa: E402
from privgate.errors import PrivgateError  # noqa: E402
from privgate.gates import GateConfig, decide, decision_of, default_gate_config  # noqa: E402
from privgate.metrics.memorisation import side_counts  # noqa: E402
from privgate.registry import run_spec
from privgate.stats import binomial_test  # noqa: E402

SHARED = Path("/work/shared/data")
DATASETS = {"bundled": None, "adult": "adult.parquet", "texas": "texas_25k.parquet"}
HONEST = ("copula", "marginals", "non-members", "dp ε=1", "dp ε=4")
DP_EPSILONS = (1.0, 4.0)
LEAKS = ("copy", "noisy", "non-member")


def split(name: str, n: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(training, holdout, fresh non-members), disjoint, drawn with ``seed``."""
    rng = np.random.default_rng(10_000 + seed)
    if DATASETS[name] is None:  # the bundled sample is the training set; its holdout is split in two
        hold = load_example("adult_holdout")
        idx = rng.permutation(hold.height)
        half = hold.height // 2
        return load_example("adult_sample"), hold[np.sort(idx[:half])], hold[np.sort(idx[half:])]
    data = pl.read_parquet(SHARED / DATASETS[name])
    if data.height < 3 * n:
        raise SystemExit(f"{name}: {data.height} rows, fewer than 3 × {n} (training, holdout, non-members)")
    idx = rng.permutation(data.height)
    return tuple(data[np.sort(idx[i * n : (i + 1) * n])] for i in range(3))  # type: ignore[return-value]


def public_domain(name: str) -> list:
    """The DP generator's public discretisation: from the whole data file (bundled: the sample
    and its holdout), never from one seed's training set."""
    if DATASETS[name] is None:
        return _dp.public_domain(pl.concat([load_example("adult_sample"), load_example("adult_holdout")]))
    return _dp.public_domain(pl.read_parquet(SHARED / DATASETS[name]))


def noisy(rows: pl.DataFrame, train: pl.DataFrame, seed: int, noise: float = 0.05) -> pl.DataFrame:
    """The rows with Gaussian noise of ``noise`` × the training column's sd on numerics."""
    rng = np.random.default_rng(seed)
    cols = []
    for c in rows.columns:
        s = rows[c]
        if s.dtype.is_numeric():
            sd = float(np.nanstd(train[c].cast(pl.Float64).to_numpy()))
            v = s.cast(pl.Float64).to_numpy() + rng.normal(0.0, noise * sd, rows.height)
            out = pl.Series(c, v).fill_nan(None)
            cols.append((out.round(0) if s.dtype.is_integer() else out).cast(s.dtype, strict=False))
        else:
            cols.append(s)
    return pl.DataFrame(cols)


def inject(base: pl.DataFrame, rows: pl.DataFrame, seed: int) -> pl.DataFrame:
    """``base`` with as many of its rows as ``rows`` has replaced by them (positions seeded)."""
    rng = np.random.default_rng(seed)
    drop = rng.choice(base.height, rows.height, replace=False)
    keep = np.ones(base.height, dtype=bool)
    keep[drop] = False
    return pl.concat([base.filter(pl.Series(keep)), rows.select(base.columns).cast(base.schema)])


def releases(
    train, fresh, n_release: int, shares: list[float], seed: int, domain: list | None = None, disguises: bool = False
) -> dict[str, tuple[pl.DataFrame, float | None]]:
    """name → (release, known memorised share or None); the DP releases need the public
    ``domain``; ``disguises``: also copies of the training set with disguised category labels
    (``privgate.baselines.disguised_copy``: every column, every other column, with 0.1 % noise on
    numerics, with one junk label per column)."""
    rng = np.random.default_rng(seed)
    base = fit_sample(train, n_release, seed)
    out: dict[str, tuple[pl.DataFrame, float | None]] = {
        "copula": (base, None),  # a generator fitted on the training data: share unknown (≈ 0)
        "marginals": (baselines.independent_marginals(train, seed=seed + 1, n=n_release), None),
        "non-members": (fresh, 0.0),
    }
    if domain is not None:  # ε-DP: no record can be memorised beyond what ε allows (share ≈ 0)
        for eps in DP_EPSILONS:
            out[f"dp ε={eps:g}"] = (_dp.fit_sample(train, n_release, eps, seed, domain), None)
    for p in shares:
        k = max(1, int(round(p / 100 * n_release)))
        copies = train[np.sort(rng.choice(train.height, k, replace=False))]
        out[f"copy {p:g}%"] = (inject(base, copies, seed + 2), k / n_release)
        out[f"noisy {p:g}%"] = (inject(base, noisy(copies, train, seed + 3), seed + 2), None)
        others = fresh[np.sort(rng.choice(fresh.height, min(k, fresh.height), replace=False))]
        out[f"non-member {p:g}%"] = (inject(base, others, seed + 2), None)
    if disguises:
        for kind in baselines.DISGUISES:
            out[f"disguised {kind}"] = (baselines.disguised_copy(train, kind, seed), 1.0)
            out[f"disguised {kind} /2 +noise"] = (
                baselines.disguised_copy(train, kind, seed, every=2, noise=0.001),
                None,
            )
            out[f"disguised {kind} +junk"] = (baselines.disguised_copy(train, kind, seed, junk=1), None)
    return out


class Gate:
    """The default configuration's metrics on one seed's training set and holdout."""

    def __init__(self, train, hold, seed: int, has_holdout: bool = True, only: str | None = None) -> None:
        self.cfg = default_gate_config()
        if only:  # e.g. the memorisation rules alone (a cheaper run)
            self.cfg = GateConfig(**{**self.cfg.__dict__, "metrics": {only: self.cfg.metrics[only]}})
        self.train, self.hold, self.seed, self.has_holdout = train, hold, seed, has_holdout
        self.names = self.cfg.metrics_for(has_holdout)
        self.params = self.cfg.params()
        self.shared: dict | None = None
        self.baseline: dict[str, float] | None = None

    def context(self, release) -> EvaluationContext:
        ctx = EvaluationContext(
            self.train, release, holdout=self.hold if self.has_holdout else None, seed=self.seed, _shared=self.shared
        )
        self.shared = ctx._shared  # real→real searches computed once per seed
        return ctx

    def run(self, release):
        ctx = self.context(release)
        if self.has_holdout and self.baseline is None:
            bctx = ctx.holdout_baseline()
            self.baseline = {
                n: run_spec(get_metric(n), bctx, self.params.get(n, {})).value
                for n in self.names
                if not get_metric(n).self_controlled
            }
        results, errors = {}, {}
        for n in self.names:
            try:
                res = run_spec(get_metric(n), ctx, self.params.get(n, {}))
            except PrivgateError as exc:
                errors[n] = f"{type(exc).__name__}: {exc}"
                continue
            if self.has_holdout and n in self.baseline:
                res.with_baseline(self.baseline[n])
            results[n] = res
        checks = decide(self.cfg, results, errors, has_holdout=self.has_holdout)
        return decision_of(checks)[0].value, checks, results, ctx


def whole_release_p(ctx) -> float:
    """The plain test: nearer to training than to holdout (ties half) over the whole release,
    Bin(m, 1/2) one-sided — what detects population-level tilts (equal sizes only)."""
    d_t = ctx.neighbours("mixed", "synthetic", "real", 1).dist[:, 0]
    d_h = ctx.neighbours("mixed", "synthetic", "holdout", 1).dist[:, 0]
    a, _ = side_counts(d_t, d_h, 1.0)
    return binomial_test(math.floor(a.sum() + 0.5), d_t.size, 0.5)


def reachability(name: str, n: int) -> list[str]:
    """Rules a copy of the training set does NOT fire (should be none)."""
    train, hold, _ = split(name, n, 0)
    missed = []
    for has_holdout in (True, False):
        gate = Gate(train, hold, 0, has_holdout)
        _, checks, _, _ = gate.run(train.clone())
        for c in checks:
            if c.rule in ("threshold", "baseline", "test") and c.verdict == "pass":
                missed.append(
                    f"{'with' if has_holdout else 'without'} holdout: {c.metric} {c.rule} "
                    f"{c.severity} {c.threshold:g} ({c.message})"
                )
            if c.rule == "error" and not c.skipped:
                missed.append(f"{'with' if has_holdout else 'without'} holdout: {c.metric} error: {c.message}")
    return missed


def pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="bundled,adult,texas", help="comma list of bundled, adult, texas")
    ap.add_argument("--seeds", type=int, default=20, help="seeds per dataset (default 20)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=5000, help="training = holdout = release size for the shared data")
    ap.add_argument("--shares", default="0.5,1,2,5", help="leak shares in percent")
    ap.add_argument("--no-reachability", action="store_true")
    ap.add_argument(
        "--disguises", action="store_true", help="also gate copies of the training set with disguised category labels"
    )
    ap.add_argument("--only", default=None, help="gate with one metric's rules only (e.g. memorisation: cheaper)")
    args = ap.parse_args(argv)
    shares = [float(x) for x in args.shares.split(",") if x]
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in names:
        if d not in DATASETS:
            raise SystemExit(f"unknown dataset {d!r}; choose from {', '.join(DATASETS)}")
    print(
        f"validity benchmark: datasets {names}, seeds {args.first_seed}..{args.first_seed + args.seeds - 1}, "
        f"n = {args.n} (bundled: 3000 training, 1500 holdout, 1500 non-members), leak shares {shares} %"
        + (
            f", gate = the default configuration's {args.only} rules only"
            if args.only
            else ", gate = the default configuration"
        )
    )
    for name in names:
        start = time.perf_counter()
        domain = public_domain(name)
        stats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            train, hold, fresh = split(name, args.n, seed)
            gate = Gate(train, hold, seed, only=args.only)
            for kind, (rel, truth) in releases(
                train, fresh, train.height, shares, seed, domain, args.disguises
            ).items():
                s = stats[kind]
                try:
                    decision, checks, results, ctx = gate.run(rel)
                except PrivgateError:  # refused before any metric (a relabelled codebook): the gate blocks
                    s["flag"].append(True)
                    s["block"].append(True)
                    s["fired:refused"].append(1.0)
                    continue
                s["flag"].append(decision != "pass")
                s["block"].append(decision == "block")
                mem = results.get("memorisation")
                if mem is not None:
                    s["lower"].append(mem.ci[0] > 0)
                    s["test"].append(mem.p_value < 0.01)
                    s["estimate>0"].append(mem.value > 0)
                    s["estimate"].append(mem.value)
                    if truth is not None:
                        s["covered"].append(mem.ci[0] - 1e-12 <= truth <= mem.ci[1] + 1e-12)
                if train.height == hold.height:
                    s["whole"].append(whole_release_p(ctx) < 0.01)
                fired = sorted({c.metric for c in checks if c.verdict != "pass"})
                for m in fired:
                    s[f"fired:{m}"].append(1.0)
            print(f"  [{name}] seed {seed} done ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
        n_seeds = args.seeds
        print(f"\n## {name}  ({n_seeds} seeds, {time.perf_counter() - start:.0f} s)")
        print(
            "release               gate flag%  block%   mem lower>0%  p<0.01%  est>0%  mean est  covered%  "
            "whole-release p<0.01%  rules that fired (seeds)"
        )
        for kind, s in stats.items():
            mean = lambda k: float(np.mean(s[k])) if s[k] else float("nan")  # noqa: E731
            fired = ", ".join(f"{k[6:]} {len(v)}" for k, v in sorted(s.items()) if k.startswith("fired:"))
            cov = pct(mean("covered")) if s["covered"] else "    -"
            whole = pct(mean("whole")) if s["whole"] else "    -"
            print(
                f"{kind:20s}  {pct(mean('flag'))}      {pct(mean('block'))}    {pct(mean('lower'))}"
                f"         {pct(mean('test'))}   {pct(mean('estimate>0'))}  {mean('estimate'):8.4f}  {cov}"
                f"     {whole}                  {fired}"
            )
        if not args.no_reachability and not args.only:
            missed = reachability(name, args.n)
            print(
                "reachability (a copy of the training set): "
                + (
                    "every threshold, baseline and test limit fires"
                    if not missed
                    else "NOT REACHED:\n  " + "\n  ".join(missed)
                )
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
