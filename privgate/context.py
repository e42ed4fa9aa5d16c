"""EvaluationContext: validated inputs plus every encoding and neighbour search, built lazily
and computed at most once per evaluation, shared by all metrics."""

from __future__ import annotations

import gc
import hashlib
from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from . import seeds
from .errors import NotApplicableError, ParameterError, TooFewRowsError
from .io import collect_scan, load_frame, scan_frame
from .neighbours import (Neighbours, SearchMemo, any_within_box, knn, knn_rows, nearest_outside_groups,
                         search_matrices)
from .neighbours.settings import resolve as resolve_settings
from .options import AUTO_SAMPLE_ABOVE, AUTO_SAMPLE_SIZE, RunOptions, call_options  # sample="auto"
from .schema import (Schema, check_codebooks, check_not_empty, check_same_columns, check_values_lazily, infer_schema,
                     normalise_frame)
from .spaces import SPACE_KINDS, EncodedSpace, column_entropy, famd_space, mixed_space
from .threads import limited, resolve_threads


class EvaluationContext:
    """The real, synthetic and optional holdout frames of one evaluation, validated and
    normalised (numerics Float64, categoricals String, the real frame's column order), with
    cached encoded spaces and neighbour searches.

    Args:
        real: the records the generator was trained on (any input `load_frame` accepts).
        synthetic: the release to evaluate.
        holdout: real records not used for training (optional).
        schema: column → "numeric" | "categorical"; overrides inference.
        keys / sensitive: default quasi-identifier and sensitive columns for the
            reconstruction and disclosure families.
        seed: seed of every random step.
        pairing: for hidden_rate: True (synthetic row i was generated from real row i) or an
            integer array giving, per synthetic row, the real row it was generated from.
        threads: thread budget of every native library in this evaluation (LightGBM, BLAS,
            OpenMP, faiss; privgate.threads): default $PRIVGATE_THREADS, else the free cores.
        exact: True forces exact neighbour searches at every size; by default a search of more
            than ``SearchSettings.exact_below_pairs`` query × target pairs screens the rows the
            exact shortcuts leave open approximately and reports its measured recall
            (privgate.neighbours).
        sample_real: estimate per-real-record means on a seeded sample of this many real records
            (:meth:`real_sample`); None (default): as ``sample`` says.
        sample: query-record sampling of both sides (:meth:`real_sample`, :meth:`synthetic_sample`):
            "auto" (default) samples ``AUTO_SAMPLE_SIZE`` query records of a side only when that
            side has more than ``AUTO_SAMPLE_ABOVE`` rows and ``exact`` is False (smaller inputs are
            evaluated on every record, unchanged); an integer N samples N records of each side
            (an explicit ``sample_real`` wins on the real side); None or "off": every record.
        options: these run options as one :class:`privgate.options.RunOptions` (its given fields
            win over the keywords ``threads`` … ``sample``).
    """

    def __init__(
        self,
        real: Any,
        synthetic: Any,
        *,
        holdout: Any = None,
        schema: Mapping[str, str] | Schema | None = None,
        keys: Sequence[str] | None = None,
        sensitive: Sequence[str] | str | None = None,
        seed: int = 0,
        pairing: Any = None,
        threads: int | None = None,
        exact: bool = False,
        sample_real: int | None = None,
        sample: int | str | None = "auto",
        options: RunOptions | None = None,
        _shared: dict | None = None,
    ) -> None:
        opts = call_options(options, threads=threads, exact=exact, sample_real=sample_real, sample=sample)
        inputs = {"real": real, "synthetic": synthetic}
        if holdout is not None:
            inputs["holdout"] = holdout
        frames, scans = _load_inputs(inputs)
        self._validate_inputs(inputs, frames, scans, schema, check_codebooks_=_shared is None)
        from .options import check_seed

        self.seed = check_seed(seed)
        self.keys = _as_list(keys, "keys")
        self.sensitive = _as_list(sensitive, "sensitive")
        self._require_columns("key columns", self.keys)
        self._require_columns("sensitive columns", self.sensitive)
        self.pairing = pairing
        self._set_options(opts)
        self._samples: dict = {}
        self._searches_used: dict[str, dict] = {}
        self._spaces: dict[Any, EncodedSpace] = {}
        self._nn: dict[Any, Neighbours] = {}
        # category codes and k-means lists of each searched matrix, shared by its searches
        self._memo = SearchMemo()
        self._spaces_read: set[str] = set()
        self._baseline_ctx: EvaluationContext | None = None
        # a holdout baseline's (main context, sampled holdout rows | None = all): its spaces are
        # views of the main context's (:meth:`_baseline_space`)
        self._encoded_by: tuple[EvaluationContext, np.ndarray | None] | None = None
        # real-only searches are shared with contexts made by with_synthetic()
        self._shared = _shared if _shared is not None else {"real_nn": {}, "entropy": {}}
        # what a metric derives from this context's frames once and others reuse (the label-free
        # view's level correspondence)
        self.derived: dict[str, Any] = {}

    def _set_options(self, opts: RunOptions) -> None:
        """The run options this context computes with (resolved: the thread budget as a number,
        ``sample`` None for off)."""
        self.options = opts
        self.threads = resolve_threads(opts.threads)
        self.exact = bool(opts.exact)
        self.sample_real = opts.sample_real
        self.sample = None if opts.sample == "off" else opts.sample

    def _validate_inputs(self, inputs: dict[str, Any], frames: dict[str, pl.DataFrame],
                         scans: dict[str, pl.LazyFrame], schema: Any, *, check_codebooks_: bool) -> None:
        """Check the inputs (not empty, the same columns, values of the inferred kinds, the
        release's categories the real data's) and keep them normalised, in the real frame's
        column order."""
        self._heights = {r: f.height for r, f in frames.items()}
        self._heights.update({r: int(lf.select(pl.len()).collect().item()) for r, lf in scans.items()})
        # the frames' columns and dtypes (a scan's as an empty frame) for the checks that read no values
        shapes = {r: frames[r] if r in frames else pl.DataFrame(schema=scans[r].collect_schema()) for r in inputs}
        for role, f in shapes.items():
            check_not_empty(_Shape(f.width, self._heights[role]), role)
        check_same_columns(shapes)
        # order every frame like the real one
        order = shapes["real"].columns
        shapes = {r: f.select(order) for r, f in shapes.items()}
        if isinstance(schema, Schema):
            schema = schema.as_dict()
        if scans:
            self.schema: Schema = infer_schema(shapes, schema, check_values=False)
            check_values_lazily({r: (scans[r] if r in scans else frames[r].lazy()).select(order) for r in inputs},
                                self.schema, self._heights)
        else:
            self.schema = infer_schema(shapes, schema)
        self._frames = {r: normalise_frame(f.select(order), self.schema) for r, f in frames.items()}
        self._scans = {r: normalise_frame(lf.select(order), self.schema) for r, lf in scans.items()}
        if check_codebooks_:  # a release must use the real data's categories (a baseline's holdout is real)
            check_codebooks(self.lazy("real"), self.lazy("synthetic"), self.schema)

    # ------------------------------------------------------------------ frames
    @property
    def real(self) -> pl.DataFrame:
        return self.frame("real")

    @property
    def synthetic(self) -> pl.DataFrame:
        return self.frame("synthetic")

    @property
    def holdout(self) -> pl.DataFrame | None:
        return self.frame("holdout") if "holdout" in self._heights else None

    @property
    def frames(self) -> dict[str, pl.DataFrame]:
        return {r: self.frame(r) for r in self._heights}

    @property
    def n_real(self) -> int:
        return self._heights["real"]

    @property
    def n_synthetic(self) -> int:
        return self._heights["synthetic"]

    @property
    def n_holdout(self) -> int | None:
        return self._heights.get("holdout")

    def frame(self, role: str) -> pl.DataFrame:
        """The normalised frame of ``role``, loaded (once) from its file scan if it was one."""
        if role not in self._heights:
            raise NotApplicableError(f"this evaluation has no {role} data")
        if role not in self._frames:
            same = self._parent_frame(role)
            self._frames[role] = same() if same else collect_scan(self._scans.pop(role), role)
            self._scans.pop(role, None)
        return self._frames[role]

    def _parent_frame(self, role: str):
        """For a holdout baseline, the main evaluation's loaded frame of the same records (its
        real frame; its holdout frame when every holdout record is scored), as a callable — not a
        second copy of a million rows read from the same file — else None."""
        if self._encoded_by is None:
            return None
        parent, rows = self._encoded_by
        if role == "real":
            return lambda: parent.frame("real")
        if role == "synthetic" and rows is None:
            return lambda: parent.frame("holdout")
        return None

    def lazy(self, role: str) -> pl.LazyFrame:
        """The normalised frame of ``role`` as a LazyFrame: a scan of its Parquet / Arrow file
        while nothing has loaded it (collect it with ``engine="streaming"``: only the columns a
        query uses are read, in batches), else a lazy view of the loaded frame."""
        if role not in self._heights:
            raise NotApplicableError(f"this evaluation has no {role} data")
        if role in self._scans:
            return self._scans[role]
        return self._frames[role].lazy()

    def columns(self, role: str, columns: Sequence[str]) -> pl.DataFrame:
        """Only ``columns`` of ``role``'s normalised frame: a projection of the loaded frame, or,
        while ``role`` is still a Parquet / Arrow scan, those columns read with the streaming
        engine without loading (or caching) the rest — what the group-by metrics read, so that a
        release they evaluate is never materialised whole for them."""
        cols = list(dict.fromkeys(columns))
        self._require_columns(f"{role} columns", cols)
        if role not in self._heights:
            raise NotApplicableError(f"this evaluation has no {role} data")
        if role in self._frames:  # by column (a select plans over every column: quadratic per column)
            frame = self._frames[role]
            return pl.DataFrame([frame.get_column(c) for c in cols])
        return collect_scan(self._scans[role].select(cols), role)

    def is_loaded(self, role: str) -> bool:
        """Whether ``role``'s frame is in memory (False: still a file scan)."""
        return role in self._frames

    def require_rows(self, role: str, minimum: int, metric: str) -> None:
        """Raise TooFewRowsError naming the metric when a frame has fewer than ``minimum`` rows."""
        n = self.frame(role).height
        if n < minimum:
            raise TooFewRowsError(f"{metric} needs at least {minimum} {role} rows; got {n}")

    def with_synthetic(self, synthetic: Any) -> "EvaluationContext":
        """A context with the same real data (and its cached real-only searches) and another
        synthetic set — used to score a holdout sample as a baseline."""
        real = self.real if self.is_loaded("real") else _Scan(self._scans["real"])
        return EvaluationContext(
            real, synthetic, schema=self.schema.as_dict(), keys=self.keys,
            sensitive=self.sensitive, seed=self.seed, options=replace(self.options, threads=self.threads),
            _shared=self._shared,
        )

    def holdout_baseline(self) -> "EvaluationContext":
        """The context a holdout baseline is scored on: a sample (without replacement, seeded by
        ``seed``) of min(n_holdout, n_synthetic) holdout records in place of the synthetic set,
        sharing this context's real-side searches and its encoded spaces (the baseline reads the
        real and holdout rows of this context's matrices, :meth:`_baseline_space`). Built once
        per context."""
        if self.holdout is None:
            raise NotApplicableError("a holdout baseline needs holdout data")
        if self._baseline_ctx is None:
            size = min(self.n_holdout, self.n_synthetic)
            rows = np.sort(seeds.rng(self.seed, "holdout_baseline").choice(self.n_holdout, size, replace=False))
            if size == self.n_holdout:  # every holdout record, in order: the frame itself, not a copy
                sample = self.holdout if self.is_loaded("holdout") else _Scan(self._scans["holdout"])
            elif self.is_loaded("holdout"):
                sample = self.holdout[rows]
            else:  # a scan of the holdout file: read only the sampled rows when a metric needs them
                keep = pl.LazyFrame({"__pg_row": pl.Series(rows, dtype=pl.UInt32)})
                sample = _Scan(self._scans["holdout"].with_row_index("__pg_row")
                               .join(keep, on="__pg_row", how="semi").sort("__pg_row").drop("__pg_row"))
            base = self.with_synthetic(sample)
            base._encoded_by = (self, None if size == self.n_holdout else rows)
            base._memo = self._memo  # the same matrices: their category codes and k-means lists too
            self._baseline_ctx = base
        return self._baseline_ctx

    # ------------------------------------------------------------- parameters
    def key_sensitive(self, keys: Sequence[str] | None = None,
                      sensitive: Sequence[str] | str | None = None) -> tuple[list[str], list[str]]:
        """Validated (keys, sensitive) for the reconstruction family: explicit arguments win
        over the context's; default keys = every non-sensitive column."""
        sens = _as_list(sensitive, "sensitive") or self.sensitive
        if not sens:
            raise ParameterError("this metric needs sensitive=[...] (the attribute(s) an attacker infers)")
        k = _as_list(keys, "keys") or self.keys
        self._require_columns("sensitive columns", sens)
        if k is None:
            k = [c for c in self.schema.columns if c not in sens]
        self._require_columns("key columns", k)
        both = [c for c in sens if c in k]
        if both:
            raise ParameterError(f"columns are both keys and sensitive: {both}")
        if not k:
            raise ParameterError("at least one key column is needed (all columns are sensitive)")
        return list(k), list(sens)

    def _require_columns(self, label: str, cols: Sequence[str] | None) -> None:
        missing = [c for c in cols or [] if c not in self.schema.kinds]
        if missing:
            raise ParameterError(f"{label} not in the data: {missing}; columns are {self.schema.columns}")

    # ----------------------------------------------------------------- spaces
    def mixed(self, columns: Sequence[str] | None = None) -> EncodedSpace:
        """The mixed space over ``columns`` (default: all), for every frame."""
        return self.space(("mixed", tuple(columns) if columns else None))

    def entropies(self) -> dict[str, float]:
        """Natural-log entropy of every real column (identifiability's weights, Yoon et al. 2020)."""
        ent = self._shared["entropy"]
        if not ent:
            for col in self.schema.columns:
                ent[col] = column_entropy(self.real[col], self.schema.kind(col))
        return dict(ent)

    def identifiability_space(self) -> EncodedSpace:
        """The mixed space with every column's features multiplied by 1/H (H = 0 → weight 0)."""
        return self.space(("identifiability", None))

    def famd(self, n_components: int = 2) -> EncodedSpace:
        """The FAMD projection fitted on the real data (dcr, hidden_rate, nndr; Pagès 2004)."""
        return self.space(("famd", n_components))

    def space(self, key: tuple) -> EncodedSpace:
        """The encoded space ``key`` (("mixed", columns | None), ("identifiability", None),
        ("famd", n_components)), built once and kept until :meth:`release_spaces` drops it."""
        key = _space_key(key)
        if key[0] not in SPACE_KINDS:
            raise ValueError(f"unknown space {key!r}")
        self._spaces_read.add(key[0])
        if key not in self._spaces:
            self._spaces[key] = self._baseline_space(key) if self._encoded_by else self._build_space(key)
        return self._spaces[key]

    def _build_space(self, key: tuple) -> EncodedSpace:
        kind, arg = key
        compact = self.compact_spaces()
        dtype = np.float32 if compact else np.float64
        if kind == "mixed":
            return mixed_space(self.frames, self.schema, list(arg) if arg else None, name=_space_name(key),
                               dtype=dtype)
        if kind == "famd":
            return famd_space(self.frames, self.schema, arg, name=_space_name(key),
                              block_rows=FAMD_BLOCK_ROWS if compact else None)
        ent = self.entropies()
        weights = {c: (1.0 / h if h > 0 else 0.0) for c, h in ent.items()}
        return mixed_space(self.frames, self.schema, weights=weights, name="identifiability", dtype=dtype)

    def compact_spaces(self) -> bool:
        """Whether this evaluation's encoded spaces are compact: some frame has more than
        ``COMPACT_SPACES_ABOVE`` rows (a holdout baseline's are its main evaluation's)."""
        if self._encoded_by is not None:
            return self._encoded_by[0].compact_spaces()
        return max(self._heights.values()) > COMPACT_SPACES_ABOVE

    def _baseline_space(self, key: tuple) -> EncodedSpace:
        """A holdout baseline's space: the main evaluation's encoding of the same real records
        (the same matrix object, so its searches' prepared structures are shared too) and of the
        sampled holdout records in place of the release — no second encoding of a million rows.
        The main encoding's one-hot levels are the union over real, release and holdout: levels
        only the release has are all-zero columns here, which add nothing to any distance; the
        numerics are standardised and FAMD fitted on the real records in both."""
        parent, rows = self._encoded_by
        sp = parent.space(key)
        holdout = sp["holdout"] if rows is None else sp["holdout"][rows]
        details = dict(sp.details)
        if "mean_imputed" in details:  # the encoded roles are real and the holdout sample
            details["mean_imputed"] = {c: {r: n for r, n in counts.items() if r == "real"}
                                       for c, counts in details["mean_imputed"].items()}
        return EncodedSpace(sp.name, {"real": sp["real"], "synthetic": holdout}, details,
                            categorical_slices=sp.categorical_slices)

    def release_spaces(self, keep: set[str] | frozenset[str] | None) -> list[str]:
        """Drop the encoded spaces whose kind ("mixed", "identifiability", "famd") is not in
        ``keep`` — what the metrics still to run can read (:attr:`MetricSpec.spaces`); None keeps
        all. Their matrices (and the neighbour engine's structures prepared from them) are freed
        once nothing else holds them; a space read again is rebuilt, identical. Searches already
        made stay cached. Returns the names of the spaces dropped."""
        if keep is None:
            return []
        gone = [key for key in self._spaces if key[0] not in keep]
        for key in gone:
            del self._spaces[key]
        if gone:  # the search structures of a matrix sit in reference cycles: free them before the next space
            gc.collect()
        if self.compact_spaces():
            _return_freed_heap()
        return [_space_name(key) for key in gone]

    def spaces_read(self) -> set[str]:
        """The kinds of space read since the last call (and forget them): what a metric read."""
        out, self._spaces_read = self._spaces_read, set()
        return out

    # ------------------------------------------------------------- neighbours
    def neighbours(self, space: tuple | str = "mixed", query: str = "real", target: str = "synthetic",
                   k: int = 1, rows: np.ndarray | None = None,
                   target_rows: np.ndarray | None = None) -> Neighbours:
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
        cache_key = (key, query, target)
        if target_rows is not None:
            if rows is not None and query == target:
                raise ValueError("target_rows cannot be combined with query rows of the same set")
            target_rows = np.asarray(target_rows, dtype=np.int64)
            cache_key = (key, query, target, "target_rows", target_rows.tobytes())
        shared = self._shared["real_nn"] if (query == "real" and target == "real") else self._nn
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

    def _search_space(self, key: tuple, query: str, target: str, k: int, rows: np.ndarray | None,
                      target_rows: np.ndarray | None) -> Neighbours:
        """The search :meth:`neighbours` caches (its arguments as there)."""
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
                f"{k + (1 if same else 0)} {target} rows; got {t.shape[0]}")
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
        return {"categorical_slices": sp.categorical_slices, "seed": self.seed, "memo": self._memo,
                "approximate": not self.exact and pairs > settings.exact_below_pairs, "settings": settings}

    def search(self, query: np.ndarray, target: np.ndarray, k: int = 1, *, name: str, exclude_self: bool = False,
               rows: np.ndarray | None = None, categorical_slices: list[tuple[int, int]] | None = None
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
        equal categories, as the space's own searches are — the same answers, found sooner."""
        rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        cache_key = ("matrices", _digest(query), _digest(target), int(k), bool(exclude_self),
                     None if rows is None else rows.tobytes())
        cache = self._shared.setdefault("matrices", {})
        nb = cache.get(cache_key)
        if nb is None:
            with limited(self.threads):
                nb = search_matrices(query, target, k, exclude_self=exclude_self, rows=rows, memo=self._memo,
                                     settings=resolve_settings(None), categorical_slices=categorical_slices)
            cache[cache_key] = nb
        self._searches_used[name] = nb.search
        return nb

    def any_within_box(self, query: np.ndarray, target: np.ndarray, radius: float = 1.0, *,
                       name: str, self_rows: np.ndarray | None = None) -> np.ndarray:
        """:func:`privgate.neighbours.any_within_box` (whether some target row lies within
        ``radius`` of each query row in every coordinate; exact, a k-d tree; ``self_rows``: each
        query row's own target position, not counted) made inside this evaluation's thread budget
        and reported as ``name`` in the metric's ``details["neighbour_search"]``."""
        with limited(self.threads):
            hit = (any_within_box(query, target, radius) if self_rows is None
                   else any_within_box(query, target, radius, self_rows=self_rows))
        self._searches_used[name] = {"exact": True, "method": "k-d tree box query (Chebyshev distance)",
                                     "n_query": int(query.shape[0]), "n_target": int(target.shape[0])}
        return hit

    def nearest_outside_groups(self, nb: Neighbours, labels: np.ndarray, query: np.ndarray, target: np.ndarray, *,
                               same: bool, name: str = "jackknife refill") -> tuple[np.ndarray, np.ndarray]:
        """:func:`privgate.neighbours.nearest_outside_groups` with its searches again made by
        :meth:`search` (reported as ``name``)."""
        def again(q: np.ndarray, t: np.ndarray, k: int = 1, *, exclude_self: bool = False,
                  rows: np.ndarray | None = None) -> Neighbours:
            return self.search(q, t, k, name=name, exclude_self=exclude_self, rows=rows)

        return nearest_outside_groups(nb, labels, query, target, same=same, search=again)

    def neighbours_of_rows(self, space: tuple | str, rows: Mapping[str, np.ndarray], target: str = "synthetic",
                           k: int = 1) -> dict[str, Neighbours]:
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
            sp = mixed_space(self._frames, self.schema, list(key[1]) if key[1] is not None else None,
                             name=_space_name(key), rows=todo,
                             dtype=np.float32 if self.compact_spaces() else np.float64)
            queries = [sp[role] for role in todo]
        t = sp[target] if target in sp.matrices else self._missing(target)
        if t.shape[0] < k:
            raise TooFewRowsError(f"a {k}-nearest-neighbour search among {target} records needs at least "
                                  f"{k} {target} rows; got {t.shape[0]}")
        q = np.vstack(queries)
        with limited(self.threads):
            options = self._search_options(sp, q.shape[0] * t.shape[0])
            nb = knn(q, t, k, dedupe=_folds(options, q.shape[0]), **options)
        search = {**nb.search, "stacked": "+".join(todo) + " rows searched together"} if len(todo) > 1 else nb.search
        start = 0
        for role, r in todo.items():
            part = Neighbours(nb.dist[start:start + r.size], nb.idx[start:start + r.size], search)
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
        return {"exact": all(sd.get("exact", True) for sd in used.values()),
                "share_rows_possibly_wrong": wrong,
                "searches": {name: _public(sd) for name, sd in used.items()}}

    # --------------------------------------------------------------- sampling
    def sample_size(self, role: str, auto: bool = True) -> int | None:
        """How many query records of ``role`` ("real" or "synthetic") a sampled metric computes its
        per-record terms on, or None for every record: ``sample_real`` (real side) if given, else
        the ``sample`` option — an integer N, or "auto": ``AUTO_SAMPLE_SIZE`` when the side has
        more than ``AUTO_SAMPLE_ABOVE`` rows and the searches are not forced exact. ``auto=False``:
        only an explicit size counts (a metric whose full computation is cheap at any size —
        common_rows' join, dcr's 2-D search — is not sampled by "auto")."""
        n = self.n_real if role == "real" else self.n_synthetic
        size = self.sample_real if role == "real" else None
        if size is None:
            if isinstance(self.sample, int):
                size = self.sample
            elif auto and self.sample == "auto" and not self.exact and n > AUTO_SAMPLE_ABOVE:
                size = AUTO_SAMPLE_SIZE
        return None if size is None or size >= n else int(size)

    def _sample_rows(self, role: str, auto: bool = True) -> np.ndarray | None:
        size = self.sample_size(role, auto)
        if size is None:
            return None
        n = self.n_real if role == "real" else self.n_synthetic
        key = (f"{role}_sample", size, n, self.seed)
        # the real sample is shared with contexts made by with_synthetic (the holdout baseline
        # scores the same real records); the synthetic one is this context's own
        store = self._shared.setdefault("samples", {}) if role == "real" else self._samples
        rows = store.get(key)
        if rows is None:
            rng = seeds.rng(self.seed, f"sample.{role}")
            rows = np.sort(rng.choice(n, size, replace=False))
            store[key] = rows
        return rows

    def real_sample(self, auto: bool = True) -> np.ndarray | None:
        """Row positions of the seeded sample of real records (sorted, without replacement) on
        which a metric that is a mean over real records may be estimated, or None when the
        evaluation uses every real record (:meth:`sample_size`).

        A metric that uses it must (1) compute its per-record terms for these rows only — e.g.
        ``ctx.neighbours(space, "real", target, k, rows=ctx.real_sample())`` searches all targets
        for the sampled queries only; (2) report ``details["sampled"] = ctx.sample_description()``;
        (3) give an interval that includes the sampling error (a mean over a simple random sample:
        privgate.stats.wilson for shares, bootstrap_mean_ci otherwise — with the finite-population
        factor ignored, which only widens it). ``auto=False``: see :meth:`sample_size`."""
        return self._sample_rows("real", auto)

    def synthetic_sample(self) -> np.ndarray | None:
        """Row positions of the seeded simple random sample of synthetic records (sorted, without
        replacement; its own seed stream, independent of the real sample) on which a metric that
        is a mean, share or median over synthetic records may be estimated, or None (every
        synthetic record). Same contract as :meth:`real_sample`. In a holdout baseline context the
        "synthetic" records are the holdout sample, sampled by the same rule (the same design)."""
        return self._sample_rows("synthetic")

    def sample_description(self, role: str = "real") -> dict | None:
        """What ``details["sampled"]`` says: {"n": sampled, "of": records, "seed": seed,
        "side": role, "method": ..., "rule": why this size}; None when ``role`` is not sampled."""
        rows = self._sample_rows(role)
        if rows is None:
            return None
        explicit = (role == "real" and self.sample_real is not None) or isinstance(self.sample, int)
        rule = ("explicit sample size" if explicit else
                f"auto: more than {AUTO_SAMPLE_ABOVE:,} rows, {AUTO_SAMPLE_SIZE:,} sampled")
        return {"n": int(rows.size), "of": self.n_real if role == "real" else self.n_synthetic, "seed": self.seed,
                "side": role, "method": "simple random sample without replacement", "rule": rule}

    def _missing(self, role: str):
        raise NotApplicableError(f"this evaluation has no {role} data")


def _load_inputs(inputs: dict[str, Any]) -> tuple[dict[str, pl.DataFrame], dict[str, pl.LazyFrame]]:
    """(loaded frames, lazy scans) of the inputs: Parquet / Arrow files stay lazy scans until a
    metric needs the whole frame (group-by metrics read them through ``ctx.lazy(role)``);
    everything else is loaded now."""
    frames: dict[str, pl.DataFrame] = {}
    scans: dict[str, pl.LazyFrame] = {}
    for role, data in inputs.items():
        lf = data.frame if isinstance(data, _Scan) else scan_frame(data, role=role)
        if lf is None:
            frames[role] = load_frame(data, role=role)
        else:
            scans[role] = lf
    return frames, scans


class _Scan:
    """A LazyFrame handed between contexts (a holdout baseline's real data and holdout sample)
    that stays lazy — a user's LazyFrame is collected on entry like any other input."""

    def __init__(self, frame: pl.LazyFrame) -> None:
        self.frame = frame


class _Shape:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height


# Compact encoded spaces (docs/performance.md "Memory of the default gate at scale"): when a frame
# has more than COMPACT_SPACES_ABOVE rows, the mixed and identifiability spaces are held as
# float32 matrices (half the bytes, and the exact search reads them without a centred float32
# copy; distances are computed in float64 from the float32 coordinates, ~6e-8 relative from the
# float64 ones) and the FAMD projection is fitted and applied in FAMD_BLOCK_ROWS-row blocks
# (blocked QR, agreeing with the whole-matrix SVD to rounding) instead of on whole input
# matrices. At or below it every value is bit for bit what float64 spaces give.
COMPACT_SPACES_ABOVE = 200_000
FAMD_BLOCK_ROWS = 65_536


def _return_freed_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing elsewhere).
    The searches of a million rows free many arrays of a few MiB, which glibc keeps in its heap
    (below its mmap threshold) as resident but unused memory: measured at 250k rows, 100–130 MiB
    returned after each metric. Called after each search and each metric of an evaluation with
    compact spaces (a call costs milliseconds; such a search, seconds). Values are untouched."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None


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


