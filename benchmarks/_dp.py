"""A small ε-differentially private generator for the validity benchmark: a Chow–Liu tree over
noisy marginals (PrivBayes with degree 1, selected MST-style).

PrivBayes: Zhang et al., "PrivBayes: private data release via Bayesian networks" (SIGMOD 2014 /
TODS 2017); MST: McKenna, Miklau & Sheldon, "Winning the NIST contest: a scalable and general
approach to differentially private synthetic data" (J. Privacy and Confidentiality 2021). Written
here from those papers' ideas, in NumPy; it is not either paper's algorithm exactly.

Steps (d columns, every column discretised on a PUBLIC domain):

1. **Domain (public, costs no ε).** Categorical levels (null a level) and numeric ranges are
   given by the caller as public metadata — in the benchmark they come from the whole data file,
   never from the training set alone, as MST and PrivBayes also assume a public domain. A numeric
   column with at most 32 distinct integer values in its public range keeps one level per
   integer; any other numeric column gets ``bins`` equal-width bins over its public range (on a
   log(1 + x) scale when the range is non-negative and spans more than three orders of
   magnitude), plus a null level. A value outside the range falls in the end bin.
2. **Noisy one-way marginals** (ε₁ = 0.1·ε): the d count vectors with Laplace noise of scale
   d/ε₁ on every cell. Adding or removing one record changes one cell of each vector by 1: L1
   sensitivity d.
3. **Tree selection** (ε₂ = 0.1·ε): Prim's algorithm from column 0; each of the d − 1 steps picks
   an edge (i in the tree, j outside) with the exponential mechanism (ε₂/(d − 1) per step) on the
   score ‖N_ij − ñ_i ñ_jᵀ/ñ‖₁, N_ij the exact two-way count table and ñ the step-2 noisy
   marginals (already released: post-processing). Adding or removing one record changes one cell
   of N_ij by 1, so the score's sensitivity is 1 and the selection probability is
   ∝ exp(ε₂/(d − 1) · score / 2).
4. **Noisy two-way marginals** (ε₃ = 0.8·ε): the d − 1 tree-edge count tables with Laplace noise
   of scale (d − 1)/ε₃ per cell (one record changes one cell of each table by 1: L1 sensitivity
   d − 1).
5. **Sampling** (post-processing, no ε): negative cells clipped to 0; the root column drawn from
   its edge table's margin, every other column from its parent's conditional (a parent level with
   no mass: the child's margin); numerics uniform within the drawn bin (integers rounded).

**Accounting.** Basic sequential composition of three pure-ε mechanisms: ε₁ + ε₂ + ε₃ = ε, so
the release is ε-differentially private under add/remove-one-record neighbouring (2ε under
replace-one). Everything after step 4 reads only the noisy tables and the public domain.
Deterministic for a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

NULL = "\x00<null>"
MAX_INTEGER_LEVELS = 32


@dataclass
class Column:
    name: str
    kind: str  # "cat", "int" (one level per integer) or "bins"
    levels: np.ndarray  # category strings (cat), integer values (int) or bin edges (bins)
    log: bool = False  # bins on a log(1 + x) scale
    integer: bool = False  # round sampled numerics
    dtype: pl.DataType | None = None

    @property
    def size(self) -> int:  # number of levels, null included
        return (
            self.levels.size if self.kind == "cat" else self.levels.size + 1 if self.kind == "int" else self.levels.size
        )  # bins: edges-1 + null


def public_domain(frame: pl.DataFrame, bins: int = 12) -> list[Column]:
    """The discretisation of every column from a frame treated as PUBLIC metadata (the benchmark
    passes the whole data file, not the training set)."""
    cols = []
    for c in frame.columns:
        s = frame[c]
        if s.dtype.is_numeric():
            v = s.cast(pl.Float64).to_numpy()
            v = v[~np.isnan(v)]
            lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
            integer = s.dtype.is_integer() or bool(v.size and np.all(v == np.round(v)))
            if integer and hi - lo + 1 <= MAX_INTEGER_LEVELS:
                cols.append(Column(c, "int", np.arange(lo, hi + 1), integer=True, dtype=s.dtype))
                continue
            log = lo >= 0 and hi > 1000 * max(lo, 1.0)
            a, b = (np.log1p(lo), np.log1p(hi)) if log else (lo, hi)
            cols.append(
                Column(
                    c, "bins", np.linspace(a, b if b > a else a + 1, bins + 1), log=log, integer=integer, dtype=s.dtype
                )
            )
        else:
            levels = np.unique(s.cast(pl.Utf8).fill_null(NULL).to_numpy().astype(str))
            cols.append(Column(c, "cat", levels, dtype=s.dtype))
    return cols


def encode(frame: pl.DataFrame, domain: list[Column]) -> np.ndarray:
    """Level index per record and column (n × d integers)."""
    out = np.empty((frame.height, len(domain)), dtype=np.int64)
    for j, col in enumerate(domain):
        s = frame[col.name]
        if col.kind == "cat":
            v = s.cast(pl.Utf8).fill_null(NULL).to_numpy().astype(str)
            idx = np.searchsorted(col.levels, v)
            idx = np.clip(idx, 0, col.levels.size - 1)
            if not np.all(col.levels[idx] == v):
                raise ValueError(f"column {col.name}: a level is not in the public domain")
            out[:, j] = idx
            continue
        v = s.cast(pl.Float64).to_numpy()
        null = np.isnan(v)
        if col.kind == "int":
            idx = np.clip(np.round(np.nan_to_num(v, nan=col.levels[0])) - col.levels[0], 0, col.levels.size - 1)
            out[:, j] = np.where(null, col.levels.size, idx)
        else:
            x = np.log1p(np.maximum(v, 0)) if col.log else v
            idx = np.clip(
                np.searchsorted(col.levels, np.nan_to_num(x, nan=col.levels[0]), side="right") - 1,
                0,
                col.levels.size - 2,
            )
            out[:, j] = np.where(null, col.levels.size - 1, idx)
    return out


def _counts2(x: np.ndarray, y: np.ndarray, ki: int, kj: int) -> np.ndarray:
    return np.bincount(x * kj + y, minlength=ki * kj).reshape(ki, kj).astype(np.float64)


def _sample_cat(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of the row-stochastic matrix p (vectorised inverse CDF)."""
    c = np.cumsum(p, axis=1)
    u = rng.random(p.shape[0])[:, None] * c[:, -1:]
    return np.minimum((u >= c).sum(axis=1), p.shape[1] - 1)


