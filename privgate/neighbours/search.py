"""``knn``: the k nearest target rows of every query row, exact unless a screen is asked for.

Before any n×m work, rows are settled exactly where the data allow: exact duplicates
(:mod:`.duplicates`) and, in a mixed space (``categorical_slices``), the nearest records inside
groups of equal categorical values (:mod:`.grouped`); low-dimensional spaces go to a k-d tree
(:func:`.exact.knn_kdtree`: up to ``low_dim`` dimensions, or ``kdtree_max_dim`` in large
searches without categorical columns). With ``approximate=True`` the rows still open are screened by a faiss
IVF index (:mod:`.ivf`) when the search is larger than ``settings.exact_below_pairs``; else, and
for every row the screen declines, the exact search (:class:`.exact.ExactSearch`). Every result
says how it was made in ``Neighbours.search``.
"""

from __future__ import annotations

import numpy as np

from .backends import faiss_module
from .category_tiles import compared_share
from .coded import knn_coded
from .decide import drop_self
from .duplicates import fold_duplicates
from .exact import ExactSearch, knn_kdtree
from .grouped import knn_grouped
from .ivf import knn_ivf
from .memo import SearchMemo
from .problem import Options, Problem
from .result import Neighbours
from .settings import SearchSettings, resolve


def knn(
    query: np.ndarray,
    target: np.ndarray,
    k: int = 1,
    *,
    exclude_self: bool = False,
    categorical_slices: list[tuple[int, int]] | None = None,
    approximate: bool = False,
    seed: int = 0,
    memo: SearchMemo | None = None,
    settings: SearchSettings | None = None,
    dedupe: bool = True,
    grouped: bool = True,
    use_faiss: bool = True,
    coded_columns: list[tuple[int, float]] | None = None,
) -> Neighbours:
    """Exact k nearest neighbours of each ``query`` row among the ``target`` rows.

    With ``exclude_self=True`` query and target must be the same matrix and row i never returns
    itself (by index). ``categorical_slices`` (the one-hot (start, stop) feature ranges of a
    mixed space) lets rows be settled by the grouped search first.

    ``approximate=True``: when the rows the exact shortcuts (duplicates, groups, k-d tree) leave
    open still make more than ``settings.exact_below_pairs`` query × target pairs — counting only
    the targets the exact screen's categorical tile bounds (:mod:`.category_tiles`) would
    compare — they are
    screened by a faiss inverted-file index and decides them in
    float64 among the screen's candidates; ``settings.ivf_check_rows`` of them, drawn with
    ``seed``, are also searched exactly, and the share whose k nearest distances the screen found
    is reported as ``search["recall"]`` (with its Wilson interval) — see :func:`.ivf.knn_ivf`.

    ``memo``: a :class:`SearchMemo` (the evaluation context's) in which structures derived from
    one matrix alone — its category codes, the screen's k-means lists of a target set — are kept
    for the other searches of the same matrices. ``settings``: the engine's tunables (default
    :data:`.settings.DEFAULT_SETTINGS`). ``dedupe``, ``grouped``, ``use_faiss``: switch a path
    off. Answers are the same whatever the memo, the settings or the paths.

    ``coded_columns``: (position, cost) of coordinates holding a categorical column's integer
    code (the last coordinates of a mixed space, :attr:`EncodedSpace.coded_columns`); a mismatch
    on one adds ``cost`` to the squared distance, exactly as its one-hot block would
    (:mod:`.coded`).
    """
    if coded_columns:
        return _knn_coded(
            query,
            target,
            k,
            exclude_self,
            coded_columns,
            dict(
                categorical_slices=categorical_slices,
                approximate=approximate,
                seed=seed,
                memo=memo,
                settings=settings,
                dedupe=dedupe,
                grouped=grouped,
                use_faiss=use_faiss,
            ),
        )
    q, t = _checked(query, target, k, exclude_self)
    n, d = q.shape
    if n == 0:
        return Neighbours(np.empty((0, k)), np.empty((0, k), dtype=np.int64))
    if d == 0:
        return _all_at_distance_zero(n, t.shape[0], k, exclude_self)
    opts = Options(
        resolve(settings),
        categorical_slices=categorical_slices,
        grouped=grouped,
        use_faiss=use_faiss,
        approximate=approximate,
        seed=seed,
        memo=memo,
    )
    if dedupe:
        hit = fold_duplicates(q, t, k, exclude_self, opts, search_rows)
        if hit is not None:
            return hit
    return search_rows(q, t, k, exclude_self, opts)


