"""The exact nearest-neighbour engine every distance metric shares.

``knn`` finds, for every query row, its k nearest target rows by Euclidean distance:

* blocked: query rows are processed in blocks so that at most ``block_bytes`` of distances exist
  at once — never an n×m matrix;
* screened in float32 on centred data: faiss' exact flat L2 index returns k + 16 candidates per
  query (multi-threaded BLAS and heap selection; measured 5× faster than NumPy's argpartition on
  25k × 25k); a rigorous float32 error bound then checks, row by row, that no target outside the
  candidates could be among the k nearest in exact arithmetic. Rows that fail the check (long runs
  of tied distances, common with categorical data) are redone by the blocked NumPy path, which
  keeps every target within the error bound of the k-th;
* decided in float64: candidate distances are recomputed from the coordinate differences, the k
  smallest are kept, and distances equal within 1e-9·(1 + max) count as ties, broken by the
  lowest target index (the tie rule of :mod:`privgate.ties`);
* ``exclude_self`` removes the query's own row *by index* (query and target are the same set),
  so duplicate records are each other's nearest neighbour at distance 0.

Low-dimensional spaces (d ≤ 3, e.g. the 2-D FAMD projection) are screened by scipy's cKDTree
instead (exact float64, no n×m work), with the same float64 decision and tie rule.

Before any n×m work, rows are settled exactly where the data allow: exact duplicates (k = 1,
``_knn1_deduplicated``) and, in a mixed space (``categorical_slices``), the nearest records inside
groups of equal categorical values (``_knn_grouped``). With ``approximate=True`` the rows still
open are screened by a faiss IVF index instead of the flat search, and the search reports its
measured recall (``_knn_ivf``). Every result says how it was made in ``Neighbours.search``.
"""

from __future__ import annotations

import copy
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .ties import REL_TOL

EPS32 = float(np.finfo(np.float32).eps)
DEFAULT_BLOCK_BYTES = 192 * 2**20
PAIR_CHUNK_BYTES = 64 * 2**20
# rows searched exactly to calibrate the screen, and as many again to measure its recall: 500
# rather than 200 because 99 % on 200 calibration rows was met by a screen whose recall over all
# rows was 97.4 % (k = 5, Texas 25k); the exact search of 1000 rows costs 1000 pairs per target
IVF_CHECK_ROWS = 500

# The exact search's target side (the centred float32 copy and its norms) of a target matrix of
# at least TARGET_CACHE_MIN_ROWS rows is kept for the next search of the SAME matrix object (the
# context hands the same encoded matrix to every search of a set): at 1M targets the target-side
# preparations cost about half of a 100k-query search (bench_million.py). At most
# TARGET_CACHE_SIZE targets are kept (least recently used first out; each is ~0.4 GiB at
# 1M × 95); an entry also goes when its matrix is freed. Results are identical with and without
# it. (Category codes and k-means lists, which depend on one matrix too, are kept per evaluation
# by the context's SearchMemo; the grouped search's k-d trees are rebuilt per search over the
# targets of the groups queried only.)
TARGET_CACHE_MIN_ROWS = 200_000
TARGET_CACHE_SIZE = 1
_TARGET_PREP: "OrderedDict[tuple, dict]" = OrderedDict()


def _prep(t: np.ndarray) -> dict | None:
    """The preparation cache entry of target matrix ``t`` (None: too small to cache)."""
    if t.shape[0] < TARGET_CACHE_MIN_ROWS:
        return None
    key = (id(t), t.shape, t.__array_interface__["data"][0])
    entry = _TARGET_PREP.get(key)
    if entry is None:
        entry = {}
        _TARGET_PREP[key] = entry
        try:
            weakref.finalize(t, _TARGET_PREP.pop, key, None)
        except TypeError:  # not weak-referenceable: do not cache
            _TARGET_PREP.pop(key, None)
            return None
        while len(_TARGET_PREP) > TARGET_CACHE_SIZE:
            _TARGET_PREP.popitem(last=False)
    else:
        _TARGET_PREP.move_to_end(key)
    return entry


def clear_target_cache() -> None:
    """Forget every cached target preparation (frees their memory)."""
    _TARGET_PREP.clear()


class SearchMemo:
    """Structures derived from one matrix alone, kept for the other searches of that matrix
    (an evaluation's eight distance searches read four matrices: the real and the synthetic
    records in two spaces). Keyed by the array object itself: an entry is only returned for the
    same, still living array (a weak reference, dropped when the array is freed), so a search of
    other data never reads it. Answers are the same with or without a memo."""

    def __init__(self) -> None:
        self._items: dict[tuple, tuple[weakref.ref, object]] = {}

    def get(self, array: np.ndarray, tag: tuple, build):
        key = (id(array), tag)
        hit = self._items.get(key)
        if hit is not None and hit[0]() is array:
            return hit[1]
        value = build()
        items = self._items
        self._items[key] = (weakref.ref(array, lambda _ref, key=key: items.pop(key, None)), value)
        return value

    @staticmethod
    def get_or_build(memo: "SearchMemo | None", array: np.ndarray, tag: tuple, build):
        return build() if memo is None else memo.get(array, tag, build)


@dataclass(frozen=True)
class Neighbours:
    """k nearest neighbours of each query row: ``dist`` (n, k) float64, ``idx`` (n, k) int64,
    sorted by distance (ties by lowest index)."""

    dist: np.ndarray
    idx: np.ndarray
    #: how the search was made: {"exact": bool, "settled_by": {path: rows}, and for an approximate
    #: screen "recall" (measured on a seeded sample of queries checked exactly), "n_checked", ...}
    search: dict = field(default_factory=lambda: {"exact": True})

    @property
    def k(self) -> int:
        return int(self.idx.shape[1])

    @property
    def exact(self) -> bool:
        return bool(self.search.get("exact", True))

    def first(self, k: int) -> "Neighbours":
        if k > self.k:
            raise ValueError(f"asked for {k} neighbours, only {self.k} computed")
        return Neighbours(self.dist[:, :k], self.idx[:, :k], self.search)