def _digest(x: np.ndarray) -> tuple:
    """A matrix identified by content: its dtype, shape and a hash of its bytes."""
    a = np.ascontiguousarray(x)
    return (a.dtype.str, a.shape, hashlib.blake2b(a.view(np.uint8).ravel() if a.size else b"",
                                                   digest_size=16).hexdigest())


def _space_key(space: tuple | str) -> tuple:
    if isinstance(space, str):
        if space == "famd":
            return ("famd", 2)
        return (space, None)
    kind, arg = space
    if kind == "mixed" and arg is not None:
        arg = tuple(arg)
    return (kind, arg)


def _space_name(key: tuple) -> str:
    kind, arg = key
    return kind if arg is None else f"{kind}{list(arg) if isinstance(arg, tuple) else arg}"


def _as_list(value: Sequence[str] | str | None, name: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    out = list(value)
    if not all(isinstance(v, str) for v in out):
        raise ParameterError(f"{name} must be column names (strings); got {out!r}")
    return out


def merge_search_reports(first: dict | None, second: dict | None) -> dict | None:
    """Two search reports (:meth:`EvaluationContext.take_search_report`) of one metric as one:
    exact only if both are, the larger share of rows possibly wrong, every search listed once."""
    if not first or not second:
        return first or second
    return {"exact": bool(first.get("exact", True) and second.get("exact", True)),
            "share_rows_possibly_wrong": max(float(first.get("share_rows_possibly_wrong", 0.0)),
                                             float(second.get("share_rows_possibly_wrong", 0.0))),
            "searches": {**second.get("searches", {}), **first.get("searches", {})}}
