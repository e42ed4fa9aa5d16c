"""Reconstruction (attribute inference) metrics: an attacker who knows a real person's key
attributes (quasi-identifiers) reads the release to guess their sensitive attribute(s)
(docs/metrics.md, family reconstruction).

* ``zero_cap`` — Categorical Zero CAP (Hittmeir et al., 2020; PrivEval review §2.1.1);
* ``generalized_cap`` — Categorical Generalized CAP (Hittmeir et al., 2020; review §2.1.2), with
  *all* synthetic records tied at the minimum Hamming distance;
* ``attribute_inference`` — Attribute Inference Risk (Yan et al., 2022; review §2.1.3).

Orientation: risk, ``value`` 1 = every sensitive value is reconstructed (a copy of the real data
with distinct key combinations scores 1). When several sensitive columns are given each is
reported in ``per_attribute`` and ``value`` is the worst (the maximum).

The CAP metrics work on distinct key combinations with their counts (Polars group-bys and joins;
the Hamming scan of generalized_cap compares distinct real key combinations without an exact
synthetic match against the distinct synthetic combinations, block by block), never looping over
records. Keys match exactly by value (a null matches only a null); ``key_bins=k`` first puts
numeric keys into k quantile bins of the real data (:mod:`privgate.binning` with k bins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import polars as pl

from .. import stats
from .._lazy import lazy_module
from ..binning import assign_bins, quantile_edges
from ..errors import ParameterError
from ..neighbours import search_k
from ..registry import register_metric
from ..results import MetricResult
from ..schema import NUMERIC
from ..spaces import category_codes
from ..stats.metric_intervals import jackknife_labels, keep_jackknife, result, set_mean_ci
from ..ties import le
from .sampling import mark_sampled, on_rows, real_rows
from .search_error import widen_share_for_search

sparse = lazy_module("scipy.sparse")  # imported on first use (import time)

REVIEW = "Privacy metrics review (PrivEval), §"
# cells of the block × distinct-synthetic-combination Hamming matrix held at once
_HAMMING_BLOCK_CELLS = 4_000_000


# ------------------------------------------------------------------------------ encoding
def _value_codes(
    ctx, column: str, key_bins: int | None, frames: dict[str, pl.DataFrame]
) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of ``column`` in the real and synthetic frames such that two values get the
    same code exactly when they are equal (null = null only, numbers by value); numeric columns
    are binned into ``key_bins`` real quantile bins first when asked. ``frames``: the real and
    synthetic frames holding ``column`` (read with :meth:`EvaluationContext.columns`)."""
    if ctx.schema.kind(column) == NUMERIC:
        r = frames["real"][column].to_numpy().astype(np.float64, copy=False)
        s = frames["synthetic"][column].to_numpy().astype(np.float64, copy=False)
        if key_bins is not None:
            edges = quantile_edges(r, key_bins)
            return assign_bins(r, edges), assign_bins(s, edges)
        both = np.concatenate([r, s])
        # np.unique sorts NaN (null) last and keeps one NaN: null is its own code
        _, inv = np.unique(both, return_inverse=True)
        inv = inv.astype(np.int64, copy=False).ravel()
        return inv[: r.size], inv[r.size :]
    codes, _ = category_codes({r: frames[r].select(column) for r in ("real", "synthetic")}, column)
    return codes["real"].astype(np.int64), codes["synthetic"].astype(np.int64)


def _check_key_bins(key_bins: int | None) -> None:
    if key_bins is not None and (
        isinstance(key_bins, bool) or not isinstance(key_bins, (int, np.integer)) or key_bins < 1
    ):
        raise ParameterError(f"key_bins must be a positive integer (number of quantile bins) or None; got {key_bins!r}")