def knn(
    query: np.ndarray,
    target: np.ndarray,
    k: int = 1,
    *,
    exclude_self: bool = False,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    use_faiss: bool = True,
    dedupe: bool = True,
    categorical_slices: list[tuple[int, int]] | None = None,
    grouped: bool = True,
    approximate: bool = False,
    seed: int = 0,
    n_check: int = IVF_CHECK_ROWS,
    memo: "SearchMemo | None" = None,
    exact_below_pairs: int = 0,
) -> Neighbours:
    """Exact k nearest neighbours of each ``query`` row among the ``target`` rows.

    With ``exclude_self=True`` query and target must be the same matrix and row i never returns
    itself (by index). ``categorical_slices`` (the one-hot (start, stop) feature ranges of a
    mixed space) lets rows be settled by the grouped search first (``grouped``).

    ``approximate=True``: rows the exact shortcuts (duplicates, groups, k-d tree) leave open are
    screened by a faiss inverted-file index (float32, a fraction of the cells probed) and decided
    in float64 among the screen's k + 16 candidates; ``n_check`` of them, drawn with ``seed``, are
    also searched exactly, and the share whose k nearest distances the screen found is reported as
    ``search["recall"]`` (with its Wilson interval) — see :func:`_knn_ivf`.

    ``exact_below_pairs``: with ``approximate=True``, a search (after exact duplicates are
    folded, see :func:`_knn_folded`) of at most this many query × target pairs is exact anyway
    (the context passes ``context.EXACT_BELOW_PAIRS``).

    ``memo``: a :class:`SearchMemo` (the evaluation context's) in which structures derived from
    one matrix alone — its category codes, the screen's k-means lists of a target set — are
    kept for the other searches of the same matrices; answers are the same with or without it.
    """
    q = np.ascontiguousarray(query, dtype=np.float64)
    t = np.ascontiguousarray(target, dtype=np.float64)
    if q.ndim != 2 or t.ndim != 2 or q.shape[1] != t.shape[1]:
        raise ValueError(f"query {q.shape} and target {t.shape} must be 2-D with equal widths")
    n, d = q.shape
    m = t.shape[0]
    available = m - 1 if exclude_self else m
    if exclude_self and n != m:
        raise ValueError("exclude_self needs query and target to be the same set")
    if k < 1 or k > available:
        raise ValueError(f"cannot find {k} neighbours among {available} candidate rows")
    out_d = np.empty((n, k), dtype=np.float64)
    out_i = np.empty((n, k), dtype=np.int64)
    if n == 0:
        return Neighbours(out_d, out_i)
    if d == 0:  # every distance is 0: the lowest indices win
        base = np.arange(k + (1 if exclude_self else 0))
        for_rows = np.broadcast_to(base, (n, base.size)).copy()
        if exclude_self:
            rows = np.arange(n)[:, None]
            mask = for_rows != rows
            for_rows = np.where(mask, for_rows, -1)
            for_rows = np.sort(np.where(for_rows < 0, m + 1, for_rows), axis=1)[:, :k]
        out_i[:] = for_rows[:, :k]
        out_d[:] = 0.0
        return Neighbours(out_d, out_i)

    if k == 1 and dedupe and n * m >= DEDUP_MIN_PAIRS:
        hit = _knn1_deduplicated(q, t, exclude_self, block_bytes, use_faiss, categorical_slices, grouped,
                                 approximate, seed, n_check, memo, exact_below_pairs)
        if hit is not None:
            return hit
    if k > 1 and dedupe and not exclude_self and n * m >= DEDUP_MIN_PAIRS:
        hit = _knn_folded(q, t, k, block_bytes, use_faiss, categorical_slices, grouped, approximate, seed,
                          n_check, memo, exact_below_pairs)
        if hit is not None:
            return hit
    # the screen only where the search is big enough (the context's rule, applied again here to
    # the rows of this call: after duplicates are folded a search is often small enough to be exact)
    approximate = approximate and n * m > exact_below_pairs
    todo = np.arange(n)
    slices = list(categorical_slices or [])
    n_numeric = d - sum(b - a for a, b in slices)
    settled: dict[str, int] = {}

    def step(name: str, left: np.ndarray) -> np.ndarray:
        settled[name] = settled.get(name, 0) + int(todo.size - left.size)
        return left

    if d <= LOW_DIM:
        todo = step("kdtree", _knn_kdtree(q, t, k, exclude_self, out_d, out_i))
    elif grouped and categorical_slices is not None and n_numeric <= GROUPED_MAX_NUMERIC:
        todo = step("grouped", _knn_grouped(q, t, k, exclude_self, slices, out_d, out_i, block_bytes, memo))
    search: dict = {"exact": True, "settled_by": settled}
    if todo.size == 0:
        return Neighbours(out_d, out_i, search)
    exact = _Exact.of(q, t, k, exclude_self, block_bytes, use_faiss and d > LOW_DIM)
    if approximate and todo.size and _faiss() is not None and d > LOW_DIM:
        search, left = _knn_ivf(exact, todo, seed, n_check, out_d, out_i, memo)
        if search["exact"]:  # the screen declined; the rows it checked exactly are done
            settled["faiss_flat"] = int(todo.size - left.size)
        else:
            settled["ivf_screen"] = int(todo.size)
        todo = left
    exact.rows(todo, out_d, out_i, settled)
    search["settled_by"] = settled
    return Neighbours(out_d, out_i, search)


