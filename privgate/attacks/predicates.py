"""Conjunctive predicates over records ("age ≥ 71 AND sex = F AND zip = 1234"), held as arrays and
evaluated for hundreds of predicates against every record at once.

Records are coded as one float64 matrix per frame: a numeric column keeps its value (NaN =
null), a categorical column becomes the integer code of its level over all frames, with null as
a level of its own. A set of P predicates of c conditions is three (P, c) arrays: the column,
the operator and the value of each condition. Evaluation broadcasts each condition over a block
of predicates × all records (NumPy, chunked to a few tens of MiB) and ANDs the conditions; the
loops are over blocks, condition slots and the eight operators, never over records.

Comparisons are exact on the stored float64 values (a predicate's constants are values of
synthetic records, compared as a SQL engine would), not the tolerant distance comparisons of
:mod:`privgate.ties`, which concern computed distances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import polars as pl

from ..schema import NUMERIC, Schema
from ..spaces import category_codes

EQ, NE, LE, GE, LT, GT, ISNULL, NOTNULL = range(8)
_BLOCK_BYTES = 32 * 2**20


@dataclass(frozen=True)
class CodedFrames:
    """Every frame of one evaluation as a float64 matrix of values / level codes."""

    columns: list[str]
    numeric: np.ndarray  # (d,) bool: numeric column (NaN = null) or level codes
    matrices: dict[str, np.ndarray]

    def __getitem__(self, role: str) -> np.ndarray:
        return self.matrices[role]


def code_frames(frames: Mapping[str, pl.DataFrame], schema: Schema) -> CodedFrames:
    """Code ``frames`` (role → frame with the schema's columns) consistently across roles."""
    columns = schema.columns
    numeric = np.array([schema.kind(c) == NUMERIC for c in columns], dtype=bool)
    blocks: dict[str, list[np.ndarray]] = {r: [] for r in frames}
    for col, is_num in zip(columns, numeric):
        if is_num:
            for r, f in frames.items():
                blocks[r].append(f[col].cast(pl.Float64).to_numpy().astype(np.float64, copy=False))
        else:
            codes, _ = category_codes(frames, col)
            for r in frames:
                blocks[r].append(codes[r].astype(np.float64))
    mats = {r: np.column_stack(b) if b else np.zeros((frames[r].height, 0)) for r, b in blocks.items()}
    return CodedFrames(columns, numeric, mats)


@dataclass(frozen=True)
class Predicates:
    """P conjunctions of c conditions: ``cols``, ``ops`` and ``vals`` are (P, c) arrays."""

    cols: np.ndarray
    ops: np.ndarray
    vals: np.ndarray

    def __len__(self) -> int:
        return int(self.cols.shape[0])

    def take(self, idx: np.ndarray) -> "Predicates":
        return Predicates(self.cols[idx], self.ops[idx], self.vals[idx])

    @staticmethod
    def concat(parts: list["Predicates"], width: int) -> "Predicates":
        if not parts:
            return Predicates(np.zeros((0, width), np.int64), np.zeros((0, width), np.int8), np.zeros((0, width)))
        return Predicates(
            np.vstack([p.cols for p in parts]), np.vstack([p.ops for p in parts]), np.vstack([p.vals for p in parts])
        )

    def keys(self) -> np.ndarray:
        """One row per predicate identifying it (the value is ignored for null tests), for
        finding duplicates."""
        vals = np.where((self.ops == ISNULL) | (self.ops == NOTNULL), 0.0, self.vals)
        return np.hstack([self.cols.astype(np.float64), self.ops.astype(np.float64), vals])


def _condition(values: np.ndarray, op: int, const: np.ndarray) -> np.ndarray:
    if op == EQ:
        return values == const
    if op == NE:
        return values != const
    if op == LE:
        return values <= const
    if op == GE:
        return values >= const
    if op == LT:
        return values < const
    if op == GT:
        return values > const
    if op == ISNULL:
        return np.isnan(values)
    if op == NOTNULL:
        return ~np.isnan(values)
    raise ValueError(f"unknown operator code {op}")


def match_counts(x: np.ndarray, preds: Predicates) -> tuple[np.ndarray, np.ndarray]:
    """For every predicate, how many rows of ``x`` satisfy it and the position of the first one
    (meaningful where the count is ≥ 1)."""
    n = x.shape[0]
    p_total = len(preds)
    counts = np.zeros(p_total, dtype=np.int64)
    first = np.zeros(p_total, dtype=np.int64)
    if p_total == 0 or n == 0:
        return counts, first
    xt = np.ascontiguousarray(x.T)
    block = max(1, _BLOCK_BYTES // n)
    with np.errstate(invalid="ignore"):
        for s in range(0, p_total, block):
            sl = slice(s, min(p_total, s + block))
            cols, ops, vals = preds.cols[sl], preds.ops[sl], preds.vals[sl]
            mask = np.ones((cols.shape[0], n), dtype=bool)
            cond = np.empty_like(mask)
            for j in range(cols.shape[1]):
                # one broadcast comparison per (column, operator) group of this condition slot
                key = cols[:, j].astype(np.int64) * 8 + ops[:, j]
                for k in np.unique(key):
                    rows = np.flatnonzero(key == k)
                    cond[rows] = _condition(xt[k // 8][None, :], int(k % 8), vals[rows, j][:, None])
                mask &= cond
            counts[sl] = mask.sum(axis=1)
            first[sl] = mask.argmax(axis=1)
    return counts, first


# ----------------------------------------------------------------------------- bitset counter
def _popcount_rows(words: np.ndarray) -> np.ndarray:
    """Set bits per row of a (B, W) uint64 array."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)  # numpy < 2.0
    return table[words.view(np.uint8)].sum(axis=1)


def _group_bitsets(group: np.ndarray, n_groups: int, n_words: int) -> np.ndarray:
    """(n_groups, n_words) uint64 bitsets: bit i (word i // 64, bit i % 64) of row g is set when
    record i belongs to group g (``group`` < 0: in no group)."""
    out = np.zeros((n_groups, n_words), dtype=np.uint64)
    i = np.flatnonzero(group >= 0)
    np.bitwise_or.at(out, (group[i], i >> 6), np.left_shift(np.uint64(1), (i & 63).astype(np.uint64)))
    return out


class ConjunctionCounter:
    """Exact match counts of many conjunctions of ``col == level`` (categorical), ``col >= v`` /
    ``col <= v`` and ``col is null`` (numeric) against one coded frame, through bitsets.

    Level and null conditions are exact bitsets. A numeric threshold is answered by the bitset of
    the nearest precomputed cut in that column's sorted order that contains it (a superset: at
    most ``step`` extra records, all on the wrong side of v); the AND of a conjunction's
    bitsets is popcounted, and the extra records — the "slabs" between cut and threshold that
    survive the AND — are subtracted, counted once each. Per candidate the work is W = n/64 words
    per condition plus a few slab records, against n comparisons per condition by broadcasting.
    """

    def __init__(self, x: np.ndarray, numeric: np.ndarray) -> None:
        n, d = x.shape
        self.n, self.numeric = n, numeric
        self.n_words = max(1, -(-n // 64))
        self.step = max(64, -(-n // 512))
        parts: list[np.ndarray] = [np.zeros((1, self.n_words), np.uint64)]  # 0: the empty set
        offset = 1
        self.n_levels = np.zeros(d, dtype=np.int64)
        self.level_base = np.full(d, -1, dtype=np.int64)  # categorical: bitset of code c = base + c
        self.null_at = np.full(d, -1, dtype=np.int64)  # numeric: nulls bitset; +1 = not-null
        self.suffix_at = np.full(d, -1, dtype=np.int64)  # numeric: records at sorted pos ≥ q·step
        self.prefix_at = np.full(d, -1, dtype=np.int64)  # numeric: records at sorted pos < q·step
        self.order: dict[int, np.ndarray] = {}
        self.sorted_vals: dict[int, np.ndarray] = {}
        for j in range(d):
            v = x[:, j]
            if not numeric[j]:
                codes = v.astype(np.int64)
                n_levels = int(codes.max()) + 1 if n else 0
                self.level_base[j], self.n_levels[j] = offset, n_levels
                parts.append(_group_bitsets(codes, n_levels, self.n_words))
                offset += n_levels
                continue
            order = np.argsort(v, kind="stable")  # NaN (null) sorts last
            self.order[j], self.sorted_vals[j] = order, v[order]
            nulls = np.isnan(v)
            pos = np.empty(n, dtype=np.int64)
            pos[order] = np.arange(n)
            n_cuts = len(range(0, n + self.step, self.step))  # cut q at sorted position q·step
            self.null_at[j] = offset
            parts.append(_group_bitsets((~nulls).astype(np.int64), 2, self.n_words))  # nulls, not-nulls
            # block q = records at sorted positions [q·step, (q+1)·step); suffix[q] = OR of blocks ≥ q,
            # prefix[q] = OR of blocks < q
            blocks = _group_bitsets(pos // self.step, n_cuts, self.n_words)
            suffix = np.bitwise_or.accumulate(blocks[::-1], axis=0)[::-1]
            prefix = np.vstack([np.zeros((1, self.n_words), np.uint64), np.bitwise_or.accumulate(blocks, axis=0)[:-1]])
            self.suffix_at[j] = offset + 2
            parts.append(suffix)
            self.prefix_at[j] = offset + 2 + n_cuts
            parts.append(prefix)
            offset += 2 + 2 * n_cuts
        self.bits = np.vstack(parts) if parts else np.zeros((0, self.n_words), np.uint64)

    def counts(self, preds: Predicates) -> np.ndarray:
        """Number of records matching each predicate (operators EQ on levels, GE/LE/ISNULL on
        numbers), in blocks of predicates whose bitsets (n/64 words each) fill about
        ``_BLOCK_BYTES`` — so the memory a batch needs stays bounded however many records."""
        b = len(preds)
        per_block = max(1, _BLOCK_BYTES // (8 * self.n_words))
        if b <= per_block:
            return self._counts(preds)
        return np.concatenate(
            [self._counts(preds.take(np.arange(s, min(b, s + per_block)))) for s in range(0, b, per_block)]
        )

    def _counts(self, preds: Predicates) -> np.ndarray:
        b, c = preds.cols.shape
        if b == 0:
            return np.zeros(0, dtype=np.int64)
        acc = np.full((b, self.n_words), np.uint64(2**64 - 1))
        slabs = []
        for j in range(c):
            col, op, val = preds.cols[:, j], preds.ops[:, j], preds.vals[:, j]
            which = np.empty(b, dtype=np.int64)
            cat = ~self.numeric[col]
            code = val[cat].astype(np.int64)
            known = (code >= 0) & (code < self.n_levels[col[cat]])
            which[cat] = np.where(known, self.level_base[col[cat]] + code, 0)  # unseen level: empty set
            isnull = ~cat & (op == ISNULL)
            which[isnull] = self.null_at[col[isnull]]
            for o in (GE, LE):
                rows = np.flatnonzero(~cat & (op == o))
                if rows.size == 0:
                    continue
                which[rows], slab = self._threshold(col[rows], val[rows], o)
                full = np.full((b, slab.shape[1]), -1, dtype=np.int64)
                full[rows] = slab
                slabs.append(full)
                if o == GE:  # the suffix of the sorted order includes the nulls sorted last
                    acc[rows] &= self.bits[self.null_at[col[rows]] + 1]
            bad = ~cat & ~np.isin(op, (GE, LE, ISNULL))
            if bad.any() or (cat & (op != EQ)).any():
                raise ValueError("ConjunctionCounter handles == on levels and >=, <=, is null on numbers only")
            acc &= self.bits[which]
        total = _popcount_rows(acc)
        if slabs:
            ids = np.hstack(slabs)
            ok = ids >= 0
            safe = np.where(ok, ids, 0)
            inside = (acc[np.arange(b)[:, None], safe >> 6] >> (safe & 63).astype(np.uint64)) & np.uint64(1)
            extra = np.where(ok & (inside == 1), ids, -1)
            extra.sort(axis=1)
            distinct = (extra >= 0) & np.concatenate([np.ones((b, 1), bool), extra[:, 1:] != extra[:, :-1]], axis=1)
            total = total - distinct.sum(axis=1)
        return total

    def _threshold(self, cols: np.ndarray, vals: np.ndarray, op: int) -> tuple[np.ndarray, np.ndarray]:
        """Bitset index of the cut containing ``col >= v`` (or ``<= v``) and the records between
        that cut and v (the slab, padded with -1)."""
        step = self.step
        which = np.empty(cols.size, dtype=np.int64)
        slab = np.full((cols.size, step), -1, dtype=np.int64)
        ar = np.arange(step)
        for j in np.unique(cols):
            rows = np.flatnonzero(cols == j)
            sv, order = self.sorted_vals[j], self.order[j]
            if op == GE:
                first = np.searchsorted(sv, vals[rows], side="left")  # first position ≥ v
                q = first // step
                which[rows] = self.suffix_at[j] + q
                pos = q[:, None] * step + ar  # positions [q·step, first)
                keep = pos < first[:, None]
            else:
                after = np.searchsorted(sv, vals[rows], side="right")  # first position > v
                q = -(-after // step)
                which[rows] = self.prefix_at[j] + q
                pos = after[:, None] + ar  # positions [after, q·step)
                keep = (pos < (q * step)[:, None]) & (pos < self.n)
            slab[rows] = np.where(keep, order[np.minimum(pos, self.n - 1)], -1)
        return which, slab