def _coded_frames(
    ctx, keys: list[str], sensitive: list[str], key_bins: int | None
) -> tuple[pl.DataFrame, pl.DataFrame, list[str], dict[str, str]]:
    """Real and synthetic frames of integer codes: one column per key (k0, k1, ...) and per
    sensitive column (s0, s1, ...). Returns (real, synthetic, key code names, sensitive code
    name → column)."""
    real_cols: dict[str, np.ndarray] = {}
    syn_cols: dict[str, np.ndarray] = {}
    # only the key and sensitive columns are read (a Parquet scan streams just these)
    frames = {r: ctx.columns(r, keys + sensitive) for r in ("real", "synthetic")}
    kc = []
    for i, col in enumerate(keys):
        r, s = _value_codes(ctx, col, key_bins, frames)
        real_cols[f"k{i}"], syn_cols[f"k{i}"] = r, s
        kc.append(f"k{i}")
    sc = {}
    for i, col in enumerate(sensitive):
        r, s = _value_codes(ctx, col, None, frames)
        real_cols[f"s{i}"], syn_cols[f"s{i}"] = r, s
        sc[f"s{i}"] = col
    return pl.DataFrame(real_cols), pl.DataFrame(syn_cols), kc, sc


def _lazy_key_frames(
    ctx, keys: list[str], sensitive: list[str], key_bins: int | None, rows: np.ndarray | None
) -> tuple[pl.LazyFrame, pl.LazyFrame, list[str], dict[str, str]]:
    """zero_cap's inputs as LazyFrames — key columns k0, k1, ... and sensitive columns s0, ...,
    the real one with its row position ``__row`` (only ``rows`` when sampled) — read from the
    context's lazy frames (a Parquet scan reads only these columns, streamed). Values compare
    exactly as :func:`_value_codes` codes them (normalised Float64 / String, null = null only,
    joins with ``nulls_equal``); with ``key_bins`` the numeric keys are binned on loaded codes."""
    kc = [f"k{i}" for i in range(len(keys))]
    sc = {f"s{i}": col for i, col in enumerate(sensitive)}
    if key_bins is not None:
        real, syn, kc, sc = _coded_frames(ctx, keys, sensitive, key_bins)
        real, syn = real.lazy(), syn.lazy()
    else:
        names = [pl.col(c).alias(k) for c, k in zip(keys, kc)] + [pl.col(c).alias(s) for s, c in sc.items()]
        real, syn = ctx.lazy("real").select(names), ctx.lazy("synthetic").select(names)
    real = real.with_row_index("__row")
    if rows is not None:
        real = real.join(pl.LazyFrame({"__row": pl.Series(rows, dtype=pl.UInt32)}), on="__row", how="semi")
    return real, syn, kc, sc


def _by_row(frame: pl.LazyFrame, column: str) -> np.ndarray:
    """``column`` of a lazy join on the real rows, in real-row order (null → 0), collected with
    the streaming engine."""
    out = frame.select("__row", pl.col(column).fill_null(0)).collect(engine="streaming").sort("__row")
    return out[column].to_numpy()


def _count(frame: pl.LazyFrame) -> int:
    return int(frame.select(pl.len()).collect(engine="streaming").item())


def _combine(
    ctx,
    name: str,
    keys: list[str],
    sensitive: list[str],
    per_attr: dict[str, np.ndarray],
    extra: dict[str, dict],
    raw_description: str,
    per_record_description: str,
    params: dict,
    weights: np.ndarray | None = None,
) -> MetricResult:
    """One result from per-sensitive-column per-record scores: value = the worst column's mean
    per-record score (weighted by ``weights`` when given), with the bootstrap interval of that
    column's mean over the real records."""
    means = {
        c: float(v.mean() if weights is None else (weights * v).sum() / weights.sum()) for c, v in per_attr.items()
    }
    worst = max(means, key=lambda c: means[c])
    value = min(1.0, max(0.0, means[worst]))
    details = {"keys": keys, "sensitive": sensitive, "worst_sensitive": worst, "per_sensitive": extra}
    res = result(
        ctx,
        name,
        value,
        value,
        raw_description,
        params=params,
        details=details,
        per_attribute=means,
        per_record=per_attr[worst],
        per_record_description=per_record_description + f" (sensitive column {worst!r})",
    )
    note = f"sensitive column {worst!r}" + (
        ", the worst of several (not adjusted for the choice)" if len(per_attr) > 1 else ""
    )
    if weights is not None:
        note += "; record weights held fixed"
    return set_mean_ci(res, ctx, per_attr[worst], weights=weights, note=note)


