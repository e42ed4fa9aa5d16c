"""Offline comparison: memorisation's tail order and side rule with and without a local scale.

The idea evaluated (authenticity, Alaa et al., "How faithful is your synthetic data?", ICML 2022):
a noisy or exact copy sits much nearer to its source record t than t's own nearest neighbour in
its set, while an honest record in a dense region is near a real record whose own neighbour is
near too. Per synthetic record and set g (training or holdout, or equal-sized parts), u_g = D_g /
rho_g(t_g), t_g its nearest record of set g and rho_g(t_g) the distance from t_g to its nearest
OTHER record of set g (u_g = 0 when D_g = 0). Every variant applies one rule to every set, so it
is a symmetric function of the sets' (D_g, rho_g) pairs and swapping the training and holdout
labels swaps the counts (the test stays valid):

* order ``ratio`` (the shipped metric): min_g D_g / second smallest D_g;
* order ``r*sqrt(u)``: that ratio times the square root of u of the nearest set;
* side ``d`` (shipped): set g wins when D_g < 0.5 * min_{h != g} D_h; side ``both``: also
  u_g < 0.5 * min_{h != g} u_h.

Printed per dataset, release kind and variant: the share of seeds whose lower bound is > 0 (the
default gate's warn rule) and the mean lower bound. Costs one within-set 1-NN search per set.

    python3 benchmarks/memorisation_local_scale.py --datasets texas --seeds 20
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import validity as V  # noqa: E402

from privgate.context import EvaluationContext  # noqa: E402
from privgate.metrics.memorisation import DEFAULT_TAILS, _parts, distance_ratio, distinct_count, set_weights  # noqa: E402
from privgate.neighbours import knn  # noqa: E402
from privgate.stats import holm, mirrored_tail_test  # noqa: E402

KINDS = ("copula", "marginals", "non-members", "dp ε=1", "dp ε=4", "non-member 1%", "copy 1%", "noisy 0.5%", "noisy 1%")


def sets_with_scale(ctx) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(D, I, rho, is_training) as memorisation builds its sets, plus rho[g] = the within-set
    1-NN distance of each record's nearest record of set g."""
    sp = ctx.space(("mixed", None))
    n_t, n_h = ctx.n_real, ctx.n_holdout
    opts = {"categorical_slices": sp.categorical_slices}

    def within(mat: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return knn(mat[rows], mat[rows], 1, exclude_self=True, **opts).dist[:, 0]

    if n_t == n_h:
        groups = [("real", np.arange(n_t), True), ("holdout", np.arange(n_h), False)]
    elif n_t > n_h:
        groups = [("real", p, True) for p in _parts(n_t, n_h, ctx.seed)] + [("holdout", np.arange(n_h), False)]
    else:
        groups = [("real", np.arange(n_t), True)] + [("holdout", p, False) for p in _parts(n_h, n_t, ctx.seed)]
    dist, idx, rho = [], [], []
    for role, rows, _ in groups:
        full = rows.size == (n_t if role == "real" else n_h)
        nb = ctx.neighbours("mixed", "synthetic", role, 1, target_rows=None if full else rows)
        dist.append(nb.dist[:, 0])
        idx.append(rows[nb.idx[:, 0]])
        rho.append(within(sp[role], rows)[nb.idx[:, 0]])
    return np.array(dist), np.array(idx), np.array(rho), np.array([g[2] for g in groups])


def lower_bound(dist, idx, rho, is_tr, order_kind: str, side: str) -> float:
    m = dist.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(dist == 0, 0.0, dist / rho)
    w = set_weights(dist, 0.5)
    if side == "both":
        w = np.minimum(w, set_weights(u, 0.5))
    r = distance_ratio(dist)
    if order_kind == "ratio":
        key = r
    else:
        uwin = u[np.argmin(dist, axis=0), np.arange(m)]
        key = np.where(np.sort(dist, axis=0)[1] == 0, np.inf, r * np.sqrt(uwin))
    order = np.lexsort((np.arange(m), key))
    p0 = is_tr.sum() / is_tr.size
    best, ps = 0.0, []
    for q in DEFAULT_TAILS:
        sel = order[: max(1, int(math.ceil(q * m - 1e-9)))]
        s = [distinct_count(w[g, sel], idx[g, sel]) for g in range(is_tr.size)]
        t = mirrored_tail_test(
            sum(s[g] for g in range(is_tr.size) if is_tr[g]),
            sum(s[g] for g in range(is_tr.size) if not is_tr[g]),
            m,
            len(DEFAULT_TAILS),
            p0=p0,
        )
        best, _ = max(best, t["lower"]), ps.append(t["p"])
    holm(ps)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="bundled,adult,texas")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args(argv)
    variants = [("ratio", "d"), ("ratio", "both"), ("r*sqrt(u)", "d"), ("r*sqrt(u)", "both")]
    for name in args.datasets.split(","):
        domain = V.public_domain(name)
        res: dict = defaultdict(lambda: defaultdict(list))
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            train, hold, fresh = V.split(name, 5000, seed)
            rels = V.releases(train, fresh, train.height, [0.5, 1.0], seed, domain)
            shared = None
            for kind in KINDS:
                ctx = EvaluationContext(train, rels[kind][0], holdout=hold, seed=seed, _shared=shared)
                shared = ctx._shared
                parts = sets_with_scale(ctx)
                for v in variants:
                    res[v][kind].append(lower_bound(*parts, *v))
            print(f"  [{name}] seed {seed} done", file=sys.stderr, flush=True)
        print(f"\n## {name} ({args.seeds} seeds): % of seeds with lower bound > 0 (mean lower bound x1000)")
        print(f"{'order / side':18s}" + "".join(f"{k:>16s}" for k in KINDS))
        for v, d in res.items():
            print(
                f"{v[0] + ' / ' + v[1]:18s}"
                + "".join(f"{100 * np.mean(np.array(d[k]) > 0):8.0f} ({1000 * np.mean(d[k]):4.2f})" for k in KINDS)
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