def _knn_coded(
    query: np.ndarray, target: np.ndarray, k: int, exclude_self: bool, coded: list[tuple[int, float]], options: dict
) -> Neighbours:
    """:func:`knn` with coded columns (:func:`.coded.knn_coded`); the rest matrices of the query
    and target are kept in the memo, so that the engine's structures prepared for them serve
    every search of the same matrices."""
    q, t = _checked(query, target, k, exclude_self)
    memo = options.get("memo")
    h = len(coded)

    def rest(x: np.ndarray) -> np.ndarray:
        return SearchMemo.get_or_build(memo, x, ("coded_rest", h), lambda: np.ascontiguousarray(x[:, : x.shape[1] - h]))

    def engine(a: np.ndarray, b: np.ndarray, kk: int, *, exclude_self: bool) -> Neighbours:
        return knn(a, b, kk, exclude_self=exclude_self, **options)

    rq = rest(query) if q is query else rest(q)
    rt = rq if exclude_self else (rest(target) if t is target else rest(t))
    return knn_coded(
        q,
        t,
        k,
        exclude_self,
        list(coded),
        engine,
        resolve(options.get("settings")),
        rest=(rq, rt),
        categorical_slices=options.get("categorical_slices"),
        memo=memo,
    )


def _checked(query: np.ndarray, target: np.ndarray, k: int, exclude_self: bool) -> tuple[np.ndarray, np.ndarray]:
    """The query and target as C-contiguous float64, checked for shape and k — or both float32
    when both are given as float32 (compact encoded spaces: no float64 copy of a million rows is
    made; every path computes its float64 distances from the float32 coordinates)."""
    dtype = storage_dtype(query, target)
    q = np.ascontiguousarray(query, dtype=dtype)
    t = np.ascontiguousarray(target, dtype=dtype)
    if q.ndim != 2 or t.ndim != 2 or q.shape[1] != t.shape[1]:
        raise ValueError(f"query {q.shape} and target {t.shape} must be 2-D with equal widths")
    n, m = q.shape[0], t.shape[0]
    available = m - 1 if exclude_self else m
    if exclude_self and n != m:
        raise ValueError("exclude_self needs query and target to be the same set")
    if k < 1 or k > available:
        raise ValueError(f"cannot find {k} neighbours among {available} candidate rows")
    return q, t


def storage_dtype(*arrays: np.ndarray) -> type:
    """float32 when every array is float32 (kept as given), else float64."""
    return np.float32 if all(np.asarray(a).dtype == np.float32 for a in arrays) else np.float64


def _all_at_distance_zero(n: int, m: int, k: int, exclude_self: bool) -> Neighbours:
    """A search of zero-width rows: every distance is 0, so the lowest indices win."""
    base = np.arange(k + (1 if exclude_self else 0))
    for_rows = np.broadcast_to(base, (n, base.size)).copy()
    if exclude_self:
        rows = np.arange(n)[:, None]
        for_rows = np.where(for_rows != rows, for_rows, -1)
        for_rows = np.sort(np.where(for_rows < 0, m + 1, for_rows), axis=1)[:, :k]
    return Neighbours(np.zeros((n, k), dtype=np.float64), for_rows[:, :k].astype(np.int64))