def _normalise(t: np.ndarray) -> np.ndarray:
    t = np.clip(t, 0.0, None)
    s = t.sum()
    return t / s if s > 0 else np.full_like(t, 1.0 / t.size)


def budget(epsilon: float, d: int) -> dict[str, float]:
    """The split of ε and the noise of each step for d columns (module docstring, steps 2–4):
    Laplace scales are L1 sensitivity / ε of the step; the three ε add up to ``epsilon``."""
    e1, e2, e3 = 0.1 * epsilon, 0.1 * epsilon, 0.8 * epsilon
    return {
        "eps_one_way": e1,
        "eps_select": e2,
        "eps_two_way": e3,
        "one_way_scale": d / e1,
        "select_eps_per_step": e2 / max(d - 1, 1),
        "two_way_scale": max(d - 1, 1) / e3,
    }


def fit_sample(
    train: pl.DataFrame, n: int, epsilon: float, seed: int, domain: list[Column] | None = None, bins: int = 12
) -> pl.DataFrame:
    """An ε-DP synthetic sample of ``n`` records from ``train`` (see the module docstring).
    ``domain``: the public discretisation (``public_domain`` of a public frame); without one the
    domain is read from ``train`` itself, which is NOT differentially private (tests only)."""
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0; got {epsilon}")
    rng = np.random.default_rng([seed, 0xD1FF])
    dom = domain if domain is not None else public_domain(train, bins)
    x = encode(train, dom)
    d = len(dom)
    sizes = [c.size for c in dom]
    b = budget(epsilon, d)
    # 2. noisy one-way marginals (L1 sensitivity d)
    one = [np.bincount(x[:, j], minlength=sizes[j]) + rng.laplace(0.0, b["one_way_scale"], sizes[j]) for j in range(d)]
    one = [np.clip(o, 0.0, None) for o in one]
    total = max(float(np.mean([o.sum() for o in one])), 1.0)
    # 3. tree by Prim + exponential mechanism (score sensitivity 1)
    in_tree, edges = [0], []
    eps_step = b["select_eps_per_step"]
    scores = {}
    while len(in_tree) < d:
        cand = [(i, j) for i in in_tree for j in range(d) if j not in in_tree]
        sc = []
        for i, j in cand:
            if (i, j) not in scores:
                joint = _counts2(x[:, i], x[:, j], sizes[i], sizes[j])
                scores[(i, j)] = float(np.abs(joint - np.outer(one[i], one[j]) / total).sum())
            sc.append(scores[(i, j)])
        w = eps_step * np.asarray(sc) / 2.0
        p = np.exp(w - w.max())
        i, j = cand[int(rng.choice(len(cand), p=p / p.sum()))]
        edges.append((i, j))
        in_tree.append(j)
    # 4. noisy two-way marginals on the tree edges (L1 sensitivity d − 1)
    scale = b["two_way_scale"]
    tables = {
        (i, j): _normalise(
            _counts2(x[:, i], x[:, j], sizes[i], sizes[j]) + rng.laplace(0.0, scale, (sizes[i], sizes[j]))
        )
        for i, j in edges
    }
    # 5. sample along the tree
    codes = np.empty((n, d), dtype=np.int64)
    root_table = tables[edges[0]] if edges else _normalise(one[0])
    root_p = root_table.sum(axis=1) if edges else root_table
    codes[:, 0] = _sample_cat(np.broadcast_to(root_p, (n, root_p.size)), rng)
    for i, j in edges:
        t = tables[(i, j)]
        marg = _normalise(t.sum(axis=0))
        rows = t.sum(axis=1, keepdims=True)
        cond = np.where(rows > 0, t / np.where(rows > 0, rows, 1.0), marg[None, :])
        codes[:, j] = _sample_cat(cond[codes[:, i]], rng)
    return decode(codes, dom, rng)


def decode(codes: np.ndarray, domain: list[Column], rng: np.random.Generator) -> pl.DataFrame:
    cols = []
    for j, col in enumerate(domain):
        c = codes[:, j]
        if col.kind == "cat":
            v = col.levels[c].astype(object)
            v[v == NULL] = None
            cols.append(pl.Series(col.name, v.tolist(), dtype=pl.Utf8).cast(col.dtype, strict=False))
            continue
        if col.kind == "int":
            null = c == col.levels.size
            v = col.levels[np.minimum(c, col.levels.size - 1)].astype(np.float64)
        else:
            null = c == col.levels.size - 1
            k = np.minimum(c, col.levels.size - 2)
            v = col.levels[k] + rng.random(c.size) * (col.levels[k + 1] - col.levels[k])
            if col.log:
                v = np.expm1(v)
            if col.integer:
                v = np.round(v)
        v[null] = np.nan
        cols.append(pl.Series(col.name, v).fill_nan(None).cast(col.dtype, strict=False))
    return pl.DataFrame(cols)