# ------------------------------------------------------------------------------ zero CAP
@register_metric(
    family="reconstruction",
    attack="infer a sensitive attribute from synthetic records with exactly the same key attributes",
    reference=REVIEW + "2.1.1 Categorical Zero CAP (Hittmeir et al., 2020)",
    orientation="value = mean over real records of the share of key-matching synthetic records with the "
    "same sensitive value (0 when none match); worst sensitive column",
    needs=("sensitive",),
    spaces=(),
    memory_cost=0.5,
    sampled=("real",),
)
def zero_cap(
    ctx, *, keys: Sequence[str] | None = None, sensitive: Sequence[str] | str | None = None, key_bins: int | None = None
) -> MetricResult:
    """Categorical Zero CAP (Hittmeir et al., 2020): for each real record, the synthetic records
    equal to it on every key; its score is the share of them with the same sensitive value, 0 when
    there is none. value = mean over real records; several sensitive columns → the maximum.

    A copy scores the mean in-class share of each record's sensitive value: 1 exactly when every
    key combination determines the sensitive value (the documented maximum; on the bundled Adult
    sample with its 5 example keys and income, 0.89). Exact matching on continuous keys rarely
    matches anything; ``key_bins=k`` bins numeric keys into k real quantile bins first.

    Orientation: risk; raw = value (the paper's ZCAP in the review's orientation).
    """
    _check_key_bins(key_bins)
    keys, sensitive = ctx.key_sensitive(keys, sensitive)
    rows = real_rows(ctx)
    real, syn, kc, sc = _lazy_key_frames(ctx, keys, sensitive, key_bins, rows)
    n_k = syn.group_by(kc).agg(pl.len().alias("__m"))
    matched = _by_row(real.join(n_k, on=kc, how="left", nulls_equal=True), "__m")
    per_attr, extra = {}, {}
    for s, col in sc.items():
        n_ks = syn.group_by(kc + [s]).agg(pl.len().alias("__ms"))
        ms = _by_row(real.join(n_ks, on=kc + [s], how="left", nulls_equal=True), "__ms")
        per = np.where(matched > 0, ms / np.maximum(matched, 1), 0.0)
        per_attr[col] = per
        extra[col] = {"share_correct_given_match": float(per[matched > 0].mean()) if (matched > 0).any() else None}
    details_common = {
        "share_real_with_key_match": float((matched > 0).mean()),
        "n_distinct_real_key_combinations": _count(real.select(kc).unique()),
        "n_distinct_synthetic_key_combinations": _count(n_k),
    }
    res = _combine(
        ctx,
        "zero_cap",
        keys,
        sensitive,
        per_attr,
        extra,
        "Zero CAP: mean share of key-matching synthetic records with the real sensitive value",
        "share of the synthetic records equal on the keys that share the sensitive value (0 if none)",
        {"keys": keys, "sensitive": sensitive, "key_bins": key_bins},
    )
    res.details.update(details_common)
    if rows is not None:  # estimated on a sample of real records: no jackknife replicates
        return mark_sampled(res, ctx, rows)
    return _keep_cap_jackknife(ctx, res, _collected(real), _collected(syn), kc, sc, _zero_cap_without_synthetic_groups)


def _collected(frame: "pl.DataFrame | pl.LazyFrame") -> pl.DataFrame:
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _keep_cap_jackknife(
    ctx, res: MetricResult, real: pl.DataFrame, syn: pl.DataFrame, kc: list[str], sc: dict[str, str], without_synthetic
) -> MetricResult:
    """Store the grouped-jackknife replicates of the worst sensitive column's value for the holdout
    excess (``evaluate.attach_baseline``): the real records (per-record scores are independent
    given the release: the plain mean without each group) and the synthetic records (every real
    record reads the release's count tables, so deleting a group of synthetic records subtracts
    the group's own counts from them: ``without_synthetic``)."""
    lab_r = jackknife_labels(ctx, "real", ctx.n_real)
    lab_s = jackknife_labels(ctx, "synthetic", ctx.n_synthetic)
    if lab_r is None or lab_s is None:
        return res
    s = next(code for code, col in sc.items() if col == res.details["worst_sensitive"])
    reps_r = stats.leave_group_out_means(res.per_record, lab_r, int(lab_r.max()) + 1)
    return keep_jackknife(res, real=reps_r, synthetic=without_synthetic(real, syn, kc, s, lab_s))


