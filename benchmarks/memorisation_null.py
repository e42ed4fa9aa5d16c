"""Null calibration of ``memorisation``: how often it flags a release that memorised nobody.

Training set, holdout and release are independent draws from one population (an exact null: the
release does not depend on which records were trained on), on continuous data and on tie-heavy
categorical data with nulls (most release records equal records present on both sides), with
equal sizes and with the training set 2× and 3.3× the holdout or half of it (the larger side is
split into parts of the smaller's size). Printed per case: the share of replications whose 95 %
lower bound is above 0 (the default gate's warn rule; built for ≤ 2.5 %), whose Holm p-value is
below 0.05 (≤ 5 %), and the mean estimate; and, for power on the same data, the same rates when
1 % of the release is replaced by exact training copies. Memorisation's own searches only (a few
seconds per case on 2 cores).

    python3 benchmarks/memorisation_null.py --reps 200
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from privgate.metrics import memorisation  # noqa: E402


def draw(kind: str, n: int, rng: np.random.Generator) -> pl.DataFrame:
    if kind == "continuous":
        z = rng.normal(size=(n, 3)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 1]])
        return pl.DataFrame({"x": z[:, 0], "y": z[:, 1], "w": np.exp(z[:, 2])})
    a = rng.choice(["p", "q", "r"], n, p=[0.6, 0.3, 0.1]).astype(object)
    a[rng.random(n) < 0.05] = None
    return pl.DataFrame(
        {
            "a": pl.Series(a.tolist(), dtype=pl.Utf8),
            "b": rng.choice(["u", "v"], n),
            "c": rng.choice(["s", "t", "o", "k"], n, p=[0.7, 0.1, 0.1, 0.1]),
            "k": rng.integers(0, 4, n),
        }
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--m", type=int, default=1000, help="release size")
    args = ap.parse_args(argv)
    m = args.m
    print(f"memorisation null calibration: {args.reps} replications per case, release {m} records")
    print("data        training holdout   null: lower>0%  Holm p<0.05%  mean est   1% copies: lower>0%  mean est")
    for kind in ("continuous", "tie-heavy"):
        for n_t, n_h in ((1000, 1000), (1000, 500), (1000, 300), (500, 1000)):
            lower0, p05, est, c_lower0, c_est = [], [], [], [], []
            for rep in range(args.reps):
                rng = np.random.default_rng([rep, n_t, n_h, len(kind)])
                train, hold, rel = draw(kind, n_t, rng), draw(kind, n_h, rng), draw(kind, m, rng)
                res = memorisation(train, rel, holdout=hold, seed=rep)
                lower0.append(res.ci[0] > 0)
                p05.append(res.p_value < 0.05)
                est.append(res.value)
                k = m // 100
                leak = pl.concat([rel[k:], train[np.sort(rng.choice(n_t, k, replace=False))]])
                res = memorisation(train, leak, holdout=hold, seed=rep)
                c_lower0.append(res.ci[0] > 0)
                c_est.append(res.value)
            print(
                f"{kind:11s} {n_t:8d} {n_h:7d}   {100 * np.mean(lower0):13.1f}  {100 * np.mean(p05):12.1f}  "
                f"{np.mean(est):8.4f}   {100 * np.mean(c_lower0):19.1f}  {np.mean(c_est):8.4f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
