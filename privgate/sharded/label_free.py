"""The label-free view's correspondence (:func:`privgate.label_free.learn`) learnt on a sharded
evaluation's partitions, step for step as the local code learns it, for what decides whether it
is the identity — and a refusal (a block) when it is not.

Every quantity the local learning reads from whole frames is computed here from partitions:

* **Moments, level counts, scale checks** (:func:`~.label_free_tasks.summary_task`,
  :func:`~.label_free_tasks.scale_counts_task`): per numeric column count, mean, m², min, max of
  the finite values merged exactly (Chan's update; a few ulps from NumPy's one-pass mean and std,
  as the encoding's fit), the release values outside the scale bounds counted; per categorical
  column the level counts, which merge exactly — so every level's share is the local one.
* **The suspect test's Kolmogorov–Smirnov distance**: the local test reads an evenly strided
  subsample of each side's finite values (every ⌊n / ``KS_SAMPLE``⌋-th); each partition sends
  its strided values (their global positions known from the finite counts), and one worker
  computes the distance on exactly those values (about ``KS_SAMPLE`` to 2 × it per side).
* **Whole-column ranks** (the numeric maps' scale-free view): a value's mid-rank is how many
  values of its frame are below it plus half of those equal to it; for the ≤ 500 anchored
  release records and for the reference rows they anchor these counts are summed over the
  partitions' sorted values, and every reference row's rank is accumulated partition by
  partition on the worker holding its partition (one partition and one other's sorted values at a
  time) — the local ranks exactly.
* **Anchor searches**: the local searches' query blocks (≤ 2000 release records, ≤ 500 for the
  numeric maps) are encoded here, as the local code encodes them, and broadcast; each reference
  partition is encoded in the label-invariant view on its worker with the merged moments and
  shares, and the exact nearest lists are merged (:mod:`privgate.sharded.kernel`). A view's
  standardisation moments are merged from partitions (ulps from NumPy's; the coordinates are
  cast to float32 as locally).
* **The marginal gap** of a candidate affine map (only read when the anchored pairs support a
  map): one worker holds that one numeric column of each side — a column, never a table.
* **The mapped release** (:meth:`_OnCluster.map_release`): when affine maps are learnt, each
  release partition's images a·v + b are snapped to the nearest reference value within the
  column's tolerance over the whole reference column (:func:`privgate.numeric_maps._snap`,
  exactly): the reference partitions' sorted values are folded in one after another, per value
  its largest reference value below and smallest not below (a max and a min: the same for any
  split), and ``_snap``'s rule picks between them (the lower on a tie). Each partition's mapped
  columns are a result held on the worker that computed it; every later task reading a release
  partition takes them with it (the scale check of the mapped release, as the local
  ``check_scales`` after ``apply_numeric_maps``, the anchors of the level classes, the
  record-by-record join) — one partition's columns a task, a worker's share of the release's
  mapped columns held, never a whole column on one worker. A monotone map's values are the
  reference's order statistics at ⌊u·n⌋, u each release value's whole-release mid-rank (counts
  of smaller and equal values summed over the release's partitions, as for the ranks above):
  selected by buckets of the reference column — splitters from a regular sample of each
  reference partition, a value equal to a splitter a bucket of its own (known without its
  values), each open bucket's values (about two partitions' worth at most) sorted by one task,
  from which each release partition picks its positions.
* **Records disguised one by one**: the exact numeric matches are joined by hash buckets of the
  numeric tuple (:mod:`privgate.sharded.joins`' scheme); the pairs' count tables per categorical
  column merge exactly, and the explained pairs are counted per bucket. Only when some are
  explained, the pairs' levels (at most ``MAX_SHUFFLED_PAIRS`` pairs) come here for the local
  shuffle test and the records it keeps, computed as locally on them; more pairs than that are
  refused (a block).

* **A column off the real scale only in its tails** (:mod:`privgate.sharded.far_records`): the
  local far records' learning (:func:`privgate.tail_maps.learn_far_maps`) run on the cluster's
  answers — far records' positions per partition, the ≤ ``MAP_ANCHOR_ROWS`` anchored ones read by
  their partitions, their reference ranks, shares and snaps from counts and folds as above — its
  maps applied per release partition into the partition's mapped columns; a column still off left
  out of the view when the reference records stay identifying without it (counted by hash
  buckets), refused as locally otherwise.

When the learnt correspondence is the identity, it is returned and the label-free metrics report
the plain sharded metrics' results, as locally. When it recodes levels, finds records disguised
one by one or maps numeric columns, it is returned too, and :func:`recoded_context` gives the
plain metrics a sharded context whose workers recode each partition as they read it, give each
disguised record its source's levels and read each release partition's mapped columns
(:attr:`privgate.sharded.encode.Inputs.codes`, ``sources``, ``mapped``). A record-by-record
search of more than ``MAX_SHUFFLED_PAIRS`` exact pairs raises :class:`LabelFreeViewNotShardedError`:
the metric's error, so the gate blocks (exit 3), never passes.
Nothing here reports a value or a level: counts and column positions only.
"""

from __future__ import annotations

import operator
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl

