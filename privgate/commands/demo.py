"""``privgate demo``: three releases of the bundled Adult sample, gated, recorded and reported.

1. ``release-1-marginals``: every column drawn independently from the real marginals
   (``privgate.baselines.independent_marginals``) — no record survives: **pass**.
2. ``release-2-leaky``: the same kind of release in which 0.5 % of the rows were replaced by exact
   copies of real records (``privgate.baselines.copy``) — a generator that memorised a few
   people: **warn** (exact copies; the memorisation test's 95 % lower bound of the memorised
   share is above 0 but not above 1 %; and a rise against release 1).
3. ``release-3-noisy-copy``: every real record with a little noise
   (``privgate.baselines.noisy_copy``) — a memorising generator: **block** (memorisation's
   lower bound ≈ 0.59, hitting_rate, excess of the authenticity family).

All three are gated with the shipped default configuration and the bundled holdout (real people
not in the sample), the runs are recorded in ``<out>/history.sqlite`` (started afresh on every
demo run) and an HTML and a JSON report per release are written to ``<out>/reports/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

DATASET = "adult-demo"
EXPECTED = {"release-1-marginals": "pass", "release-2-leaky": "warn", "release-3-noisy-copy": "block"}
LEAK_SHARE = 0.005


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "demo",
        help="gate three example releases (pass, warn, block) and write reports + history",
        description="Make three synthetic releases of the bundled Adult example with privgate.baselines "
        "(one that passes, one that warns, one that is blocked), gate them with the default "
        "configuration, record the runs in a local SQLite history and write HTML and JSON "
        "reports.",
    )
    p.add_argument("--out", default="privgate-demo", help="output folder (default: ./privgate-demo)")
    p.add_argument("--seed", type=int, default=0, help="seed of the releases (default 0)")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    p.add_argument(
        "--wide", action="store_true", help="every column of the decision tables (default: tables that fit 100 columns)"
    )
    return p


def make_releases(real: pl.DataFrame, seed: int = 0) -> dict[str, pl.DataFrame]:
    """The demo's three releases of ``real`` (deterministic given ``seed``)."""
    from .. import baselines

    marginals = baselines.independent_marginals(real, seed=seed + 1)
    leaky = baselines.independent_marginals(real, seed=seed + 2)
    rng = np.random.default_rng(seed + 3)
    k = max(1, int(round(LEAK_SHARE * real.height)))
    copied = np.sort(rng.choice(real.height, k, replace=False))
    keep = np.ones(leaky.height, dtype=bool)
    keep[np.sort(rng.choice(leaky.height, k, replace=False))] = False
    leaky = pl.concat([leaky.filter(pl.Series(keep)), baselines.copy(real)[copied]])
    noisy = baselines.noisy_copy(real, seed=seed + 4)
    return {"release-1-marginals": marginals, "release-2-leaky": leaky, "release-3-noisy-copy": noisy}


def run(args: argparse.Namespace) -> int:
    from ..data import example_path, load_example
    from ..gates import DEFAULT_CONFIG_PATH, default_gate_config
    from ..history import HistoryStore

    reports, releases_dir, db = _fresh_output(Path(args.out))

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    real_path, holdout_path = example_path("adult_sample"), example_path("adult_holdout")
    real = load_example("adult_sample")
    say(f"Real data: {real_path.name} ({real.height} rows of UCI Adult, CC BY 4.0); holdout: {holdout_path.name}")
    cfg = default_gate_config(DATASET)
    say(
        f"Gating {len(EXPECTED)} releases with {DEFAULT_CONFIG_PATH.name} and the holdout; each metric is "
        "named as it starts"
    )
    history = HistoryStore(db)
    summary = []
    for release_id, frame in make_releases(real, seed=args.seed).items():
        rel_path = releases_dir / f"{release_id}.parquet"
        frame.write_parquet(rel_path)
        say(f"\n=== {release_id} ===")
        summary.append(_gate_release(cfg, real_path, rel_path, holdout_path, release_id, history, reports, args))
    history.close()

    _print_summary(summary, reports, releases_dir, db, real_path, holdout_path)
    unexpected = [(r, d) for r, d, *_ in summary if EXPECTED[r] != d]
    if unexpected:
        print(f"\nnote: unexpected decisions {unexpected}; expected {EXPECTED}", file=sys.stderr)
        return 1
    return 0


def _fresh_output(out: Path) -> tuple[Path, Path, Path]:
    """(reports folder, releases folder, history file) under ``out``: folders made, history removed."""
    reports = out / "reports"
    releases_dir = out / "releases"
    reports.mkdir(parents=True, exist_ok=True)
    releases_dir.mkdir(parents=True, exist_ok=True)
    db = out / "history.sqlite"
    for suffix in ("", "-wal", "-shm", "-journal"):  # the demo starts its own history afresh
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return reports, releases_dir, db


def _gate_release(
    cfg: Any,
    real_path: Path,
    rel_path: Path,
    holdout_path: Path,
    release_id: str,
    history: Any,
    reports: Path,
    args: argparse.Namespace,
) -> tuple[str, str, int, Path, Path]:
    """Gate one release, record it and write its reports: (id, decision, exit code, HTML, JSON)."""
    from ..gates import run_gate
    from .gate import finish

    outcome = run_gate(
        cfg,
        real_path,
        rel_path,
        holdout=holdout_path,
        release_id=release_id,
        history=history,
        record=False,
        progress=None if args.quiet else True,
    )
    html, js = reports / f"{release_id}.html", reports / f"{release_id}.json"
    finish(outcome, history, html=str(html), json_path=str(js))  # as `privgate gate` does
    if not args.quiet:
        print(outcome.table(compact=not args.wide), file=sys.stderr)
    return release_id, str(outcome.decision), outcome.exit_code, html, js


def _print_summary(
    summary: list[tuple[str, str, int, Path, Path]],
    reports: Path,
    releases_dir: Path,
    db: Path,
    real_path: Path,
    holdout_path: Path,
) -> None:
    """Each release's decision and report, where the outputs are, and the commands to go on with."""
    from ..gates import DEFAULT_CONFIG_PATH

    print(f"\nprivgate demo: three releases of the bundled Adult sample, gated with {DEFAULT_CONFIG_PATH.name}\n")
    width = max(len(r[0]) for r in summary)
    for release_id, decision, code, html, _ in summary:
        print(f"  {release_id.ljust(width)}  {decision.upper():5s}  exit {code}  {html}")
    print(f"\nHTML and JSON reports: {reports}/")
    print(f"Releases (Parquet):    {releases_dir}/")
    print(f"Score history:         {db}")
    print(f"  privgate history --history {db} --dataset {DATASET}")
    print(
        f"  privgate gate --history {db} --dataset {DATASET} \\\n"
        f"    --real {real_path} \\\n    --holdout {holdout_path} \\\n"
        f"    --synthetic {releases_dir / 'release-3-noisy-copy.parquet'} --release-id again"
    )