class _Exact:
    """The exact general search of chosen query rows: faiss' flat index with the float32 error
    bound, then the blocked NumPy path for rows the bound cannot settle."""

    def __init__(self, q, t, q32, t32, qn, tn, ctn, c, k, exclude_self, block_bytes, use_faiss) -> None:
        self.q, self.t, self.q32, self.t32, self.qn, self.tn = q, t, q32, t32, qn, tn
        self.ctn, self.c, self.k, self.exclude_self = ctn, c, k, exclude_self
        self.block_bytes, self.use_faiss = block_bytes, use_faiss and _faiss() is not None

    @classmethod
    def of(cls, q: np.ndarray, t: np.ndarray, k: int, exclude_self: bool,
           block_bytes: int = DEFAULT_BLOCK_BYTES, use_faiss: bool = True) -> "_Exact":
        """The search of float64 ``q`` against ``t``: float32 copies centred on the target mean
        (smaller norms, so a tighter error bound) and their squared norms."""
        prep = _prep(t)
        if prep is not None and "exact" in prep:
            centre, t32, tn = prep["exact"]
        else:
            centre = t.mean(axis=0)
            t32 = np.ascontiguousarray((t - centre).astype(np.float32))
            tn = np.einsum("ij,ij->i", t32, t32, dtype=np.float32)
            if prep is not None:
                prep["exact"] = (centre, t32, tn)
        q32 = np.ascontiguousarray((q - centre).astype(np.float32))
        qn = np.einsum("ij,ij->i", q32, q32, dtype=np.float32)
        # a bound on |float32 d² − exact d²| for a pair (i, j): c·(‖q_i‖² + ‖t_j‖²)
        c = np.float32(4.0 * (q.shape[1] + 8) * EPS32)
        return cls(q, t, q32, t32, qn, tn, c * tn, c, k, exclude_self, block_bytes, use_faiss)

    def rows(self, todo: np.ndarray, out_d, out_i, settled: dict | None = None) -> None:
        settled = {} if settled is None else settled
        if todo.size and self.use_faiss and not _one_block(todo.size, self.t.shape[0], self.k, self.block_bytes):
            left = _knn_faiss(self.q, self.t, self.q32, self.t32, self.qn, self.tn, self.c, self.k,
                              self.exclude_self, todo, out_d, out_i)
            settled["faiss_flat"] = settled.get("faiss_flat", 0) + int(todo.size - left.size)
            todo = left
        if todo.size:
            settled["blocked"] = settled.get("blocked", 0) + int(todo.size)
        m, k = self.t.shape[0], self.k
        block = max(1, min(max(todo.size, 1), self.block_bytes // max(1, 4 * m)))
        for s in range(0, todo.size, block):
            rows = todo[s:s + block]
            bd = np.empty((rows.size, k))
            bi = np.empty((rows.size, k), dtype=np.int64)
            _knn_block(self.q, self.t, self.q32[rows], self.t32, self.qn[rows], self.tn, self.ctn, self.c, k, rows,
                       self.exclude_self, bd, bi)
            out_d[rows] = bd
            out_i[rows] = bi


def _one_block(n_rows: int, m: int, k: int, block_bytes: int) -> bool:
    """Shape rule: for k = 1, open rows whose float32 distances to every target fit in one block
    skip faiss' flat screen and go straight to the blocked path — one GEMM and an argmin, with the
    same error bound and float64 decision, cost less than faiss' search of k + 16 candidates at
    this shape (measured 2–2.5× less CPU at 435 and 1,000 × 25,000 × 90, 1 and 2 threads)."""
    return k == 1 and n_rows * m * 4 <= block_bytes


IVF_TARGET_RECALL = 0.99  # the probe count is raised until a calibration sample reaches this
# Above this share of the lists the screen declines and the rows are searched exactly: the list
# scan costs about twice the exact flat search per target pair (measured at 100k, 1 thread), so
# beyond a quarter of the lists it would save less than half the time and lose exactness.
IVF_MAX_PROBE_SHARE = 0.25
IVF_TRAIN_PER_LIST = 39  # faiss' minimum of training points per list
IVF_KMEANS_ITERATIONS = 10
IVF_LISTS_PER_ROOT = 2.0  # lists per √m targets
IVF_PROBE_GROWTH = 1.5  # the calibration raises the probe count by half each step


def _knn_ivf(exact: _Exact, rows: np.ndarray, seed: int, n_check: int, out_d, out_i,
             memo: "SearchMemo | None" = None) -> tuple[dict, np.ndarray]:
    """Approximate k nearest neighbours of query ``rows`` by an inverted-file screen: the targets
    are split into ⌈2√m⌉ lists by k-means (faiss, 10 iterations on a seeded sample of 39 targets
    per list); each query scans the targets of its ``nprobe`` nearest lists only (:class:`_Lists`), and
    within those the search is the exact one (float32 blocks with the rigorous error bound, the k
    nearest decided in float64 with the tie rule of :mod:`privgate.ties`). A row can only be wrong
    when one of its k nearest lies in a list it did not probe.

    The error is measured, not assumed: a seeded calibration sample of ``n_check`` rows is searched
    exactly and the number of probed lists raised by half (from 1/32 of them) until the screen
    finds ≥ 99 % of those rows' k nearest distances — when that would take more than a quarter of
    the lists, the screen declines (returns ``{"exact": True, "screen": "declined: …"}`` and the
    rows to search exactly; many ties at the k-th distance, common for k > 1 on categorical data,
    do that). Otherwise a second, independent seeded sample of
    ``n_check`` rows is searched exactly and the share the screen got right is the reported
    recall (with its Wilson interval). Checked rows keep their exact answers. ``share_rows_possibly_wrong``
    = (1 − the interval's lower end) × the screened share of all query rows: a bound, at 95 %
    confidence, on the share of records whose neighbour may be wrong — what a metric that is a
    share or mean of per-record terms bounded by 1 can be off by."""
    from .stats import wilson

    q, t, k = exact.q, exact.t, exact.k
    n, m = q.shape[0], t.shape[0]
    nlist = int(min(max(16, np.ceil(IVF_LISTS_PER_ROOT * np.sqrt(m))), max(16, m // IVF_TRAIN_PER_LIST), 4096))
    rng = np.random.default_rng(seed)
    train = np.sort(rng.choice(m, min(m, nlist * IVF_TRAIN_PER_LIST), replace=False))
    # the lists depend on the target set, nlist and seed only: searches of one target set share them
    lists = SearchMemo.get_or_build(memo, t, ("ivf_lists", nlist, int(seed)),
                                    lambda: _Lists(exact, nlist, train, seed).for_search(None)).for_search(exact)
    lists.candidates_held = 0
    samples = rng.permutation(rows)[:2 * n_check]
    calib, check = np.sort(samples[:n_check]), np.sort(samples[n_check:])
    truth_d = np.empty((q.shape[0], k))
    truth_i = np.empty((q.shape[0], k), dtype=np.int64)
    exact.rows(np.concatenate([calib, check]), truth_d, truth_i)

    def found(sel: np.ndarray, dist: np.ndarray) -> np.ndarray:
        tol = REL_TOL * (1.0 + np.abs(truth_d[sel]))
        return (np.abs(dist - truth_d[sel]) <= tol).all(axis=1)

    nprobe = max(1, nlist // 32)
    while True:
        if calib.size:
            cd = np.empty((calib.size, k))
            lists.screen(calib, nprobe, cd, np.empty((calib.size, k), dtype=np.int64))
            ok = found(calib, cd).mean()
        else:
            ok = 1.0
        if ok >= IVF_TARGET_RECALL:
            break
        grown = min(nlist, max(nprobe + 1, int(np.ceil(IVF_PROBE_GROWTH * nprobe))))
        if grown > IVF_MAX_PROBE_SHARE * nlist:
            # the screen would scan more than the share at which it pays: search exactly (the
            # sampled rows already are)
            done = np.concatenate([calib, check])
            out_d[done], out_i[done] = truth_d[done], truth_i[done]
            note = (f"declined: {ok:.3f} recall at {nprobe} of {nlist} lists; "
                    f"{IVF_TARGET_RECALL} needs more than {IVF_MAX_PROBE_SHARE:.0%} of them")
            return ({"exact": True, "screen": note, "candidates_held": int(lists.candidates_held)},
                    np.setdiff1d(rows, done, assume_unique=True))
        nprobe = grown
    done = np.concatenate([calib, check])
    rest = np.setdiff1d(rows, done, assume_unique=True)
    screened_d = np.empty((rows.size, k))
    screened_i = np.empty((rows.size, k), dtype=np.int64)
    lists.screen(rows, nprobe, screened_d, screened_i)
    out_d[rows], out_i[rows] = screened_d, screened_i
    hits = int(found(check, out_d[check]).sum())
    out_d[done], out_i[done] = truth_d[done], truth_i[done]
    lo, _ = wilson(hits, check.size) if check.size else (0.0, 1.0)
    screened = rest.size
    share = screened / max(n, 1)
    return {"exact": False,
            "method": f"IVF screen ({nlist} k-means lists, {nprobe} probed, scanned by float32 BLAS blocks "
                      "with the error bound) + float64 decision",
            "recall": hits / check.size if check.size else float("nan"),
            "recall_ci": list(wilson(hits, check.size)) if check.size else [0.0, 1.0],
            "n_checked": int(check.size), "n_screened": int(screened),
            # the most candidate pairs the list scan held at once (its memory: ~48 bytes each)
            "candidates_held": int(lists.candidates_held),
            "share_rows_possibly_wrong": float((1.0 - lo) * share)}, rows[:0]


IVF_SCREEN_PAIRS = 2**22  # (query, probed list) pairs handled at once by _Lists.screen, at most
IVF_CANDIDATE_BYTES = 48  # memory per candidate pair held by the list scan (its part size rule)
IVF_RATE_MARGIN = 1.5  # the next part assumes this many times the candidates per pair just seen


class _Lists:
    """The targets split into k-means lists, stored list by list, for the IVF screen.

    faiss trains the centroids and assigns every target to its nearest one; the scan itself is
    done here list by list — all queries probing a list against all its targets in one float32
    matrix product (BLAS), as the exact blocked search does — because faiss' own IVF scan
    computes one vector pair at a time (measured ~12× slower per pair than its flat BLAS search)."""

    def __init__(self, exact: _Exact, nlist: int, train_rows: np.ndarray, seed: int) -> None:
        faiss = _faiss()
        t32 = exact.t32
        m, d = t32.shape
        train = t32[train_rows]
        cp = faiss.ClusteringParameters()
        cp.niter = IVF_KMEANS_ITERATIONS
        cp.seed = int(seed) & 0x7FFFFFFF
        cp.max_points_per_centroid = IVF_TRAIN_PER_LIST + 1
        clus = faiss.Clustering(d, nlist, cp)
        self.quantizer = faiss.IndexFlatL2(d)
        with _faiss_blas():
            clus.train(train, self.quantizer)
            _, a = self.quantizer.search(t32, 1)
        assign = a.ravel().astype(np.int64)
        order = np.argsort(assign, kind="stable")
        self.nlist = nlist
        self.members = order                       # target index of each stored position
        self.start = np.searchsorted(assign[order], np.arange(nlist + 1))
        self.assign = assign
        self.position = np.empty(m, dtype=np.int64)
        self.position[order] = np.arange(m)        # stored position of each target
        self.t32 = np.ascontiguousarray(t32[order])
        ctn = exact.ctn[order]
        self.tlow = exact.tn[order] - ctn          # ‖t‖² − c‖t‖² (float32)
        self.ctn2 = 2.0 * ctn.astype(np.float64)    # 2c‖t‖²
        self.exact = exact
        self.candidates_held = 0  # the most candidate pairs one part of a scan held (memory check)

    def for_search(self, exact: _Exact | None) -> "_Lists":
        """These lists (made for a search of the same target set) for the search ``exact``: the
        target-side arrays are the same (centred on the target mean, the bound's c depends on the
        width only); the query side and k are the new search's. None: detached from any search
        (as kept in a memo, so that it holds no search's query arrays)."""
        if exact is self.exact:
            return self
        other = copy.copy(self)
        other.exact = exact
        return other

    def screen(self, sel: np.ndarray, nprobe: int, out_d: np.ndarray, out_i: np.ndarray) -> None:
        """The k nearest of query rows ``sel`` among the targets of their ``nprobe`` nearest
        lists, exact within those lists; rows whose lists hold fewer than k targets are searched
        exactly over all targets."""
        ex = self.exact
        # Rows go in parts whose candidates stay within the block budget: a part's candidates
        # are ~48 bytes each while held (row, target, bound; then sorted copies), and their number
        # per (row, probed list) is k plus the list's run of near-ties. The first part assumes the
        # worst (every target of the largest list a candidate); each next part is sized by the
        # candidates per pair just seen (times a margin), growing at most 4× per part and never
        # past IVF_SCREEN_PAIRS (row, list) pairs.
        budget = max(1, ex.block_bytes // IVF_CANDIDATE_BYTES)
        probes = max(nprobe, 1)
        rate = float(max(ex.k, int(np.diff(self.start).max(initial=1))))
        short = []
        s = 0
        step = sel.size
        while s < sel.size:
            step = int(max(1, min(IVF_SCREEN_PAIRS // probes, budget // (probes * rate),
                                  4 * step if s else sel.size)))
            part = sel[s:s + step]
            bd = out_d[s:s + step]
            bi = out_i[s:s + step]
            missing, held = self._screen_part(part, nprobe, bd, bi)
            self.candidates_held = max(self.candidates_held, held)
            rate = max(float(ex.k), held / (part.size * probes)) * IVF_RATE_MARGIN
            short.append(s + missing)
            s += part.size
        short = np.concatenate(short) if short else np.zeros(0, dtype=np.int64)
        if short.size:
            full_d = np.empty((ex.q.shape[0], ex.k))
            full_i = np.empty((ex.q.shape[0], ex.k), dtype=np.int64)
            ex.rows(sel[short], full_d, full_i)
            out_d[short], out_i[short] = full_d[sel[short]], full_i[sel[short]]

    def _screen_part(self, sel: np.ndarray, nprobe: int, out_d, out_i) -> np.ndarray:
        ex = self.exact
        k, c = ex.k, ex.c
        # (−2q)·t is exactly −2·(q·t) in floating point, so the product needs no extra pass
        qm2 = ex.q32[sel] * np.float32(-2.0)
        qn = ex.qn[sel].astype(np.float64)
        cqn = float(c) * qn
        with _faiss_blas():
            _, probe = self.quantizer.search(ex.q32[sel], min(nprobe, self.nlist))
        flat = probe.ravel().astype(np.int64)
        qpos = np.repeat(np.arange(sel.size), probe.shape[1])
        ok = flat >= 0
        flat, qpos = flat[ok], qpos[ok]
        order = np.argsort(flat, kind="stable")
        flat, qpos = flat[order], qpos[order]
        bounds = np.searchsorted(flat, np.arange(self.nlist + 1))
        self_list = self.assign[sel] if ex.exclude_self else None
        self_col = self.position[sel] if ex.exclude_self else None
        block_rows = max(1, ex.block_bytes // max(1, 4 * int(np.diff(self.start).max(initial=1))))
        lists = np.flatnonzero(np.diff(bounds))

        def scan(mine_lists: np.ndarray) -> tuple[list, list, list]:
            """The candidates of the probed lists ``mine_lists`` (each list's arithmetic is the
            same whichever thread scans it)."""
            cand_r, cand_c, cand_v = [], [], []
            for lst in mine_lists:
                ts, te = int(self.start[lst]), int(self.start[lst + 1])
                if te == ts:
                    continue
                tb, tlow, ctn2 = self.t32[ts:te], self.tlow[ts:te], self.ctn2[ts:te]
                for a in range(int(bounds[lst]), int(bounds[lst + 1]), block_rows):
                    pos = qpos[a:min(a + block_rows, int(bounds[lst + 1]))]
                    # v = float32 d² − ‖q‖² − c‖t‖²: the pair's lower bound is v + ‖q‖² − c‖q‖², its
                    # upper bound v + 2c‖t‖² + ‖q‖² + c‖q‖² (the exact search's bound, rearranged)
                    v = qm2[pos] @ tb.T
                    v += tlow[None, :]
                    if ex.exclude_self:  # a row never finds itself
                        mine = np.flatnonzero(self_list[pos] == lst)
                        v[mine, self_col[pos[mine]] - ts] = np.inf
                    in_list = te - ts - (1 if ex.exclude_self else 0)
                    if in_list >= k and k == 1:
                        r = np.arange(pos.size)
                        part = v.argmin(axis=1)[:, None]
                        # lower ≤ the k-th's upper bound ⇔ v ≤ max(v + 2c‖t‖²) over the k + 2c‖q‖²
                        thr = (v[r[:, None], part].astype(np.float64) + ctn2[part]).max(axis=1) + 2 * cqn[pos]
                    elif in_list >= k:
                        # the k targets of smallest v have upper bounds ≤ the k-th smallest v + the
                        # list's largest 2c‖t‖²: a (slightly looser) threshold from a value partition,
                        # ~8× cheaper than argpartition (measured, 158-target lists, k = 3)
                        kth = np.partition(v, k - 1, axis=1)[:, k - 1].astype(np.float64)
                        thr = kth + float(ctn2.max()) + 2 * cqn[pos]
                    else:  # a list smaller than k: all its targets are candidates
                        thr = np.full(pos.size, np.inf)
                    cand = v <= _up32(thr)[:, None]
                    if ex.exclude_self:
                        cand[mine, self_col[pos[mine]] - ts] = False
                    cr, cc = np.nonzero(cand)
                    cand_r.append(pos[cr])
                    cand_c.append(cc + ts)
                    cand_v.append(v[cr, cc])
            return cand_r, cand_c, cand_v

        workers = min(max(1, _workers()), lists.size)  # the run's thread budget, never more
        if workers > 1:
            # the lists split between threads (NumPy's products and partitions release the GIL),
            # each product single-threaded: the same per-list results as one thread's loop, and
            # the candidates are ordered by (row, bound) and (row, distance, index) below
            from concurrent.futures import ThreadPoolExecutor

            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=1), ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(scan, [lists[w::workers] for w in range(workers)]))
        else:
            parts = [scan(lists)]
        cand_r = [a for p in parts for a in p[0]]
        cand_c = [a for p in parts for a in p[1]]
        cand_v = [a for p in parts for a in p[2]]
        if not cand_r:
            return np.arange(sel.size), 0
        cr, cc = np.concatenate(cand_r), np.concatenate(cand_c)
        held = int(cr.size)
        v = np.concatenate(cand_v).astype(np.float64)
        lo = v - cqn[cr]
        hi = v + self.ctn2[cc] + cqn[cr]
        # the upper bound of each row's k-th nearest over all its lists: the k-th smallest upper
        # bound among its candidates; keep the candidates whose lower bound does not exceed it
        # (‖q‖² is common to a row's bounds and left out of both)
        order = np.lexsort((hi, cr))
        cr, cc, lo, hi = cr[order], cc[order], lo[order], hi[order]
        first = np.searchsorted(cr, np.arange(sel.size), side="left")
        count = np.diff(np.append(first, cr.size))
        enough = count >= k
        kth = np.full(sel.size, -np.inf)
        kth[enough] = hi[first[enough] + k - 1]
        keep = lo <= kth[cr]
        cr, cc = cr[keep], self.members[cc[keep]]
        d64 = _pair_distances(ex.q, ex.t, sel[cr], cc)
        rowmin = np.full(sel.size, np.inf)
        np.minimum.at(rowmin, cr, d64)
        key = _snap_ties(d64, rowmin[cr])
        order = np.lexsort((cc, key, cr))
        cr, cc, d64 = cr[order], cc[order], d64[order]
        done = np.flatnonzero(enough)
        start = np.searchsorted(cr, done, side="left")
        take = start[:, None] + np.arange(k)[None, :]
        out_i[done] = cc[take]
        out_d[done] = d64[take]
        return np.flatnonzero(~enough), held


def _up32(x: np.ndarray) -> np.ndarray:
    """float64 → the nearest float32 not below it (a comparison threshold never rounded down)."""
    y = x.astype(np.float32)
    low = y.astype(np.float64) < x
    y[low] = np.nextafter(y[low], np.float32(np.inf))
    return y


def knn_rows(points: np.ndarray, rows: np.ndarray, k: int = 1, **options) -> Neighbours:
    """k nearest *other* rows of ``points`` for the query rows ``rows`` only (a sample of a set
    searched against the whole set), with the same answers as ``knn(points, points, k,
    exclude_self=True)`` gives for those rows: the k + 1 nearest including the row itself, minus
    itself — or, when k + 1 exact duplicates of lower index push it out of the list, the first k
    (ties go to the lowest index either way)."""
    rows = np.asarray(rows, dtype=np.int64)
    if k + 1 > points.shape[0]:
        raise ValueError(f"cannot find {k} neighbours among {points.shape[0] - 1} candidate rows")
    nb = knn(points[rows], points, k + 1, **options)
    is_self = nb.idx == rows[:, None]
    drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), k)
    keep = np.ones_like(is_self)
    keep[np.arange(rows.size), drop] = False
    return Neighbours(nb.dist[keep].reshape(rows.size, k), nb.idx[keep].reshape(rows.size, k), nb.search)


EXTRA_CANDIDATES = 16
DEDUP_MIN_PAIRS = 10**6
DEDUP_MAX_SHARE = 0.8


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``x`` ordered by their first occurrence: (rows, first index, inverse)."""
    _, first, inv = np.unique(x, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return x[first[order]], first[order], rank[inv.ravel()]


def _distinct_lower_bound(x: np.ndarray) -> int:
    """A lower bound of the number of distinct rows: the number of distinct values of a fixed
    random projection (equal rows project equally) — a cheap test that duplicates are too few to
    pay off, before sorting whole rows."""
    w = np.random.default_rng(0).normal(size=x.shape[1])
    return int(np.unique(x @ w).size)


def _knn1_deduplicated(q, t, exclude_self, block_bytes, use_faiss, slices=None, grouped=True,
                       approximate=False, seed=0, n_check=IVF_CHECK_ROWS, memo=None,
                       exact_below_pairs=0) -> Neighbours | None:
    """k = 1 on data with many exact duplicates (categorical data): search distinct points only.

    Distinct target points are ordered by their first row, so the lowest-index tie rule carries
    over; a query with an exact duplicate elsewhere in its own set (exclude_self) gets the lowest
    other row of its group at distance 0. Returns None when duplicates are too few to pay off.
    """
    if _distinct_lower_bound(t) > DEDUP_MAX_SHARE * t.shape[0]:
        return None
    tu, tfirst, tinv = _distinct_rows(t)
    if tu.shape[0] > DEDUP_MAX_SHARE * t.shape[0]:
        return None
    n = q.shape[0]
    if not exclude_self:
        qu, _, qinv = _distinct_rows(q)
        nb = knn(qu, tu, 1, block_bytes=block_bytes, use_faiss=use_faiss, dedupe=False,
                 categorical_slices=slices, grouped=grouped, approximate=approximate, seed=seed, n_check=n_check,
                 memo=memo, exact_below_pairs=exact_below_pairs)
        return Neighbours(nb.dist[qinv], tfirst[nb.idx[qinv]], {**nb.search, "distinct_points": True})
    # query set == target set
    counts = np.bincount(tinv, minlength=tu.shape[0])
    out_d = np.empty((n, 1))
    out_i = np.empty((n, 1), dtype=np.int64)
    # rows of a group with ≥ 2 members: the lowest other member, at distance 0
    order = np.lexsort((np.arange(n), tinv))          # rows grouped, ascending within group
    start = np.searchsorted(tinv[order], np.arange(tu.shape[0]))
    first_of = order[start]
    second_of = order[np.minimum(start + 1, n - 1)]
    dup = counts[tinv] >= 2
    rows = np.arange(n)
    other = np.where(first_of[tinv] == rows, second_of[tinv], first_of[tinv])
    out_i[dup, 0] = other[dup]
    out_d[dup, 0] = 0.0
    single = ~dup
    search = {"exact": True, "settled_by": {"duplicates": int(dup.sum())}, "distinct_points": True}
    if single.any():
        if tu.shape[0] < 2:
            return None
        nb = knn(tu, tu, 1, exclude_self=True, block_bytes=block_bytes, use_faiss=use_faiss, dedupe=False,
                 categorical_slices=slices, grouped=grouped, approximate=approximate, seed=seed, n_check=n_check,
                 memo=memo, exact_below_pairs=exact_below_pairs)
        g = tinv[single]
        out_i[single, 0] = tfirst[nb.idx[g, 0]]
        out_d[single, 0] = nb.dist[g, 0]
        search = {**nb.search, "distinct_points": True}
    return Neighbours(out_d, out_i, search)
def _first_copies(t: np.ndarray, k: int) -> np.ndarray | None:
    """The target rows a k-nearest search needs of a set with many exact duplicates: for each
    distinct point, its k lowest-index copies (sorted row positions). Copies of one point are at
    the same float64 distance from any query (the same arithmetic on the same coordinates), so
    under the tie rule (equal distances → lowest index) a copy behind k lower-index copies of its
    point is never among the k nearest: searching the kept rows gives the same lists as searching
    all. A run of equal neighbours is thereby bounded by k per point instead of materialised.
    None when duplicates are too few to pay off."""
    m = t.shape[0]
    if _distinct_lower_bound(t) > DEDUP_MAX_SHARE * m:
        return None
    _, _, inv = _distinct_rows(t)
    order = np.lexsort((np.arange(m), inv))          # rows grouped by point, ascending within
    start = np.searchsorted(inv[order], np.arange(int(inv.max()) + 1))
    rank = np.arange(m) - start[inv[order]]          # 0 for a point's first copy, 1 for its second, …
    keep = np.sort(order[rank < k])
    if keep.size > DEDUP_MAX_SHARE * m:
        return None
    return keep


def _knn_folded(q, t, k, block_bytes, use_faiss, slices=None, grouped=True, approximate=False, seed=0,
                n_check=IVF_CHECK_ROWS, memo=None, exact_below_pairs=0) -> Neighbours | None:
    """k > 1 neighbours (query set ≠ target set) on data with many exact duplicates — e.g. the
    key columns of the reconstruction metrics: 25k Texas records hold 1.3k distinct key
    combinations. Two exact reductions:

    * targets: only each distinct point's k lowest-index copies are searched
      (:func:`_first_copies`);
    * queries: the distinct query rows are searched once each and every row gets its distinct
      row's answer (an exact search's answer depends on the query point alone).

    The search left is exact when its pairs (distinct queries × kept targets) are at most
    ``exact_below_pairs`` or ``approximate`` is off. Otherwise it is screened — over every query
    row, not the distinct ones, so that the screen's seeded recall sample and
    ``share_rows_possibly_wrong`` stay shares of rows. Returns None when neither reduction
    applies."""
    n, m = q.shape[0], t.shape[0]
    keep = _first_copies(t, k)
    tt = t if keep is None else t[keep]
    qu = qinv = None
    if _distinct_lower_bound(q) <= DEDUP_MAX_SHARE * n:
        qu, _, qinv = _distinct_rows(q)
        if qu.shape[0] > DEDUP_MAX_SHARE * n:
            qu = qinv = None
    n_search = n if qu is None else qu.shape[0]
    screen = approximate and n_search * tt.shape[0] > exact_below_pairs
    if screen:
        qu = qinv = None
    if keep is None and qu is None:
        return None
    nb = knn(q if qu is None else qu, tt, k, block_bytes=block_bytes, use_faiss=use_faiss, dedupe=False,
             categorical_slices=slices, grouped=grouped, approximate=screen, seed=seed, n_check=n_check,
             memo=memo)
    idx = nb.idx if keep is None else keep[nb.idx]
    search = dict(nb.search)
    if keep is not None:
        search["targets_searched"] = int(keep.size)
    if qu is not None:
        search["distinct_queries"] = int(qu.shape[0])
        return Neighbours(nb.dist[qinv], idx[qinv], search)
    return Neighbours(nb.dist, idx, search)


LOW_DIM = 3
GROUPED_MAX_NUMERIC = 12  # k-d trees stay efficient up to about this many numeric dimensions
GROUPED_EXTRA = 2


def _workers() -> int:
    """Worker threads for scipy's k-d tree and the IVF list scan: the run's budget
    (privgate.threads.limited sets faiss' OpenMP count); -1 (scipy: all cores) when faiss is
    absent, in which case there is no IVF screen."""
    faiss = _faiss()
    return int(faiss.omp_get_max_threads()) if faiss is not None else -1


def _category_codes(x: np.ndarray, slices) -> tuple[np.ndarray, float] | None:
    """Per row, the level index of each one-hot slice, and the slices' common nonzero values;
    None when a slice is not one-hot with one positive value per slice."""
    if not slices:
        return np.zeros((x.shape[0], 0), dtype=np.int64), 0.0
    # all one-hot columns at once, by products with a column → slice indicator (exact: sums of
    # small integers, or of one nonzero value and zeros): per slice the number of nonzeros, the
    # position of the nonzero (valid when there is exactly one) and its value
    # (in blocks of rows, so that the one-hot block's copies stay small at a million rows; the
    # products are exact, so blocking changes no bit)
    cols = np.concatenate([np.arange(a, b) for a, b in slices])
    width = [b - a for a, b in slices]
    member = np.zeros((cols.size, len(slices)))
    member[np.arange(cols.size), np.repeat(np.arange(len(slices)), width)] = 1.0
    position = member * np.concatenate([np.arange(w) for w in width]).astype(np.float64)[:, None]
    codes = np.empty((x.shape[0], len(slices)), dtype=np.int64)
    first = None
    step = max(1, PAIR_CHUNK_BYTES // (8 * cols.size))
    for start in range(0, x.shape[0], step):
        block = x[start:start + step, cols]
        nonzero = (block != 0).astype(np.float64)
        if (nonzero @ member != 1.0).any():
            return None
        codes[start:start + step] = nonzero @ position
        top = block @ member
        first = top[:1] if first is None else first
        if (top != first).any() or (top <= 0).any():
            return None
    return codes, 0.0


def refine_group_ids(ids: np.ndarray | None, codes: np.ndarray) -> np.ndarray:
    """Dense group numbers of the rows after one more integer code column: ``ids`` (the numbers so
    far, None before the first column) refined by ``codes``. Folding columns in one at a time
    numbers the distinct rows in lexicographic order — the inverse of ``np.unique(columns,
    axis=0)`` — without holding all columns, and renumbering after each column keeps the
    (number, code) pairs from overflowing."""
    codes = np.asarray(codes).astype(np.int64, copy=False)
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(codes.min())
    pairs = codes - low if ids is None else ids * (int(codes.max()) - low + 1) + (codes - low)
    return np.unique(pairs, return_inverse=True)[1].ravel().astype(np.int64, copy=False)


def _group_ids(qc: np.ndarray, tc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One integer per distinct combination of category codes, shared by query and target rows."""
    both = np.vstack([qc, tc])
    g = np.zeros(both.shape[0], dtype=np.int64)
    for j in range(both.shape[1]):
        g = refine_group_ids(g, both[:, j])
    return g[:qc.shape[0]], g[qc.shape[0]:]


def _knn_grouped(q, t, k, exclude_self, slices, out_d, out_i, block_bytes: int = DEFAULT_BLOCK_BYTES,
                 memo: "SearchMemo | None" = None) -> np.ndarray:
    """Exact k nearest neighbours among records of equal or nearly equal categorical values
    (as in the mixed space of :mod:`privgate.spaces`, a mismatch in categorical column c adds a fixed
    c_c to the squared distance).

    Level 0: a k-d tree over the numeric coordinates plus one far-apart group coordinate (one
    group per combination of categories) returns each query's k + 16 nearest records of its own
    group. Level 1, for rows level 0 left open: one such tree per categorical column c, grouping
    records equal on every column but c. A row is settled when (i) every tree's candidate list
    reaches past the k-th nearest distance found (no unseen record of those groups can be nearer
    or tied: its numeric distance alone is at least the list's last), and (ii) every record
    outside the groups searched is provably farther: level 0 — it mismatches at least one column,
    d² ≥ min c_c; level 1 — at least two, d² ≥ the two smallest c_c summed. Distances are
    recomputed in float64 from the full coordinates and ties broken by the lowest index, as on
    every other path. Returns the rows still open, for the general search."""
    n, m = q.shape[0], t.shape[0]
    if slices:
        tag = ("category_codes", tuple(map(tuple, slices)))
        qcodes = SearchMemo.get_or_build(memo, q, tag, lambda: _category_codes(q, slices))
        tcodes = SearchMemo.get_or_build(memo, t, tag, lambda: _category_codes(t, slices))
        if qcodes is None or tcodes is None:
            return np.arange(n)
        qc, tc = qcodes[0], tcodes[0]
        costs = np.array([_slice_cost(q, t, a, b) for a, b in slices])
    else:
        qc, tc = np.zeros((n, 0), dtype=np.int64), np.zeros((m, 0), dtype=np.int64)
        costs = np.zeros(0)
    cat = np.zeros(q.shape[1], dtype=bool)
    for a, b in slices:
        cat[a:b] = True
    num = np.flatnonzero(~cat)
    lo = np.minimum(q[:, num].min(axis=0, initial=np.inf), t[:, num].min(axis=0, initial=np.inf))
    hi = np.maximum(q[:, num].max(axis=0, initial=-np.inf), t[:, num].max(axis=0, initial=-np.inf))
    span = float(np.sqrt(((hi - lo) ** 2).sum())) if num.size else 0.0
    gap = 2.0 * span + 1.0  # farther than any two records of one group
    available = m - 1 if exclude_self else m
    # a short candidate list: with numeric columns ties are rare, and a row whose list is cut in
    # a tie run simply goes on to the general search
    kk = min(available, k + GROUPED_EXTRA)
    ordered = np.sort(costs)
    qnum, tnum = np.ascontiguousarray(q[:, num]), np.ascontiguousarray(t[:, num])

    def ranking_distance(qi: np.ndarray, ti: np.ndarray) -> np.ndarray:
        # k = 1: the mixed distance from the compact form (numeric part + mismatch costs), for
        # ranking only (the nearest is decided with the tie tolerance; the distance returned is
        # recomputed from the full coordinates). k > 1: the full coordinates, so that the order of
        # the 2nd, 3rd, … nearest is the same to the last bit as on every other path.
        if k > 1:
            return _pair_distances(q, t, qi, ti)
        diff = qnum[qi] - tnum[ti]
        d2 = np.einsum("ij,ij->i", diff, diff)
        if costs.size:
            d2 += (qc[qi] != tc[ti]) @ costs
        return np.sqrt(d2)

    # level 0: own group; every other record mismatches ≥ 1 column. Rows whose short list was
    # cut inside a run of near-equal distances are retried once with k + 16 candidates.
    beyond0 = float(np.sqrt(ordered[0])) if costs.size else np.inf
    todo = np.arange(n)
    groups = _Groups(qc, tc, gap)
    qg, tg = groups.ids()
    for extra in (GROUPED_EXTRA, EXTRA_CANDIDATES):
        width = min(available, k + extra)
        idx, reach = _group_candidates(q, t, todo, qg, tg, num, gap, width, exclude_self, beyond0)
        todo, cut = _settle(q, t, todo, idx, [reach], beyond0, k, width, available, ranking_distance, out_d, out_i)
        if cut.size == 0 or width == available:
            break
        todo, retry = np.setdiff1d(todo, cut), cut
        idx, reach = _group_candidates(q, t, retry, qg, tg, num, gap, min(available, k + EXTRA_CANDIDATES),
                                       exclude_self, beyond0)
        left, _ = _settle(q, t, retry, idx, [reach], beyond0, k, min(available, k + EXTRA_CANDIDATES),
                          available, ranking_distance, out_d, out_i)
        todo = np.union1d(todo, left)
        break
    if todo.size == 0 or costs.size == 0:
        return todo
    if _one_block(todo.size, m, k, block_bytes):
        # shape rule: level 1 builds one tree over all m targets per categorical column; when the
        # open rows fit one GEMM block (k = 1) that block costs less (1,000 × 25,000 × 90, 10
        # categorical columns: the 10 trees settled 145 of 580 rows for ~0.2 CPU-s, the block
        # does all 580 for ~0.1)
        return todo
    # level 1: equal on all columns but one; every other record mismatches ≥ 2 columns
    beyond1 = float(np.sqrt(ordered[0] + ordered[1])) if costs.size > 1 else np.inf
    cands, reaches = [], []
    for j in range(costs.size):
        qg_j, tg_j = groups.ids(drop=j)
        idx, reach = _group_candidates(q, t, todo, qg_j, tg_j, num, gap, kk, exclude_self, beyond1)
        cands.append(idx)
        reaches.append(reach)
    left, _ = _settle(q, t, todo, np.hstack(cands), reaches, beyond1, k, kk, available, ranking_distance,
                      out_d, out_i)
    return left


def _slice_cost(q, t, a, b) -> float:
    """Squared distance a mismatch in the one-hot slice [a, b) adds (2·scale²)."""
    v = q[0, a:b] if q.shape[0] else t[0, a:b]
    return 2.0 * float(np.abs(v).max()) ** 2


class _Groups:
    """Group ids of query and target rows for a set of categorical columns: mixed-radix numbers of
    the codes when they stay exact in float64 after scaling by the gap (then dropping a column is
    a subtraction), else dense ids from successive np.unique."""

    def __init__(self, qc: np.ndarray, tc: np.ndarray, gap: float) -> None:
        self.qc, self.tc = qc, tc
        levels = np.maximum(qc.max(axis=0, initial=0), tc.max(axis=0, initial=0)) + 1
        self.strides = np.concatenate([[1], np.cumprod(levels)[:-1]]).astype(np.int64) if levels.size else levels
        total = float(np.prod(levels.astype(np.float64))) if levels.size else 1.0
        self.radix = total * (gap + 1.0) < 2.0**52
        if self.radix:
            self.q_all, self.t_all = qc @ self.strides, tc @ self.strides

    def ids(self, drop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(query ids, target ids) grouping rows equal on every column (but ``drop``)."""
        if self.qc.shape[1] == 0:
            return np.zeros(self.qc.shape[0], dtype=np.int64), np.zeros(self.tc.shape[0], dtype=np.int64)
        if self.radix:
            if drop is None:
                return self.q_all, self.t_all
            return (self.q_all - self.qc[:, drop] * self.strides[drop],
                    self.t_all - self.tc[:, drop] * self.strides[drop])
        keep = np.arange(self.qc.shape[1]) != drop if drop is not None else slice(None)
        return _group_ids(self.qc[:, keep], self.tc[:, keep])


def _group_candidates(q, t, rows, qg, tg, num, gap, kk, exclude_self, beyond=np.inf
                      ) -> tuple[np.ndarray, np.ndarray]:
    """For query ``rows``: the kk nearest targets (by numeric distance) among targets of the same
    group (ids ``qg`` of every query row, ``tg`` of every target), and how far the list reaches:
    no target of the row's group left out of it is nearer (numerically) than that. Records of
    other groups are at least ``gap`` away and come last; -1 marks an empty slot.

    ``beyond``: the distance past which the caller settles nothing with this tree (every record
    outside the groups searched is at least that far). The tree search stops there
    (``distance_upper_bound`` slightly above it): a row with fewer than kk group records within
    it gets the ones found and reach ``beyond`` — every record it did not see is farther. And
    only targets of groups some query row belongs to go into the tree (at level 1 often a small
    part of them; the others can be no row's candidate)."""
    from scipy.spatial import cKDTree

    # rows whose group holds no target (but themselves) have nothing to find here: their list is
    # empty (-1) and reaches everywhere — about half the rows of a Texas-like search, and a tree
    # query costs as much for them as for the others
    groups, members = np.unique(tg, return_counts=True)
    at = np.minimum(np.searchsorted(groups, qg[rows]), max(groups.size - 1, 0))
    others = np.where(groups[at] == qg[rows], members[at], 0) - (1 if exclude_self else 0)
    live = np.flatnonzero(others > 0)
    out_idx = np.full((rows.size, kk), -1, dtype=np.int64)
    out_reach = np.full(rows.size, np.inf)
    if live.size == 0:
        return out_idx, out_reach
    rows = rows[live]
    # targets of the groups queried (the tree's positions map back through `members`)
    members = np.flatnonzero(np.isin(tg, np.unique(qg[rows])))
    qz = np.column_stack([q[rows][:, num], qg[rows].astype(np.float64) * gap])
    tz = np.column_stack([t[members][:, num], tg[members].astype(np.float64) * gap])
    m = members.size
    search_k = min(m, kk + (1 if exclude_self else 0))
    bound = beyond * (1 + 1e-6) + 1e-12 if np.isfinite(beyond) else np.inf
    dist, pos = cKDTree(tz).query(qz, k=search_k, distance_upper_bound=bound, workers=_workers())
    dist = dist.reshape(rows.size, search_k)
    pos = pos.reshape(rows.size, search_k)
    idx = np.where(pos < m, members[np.minimum(pos, m - 1)], -1)
    if exclude_self:
        is_self = idx == rows[:, None]
        drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), search_k - 1)
        keep = np.ones_like(is_self)
        keep[np.arange(rows.size), drop] = False
        idx = idx[keep].reshape(rows.size, search_k - 1)
        dist = dist[keep].reshape(rows.size, search_k - 1)
    out_idx[live, :idx.shape[1]] = idx[:, :kk]
    # a list cut by the bound holds every group record nearer than the bound (> beyond)
    reach = dist[:, kk - 1] if idx.shape[1] >= kk else np.full(rows.size, np.inf)
    out_reach[live] = np.where(np.isfinite(reach), reach, beyond)
    return out_idx, out_reach


def _settle(q, t, rows, idx, reaches, beyond, k, kk, available, distance, out_d, out_i
            ) -> tuple[np.ndarray, np.ndarray]:
    """Decide the rows whose candidate lists provably hold their k nearest (see _knn_grouped);
    return the others, and among them those that failed only because a list was too short."""
    n, width = idx.shape
    # a target found by several trees counts once; -1 marks an empty slot (a group with no target)
    idx = np.sort(idx, axis=1)
    dup = idx < 0
    dup[:, 1:] |= idx[:, 1:] == idx[:, :-1]
    d64 = np.full((n, width), np.inf)
    r, c = np.nonzero(~dup)
    d64[r, c] = distance(rows[r], idx[r, c])
    n_unique = (~dup).sum(axis=1)
    kth = np.sort(d64, axis=1)[:, k - 1]
    tol = REL_TOL * (1.0 + np.abs(kth))
    complete = (n_unique >= k) & (beyond > kth + 2 * tol)
    far_enough = complete.copy()
    if kk < available:
        for reach in reaches:
            complete &= reach > kth + 2 * tol
    sel = np.flatnonzero(complete)
    if sel.size:
        key = _snap_ties(d64[sel], d64[sel].min(axis=1)[:, None])
        key[dup[sel]] = np.inf  # (an infinite distance would snap to any finite minimum)
        order = np.lexsort((idx[sel], key), axis=-1)[:, :k]
        chosen = np.take_along_axis(idx[sel], order, axis=1)
        out_i[rows[sel]] = chosen
        # the reported distances: float64 from the full coordinates, as on every other path
        out_d[rows[sel]] = _pair_distances(q, t, np.repeat(rows[sel], k), chosen.ravel()).reshape(sel.size, k)
    return rows[~complete], rows[far_enough & ~complete]


def _knn_kdtree(q, t, k, exclude_self, out_d, out_i) -> np.ndarray:
    """Low-dimensional spaces (the 2-D FAMD projection): scipy's cKDTree gives the exact k + 16
    nearest in float64; rows whose last candidate is not strictly beyond the k-th (a run of ties)
    go to the NumPy path."""
    from scipy.spatial import cKDTree

    n, m = q.shape[0], t.shape[0]
    available = m - 1 if exclude_self else m
    kk = min(available, k + EXTRA_CANDIDATES)
    search_k = min(m, kk + (1 if exclude_self else 0))
    dist, idx = cKDTree(t).query(q, k=search_k, workers=_workers())
    dist = dist.reshape(n, search_k)
    idx = idx.reshape(n, search_k).astype(np.int64)
    rows = np.arange(n)
    if exclude_self:
        is_self = idx == rows[:, None]
        drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), search_k - 1)
        keep = np.ones_like(is_self)
        keep[rows, drop] = False
        idx = idx[keep].reshape(n, search_k - 1)
    idx = idx[:, :kk]
    cr = np.repeat(rows, kk)
    d64 = _pair_distances(q, t, cr, idx.ravel()).reshape(n, kk)
    kth = np.sort(d64, axis=1)[:, k - 1]
    if kk < available:
        tol = REL_TOL * (1.0 + np.abs(kth))
        complete = d64.max(axis=1) > kth + 2 * tol
    else:
        complete = np.ones(n, dtype=bool)
    sel = np.flatnonzero(complete)
    if sel.size:
        key = _snap_ties(d64[sel], d64[sel].min(axis=1)[:, None])
        order = np.lexsort((idx[sel], key), axis=-1)[:, :k]
        out_i[sel] = np.take_along_axis(idx[sel], order, axis=1)
        out_d[sel] = np.take_along_axis(d64[sel], order, axis=1)
    return np.flatnonzero(~complete)


def _faiss():
    try:
        import faiss  # noqa: PLC0415
    except ImportError:  # pragma: no cover - faiss is a dependency; NumPy path still exact
        return None
    return faiss


FAISS_BLAS_THRESHOLD = 20  # queries per search from which faiss' flat search uses BLAS


@contextmanager
def _faiss_blas():
    """faiss' flat search computes distances one pair at a time (no BLAS) below
    ``faiss.cvar.distance_compute_blas_threshold`` queries — 128000 in the faiss-cpu wheels, so a
    search of 400 or 3000 open rows ran 15× slower per row than one of 2000 rows against 100k
    targets (measured, 1 thread). Inside this block the threshold is faiss' historical 20; it is
    restored afterwards (it only changes speed and float32 rounding, which the error bound
    covers)."""
    faiss = _faiss()
    before = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = FAISS_BLAS_THRESHOLD
    try:
        yield
    finally:
        faiss.cvar.distance_compute_blas_threshold = before


def _knn_faiss(q, t, q32, t32, qn, tn, c, k, exclude_self, todo, out_d, out_i) -> np.ndarray:
    """Screen with faiss' exact flat index; fill the rows whose candidates provably contain the
    exact k nearest; return the row indices that still need the NumPy path. Rows with long runs
    of tied candidates are retried once with 256 extra candidates before giving up."""
    faiss = _faiss()
    index = faiss.IndexFlatL2(t32.shape[1])
    index.add(t32)
    with _faiss_blas():
        for extra in (EXTRA_CANDIDATES, 256):
            if todo.size == 0:
                break
            done = _faiss_pass(index, q, t, q32[todo], qn[todo], tn, c, k, exclude_self, todo, extra,
                               out_d, out_i)
            todo = todo[~done]
    return todo


def _faiss_pass(index, q, t, q32, qn, tn, c, k, exclude_self, rows, extra, out_d, out_i) -> np.ndarray:
    n, m = q32.shape[0], index.ntotal
    available = m - 1 if exclude_self else m
    kk = min(available, k + extra)
    search_k = min(m, kk + (1 if exclude_self else 0))
    d32, i32 = index.search(q32, search_k)
    idx = i32.astype(np.int64)
    if exclude_self:
        is_self = idx == rows[:, None]
        # drop the self entry (or the last one when self was not returned), keep the order
        drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), search_k - 1)
        keep = np.ones_like(is_self)
        keep[np.arange(n), drop] = False
        idx = idx[keep].reshape(n, search_k - 1)
        d32 = d32[keep].reshape(n, search_k - 1)
    idx = idx[:, :kk]
    d32 = d32[:, :kk].astype(np.float64)
    bad = (idx < 0).any(axis=1)
    idx = np.where(idx < 0, 0, idx)
    qn64 = qn.astype(np.float64)
    tn64 = tn.astype(np.float64)
    # upper bound of the exact k-th smallest d² (max over the first k candidates' upper bounds)
    upper = (d32[:, :k] + c * (qn64[:, None] + tn64[idx[:, :k]])).max(axis=1)
    upper = upper * (1 + 4 * REL_TOL) + 4 * REL_TOL
    if kk < available:
        # A target j outside the candidates has float32 d² ≥ the last candidate's. If its norm
        # is at most cap, its exact d² ≥ d32_last − c(‖q‖² + cap); if larger, the triangle
        # inequality gives d ≥ √cap − ‖q‖. cap is chosen so the second bound exceeds `upper`.
        cap = 1.25 * (np.sqrt(qn64) + np.sqrt(np.maximum(upper, 0)) + 1e-6) ** 2
        lower_rest = d32[:, -1] - c * (qn64 + cap)
        complete = lower_rest > upper
    else:
        complete = np.ones(n, dtype=bool)
    complete &= ~bad
    sel = np.flatnonzero(complete)
    if sel.size:
        # float64 distances only for candidates whose float32 lower bound reaches `upper`: the
        # others have exact d² > upper ≥ the first k candidates' exact d², beyond the tie
        # tolerance of the row minimum, so they sort after those k (same answer as computing all)
        lower = d32[sel] - c * (qn64[sel, None] + tn64[idx[sel]])
        need = lower <= upper[sel, None] * (1 + 1e-6) + 1e-6
        need[:, :k] = True
        si, sj = np.nonzero(need)
        d64 = np.full((sel.size, kk), np.inf)
        d64[si, sj] = _pair_distances(q, t, rows[sel][si], idx[sel][si, sj])
        rowmin = d64.min(axis=1)
        key = _snap_ties(d64, rowmin[:, None])
        key[~need] = np.inf
        order = np.lexsort((idx[sel], key), axis=-1)[:, :k]
        out_i[rows[sel]] = np.take_along_axis(idx[sel], order, axis=1)
        out_d[rows[sel]] = np.take_along_axis(d64, order, axis=1)
    return complete