from .. import seeds
from ..disguised_records import (
    IDENTIFYING_SHARE,
    MIN_ANCHORED,
    DisguisedRecords,
    _explained,
    beats_shuffles,
    pair_classes,
)
from ..errors import NotApplicableError
from ..label_free import Correspondence, _anchor_rows, _column_classes, _views, counted_view_schema, recode
from ..level_classes import MIN_SUPPORT, level_shares
from ..numeric_maps import (
    KS_SAMPLE,
    MAP_ANCHOR_ROWS,
    MAP_SHARE,
    MIN_MAP_SUPPORT,
    RANK_AGAINST,
    RANK_TOL,
    SNAP_TOL,
    SUSPECT_KS,
    NumericMap,
    ScaleCheck,
    _rank_correlation,
    affine_map_of,
    foreign_scale_error,
    scale_bounds,
    scale_result,
    settled_std,
)
from ..schema import Schema
from ..tail_maps import learn_far_maps
from ..ties import REL_TOL
from . import label_free_tasks as lt
from .far_records import FarOnCluster, apply_tail_maps, unique_reference_records
from .search import merge_task
from .summary import merge_moments

__all__ = ["MAX_SHUFFLED_PAIRS", "LabelFreeViewNotShardedError", "learn_sharded"]

#: exact numeric pairs whose levels the shuffle test may gather here (2 × columns short labels each)
MAX_SHUFFLED_PAIRS = 200_000
#: regular samples per reference partition for a monotone map's bucket splitters (at most)
MAX_SPLIT_SAMPLE = 256


class LabelFreeViewNotShardedError(NotApplicableError):
    """The label-free view is not computed on a cluster (more exact numeric pairs than the
    shuffle test gathers): the label-free metric fails, so the gate blocks."""

    def __init__(self, what: str, metric: str | None = None) -> None:
        self.what = what
        who = f"{metric}: " if metric else ""
        super().__init__(
            f"{who}the release's labels or scales differ from the real data's ({what}), and the label-free "
            "view's recoded records are not computed on a cluster, so this metric is not scored and the gate "
            "blocks; gate the release on one machine (without --sharded) for its label-free values"
        )


