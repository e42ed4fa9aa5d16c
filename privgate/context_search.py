"""The neighbour searches of an evaluation and their cache (:class:`SearchMixin`, a part of
:class:`~privgate.context.EvaluationContext`): every search of a space's records
(:meth:`neighbours`, :meth:`neighbours_of_rows`) or of matrices a metric makes itself
(:meth:`search`), made once per evaluation inside its thread budget, and the report of the
searches each metric read (:meth:`take_search_report`, :func:`merge_search_reports`).

The context's constructor sets the state these methods read and write (``_nn``, ``_memo``,
``_searches_used``, ``_shared``, ``_frames``, ``threads``, ``seed``, ``exact``); the spaces come
from :class:`~privgate.context_spaces.SpacesMixin`.
"""

from __future__ import annotations

import hashlib
from typing import Mapping

import numpy as np

from .box_query import BoxQuery
from .context_spaces import _return_freed_heap, _space_key, _space_name, coded_above
from .errors import TooFewRowsError
from .neighbours import Neighbours, any_within_box, knn, knn_rows, nearest_outside_groups, search_matrices
from .neighbours.settings import resolve as resolve_settings
from .spaces import EncodedSpace, mixed_space
from .threads import limited


class SearchMixin:
    """The neighbour-search methods of :class:`~privgate.context.EvaluationContext`."""

    def neighbours(
        self,
        space: tuple | str = "mixed",
        query: str = "real",
        target: str = "synthetic",
        k: int = 1,
        rows: np.ndarray | None = None,
        target_rows: np.ndarray | None = None,
    ) -> Neighbours:
        """k nearest ``target`` records of every ``query`` record in ``space`` ("mixed",
        "identifiability", ("famd", 2), ("mixed", (col, ...))). Computed once and cached; when
        query == target the record itself is excluded by index. ``rows``: only these query rows
        (e.g. :meth:`real_sample`), each searched against every target record. ``target_rows``:
        search among these target rows only (a size-matched subsample, as the memorisation
        test needs); returned indices are positions within ``target_rows``. With query == target
        and ``target_rows``, the search is within those rows: each of them (in ``target_rows``
        order) against the others; with another query set, ``rows`` and ``target_rows`` combine
        (these query rows against those target rows)."""
        key = _space_key(space)
        main = self._holdout_alias()
        if main is not None and "synthetic" in (query, target):
            # this holdout baseline's "release" is the whole holdout, in order, in the main
            # context's matrices: its searches are the main context's of the holdout (one cache)
            role = {"synthetic": "holdout"}
            nb = main.neighbours(space, role.get(query, query), role.get(target, target), k, rows, target_rows)
            self._note_search((key, query, target), nb)
            return nb
        cache_key = (key, query, target)
        if target_rows is not None:
            if rows is not None and query == target:
                raise ValueError("target_rows cannot be combined with query rows of the same set")
            target_rows = np.asarray(target_rows, dtype=np.int64)
            cache_key = (key, query, target, "target_rows", target_rows.tobytes())
        shared = self._cache_of(query, target)
        if rows is not None:
            rows = np.asarray(rows, dtype=np.int64)
            full = shared.get(cache_key)
            if full is not None and full.k >= k:  # the whole search exists: slice it
                self._note_search(cache_key, full)
                nb = full.first(k)
                return Neighbours(nb.dist[rows], nb.idx[rows], nb.search)
            cache_key = cache_key + ("rows", rows.tobytes())
        hit = shared.get(cache_key)
        if hit is not None and hit.k >= k:
            self._note_search(cache_key, hit)
            return hit.first(k)
        nb = self._search_space(key, query, target, k, rows, target_rows)
        if self.compact_spaces():  # a large search's scratch, freed: back to the system before the next
            _return_freed_heap()
        shared[cache_key] = nb
        self._note_search(cache_key, nb)
        return nb

    def has_neighbours(
        self,
        space: tuple | str = "mixed",
        query: str = "real",
        target: str = "synthetic",
        k: int = 1,
        *,
        exact: bool = False,
    ) -> bool:
        """Whether the whole search :meth:`neighbours` (``space``, ``query``, ``target``, at least
        ``k`` neighbours) is already made in this evaluation — so a metric can read rows of it
        instead of searching them apart; ``exact``: and its answers are exact (not screened).
        Makes no search and notes none in the search report."""
        shared = self._cache_of(query, target)
        full = shared.get((_space_key(space), query, target))
        return full is not None and full.k >= k and (full.exact or not exact)

    def _holdout_alias(self):
        """The main context when this is its holdout baseline's and the baseline's release is
        every holdout record in order (then a search of it is the main context's of the holdout,
        the same rows of the same matrices); else None."""
        enc = getattr(self, "_encoded_by", None)
        if enc is None or enc[1] is not None:
            return None
        main = enc[0]
        return main if type(main) is type(self) and main.holdout is not None else None

    def _cache_of(self, query: str, target: str) -> dict:
        """Where :meth:`neighbours` keeps a search of ``query`` against ``target``: the real → real
        searches in the cache shared with the holdout baseline's context, the others in this one's."""
        return self._shared["real_nn"] if (query == "real" and target == "real") else self._nn

    def _search_space(
        self, key: tuple, query: str, target: str, k: int, rows: np.ndarray | None, target_rows: np.ndarray | None
    ) -> Neighbours:
        """The search :meth:`neighbours` caches (its arguments as there): made here, or — in a
        context whose searches are another's but for some records (``_searches_of``: a
        label-free view that only recoded categories, :meth:`privgate.label_free.Correspondence.unchanged_rows`)
        — read from that context and made again here for those records only."""
        source = getattr(self, "_searches_of", None)
        if source is not None and key == ("mixed", None) and not (query == target and target_rows is not None):
            return self._patched_search(source, key, query, target, k, rows, target_rows)
        return self._make_search(key, query, target, k, rows, target_rows)

    def _patched_search(
        self,
        source: tuple,
        key: tuple,
        query: str,
        target: str,
        k: int,
        rows: np.ndarray | None,
        target_rows: np.ndarray | None,
    ) -> Neighbours:
        """The other context's search of the same rows, with the rows whose distances to some
        target may differ here searched again in this context's space."""
        other, unchanged = source
        base = other.neighbours(key, query, target, k, rows, target_rows)
        keep = unchanged(query, target)
        positions = np.arange(keep.size) if rows is None else np.asarray(rows, dtype=np.int64)
        again = np.flatnonzero(~keep[positions])
        if not again.size:
            return base
        redo = self._make_search(key, query, target, k, positions[again], target_rows)
        dist, idx = base.dist.copy(), base.idx.copy()
        dist[again], idx[again] = redo.dist, redo.idx
        described = dict(base.search or {})
        described["searched_again_in_view"] = int(again.size)
        return Neighbours(dist, idx, described)

    def _make_search(
        self, key: tuple, query: str, target: str, k: int, rows: np.ndarray | None, target_rows: np.ndarray | None
    ) -> Neighbours:
        """One search of this context's space (:meth:`_search_space`'s arguments)."""
        sp = self.space(key)
        q = sp[query] if query in sp.matrices else self._missing(query)
        t = sp[target] if target in sp.matrices else self._missing(target)
        if target_rows is not None:
            t = t[target_rows]
            if query == target:  # within these rows only (each row's nearest other row among them)
                q = t
        same = query == target
        available = t.shape[0] - (1 if same else 0)
        if available < k:
            raise TooFewRowsError(
                f"a {k}-nearest-neighbour search among {target} records needs at least "
                f"{k + (1 if same else 0)} {target} rows; got {t.shape[0]}"
            )
        options = self._search_options(sp, (q.shape[0] if rows is None else rows.size) * t.shape[0])
        with limited(self.threads):
            if rows is None:
                return knn(q, t, k, exclude_self=same, **options)
            if same:
                return knn_rows(q, rows, k, **options)
            return knn(q[rows], t, k, dedupe=_folds(options, rows.size), **options)

    def _search_options(self, sp: EncodedSpace, pairs: int) -> dict:
        """knn's options for a search of ``pairs`` query × target pairs in ``sp``: screened
        above ``SearchSettings.exact_below_pairs`` unless the evaluation is ``exact``."""
        settings = resolve_settings(None)
        return {
            "categorical_slices": sp.categorical_slices,
            "coded_columns": sp.coded_columns,
            "seed": self.seed,
            "memo": self._memo,
            "approximate": not self.exact and pairs > settings.exact_below_pairs,
            "settings": settings,
        }

    def search(
        self,
        query: np.ndarray,
        target: np.ndarray,
        k: int = 1,
        *,
        name: str,
        exclude_self: bool = False,
        rows: np.ndarray | None = None,
        categorical_slices: list[tuple[int, int]] | None = None,
        coded_columns: list[tuple[int, float]] | None = None,
    ) -> Neighbours:
        """The exact k nearest ``target`` rows of the ``query`` rows ``rows`` (None: all) for
        matrices a metric makes itself — a subsample of a space, a refitted projection, the rows
        a jackknife searches again; ``exclude_self``: query and target are one set and a row
        never lists itself (:func:`privgate.neighbours.search_matrices`). Made inside this
        evaluation's thread budget with its :class:`SearchMemo`, computed once per evaluation
        for the same matrices (compared by content — so a holdout baseline's context, which
        shares this one's real-side caches, reuses the searches among real records), and reported
        as ``name`` in the metric's
        ``details["neighbour_search"]`` (:meth:`take_search_report`). ``categorical_slices``:
        the one-hot feature ranges when the matrices are rows of a mixed space
        (:attr:`EncodedSpace.categorical_slices`), so that rows are first settled inside groups of
        equal categories, as the space's own searches are — the same answers, found sooner.
        ``coded_columns``: the space's coded coordinates (:attr:`EncodedSpace.coded_columns`),
        which must be given whenever the matrices hold some (they are compared as equal or not)."""
        rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        # the digest of a matrix object is kept in the search memo, as its category codes are (a
        # metric hands the same matrices to several searches: 76 MB hashed per 100,000 × 95), so
        # a matrix must not change in place once searched — every caller searches fresh arrays
        cache_key = (
            "matrices",
            self._memo.get(query, ("digest",), lambda: _digest(query)),
            self._memo.get(target, ("digest",), lambda: _digest(target)),
            int(k),
            bool(exclude_self),
            None if rows is None else rows.tobytes(),
            tuple(coded_columns or ()),
        )
        cache = self._shared.setdefault("matrices", {})
        nb = cache.get(cache_key)
        if nb is None:
            with limited(self.threads):
                nb = search_matrices(
                    query,
                    target,
                    k,
                    exclude_self=exclude_self,
                    rows=rows,
                    memo=self._memo,
                    settings=resolve_settings(None),
                    categorical_slices=categorical_slices,
                    coded_columns=coded_columns,
                )
            cache[cache_key] = nb
        self._searches_used[name] = nb.search
        return nb

    def any_within_box(
        self,
        query: np.ndarray,
        target: np.ndarray,
        radius: float = 1.0,
        *,
        name: str,
        self_rows: np.ndarray | None = None,
    ) -> np.ndarray:
        """:func:`privgate.neighbours.any_within_box` (whether some target row lies within
        ``radius`` of each query row in every coordinate; exact, a k-d tree; ``self_rows``: each
        query row's own target position, not counted) made inside this evaluation's thread budget
        and reported as ``name`` in the metric's ``details["neighbour_search"]``."""
        with limited(self.threads):
            hit = (
                any_within_box(query, target, radius)
                if self_rows is None
                else any_within_box(query, target, radius, self_rows=self_rows)
            )
        self._searches_used[name] = {
            "exact": True,
            "method": "k-d tree box query (Chebyshev distance)",
            "n_query": int(query.shape[0]),
            "n_target": int(target.shape[0]),
        }
        return hit

    def box_query(self, tolerance_divisor: float, *, real_rows: np.ndarray | None = None) -> BoxQuery:
        """hitting_rate's box queries over this evaluation's records
        (:class:`privgate.box_query.BoxQuery`), holding the coordinates of the real records
        ``real_rows`` (None: every one) and of every release record; each query is made by
        :meth:`any_within_box`."""
        return BoxQuery(self, tolerance_divisor, real_rows)

    def nearest_outside_groups(
        self,
        nb: Neighbours,
        labels: np.ndarray,
        query: np.ndarray,
        target: np.ndarray,
        *,
        same: bool,
        name: str = "jackknife refill",
        categorical_slices: list[tuple[int, int]] | None = None,
        coded_columns: list[tuple[int, float]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`privgate.neighbours.nearest_outside_groups` with its searches again made by
        :meth:`search` (reported as ``name``). Computed once per evaluation for the same lists,
        matrices and labels (authenticity, median_dcr and nnaa read the same real → real
        replicates); the arrays returned are read-only."""
        cache = self._shared.setdefault("outside_groups", [])
        labels = np.asarray(labels)
        for entry in cache:
            if (
                entry["query"] is query
                and entry["target"] is target
                and entry["same"] == same
                and np.array_equal(entry["labels"], labels)
                and np.array_equal(entry["idx"], nb.idx)
                and np.array_equal(entry["dist"], nb.dist)
            ):
                if entry["report"] is not None:
                    self._searches_used[name] = entry["report"]
                return entry["out"]
        report: dict = {}

        def again(
            q: np.ndarray, t: np.ndarray, k: int = 1, *, exclude_self: bool = False, rows: np.ndarray | None = None
        ) -> Neighbours:
            found = self.search(
                q,
                t,
                k,
                name=name,
                exclude_self=exclude_self,
                rows=rows,
                categorical_slices=categorical_slices,
                coded_columns=coded_columns,
            )
            report["search"] = found.search
            return found

        out = nearest_outside_groups(nb, labels, query, target, same=same, search=again)
        for a in out:
            a.flags.writeable = False
        held = sum(e["out"][0].nbytes + e["out"][1].nbytes for e in cache)
        if held + out[0].nbytes + out[1].nbytes > OUTSIDE_GROUPS_CACHE_BYTES:
            return out
        # the matrices themselves are held, so that an identity compared above is never a reused id
        cache.append(
            {
                "idx": nb.idx,
                "dist": nb.dist,
                "query": query,
                "target": target,
                "same": same,
                "labels": labels.copy(),
                "report": report.get("search"),
                "out": out,
            }
        )
        return out

    def neighbours_of_rows(
        self, space: tuple | str, rows: Mapping[str, np.ndarray], target: str = "synthetic", k: int = 1
    ) -> dict[str, Neighbours]:
        """The k nearest ``target`` records of chosen rows of several query sets ({role: row
        positions}, e.g. an attack's sampled training and holdout records), the same answers as
        ``neighbours(space, role, target, k, rows=...)`` per role — and cached as those — but
        made by ONE search of the rows stacked, and, when a mixed space is not built yet, with only
        those rows (and the whole target set) encoded instead of every record of every frame.
        A role equal to ``target`` (a search excluding each record itself) is searched apart."""
        key = _space_key(space)
        out: dict[str, Neighbours | None] = {}
        todo: dict[str, np.ndarray] = {}
        for role, r in rows.items():
            r = np.asarray(r, dtype=np.int64)
            if role == target:
                out[role] = self.neighbours(space, role, target, k, rows=r)
                continue
            if role not in self._frames:
                self._missing(role)
            out[role] = self._cached_rows(key, role, target, k, r)
            if out[role] is None:
                todo[role] = r
        if not todo:
            return out
        if key in self._spaces or key[0] != "mixed" or self._encoded_by:
            sp = self.space(key)
            queries = [sp[role][r] for role, r in todo.items()]
        else:
            sp = mixed_space(
                self._frames,
                self.schema,
                list(key[1]) if key[1] is not None else None,
                name=_space_name(key),
                rows=todo,
                dtype=np.float32 if self.compact_spaces() else np.float64,
                coded_above=coded_above(),
            )
            queries = [sp[role] for role in todo]
        t = sp[target] if target in sp.matrices else self._missing(target)
        if t.shape[0] < k:
            raise TooFewRowsError(
                f"a {k}-nearest-neighbour search among {target} records needs at least "
                f"{k} {target} rows; got {t.shape[0]}"
            )
        q = np.vstack(queries)
        with limited(self.threads):
            options = self._search_options(sp, q.shape[0] * t.shape[0])
            nb = knn(q, t, k, dedupe=_folds(options, q.shape[0]), **options)
        search = {**nb.search, "stacked": "+".join(todo) + " rows searched together"} if len(todo) > 1 else nb.search
        start = 0
        for role, r in todo.items():
            part = Neighbours(nb.dist[start : start + r.size], nb.idx[start : start + r.size], search)
            start += r.size
            cache_key = (key, role, target, "rows", r.tobytes())
            self._nn[cache_key] = part
            self._note_search(cache_key, part)
            out[role] = part
        return {role: out[role] for role in rows}

    def _cached_rows(self, key: tuple, query: str, target: str, k: int, rows: np.ndarray) -> Neighbours | None:
        """A search of these query rows already made (or the whole search, sliced), else None."""
        full = self._nn.get((key, query, target))
        if full is not None and full.k >= k:
            self._note_search((key, query, target), full)
            nb = full.first(k)
            return Neighbours(nb.dist[rows], nb.idx[rows], nb.search)
        cache_key = (key, query, target, "rows", rows.tobytes())
        hit = self._nn.get(cache_key)
        if hit is not None and hit.k >= k:
            self._note_search(cache_key, hit)
            return hit.first(k)
        return None

    def _note_search(self, cache_key: tuple, nb: Neighbours) -> None:
        (kind, arg), query, target = cache_key[:3]
        self._searches_used[f"{_space_name((kind, arg))} {query}→{target}"] = nb.search

    def take_search_report(self) -> dict | None:
        """How the neighbour searches read since the last call were made — {"exact": bool,
        "share_rows_possibly_wrong": float, "searches": {name: description}} — and forget them.
        MetricResult.from_context puts it in a metric's ``details["neighbour_search"]``; an
        interval can be widened by ``share_rows_possibly_wrong`` for a share or mean of
        per-record terms in [0, 1]. None when no search was read."""
        used, self._searches_used = self._searches_used, {}
        if not used:
            return None
        wrong = max(float(sd.get("share_rows_possibly_wrong", 0.0)) for sd in used.values())
        return {
            "exact": all(sd.get("exact", True) for sd in used.values()),
            "share_rows_possibly_wrong": wrong,
            "searches": {name: _public(sd) for name, sd in used.items()},
        }


def _public(search: dict) -> dict:
    """A search description with plain Python numbers (for JSON reports and history rows)."""
    out = {}
    for key, value in search.items():
        if isinstance(value, dict):
            value = {k: int(v) for k, v in value.items()}
        elif isinstance(value, (list, tuple)):
            value = [float(v) for v in value]
        elif isinstance(value, (np.floating, np.integer)):
            value = value.item()
        out[key] = value
    return out


def _folds(options: dict, n_query: int) -> bool:
    """Whether a search of ``n_query`` chosen query rows folds exact duplicates: where it would
    otherwise be screened (a screened search of many sampled queries on few distinct points — a
    key space — is exact, bounded and far cheaper folded) or has at least
    ``SearchSettings.dedup_min_queries`` rows; not for a few hundred rows, which cost less to
    search than finding the distinct targets does."""
    return bool(options["approximate"]) or n_query >= options["settings"].dedup_min_queries


#: Bytes of jackknife replicates (G × n distances and indices) an evaluation keeps for the next
#: metric that reads the same ones: a (50 × 100,000) pair is 80 MB; at a million records with
#: `sample: off` they are recomputed rather than held.
OUTSIDE_GROUPS_CACHE_BYTES = 128 * 2**20


def _digest(x: np.ndarray) -> tuple:
    """A matrix identified by content: its dtype, shape and a hash of its bytes."""
    a = np.ascontiguousarray(x)
    return (
        a.dtype.str,
        a.shape,
        hashlib.blake2b(a.view(np.uint8).ravel() if a.size else b"", digest_size=16).hexdigest(),
    )


def merge_search_reports(first: dict | None, second: dict | None) -> dict | None:
    """Two search reports (:meth:`EvaluationContext.take_search_report`) of one metric as one:
    exact only if both are, the larger share of rows possibly wrong, every search listed once."""
    if not first or not second:
        return first or second
    return {
        "exact": bool(first.get("exact", True) and second.get("exact", True)),
        "share_rows_possibly_wrong": max(
            float(first.get("share_rows_possibly_wrong", 0.0)), float(second.get("share_rows_possibly_wrong", 0.0))
        ),
        "searches": {**second.get("searches", {}), **first.get("searches", {})},
    }