def _cell_ids(real: pl.DataFrame, syn: pl.DataFrame, cols: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Numbered distinct synthetic combinations of ``cols``: (per synthetic row its number, per
    real row the number of the equal synthetic combination or −1, how many)."""
    cells = syn.select(cols).unique(maintain_order=True).with_row_index("__cell")
    s_ids = (
        syn.join(cells, on=cols, how="left", maintain_order="left", nulls_equal=True)["__cell"]
        .to_numpy()
        .astype(np.int64)
    )
    r_ids = (
        real.join(cells, on=cols, how="left", maintain_order="left", nulls_equal=True)["__cell"]
        .fill_null(-1)
        .to_numpy()
    )
    return s_ids, r_ids.astype(np.int64), cells.height


def _zero_cap_without_synthetic_groups(
    real: pl.DataFrame, syn: pl.DataFrame, kc: list[str], s: str, labels: np.ndarray
) -> np.ndarray:
    """Zero CAP of sensitive code column ``s`` without each group of synthetic records (G,)."""
    sk, rk, ck = _cell_ids(real, syn, kc)
    sks, rks, cks = _cell_ids(real, syn, kc + [s])
    n_k = stats.counts_without_groups(sk, labels, ck)
    n_ks = stats.counts_without_groups(sks, labels, cks)
    matched = np.where(rk >= 0, n_k[:, np.maximum(rk, 0)], 0)
    same = np.where(rks >= 0, n_ks[:, np.maximum(rks, 0)], 0)
    return np.where(matched > 0, same / np.maximum(matched, 1), 0.0).mean(axis=1)


# ------------------------------------------------------------------------- generalized CAP
def _nearest_combos(real_keys: np.ndarray, syn_keys: np.ndarray, block_cells: int = _HAMMING_BLOCK_CELLS):
    """For each row of ``real_keys`` (distinct real key combinations, integer codes), the
    minimum Hamming distance to the rows of ``syn_keys`` (distinct synthetic combinations) and a
    boolean mask of all synthetic combinations at that minimum, yielded block by block as
    (row slice, min distance, mask)."""
    u, nk = real_keys.shape
    j = syn_keys.shape[0]
    dtype = np.uint8 if nk < 255 else np.uint16
    block = max(1, block_cells // max(1, j))
    for start in range(0, u, block):
        rows = slice(start, min(u, start + block))
        d = np.zeros((rows.stop - rows.start, j), dtype=dtype)
        for c in range(nk):
            d += real_keys[rows, c][:, None] != syn_keys[None, :, c]
        dmin = d.min(axis=1)
        yield rows, dmin, d == dmin[:, None]


@register_metric(
    family="reconstruction",
    attack="infer a sensitive attribute from the synthetic records closest on the key attributes (Hamming)",
    reference=REVIEW + "2.1.2 Categorical Generalized CAP (Hittmeir et al., 2020)",
    orientation="value = mean over real records of the share of the synthetic records at the minimum Hamming "
    "distance on the keys with the same sensitive value; worst sensitive column",
    needs=("sensitive",),
    spaces=(),
    memory_cost=0.5,
    sampled=("real",),
)
def generalized_cap(
    ctx, *, keys: Sequence[str] | None = None, sensitive: Sequence[str] | str | None = None, key_bins: int | None = None
) -> MetricResult:
    """Categorical Generalized CAP (Hittmeir et al., 2020): for each real record, **all** synthetic
    records at the minimum Hamming distance on the keys (the number of keys that differ; 0 when
    an exact key match exists); its score is the share of them with the same sensitive value.
    value = mean over real records; several sensitive columns → the maximum. (PrivEval uses one
    arbitrary nearest record and reports only the last sensitive column; we don't.)

    Computed over distinct key combinations with counts: exact matches by a join, the rest by a
    blocked Hamming scan of distinct real combinations against distinct synthetic combinations.
    A copy scores as zero_cap does (1 when every key combination determines the sensitive
    value). Every real record always has nearest records, so a release that knows nothing still
    scores about the chance agreement Σ p_v·q_v of the sensitive values (≈ 0.5 for Adult's income).

    Orientation: risk; raw = value.
    """
    _check_key_bins(key_bins)
    keys, sensitive = ctx.key_sensitive(keys, sensitive)
    real, syn, kc, sc = _coded_frames(ctx, keys, sensitive, key_bins)
    sample = real_rows(ctx)
    c = _HammingCombos.of(on_rows(real, sample).with_row_index("__row"), syn, kc)
    real, syn = c.real, c.syn
    per_attr, extra = {}, {}
    for s, col in sc.items():
        per_attr[col] = c.correct(s) / c.total_i[real["__i"].to_numpy()]
        extra[col] = {}
    real_i = real["__i"].to_numpy()
    dmin_r = c.dmin_i[real_i]
    res = _combine(
        ctx,
        "generalized_cap",
        keys,
        sensitive,
        per_attr,
        extra,
        "Generalized CAP: mean share of the nearest (Hamming) synthetic records with the real sensitive value",
        "share of the synthetic records at the minimum Hamming distance on the keys that share the sensitive value",
        {"keys": keys, "sensitive": sensitive, "key_bins": key_bins},
    )
    res.details.update(
        {
            "share_real_with_key_match": float((dmin_r == 0).mean()) if c.exact.height else 0.0,
            "mean_min_hamming_distance": float(dmin_r.mean()),
            "mean_tied_synthetic_records": float(c.total_i[real_i].mean()),
            "n_distinct_real_key_combinations": int(c.n_i),
            "n_distinct_synthetic_key_combinations": int(c.syn_k.height),
        }
    )
    if sample is not None:  # estimated on a sample of real records: no jackknife replicates
        return mark_sampled(res, ctx, sample)
    key_mat = c.real_k.sort("__i").select(kc).to_numpy().astype(np.int64)
    tied = _tied_sets(c.n_i, c.syn_k.height, c.exact, c.masks)

    def without_synthetic(real_, syn_, kc_, s_, labels):
        return _gcap_without_synthetic_groups(real, syn, s_, labels, tied, key_mat, c.syn_key_mat)

    return _keep_cap_jackknife(ctx, res, real, syn, kc, sc, without_synthetic)


@dataclass
class _HammingCombos:
    """The distinct key combinations of generalized_cap: ``real`` with its combination i
    (``__i``) and exact synthetic match j (``__j``, null without one), ``syn`` with its j,
    ``syn_k`` the distinct synthetic combinations with their counts (``__m``), ``real_k`` the
    distinct real ones, ``exact`` those with an exact match; per distinct real combination the
    minimum Hamming distance ``dmin_i`` and the number of synthetic records at it ``total_i``;
    ``masks``: (unmatched combinations i, sparse mask of their tied synthetic combinations)."""

    real: pl.DataFrame
    syn: pl.DataFrame
    syn_k: pl.DataFrame
    real_k: pl.DataFrame
    exact: pl.DataFrame
    n_i: int
    syn_key_mat: np.ndarray
    dmin_i: np.ndarray
    total_i: np.ndarray
    masks: list[tuple[np.ndarray, "sparse.csr_matrix"]]

    @classmethod
    def of(cls, real: pl.DataFrame, syn: pl.DataFrame, kc: list[str]) -> "_HammingCombos":
        """Exact matches by a join, the rest by a blocked Hamming scan of distinct real
        combinations against distinct synthetic combinations."""
        # distinct synthetic key combinations with their counts, numbered j = 0..J-1
        syn_k = syn.group_by(kc).agg(pl.len().alias("__m")).with_row_index("__j")
        syn = syn.join(syn_k.select(kc + ["__j"]), on=kc, how="left")
        # distinct real key combinations, numbered i, with the exact synthetic match j when there is one
        real_k = real.select(kc).unique().with_row_index("__i").join(syn_k.select(kc + ["__j"]), on=kc, how="left")
        real = real.join(real_k, on=kc, how="left", maintain_order="left")
        m_j = syn_k["__m"].to_numpy().astype(np.float64)
        exact = real_k.filter(pl.col("__j").is_not_null())
        unmatched = real_k.filter(pl.col("__j").is_null())
        n_i = real_k.height
        # Hamming scan: per unmatched distinct real combination, the tied synthetic combinations
        syn_key_mat = syn_k.select(kc).to_numpy().astype(np.int64)
        un_key_mat = unmatched.select(kc).to_numpy().astype(np.int64)
        un_i = unmatched["__i"].to_numpy()
        dmin_i = np.zeros(n_i)
        total_i = np.zeros(n_i)
        total_i[exact["__i"].to_numpy()] = m_j[exact["__j"].to_numpy()]
        masks: list[tuple[np.ndarray, sparse.csr_matrix]] = []
        for rows, dmin, mask in _nearest_combos(un_key_mat, syn_key_mat):
            ii = un_i[rows]
            dmin_i[ii] = dmin
            total_i[ii] = mask.astype(np.float64) @ m_j
            masks.append((ii, sparse.csr_matrix(mask, dtype=np.float64)))
        return cls(real, syn, syn_k, real_k, exact, n_i, syn_key_mat, dmin_i, total_i, masks)

    def correct(self, s: str) -> np.ndarray:
        """Per real record: how many of its nearest synthetic records share its value of the
        sensitive column ``s``."""
        real, syn_k, masks = self.real, self.syn_k, self.masks
        # synthetic counts per (combination j, sensitive code)
        js = self.syn.group_by(["__j", s]).agg(pl.len().alias("__ms"))
        # exact-match combinations: join counts directly
        correct = (
            real.join(
                js.rename({s: "__s"}), left_on=["__j", s], right_on=["__j", "__s"], how="left", maintain_order="left"
            )["__ms"]
            .fill_null(0)
            .to_numpy()
            .astype(np.float64)
        )
        # tied combinations: (mask of tied j) @ (counts j × code), read at each real record's code
        if masks:
            n_codes = int(max(js[s].max(), real[s].max())) + 1
            mat = sparse.csr_matrix(
                (js["__ms"].to_numpy().astype(np.float64), (js["__j"].to_numpy(), js[s].to_numpy())),
                shape=(syn_k.height, n_codes),
            )
            pos = np.full(self.n_i, -1, dtype=np.int64)  # unmatched i → row in the stacked products
            stacked = []
            offset = 0
            for ii, msk in masks:
                stacked.append(msk @ mat)
                pos[ii] = offset + np.arange(ii.size)
                offset += ii.size
            prod = sparse.vstack(stacked).tocsr()
            real_i = real["__i"].to_numpy()
            need = np.flatnonzero(pos[real_i] >= 0)
            if need.size:
                correct[need] = np.asarray(prod[pos[real_i[need]], real[s].to_numpy()[need]]).ravel()
        return correct


def _tied_sets(n_i: int, n_j: int, exact: pl.DataFrame, masks: list) -> sparse.csr_matrix:
    """(distinct real combinations × distinct synthetic combinations): 1 where the synthetic
    combination is at the real one's minimum Hamming distance (its exact match, or the ties)."""
    rows = [exact["__i"].to_numpy()]
    cols = [exact["__j"].to_numpy()]
    for ii, msk in masks:
        coo = msk.tocoo()
        rows.append(ii[coo.row])
        cols.append(coo.col)
    r, c = np.concatenate(rows).astype(np.int64), np.concatenate(cols).astype(np.int64)
    return sparse.csr_matrix((np.ones(r.size), (r, c)), shape=(n_i, n_j))


def _gcap_without_synthetic_groups(
    real: pl.DataFrame,
    syn: pl.DataFrame,
    s: str,
    labels: np.ndarray,
    tied: sparse.csr_matrix,
    key_mat: np.ndarray,
    syn_key_mat: np.ndarray,
) -> np.ndarray:
    """Generalized CAP of sensitive code column ``s`` without each group of synthetic records (G,):
    the group's records are subtracted from the counts of the tied combinations; a real
    combination whose tied combinations all vanish with the group (total count 0) gets its
    minimum-Hamming-distance set searched again among the combinations left."""
    groups = int(labels.max()) + 1
    n_i, n_j = tied.shape
    j_syn = syn["__j"].to_numpy().astype(np.int64)
    c_syn = syn[s].to_numpy().astype(np.int64)
    c_real = real[s].to_numpy().astype(np.int64)
    i_real = real["__i"].to_numpy().astype(np.int64)
    n_codes = int(max(c_syn.max(), c_real.max())) + 1
    m_g = stats.counts_without_groups(j_syn, labels, n_j).astype(np.float64)  # (G, J)
    ms_g = (
        stats.counts_without_groups(j_syn * n_codes + c_syn, labels, n_j * n_codes)
        .reshape(groups, n_j, n_codes)
        .astype(np.float64)
    )  # (G, J, codes)
    total = np.asarray(tied @ m_g.T)  # (I, G)
    correct = np.stack([np.asarray(tied @ ms_g[:, :, c].T) for c in range(n_codes)])  # (codes, I, G)
    pi, pg = np.nonzero(total == 0)
    block = max(1, _HAMMING_BLOCK_CELLS // max(1, n_j))
    for start in range(0, pi.size, block):  # the few (combination, group) pairs left with no tie
        i, g = pi[start : start + block], pg[start : start + block]
        alive = m_g[g] > 0
        d = (key_mat[i][:, None, :] != syn_key_mat[None, :, :]).sum(axis=2)
        d = np.where(alive, d, np.iinfo(np.int64).max)
        near = (d == d.min(axis=1, keepdims=True)) & alive
        total[i, g] = (near * m_g[g]).sum(axis=1)
        for c in range(n_codes):
            correct[c, i, g] = (near * ms_g[g, :, c]).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = correct[c_real, i_real, :] / total[i_real, :]  # (n, G)
    return np.nan_to_num(per, nan=0.0).mean(axis=0)


# ---------------------------------------------------------------------- attribute inference
def _record_weights(ctx) -> tuple[np.ndarray, float]:
    """Per real record weight ω_r = w(u)/c_u, with w(u) = −P(u)·log P(u)/H(Y) over the distinct
    real records u (all columns, P(u) = c_u/n, natural log) so that Σ_u w(u)·acc(u) = Σ_r ω_r·correct_r.
    H = 0 (a single distinct record) gives that record weight 1."""
    n = ctx.n_real
    counts = ctx.real.select(pl.len().over(ctx.schema.columns).alias("__c"))["__c"].to_numpy().astype(np.float64)
    p = counts / n
    # H = Σ_u −p_u log p_u = Σ_r −(1/n) log p_r
    h = float(-(np.log(p)).sum() / n)
    if h <= 0:
        return np.full(n, 1.0 / n), 0.0
    return -np.log(p) / (n * h), h


def nearest_on_keys(ctx, keys: list[str], rows: np.ndarray | None = None, k: int = 1) -> np.ndarray:
    """Per real record, the row index of its nearest synthetic record in the keys' mixed space,
    ties → the lowest synthetic row index: the context's cached search
    ``ctx.neighbours(("mixed", keys), "real", "synthetic", k)`` (k > 1 when a jackknife will
    delete groups of synthetic records).

    Keys repeat a lot (a handful of categorical keys has few distinct combinations); the engine's
    k = 1 path then searches the distinct points only, keeping the lowest-index tie rule.
    """
    return ctx.neighbours(("mixed", tuple(keys)), "real", "synthetic", k, rows=rows).idx[:, 0]


def _correct_guess(ctx, col: str, idx: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """1.0 where the synthetic record ``idx`` (per real record, any shape of indices) reveals the
    real record's value of ``col`` (the real records ``rows`` only, when given): equal (categorical; null only against null) or within 10 %
    of the synthetic value (numeric)."""
    if ctx.schema.kind(col) == NUMERIC:
        r = on_rows(ctx.real[col].to_numpy().astype(np.float64, copy=False), rows)
        s = ctx.synthetic[col].to_numpy().astype(np.float64, copy=False)[idx]
        rn, sn = np.isnan(r), np.isnan(s)
        with np.errstate(invalid="ignore"):
            within = le(np.abs(r - s), 0.1 * np.abs(s))
        correct = np.where(rn | sn, rn & sn, within)
    else:
        codes, _ = category_codes({"real": ctx.real, "synthetic": ctx.synthetic}, col)
        correct = on_rows(codes["real"], rows) == codes["synthetic"][idx]
    return correct.astype(np.float64)


def _weights_without_groups(ctx, labels: np.ndarray) -> np.ndarray:
    """(G, n): the entropy weights ω_r recomputed on the real records without each group g (the
    distinct records' counts and the entropy H of the records left), 0 for the deleted ones."""
    groups = int(labels.max()) + 1
    ids = ctx.real.select(pl.struct(ctx.schema.columns).rank("dense").alias("__u"))["__u"].to_numpy()
    ids = ids.astype(np.int64) - 1
    n_u = int(ids.max()) + 1
    left = stats.counts_without_groups(ids, labels, n_u).astype(np.float64)  # (G, U)
    keep = labels[None, :] != np.arange(groups)[:, None]  # (G, n)
    size = keep.sum(axis=1, keepdims=True).astype(np.float64)
    p = np.take_along_axis(left, np.broadcast_to(ids, keep.shape), axis=1) / size
    info = np.where(keep, -np.log(np.where(keep, p, 1.0)), 0.0)  # −log p_r
    h = info.sum(axis=1, keepdims=True) / size
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(h > 0, info / (size * h), keep / size)
    return w


@register_metric(
    family="reconstruction",
    attack="infer a sensitive attribute from the nearest synthetic record on the key attributes (mixed space)",
    reference=REVIEW + "2.1.3 Attribute Inference Risk (Yan et al., 2022)",
    orientation="value = entropy-weighted share of real records whose sensitive value the nearest synthetic "
    "record on the keys reveals (equal, or within 10 % for numerics); worst sensitive column",
    needs=("sensitive",),
    spaces=("mixed",),
    memory_cost=4.0,
    sampled=("real",),
)
def attribute_inference(
    ctx, *, keys: Sequence[str] | None = None, sensitive: Sequence[str] | str | None = None
) -> MetricResult:
    """Attribute Inference Risk (Yan et al., 2022): each real record's nearest synthetic record on
    the keys, in the keys' own mixed space (standardised with the real key statistics; ties → the
    lowest synthetic row index), predicts its sensitive value. Correct when equal (categorical, a
    null only against a null) or |real − synthetic| ≤ 0.1·|synthetic| (numeric). value =
    Σ_u w(u)·accuracy(u) over the distinct real records u (all columns), w(u) =
    −P(u)log P(u)/H(Y): rare records weigh more. Several sensitive columns → the maximum.

    Not copied from PrivEval: its F1 reduces to 2·acc/(1+acc), drops the first float column from
    the keys, leaves numerics unscaled and leaks a float sensitive column into the matching.

    A copy scores 1 when every key combination determines the sensitive value (otherwise the
    lowest-index record of each key class decides); a release that knows nothing scores about the
    chance agreement of the sensitive values (≈ 0.45–0.65 for Adult's income, majority class 76 %).

    Orientation: risk; raw = value (the weighted accuracy); details give the unweighted accuracy.
    """
    keys, sensitive = ctx.key_sensitive(keys, sensitive)
    rows = real_rows(ctx)
    lab_r = jackknife_labels(ctx, "real", ctx.n_real) if rows is None else None
    lab_s = jackknife_labels(ctx, "synthetic", ctx.n_synthetic) if rows is None else None
    idx = nearest_on_keys(ctx, keys, rows, search_k(lab_s))
    weights, h = _record_weights(ctx)
    weights = on_rows(weights, rows)
    per_attr, extra = {}, {}
    for col in sensitive:
        correct = _correct_guess(ctx, col, idx, rows)
        per_attr[col] = correct
        extra[col] = {
            "accuracy": float(correct.mean()),
            "weighted_accuracy": float((weights * correct).sum() / weights.sum()),
        }
    res = _combine(
        ctx,
        "attribute_inference",
        keys,
        sensitive,
        per_attr,
        extra,
        "entropy-weighted accuracy of the nearest-synthetic-record guess of the sensitive value",
        "1 if the nearest synthetic record on the keys reveals the sensitive value",
        {"keys": keys, "sensitive": sensitive},
        weights=weights,
    )
    res.details.update({"entropy_real_records": h, "key_space": ctx.mixed(tuple(keys)).details})
    if lab_r is None or lab_s is None:  # too few records, or estimated on a sample
        return mark_sampled(widen_share_for_search(res, weights=weights), ctx, rows)
    # jackknife replicates for the holdout excess: real records deleted (weights recomputed, as
    # they depend on the real sample), synthetic records deleted (each real record's nearest
    # synthetic record outside the group, from the search's k-lists)
    worst = res.details["worst_sensitive"]
    reps_r = (_weights_without_groups(ctx, lab_r) * per_attr[worst][None, :]).sum(axis=1)
    sp = ctx.mixed(tuple(keys))
    nb = ctx.neighbours(("mixed", tuple(keys)), "real", "synthetic", search_k(lab_s))
    idx_g = ctx.nearest_outside_groups(nb, lab_s, sp.real, sp.synthetic, same=False, coded_columns=sp.coded_columns)[1]
    reps_s = (_correct_guess(ctx, worst, idx_g) * weights[None, :]).sum(axis=1)
    return widen_share_for_search(keep_jackknife(res, real=reps_r, synthetic=reps_s), weights=weights)