class _OnCluster:
    """The release and the reference (training ∪ holdout) of a sharded context as partitions, with
    their merged summaries: what the learning reads of whole frames, from the workers."""

    def __init__(self, ctx: Any) -> None:
        search = ctx._search_on
        self.ctx, self.client, self.threads = ctx, search.client, search.threads
        self.schema: Schema = ctx.schema
        self.kinds = self.schema.as_dict()
        self.num, self.cat = list(self.schema.numeric), list(self.schema.categorical)
        parts = search.inputs.parts
        release = ctx._views["synthetic"]
        if release.role != "synthetic" or release.keep is not None:
            raise NotApplicableError("a sharded label-free view is learnt on the whole release only")
        n_real = sum(p.rows for p in parts["real"])
        self.parts = {
            "release": [(p, p.start) for p in parts["synthetic"]],
            "reference": [(p, p.start) for p in parts["real"]]
            + ([(p, n_real + p.start) for p in parts["holdout"]] if ctx.holdout is not None else []),
        }
        self.n = {side: sum(p.rows for p, _ in ps) for side, ps in self.parts.items()}
        #: release partition (by first position) → future of its mapped numeric columns (none
        #: until :meth:`map_release`): every release task reads its partition through it
        self.mapped: dict[int, Any] = {}
        self.summaries = {side: self._summaries(side) for side in self.parts}
        self._sorted: dict[str, list] = {}
        self._checks: dict[str, ScaleCheck] = {}
        self._ranks: tuple[list, np.ndarray, np.ndarray] | None = None

    def _submit(self, fn, *args, **kwargs):
        return self.client.submit(fn, *args, pure=False, **kwargs)

    def _mapped(self, side: str, p: Any) -> Any:
        """The future of release partition ``p``'s mapped columns (None: read as it is)."""
        return self.mapped.get(p.start) if side == "release" else None

    def _summaries(self, side: str) -> list[dict]:
        return self.client.gather(
            [
                self._submit(lt.summary_task, p, self.kinds, self.num, self.cat, mapped=self._mapped(side, p))
                for p, _ in self.parts[side]
            ]
        )

    def map_release(self, maps: dict[str, NumericMap]) -> None:
        """Put the release's columns of ``maps`` on the reference's scale, on the workers, as
        :func:`privgate.numeric_maps.apply_numeric_maps` does (:meth:`_affine_columns`,
        :meth:`_monotone_columns`). Each release partition's mapped columns stay on the worker
        that computed them, a future held here (:attr:`mapped`); the release's summaries are
        those of the mapped release from then on."""
        results: dict[int, list] = {p.start: [] for p, _ in self.parts["release"]}
        affine = {c: m for c, m in maps.items() if m.kind == "affine"}
        monotone = {c: m for c, m in maps.items() if m.kind != "affine"}
        if affine:
            self._affine_columns(affine, results)
        if monotone:
            self._monotone_columns(monotone, results)
        self.mapped = {
            start: (fs[0] if len(fs) == 1 else self._submit(lt.combine_task, *fs))
            for start, fs in results.items()
            if fs
        }
        self.summaries["release"] = self._summaries("release")
        self._sorted.pop("release", None)
        self._checks.clear()

    def _affine_columns(self, maps: dict[str, NumericMap], results: dict[int, list]) -> None:
        """Per release partition, its images a·v + b snapped to the nearest reference value within
        the column's tolerance over the WHOLE reference column (:func:`privgate.numeric_maps._snap`)
        — the reference partitions' sorted values folded in one after another
        (:func:`~.label_free_tasks.snap_step_task`: per value its two neighbours), then snapped
        (:func:`~.label_free_tasks.snap_finish_task`)."""
        coef = {c: (m.a, m.b) for c, m in maps.items()}
        sorted_ = self.sorted_values("reference")
        tops = self.client.gather([self._submit(lt.top_two_task, s, list(coef)) for s in sorted_])
        top_two = {c: np.sort(np.concatenate([t[c] for t in tops]))[-2:] for c in coef}
        tols = {}
        for c in coef:
            n_r, _, _, lo, hi = self.moments("reference", c)
            tols[c] = SNAP_TOL * (1.0 + max(abs(lo), abs(hi)) if n_r else 1.0)  # numeric_maps._tolerance
        for p, _ in self.parts["release"]:
            state = self._submit(lt.snap_start_task, p, self.kinds, coef)
            for s in sorted_:
                state = self._submit(lt.snap_step_task, state, s)
            results[p.start].append(self._submit(lt.snap_finish_task, state, top_two, tols))

    def _monotone_columns(self, maps: dict[str, NumericMap], results: dict[int, list]) -> None:
        """Per release partition, the reference's order statistic at each value's position
        ⌊u·n⌋ in the sorted reference column (u: its mid-rank in the whole release, from the
        counts of smaller and equal values summed over the release's partitions). The order
        statistics are selected by buckets: a regular sample of each reference partition gives
        splitters, every reference partition counts and splits its values by them (a value equal
        to a splitter is its own bucket, known without its values), one task per open bucket sorts
        that bucket's values (at most about two partitions' worth), and each release partition
        picks its positions' values from the buckets."""
        rel_sorted = self.sorted_values("release")  # the release as it is (no map applied yet)
        counts = {}
        for p, _ in self.parts["release"]:
            acc = None
            for s in rel_sorted:
                acc = self._submit(lt.rank_step_task, acc, p, self.kinds, s)
            counts[p.start] = acc
        ref_sorted = self.sorted_values("reference")
        # k regular samples of each of the P partitions, a splitter every k-th of them: a bucket
        # holds at most (1 + P/k) partitions' worth of values — two for k = P, capped so the
        # sample read here stays at most MAX_SPLIT_SAMPLE × P values a column
        k = max(2, min(len(ref_sorted), MAX_SPLIT_SAMPLE))
        for c, m in maps.items():
            n_ref = self.moments("reference", c)[0]
            if n_ref == 0:  # no finite reference value: the values are kept, as locally
                continue
            sample = np.sort(
                np.concatenate(self.client.gather([self._submit(lt.regular_sample_task, s, c, k) for s in ref_sorted]))
            )
            splitters = np.unique(sample[k // 2 :: k])
            splits = [self._submit(lt.bucket_split_task, s, c, splitters) for s in ref_sorted]
            per_bucket = sum(self.client.gather([self._submit(operator.getitem, f, 0) for f in splits]))
            ends = np.cumsum(per_bucket)
            buckets = [
                self._submit(lt.bucket_task, *[self._submit(lt.piece_task, f, i) for f in splits])
                for i in range(splitters.size + 1)
            ]
            for p, _ in self.parts["release"]:
                state = self._submit(
                    lt.monotone_positions_task,
                    counts[p.start],
                    p,
                    self.kinds,
                    c,
                    self.n["release"],
                    n_ref,
                    m.decreasing,
                    ends,
                )
                picks = [self._submit(lt.pick_task, state, j, b) for j, b in enumerate(buckets)]
                results[p.start].append(self._submit(lt.monotone_finish_task, state, c, splitters, *picks))

    # ------------------------------------------------------------------ merged summaries
    def moments(self, side: str, c: str) -> tuple[int, float, float, float, float]:
        """(finite count, mean, population std, min, max) of column ``c`` on ``side``."""
        parts = [s["moments"][c] for s in self.summaries[side]]
        mean, std, lo, hi = merge_moments(parts)
        return int(sum(p[0] for p in parts)), mean, std, lo, hi

    def levels(self, side: str, c: str) -> dict:
        """{level (null as NULL): count} of column ``c`` on ``side``."""
        out: dict = {}
        for s in self.summaries[side]:
            for lv, k in s["levels"][c].items():
                out[lv] = out.get(lv, 0) + k
        return out

    def share_entry(self, c: str) -> tuple[tuple, float, float]:
        """(the view's entry for column ``c``'s reference shares, their mean, their std)."""
        counts = self.levels("reference", c)
        n = max(self.n["reference"], 1)
        shares = {lv: k / n for lv, k in counts.items()}
        mean, std, _, _ = merge_moments([[k, shares[lv], 0.0, shares[lv], shares[lv]] for lv, k in counts.items()])
        return ("share", c, list(shares), list(shares.values())), mean, std

    def release_shares(self, values: pl.Series) -> np.ndarray:
        """Each release cell's level share in the whole release (null is a level)."""
        counts = self.levels("release", values.name)
        n = max(self.n["release"], 1)
        levels = list(counts)
        return (
            values.fill_null(lt.NULL)
            .replace_strict(levels, [counts[lv] / n for lv in levels], return_dtype=pl.Float64)
            .to_numpy()
        )

    # ------------------------------------------------------------------ rows and ranks
    def rows(self, side: str, positions: np.ndarray, columns: list[str]) -> pl.DataFrame:
        """The normalised ``columns`` of ``side``'s records at ``positions`` (any order, repeats)."""
        u = np.unique(np.asarray(positions, dtype=np.int64))
        pieces = self.client.gather(
            [
                self._submit(lt.rows_task, p, first, self.kinds, columns, u, mapped=self._mapped(side, p))
                for p, first in self.parts[side]
                if np.any((u >= first) & (u < first + p.rows))
            ]
        )
        frame = pl.concat(pieces) if pieces else pl.DataFrame(schema={c: pl.Float64 for c in columns})
        return frame[np.searchsorted(u, positions)]

    def strided(self, side: str, c: str, stride: int) -> list:
        """Futures of each partition's values of the evenly strided subsample of ``side``'s column ``c``."""
        out, first = [], 0
        for (p, _), s in zip(self.parts[side], self.summaries[side]):
            out.append(self._submit(lt.strided_task, p, self.kinds, c, first, stride, mapped=self._mapped(side, p)))
            first += int(s["moments"][c][0])
        return out

    def sorted_values(self, side: str) -> list:
        if side not in self._sorted:
            self._sorted[side] = [
                self._submit(lt.sorted_task, p, self.kinds, self.num, mapped=self._mapped(side, p))
                for p, _ in self.parts[side]
            ]
        return self._sorted[side]

    def ranks(self, side: str, c: str, values: np.ndarray) -> np.ndarray:
        """The local ``_ranks`` of ``side``'s column ``c`` at records holding ``values`` (NaN: null)."""
        counts = self.client.gather([self._submit(lt.count_task, {c: values}, s) for s in self.sorted_values(side)])
        return lt.mid_ranks(sum(k[c] for k in counts), values, self.n[side])

    def rank_blocks(self) -> tuple[list, np.ndarray, np.ndarray]:
        """(per reference partition the future of its rows' ranks, the ranks' means, their stds)."""
        if self._ranks is None:
            sorted_ = self.sorted_values("reference")
            blocks = []
            for p, _ in self.parts["reference"]:
                acc = None
                for s in sorted_:
                    acc = self._submit(lt.rank_step_task, acc, p, self.kinds, s)
                blocks.append(self._submit(lt.rank_block_task, acc, p, self.kinds, self.num, self.n["reference"]))
            moments = self.client.gather([self._submit(operator.getitem, b, 1) for b in blocks])
            stats = [merge_moments([m[j] for m in moments]) for j in range(len(self.num))]
            self._ranks = (blocks, np.array([s[0] for s in stats]), np.array([s[1] for s in stats]))
        return self._ranks

    # ------------------------------------------------------------------ searches
    def search(self, query: np.ndarray, spec: list[tuple], mean, sd, name: str) -> np.ndarray:
        """The reference position nearest each query row (float32, standardised) in the view ``spec``."""
        uses_ranks = any(e[0] == "rank" for e in spec)
        blocks = self.rank_blocks()[0] if uses_ranks else [None] * len(self.parts["reference"])
        sent = self.client.scatter(query, broadcast=True, hash=False)
        mean, sd = np.asarray(mean, np.float64), np.asarray(sd, np.float64)
        tasks = [
            self._submit(lt.anchor_search_task, sent, p, first, self.kinds, spec, mean, sd, b, self.threads)
            for (p, first), b in zip(self.parts["reference"], blocks)
        ]
        _, idx = self._submit(merge_task, 1, *tasks).result()
        self.ctx._searches_used[name] = self.ctx._description()
        return idx[:, 0]


def learn_sharded(ctx: Any, *, name: str) -> Correspondence:
    """The correspondence of a sharded context's release and reference (the local
    :func:`privgate.label_free.learn`'s, learnt from partitions; the roles' levels, the
    disguised records' sources and the futures of the release's mapped columns kept in
    ``ctx.derived`` for :func:`recoded_context`). Learnt numeric maps are applied on the workers
    (:meth:`_OnCluster.map_release`) and everything after them reads the mapped release, as
    locally; so are the far records' own maps of a column off the scale only in its tails
    (:mod:`privgate.sharded.far_records`), and a column still off is left out of the view. Raises :class:`LabelFreeViewNotShardedError` when the record-by-record search has
    more pairs than it gathers, and :class:`privgate.numeric_maps.ForeignScaleError` as the local
    learning does."""
    cl = _OnCluster(ctx)
    rows = _anchor_rows(ctx, SimpleNamespace(height=cl.n["release"]))
    sample = cl.rows("release", rows, list(cl.schema.columns))
    maps = _numeric_maps(cl, rows, sample, name)
    if maps:  # the mapped release from here on, as locally (apply_numeric_maps, then check_scales)
        cl.map_release(maps)
        ctx.derived["label_free_mapped"] = cl.mapped
        sample = cl.rows("release", rows, list(cl.schema.columns))
    for c in cl.num:
        chk = _scale_check(cl, c)
        if chk.bulk_off:
            raise foreign_scale_error(c, chk, cl.n["release"], maps)
    left_out = tuple(c for c in cl.num if _scale_check(cl, c).off)
    tails = None
    schema = cl.schema
    if left_out:  # the far records' own maps (privgate.tail_maps), learnt and applied as locally
        tails = learn_far_maps(FarOnCluster(cl, schema), schema, left_out, ctx.seed, name=name)
        if tails is not None:
            apply_tail_maps(cl, tails, left_out)
            ctx.derived["label_free_mapped"] = cl.mapped
            sample = cl.rows("release", rows, list(cl.schema.columns))
            for c in cl.num:  # check_scales of the release with the far records mapped
                chk = _scale_check(cl, c)
                if chk.bulk_off:
                    raise foreign_scale_error(c, chk, cl.n["release"], maps)
            left_out = tuple(c for c in cl.num if _scale_check(cl, c).off)
    if left_out:  # still off in their tails: left out of the view while the rest identifies records
        kept = [c for c in schema.columns if c not in left_out]
        schema = counted_view_schema(schema, left_out, unique_reference_records(cl, kept), cl.n["reference"])
    ctx.derived["label_free_levels"] = _role_levels(cl)
    if not cl.cat:
        return Correspondence(
            {}, {}, (), anchored=int(rows.size), numeric_maps=maps, left_out=left_out, tail_maps=tails
        )
    levels = {
        c: (
            [lv for lv in cl.levels("release", c) if lv != lt.NULL],
            [lv for lv in cl.levels("reference", c) if lv != lt.NULL],
        )
        for c in cl.cat
    }
    kept = {c for c in cl.cat if max(map(len, levels[c])) * MIN_SUPPORT > rows.size}
    anchored = schema.subset([c for c in schema.columns if c not in kept]) if kept else schema
    tables = _anchor_tables(cl, sample, anchored, name)
    rel_codes, ref_codes, remapped, described = _column_classes(cl.cat, tables, levels, kept)
    # the record-by-record search reads the classes' codes when a column is recoded (as locally)
    found = _disguised(cl, {"release": rel_codes, "reference": ref_codes} if remapped else None, list(schema.numeric))
    records = None
    if found is not None:
        records, sources = found
        # the sources' levels in the view: by the reference codes (already, when the search read them)
        ctx.derived["label_free_sources"] = sources if remapped else recode(sources, ref_codes)
    return Correspondence(
        rel_codes, ref_codes, tuple(remapped), described, int(rows.size), maps, records, left_out, tails
    )


def _role_levels(cl: _OnCluster) -> dict[str, dict[str, set]]:
    """Per role, per categorical column, its levels (a null as ``privgate.spaces.NULL_LEVEL``)."""
    from ..spaces import NULL_LEVEL

    n_real = len(cl.ctx._search_on.inputs.parts["real"])
    by_role = {
        "synthetic": cl.summaries["release"],
        "real": cl.summaries["reference"][:n_real],
        "holdout": cl.summaries["reference"][n_real:],
    }
    return {
        role: {c: {NULL_LEVEL if lv == lt.NULL else lv for s in sums for lv in s["levels"][c]} for c in cl.cat}
        for role, sums in by_role.items()
    }


# ---------------------------------------------------------------------- numeric maps
def _scale_check(cl: _OnCluster, c: str) -> ScaleCheck:
    """:func:`privgate.numeric_maps.scale_check` of column ``c`` from the merged moments and the
    release values counted outside its bounds on the workers."""
    if c in cl._checks:
        return cl._checks[c]
    n_s, _, sd_s, _, _ = cl.moments("release", c)
    n_r, _, sd_r, lo, hi = cl.moments("reference", c)
    if n_s == 0 or n_r == 0:
        return ScaleCheck(0, 0.0)
    bounds = {c: scale_bounds(lo, hi, sd_r)}
    counts = cl.client.gather(
        [
            cl._submit(lt.scale_counts_task, p, cl.kinds, bounds, mapped=cl._mapped("release", p))
            for p, _ in cl.parts["release"]
        ]
    )
    _, _, _, lo_s, hi_s = cl.moments("release", c)
    sd_s, sd_r = settled_std(sd_s, max(abs(lo_s), abs(hi_s))), settled_std(sd_r, max(abs(lo), abs(hi)))
    chk = scale_result(n_s, sum(k[c][0] for k in counts), sum(k[c][1] for k in counts), sd_s, sd_r)
    cl._checks[c] = chk
    return chk


def _strided(cl: _OnCluster, side: str, c: str, stride: int) -> list:
    """Futures of each partition's values of the evenly strided subsample of ``side``'s column ``c``."""
    return cl.strided(side, c, stride)


def _suspect(cl: _OnCluster, c: str) -> bool:
    """:func:`privgate.numeric_maps.suspect` of column ``c``: off its scale, or a strided
    subsample's Kolmogorov–Smirnov distance of at least ``SUSPECT_KS`` (computed on one worker)."""
    if _scale_check(cl, c).bulk_off:
        return True
    n_s, n_r = cl.moments("release", c)[0], cl.moments("reference", c)[0]
    if n_s == 0 or n_r == 0:
        return False
    rel = _strided(cl, "release", c, max(1, n_s // KS_SAMPLE))
    ref = _strided(cl, "reference", c, max(1, n_r // KS_SAMPLE))
    return cl._submit(lt.ks_task, rel, ref).result() >= SUSPECT_KS


def _rank_anchors(cl: _OnCluster, view: Schema, at: pl.DataFrame, u: dict, flip: set, name: str) -> np.ndarray:
    """The local ``_anchor_pairs``: the reference record nearest each anchored release record
    (``at``: their rows; ``u``: their ranks per numeric column) in the ranks-and-shares view."""
    _, r_mean, r_sd = cl.rank_blocks()
    q, spec, mean, sd = [], [], [], []
    for c in view.numeric:
        j = cl.num.index(c)
        q.append(1.0 - u[c] if c in flip else u[c])
        spec.append(("rank", j))
        mean.append(r_mean[j])
        sd.append(r_sd[j])
    for c in view.categorical:
        entry, m, s = cl.share_entry(c)
        q.append(cl.release_shares(at.get_column(c)))
        spec.append(entry)
        mean.append(m)
        sd.append(s)
    mean, sd = np.array(mean), np.array(sd)
    sd = np.where(sd > 0, sd, 1.0)
    query = np.ascontiguousarray((np.column_stack(q) - mean) / sd, dtype=np.float32)
    return cl.search(query, spec, mean, sd, name)


def _pairs(at: pl.DataFrame, ref: pl.DataFrame, c: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite (release value, anchored reference value) pairs of column ``c``."""
    s = at.get_column(c).cast(pl.Float64).to_numpy()
    r = ref.get_column(c).cast(pl.Float64).to_numpy()
    ok = np.isfinite(s) & np.isfinite(r)
    return s[ok], r[ok]


def _against(cl: _OnCluster, at: pl.DataFrame, anchor: np.ndarray, cols: list[str]) -> set[str]:
    """The columns among ``cols`` whose anchored pairs' rank correlation is below ``RANK_AGAINST``."""
    ref = cl.rows("reference", anchor, cl.num)
    return {c for c in cols if _rank_correlation(*_pairs(at, ref, c)) < RANK_AGAINST}


def _directions(cl: _OnCluster, at: pl.DataFrame, u: dict, off: list[str], name: str) -> tuple[set, np.ndarray]:
    """The local ``_off_scale_flips`` then ``_anchors_with_directions``: (flipped columns, anchors)."""
    schema = cl.schema
    on_scale = [c for c in schema.columns if c not in off]
    flip: set[str] = set()
    if off and on_scale:
        anchor = _rank_anchors(cl, schema.subset(on_scale), at, u, set(), f"{name}, on-scale columns")
        flip = _against(cl, at, anchor, off)
    elif off:
        for c in off:
            others = [o for o in schema.columns if o != c]
            if others:
                anchor = _rank_anchors(cl, schema.subset(others), at, u, set(), f"{name}, without a column")
                flip |= _against(cl, at, anchor, [c])
    anchor = _rank_anchors(cl, schema, at, u, flip, f"{name}, ranks and shares")
    against = _against(cl, at, anchor, [c for c in schema.numeric if c not in flip])
    if against:
        flip = flip | against
        anchor = _rank_anchors(cl, schema, at, u, flip, f"{name}, ranks and shares, flipped")
    return flip, anchor


def _numeric_maps(cl: _OnCluster, rows: np.ndarray, sample: pl.DataFrame, name: str) -> dict[str, NumericMap]:
    """The local :func:`privgate.numeric_maps.learn_numeric_maps`, step for step, on the cluster."""
    if not cl.num:
        return {}
    step = max(1, -(-rows.size // MAP_ANCHOR_ROWS))
    at = sample[::step]
    u = {c: cl.ranks("release", c, at.get_column(c).cast(pl.Float64).to_numpy()) for c in cl.num}
    off = [c for c in cl.num if _suspect(cl, c)]
    flip, anchor = _directions(cl, at, u, off, name)
    ref = cl.rows("reference", anchor, cl.num)
    rng = seeds.rng(cl.ctx.seed, "label_free.maps")
    maps: dict[str, NumericMap] = {}
    for c in cl.num:
        n_r, _, _, lo, hi = cl.moments("reference", c)
        tol = SNAP_TOL * (1.0 + max(abs(lo), abs(hi)) if n_r else 1.0)
        distinct = int(np.unique(np.concatenate([s["few"][c] for s in cl.summaries["release"]])).size)
        found = affine_map_of(*_pairs(at, ref, c), tol, distinct, _nearer(cl, c), rng)
        if found is None and c in off and len(cl.schema.columns) > 1:
            found = _monotone(cl, at, u, c, flip, name)
        if found is not None:
            maps[c] = found
    return maps


def _nearer(cl: _OnCluster, c: str):
    """The local marginal-gap test of a candidate map a·v + b of column ``c``, on one worker that
    holds that column of each side (only asked when the anchored pairs support the map)."""

    def nearer(a: float, b: float) -> bool:
        rel, ref = _strided(cl, "release", c, 1), _strided(cl, "reference", c, 1)
        return bool(cl._submit(lt.gap_task, rel, ref, a, b).result())

    return nearer


def _monotone(cl: _OnCluster, at: pl.DataFrame, u: dict, c: str, flip: set, name: str) -> NumericMap | None:
    """The local ``_monotone_map`` of column ``c``."""
    others = [o for o in cl.schema.columns if o != c]
    alone = _rank_anchors(cl, cl.schema.subset(others), at, u, flip - {c}, f"{name}, without a column")
    u_s = 1.0 - u[c] if c in flip else u[c]
    r_values = cl.rows("reference", alone, [c]).get_column(c).cast(pl.Float64).to_numpy()
    u_r = cl.ranks("reference", c, r_values)
    known = at.get_column(c).is_not_null().to_numpy() & ~np.isnan(r_values)
    support = int((known & (np.abs(u_s - u_r) <= RANK_TOL)).sum())
    if support >= max(MIN_MAP_SUPPORT, MAP_SHARE * int(known.sum())):
        return NumericMap("monotone", decreasing=c in flip, support=support, anchored=int(known.sum()))
    return None


# ---------------------------------------------------------------------- level classes
def _anchor_tables(cl: _OnCluster, sample: pl.DataFrame, anchored: Schema, name: str) -> dict[str, list]:
    """The local ``_anchor_tables``: per categorical column one (release level, reference level)
    count table per view that teaches it, from anchors searched on the cluster."""
    tables: dict[str, list[pl.DataFrame]] = {c: [] for c in cl.cat}
    views = _views(anchored) if anchored.columns else []
    if not views:
        return tables
    order = [*anchored.numeric, *anchored.categorical]
    q_cols, spec, mean, sd = [], [], [], []
    shares = level_shares(sample, list(anchored.categorical)) if anchored.categorical else None
    for c in order:
        if c in anchored.numeric:
            _, m, s, _, _ = cl.moments("reference", c)
            m = m if np.isfinite(m) else 0.0
            s = s if np.isfinite(s) and s > REL_TOL * (1.0 + abs(m)) else 1.0  # as anchor_matrices
            v = sample.get_column(c).cast(pl.Float64).to_numpy()
            q_cols.append(np.where(np.isnan(v), m, v))
            spec.append(("value", c, m))
        else:
            entry, m, s = cl.share_entry(c)
            s = s if s > 0 else 1.0
            q_cols.append(shares.get_column(c).to_numpy())
            spec.append(entry)
        mean.append(m)
        sd.append(s)
    mean, sd = np.array(mean), np.array(sd)
    q_all = (np.column_stack(q_cols) - mean) / sd
    position = {c: i for i, c in enumerate(order)}
    for label, view, taught in views:
        cols = [position[c] for c in (*view.numeric, *view.categorical)]
        q = np.ascontiguousarray(q_all[:, cols], dtype=np.float32)
        anchor = cl.search(q, [spec[i] for i in cols], mean[cols], sd[cols], f"{name}, {label}")
        ref = cl.rows("reference", anchor, list(taught))
        for c in taught:
            tables[c].append(pl.DataFrame({"s": sample.get_column(c), "r": ref.get_column(c)}).group_by("s", "r").len())
    return tables


# ---------------------------------------------------------------------- records disguised one by one
def _disguised(cl: _OnCluster, codes: dict | None, num: list[str]) -> tuple[DisguisedRecords, pl.DataFrame] | None:
    """The local record-by-record search (:func:`privgate.disguised_records.find_disguised_records`):
    None when it finds no record (or the shuffled pairs explain as many), else the records and
    their sources' levels (``__row``: release position; per categorical column the source's
    level, recoded by ``codes`` when given). ``codes``: per side the level classes' codes the
    frames are recoded by first (None: the labels as they are); ``num``: the numeric columns of the
    view (those not left out)."""
    if not num or not cl.cat:
        return None
    n = max(len(cl.parts["reference"]), len(cl.parts["release"]))
    split = {
        side: [
            cl._submit(
                lt.disguise_split_task,
                p,
                first,
                cl.kinds,
                num,
                cl.cat,
                n,
                (codes or {}).get(side, {}),
                mapped=cl._mapped(side, p),
            )
            for p, first in ps
        ]
        for side, ps in cl.parts.items()
    }
    piece = {side: [[cl._submit(operator.getitem, s, b) for s in fs] for b in range(n)] for side, fs in split.items()}
    buckets = [
        cl._submit(lt.disguise_bucket_task, piece["reference"][b], piece["release"][b], num, cl.cat) for b in range(n)
    ]
    found = cl.client.gather([cl._submit(lt.pair_tables_task, b, cl.cat) for b in buckets])
    n_pairs = sum(k for _, k, _ in found)
    if sum(u for u, _, _ in found) < IDENTIFYING_SHARE * max(cl.n["reference"], 1) or n_pairs < MIN_ANCHORED:
        return None
    pair_codes, recoded = {}, 0
    for c in cl.cat:
        table = pl.concat([t[c] for _, _, t in found]).group_by("s", "r").agg(pl.col("len").sum())
        rel_codes, ref_codes, identity = pair_classes(table)
        pair_codes[c] = (rel_codes, ref_codes)
        recoded += not identity
    if not recoded:
        return None
    explained = sum(cl.client.gather([cl._submit(lt.pair_flags_task, b, cl.cat, pair_codes) for b in buckets]))
    if explained < MIN_ANCHORED:
        return None
    if n_pairs > MAX_SHUFFLED_PAIRS:
        raise LabelFreeViewNotShardedError(f"{explained} record(s) that a record-by-record correspondence explains")
    return _shuffled(cl, buckets, n_pairs, explained)


def _shuffled(
    cl: _OnCluster, buckets: list, n_pairs: int, explained: int
) -> tuple[DisguisedRecords, pl.DataFrame] | None:
    """The local shuffle test of the pairs (:func:`privgate.disguised_records.beats_shuffles`) on
    the pairs' levels gathered here in release order (at most ``MAX_SHUFFLED_PAIRS``); when the
    pairs beat it, the records they explain and their sources' levels."""
    pairs = pl.concat(cl.client.gather([cl._submit(lt.pairs_task, b) for b in buckets])).sort("__s")
    release = pairs.select([pl.col(f"s:{c}").alias(c) for c in cl.cat])
    reference = pairs.select([pl.col(f"r:{c}").alias(c) for c in cl.cat])
    at = np.arange(pairs.height, dtype=np.int64)
    if not beats_shuffles(release, reference, cl.cat, at, at.copy(), explained, cl.ctx.seed):
        return None
    ok, recoded = _explained(release, reference, cl.cat, at, at)
    s_idx, r_idx = pairs.get_column("__s").to_numpy(), pairs.get_column("__r").to_numpy()
    records = DisguisedRecords(s_idx[ok].astype(np.int64), r_idx[ok].astype(np.int64), int(n_pairs), recoded)
    return records, reference.filter(pl.Series(ok)).with_columns(pl.Series("__row", records.rows))


# ---------------------------------------------------------------------- the recoded view
def recoded_context(ctx: Any, corr: Correspondence, with_holdout: bool) -> Any:
    """The local ``recoded_context`` on the cluster: a sharded context of the same partitions,
    read with the classes' codes (real and holdout records by the reference codes, the release's
    by the release codes, each disguised release record with its source's levels), the release's
    mapped numeric columns (held on the workers since the correspondence was learnt; a holdout
    baseline's "release" is real records: none) and encoded with the recoded levels of the roles
    it holds, as a local context of the recoded frames fits them (the numeric columns' moments
    are the real records', which no map changes)."""
    from dataclasses import replace as _replace

    from ..context_spaces import coded_above
    from ..label_free import KEEP_PREFIX
    from ..spaces import NULL_LEVEL, SpaceFit
    from .encode import MappedColumns
    from .search import ShardedSearch

    main = ctx._label_free_parent or ctx
    levels = main.derived["label_free_levels"]
    views = {"real": ctx._views["real"], "synthetic": ctx._views["synthetic"]}
    if with_holdout and ctx.holdout is not None:
        views["holdout"] = ctx._views["holdout"]
    inputs = ctx._search_on.inputs
    codes = {"real": corr.reference_codes, "holdout": corr.reference_codes, "synthetic": corr.release_codes}
    fit = {}
    for c in inputs.schema.categorical:
        union: set = set()
        for view in views.values():
            m = codes[view.role].get(c, {})
            union |= {lv if lv == NULL_LEVEL else m.get(lv, KEEP_PREFIX + lv) for lv in levels[view.role][c]}
        fit[c] = sorted(union)
    sources = main.derived.get("label_free_sources") if corr.records is not None else None
    if sources is not None and views["synthetic"].role == "synthetic":
        for c in fit:  # the release's records replaced by their sources hold reference levels
            fit[c] = sorted(set(fit[c]) | set(sources.get_column(c).fill_null(NULL_LEVEL).to_list()))
    else:
        sources = None
    mapped, held = None, None
    if (corr.numeric_maps or corr.tail_maps is not None) and views["synthetic"].role == "synthetic":
        # the release's mapped columns, held on the workers since the correspondence was learnt
        futures = main.derived["label_free_mapped"]
        mapped = {"synthetic": MappedColumns({start: f.key for start, f in futures.items()})}
        held = {"synthetic": dict(futures)}
    # a column left out of the view (off the real scale in its tails) is compared by no metric
    kept = [c for c in inputs.schema.columns if c not in corr.left_out]
    recoded_inputs = _replace(
        inputs,
        schema=inputs.schema.subset(kept) if corr.left_out else inputs.schema,
        fit=SpaceFit(stats=inputs.fit.stats, levels=fit),
        codes=codes,
        weights=None,
        sources=None if sources is None else {"synthetic": sources},
        mapped=mapped,
    )
    search = ShardedSearch(ctx._search_on.client, recoded_inputs, threads=ctx._search_on.threads, mapped=held)
    out = type(ctx)(
        search,
        views,
        seed=ctx.seed,
        options=ctx.options,
        column_report={c: len(v) for c, v in fit.items() if len(v) > coded_above()},
    )
    out.threads = ctx.threads
    return out