def _knn_block(q, t, qb32, t32, qbn, tn, ctn, c, k, qrows, exclude_self, out_d, out_i) -> None:
    b = qb32.shape[0]
    rows = np.arange(b)
    dist = qb32 @ t32.T
    dist *= np.float32(-2.0)
    dist += qbn[:, None]
    dist += tn[None, :]
    if exclude_self:
        dist[rows, qrows] = np.inf
    # upper bound of the exact k-th smallest d² per row
    if k == 1:
        # any target's upper bound bounds the exact minimum; argmin is ~40× cheaper than argpartition
        part = dist.argmin(axis=1)[:, None]
    else:
        part = np.argpartition(dist, k - 1, axis=1)[:, :k]
    upper = (dist[rows[:, None], part] + c * qbn[:, None] + ctn[part]).max(axis=1)
    # candidates: lower bound of exact d² ≤ upper bound of the k-th
    dist -= ctn[None, :]
    dist -= (c * qbn)[:, None]
    cand = dist <= upper[:, None]
    if exclude_self:
        cand[rows, qrows] = False
    cr, cc = np.nonzero(cand)
    del dist, cand
    d64 = _pair_distances(q, t, qrows[cr], cc)
    # order by row, then exact distance with tolerant ties snapped to the row minimum, then index
    rowmin = np.full(b, np.inf)
    np.minimum.at(rowmin, cr, d64)
    key = _snap_ties(d64, rowmin[cr])
    order = np.lexsort((cc, key, cr))
    cr, cc, d64 = cr[order], cc[order], d64[order]
    first = np.searchsorted(cr, rows, side="left")
    take = first[:, None] + np.arange(k)[None, :]
    out_i[:] = cc[take]
    out_d[:] = d64[take]


