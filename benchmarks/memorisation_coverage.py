"""What memorisation's value and interval estimate: coverage of the planted share and of the
detectably memorised share, for releases with exact and with noisy copies of training records.

For each seed: the data are split into a training set, a holdout and fresh non-members
(``validity.split``); the release is a Gaussian copula of the training set with p % of its rows
replaced by exact training records (``copy``) or by training records with Gaussian noise of
0.05 × the column's sd on numerics (``noisy``; ``validity.noisy``). Printed per kind and share:
how often memorisation's 95 % interval contains

* the **planted** share p (the nominal memorised share), and
* the **detectable** share: the planted records that are training-side by the metric's own rule
  (d_T < ratio · d_H in the mixed space, ``ratio`` 0.5), over the release size — what the value
  estimates: a noisy copy that is no longer much nearer to its source than to the holdout cannot
  be told from an honest record;

and the mean share of planted records that are detectable, the mean estimate and the mean lower
bound. Memorisation is computed alone (its own searches).

    python3 benchmarks/memorisation_coverage.py --dataset adult --n 5000 --seeds 20 --shares 1,2,5 [--noise 0.05]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from _copula import fit_sample  # noqa: E402
from validity import inject, noisy, split  # noqa: E402

from privgate.context import EvaluationContext  # noqa: E402
from privgate.metrics.memorisation import memorisation  # noqa: E402


def planted_detectable(ctx: EvaluationContext, planted: np.ndarray, ratio: float = 0.5) -> int:
    """How many planted release rows are training-side: nearest training distance below
    ``ratio`` × the nearest holdout distance."""
    d_t = ctx.neighbours("mixed", "synthetic", "real", 1).dist[planted, 0]
    d_h = ctx.neighbours("mixed", "synthetic", "holdout", 1).dist[planted, 0]
    return int((d_t < ratio * d_h).sum())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="adult", choices=("bundled", "adult", "texas"))
    ap.add_argument("--n", type=int, default=2000, help="training = holdout = release size")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--shares", default="1,2", help="planted shares in percent")
    ap.add_argument("--noise", type=float, default=0.05, help="noise sd of the noisy copies, × the column's sd")
    args = ap.parse_args(argv)
    shares = [float(s) / 100 for s in args.shares.split(",")]
    rows: dict[tuple[str, float], list[tuple]] = {}
    start = time.time()
    for seed in range(args.seeds):
        train, hold, _fresh = split(args.dataset, args.n, seed)
        n = train.height
        hold = hold.head(n) if hold.height >= n else hold
        base = fit_sample(train, n, seed)
        rng = np.random.default_rng(seed + 77)
        for share in shares:
            k = int(round(share * n))
            src = train[np.sort(rng.choice(n, k, replace=False))]
            for kind in ("copy", "noisy"):
                leak = src if kind == "copy" else noisy(src, train, seed + 5, noise=args.noise)
                release = inject(base, leak, seed + 9)  # the planted rows are the last k
                ctx = EvaluationContext(train, release, holdout=hold, seed=seed)
                res = memorisation(ctx)
                m = release.height
                planted = np.arange(m - k, m)
                det = planted_detectable(ctx, planted) / m
                lo, hi = res.ci
                rows.setdefault((kind, share), []).append(
                    (lo <= share <= hi, lo <= det <= hi, det / share, res.value, lo)
                )
    print(
        f"memorisation coverage, {args.dataset}, n = {args.n}, noise {args.noise:g} × sd, {args.seeds} seeds "
        f"({time.time() - start:.0f} s)"
    )
    print("kind   share  covers planted  covers detectable  detectable/planted  mean estimate  mean lower")
    for (kind, share), r in sorted(rows.items()):
        a = np.array(r, dtype=float)
        print(
            f"{kind:6s} {share * 100:4.1f}%  {int(a[:, 0].sum()):>4d}/{len(r):<4d}       "
            f"{int(a[:, 1].sum()):>4d}/{len(r):<4d}          {a[:, 2].mean():6.3f}           "
            f"{a[:, 3].mean():.4f}        {a[:, 4].mean():.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