def search_rows(q: np.ndarray, t: np.ndarray, k: int, exclude_self: bool, opts: Options) -> Neighbours:
    """The search of checked ``q`` against ``t`` (:func:`_checked`) without duplicate folding: the exact
    shortcuts, then the screen (when allowed and the search is large enough) or the exact
    search for the rows left."""
    n, d = q.shape
    settings = opts.settings
    p = Problem(q, t, k, exclude_self, settings, opts.memo)
    out_d = np.empty((n, k), dtype=np.float64)
    out_i = np.empty((n, k), dtype=np.int64)
    slices = list(opts.categorical_slices or [])
    n_numeric = d - sum(b - a for a, b in slices)
    settled: dict[str, int] = {}
    todo = np.arange(n)
    tree = d <= settings.low_dim or (
        not slices and d <= settings.kdtree_max_dim and n * t.shape[0] >= settings.kdtree_min_pairs
    )
    if tree:
        todo = knn_kdtree(p, out_d, out_i)
        settled["kdtree"] = int(n - todo.size)
    exact = None
    if not tree and opts.grouped and opts.categorical_slices is not None and n_numeric <= settings.grouped_max_numeric:

        def deeper(rows: np.ndarray) -> bool:
            """Whether the next level pays: not when the screen's categorical tile bounds would
            compare few of the targets for the rows left open."""
            nonlocal exact
            exact = ExactSearch(p, opts.use_faiss, slices, rows=rows)
            return compared_share(exact, rows, *_list_widths(p, settings)) > settings.grouped_deeper_share

        todo = knn_grouped(p, slices, out_d, out_i, deeper)
        settled["grouped"] = int(n - todo.size)
    search: dict = {"exact": True, "settled_by": settled}
    if todo.size == 0:
        return Neighbours(out_d, out_i, search)
    if exact is None:
        exact = ExactSearch(p, opts.use_faiss and not tree, slices, rows=todo)
    # the screen only where the search is big enough (the context's rule, applied again here to
    # the rows left open: after duplicates are folded and the grouped search settled its rows, a
    # search is often small enough to be exact — and a screen declined after its k-means training
    # and calibration costs ~0.6 CPU-s at 100,000 targets)
    approximate = opts.approximate and todo.size * t.shape[0] > settings.exact_below_pairs
    if approximate:  # the pairs the exact screen would compare, after its categorical tile bounds
        share = compared_share(exact, todo, *_list_widths(p, settings))
        approximate = todo.size * t.shape[0] * share > settings.exact_below_pairs
    if approximate and faiss_module() is not None and not tree:
        search, left = knn_ivf(exact, todo, opts.seed, out_d, out_i)
        if search["exact"]:  # the screen declined; the rows it checked exactly are done
            settled["faiss_flat"] = int(todo.size - left.size)
        else:
            settled["ivf_screen"] = int(todo.size)
        todo = left
    exact.rows(todo, out_d, out_i, settled)
    search["settled_by"] = settled
    return Neighbours(out_d, out_i, search)


def _list_widths(p: Problem, settings: SearchSettings) -> tuple[int, int]:
    """(candidates the flat screen lists per row, the rank whose upper bound prunes its tiles),
    the query's own row included in a search of a set against itself."""
    own = 1 if p.exclude_self else 0
    return min(p.m, p.k + settings.extra_candidates + own), min(p.m, p.k + own)


def knn_rows(points: np.ndarray, rows: np.ndarray, k: int = 1, **options) -> Neighbours:
    """k nearest *other* rows of ``points`` for the query rows ``rows`` only (a sample of a set
    searched against the whole set), with the same answers as ``knn(points, points, k,
    exclude_self=True)`` gives for those rows: the k + 1 nearest including the row itself, minus
    itself — or, when k + 1 exact duplicates of lower index push it out of the list, the first k
    (ties go to the lowest index either way). ``options``: :func:`knn`'s keyword options."""
    rows = np.asarray(rows, dtype=np.int64)
    if k + 1 > points.shape[0]:
        raise ValueError(f"cannot find {k} neighbours among {points.shape[0] - 1} candidate rows")
    nb = knn(points[rows], points, k + 1, **options)
    idx, dist = drop_self(rows, nb.idx, nb.dist)
    return Neighbours(dist, idx, nb.search)


def search_matrices(
    query: np.ndarray,
    target: np.ndarray,
    k: int = 1,
    *,
    exclude_self: bool = False,
    rows: np.ndarray | None = None,
    **options,
) -> Neighbours:
    """The exact k nearest ``target`` rows of the ``query`` rows ``rows`` (None: all);
    ``exclude_self``: query and target are one set and a row never lists itself
    (:func:`knn_rows` for chosen rows). ``options``: :func:`knn`'s keyword options."""
    if exclude_self:
        if rows is None:
            return knn(query, query, k, exclude_self=True, **options)
        return knn_rows(query, rows, k, **options)
    return knn(query if rows is None else query[rows], target, k, **options)