def _snap_ties(d: np.ndarray, rowmin: np.ndarray) -> np.ndarray:
    """Distances within the tolerance of their row's minimum are set to that minimum, so ties at
    the nearest distance are broken by index."""
    tol = REL_TOL * (1.0 + np.maximum(np.abs(d), np.abs(rowmin)))
    return np.where(d - rowmin <= tol, rowmin, d)


def _pair_distances(q: np.ndarray, t: np.ndarray, qi: np.ndarray, ti: np.ndarray) -> np.ndarray:
    """Exact float64 Euclidean distances of the pairs (q[qi], t[ti]) from coordinate differences."""
    d = q.shape[1]
    out = np.empty(qi.size, dtype=np.float64)
    chunk = max(1024, PAIR_CHUNK_BYTES // (8 * max(d, 1)))
    for s in range(0, qi.size, chunk):
        e = min(qi.size, s + chunk)
        diff = q[qi[s:e]] - t[ti[s:e]]
        out[s:e] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return out


def pair_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact float64 distances between row i of ``a`` and row i of ``b``."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    idx = np.arange(a.shape[0])
    return _pair_distances(a, b, idx, idx)


def any_within_box(query: np.ndarray, target: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """For each query row, whether some target row differs by at most ``radius`` in every
    coordinate (Chebyshev distance ≤ radius, inclusive up to 1e-9 relative slack).

    Used by hitting_rate on coordinates scaled so that one unit is the allowed difference; a
    k-d tree answers the box query exactly without any n×m matrix.
    """
    from scipy.spatial import cKDTree

    q = np.ascontiguousarray(query, dtype=np.float64)
    t = np.ascontiguousarray(target, dtype=np.float64)
    if q.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    if q.shape[1] == 0:
        return np.full(q.shape[0], t.shape[0] > 0)
    tree = cKDTree(t)
    bound = radius * (1 + 1e-9) + 1e-12
    dist, _ = tree.query(q, k=1, p=np.inf, distance_upper_bound=bound * (1 + 1e-12), workers=_workers())
    return dist <= bound
