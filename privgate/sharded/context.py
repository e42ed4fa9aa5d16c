"""The evaluation context of a sharded evaluation, on the caller: the metrics' own code runs on
it, unchanged, and every search it asks for is made on the cluster.

:class:`ShardedContext` is an :class:`~privgate.context.EvaluationContext` whose records stay in
their partitions: it knows the roles' sizes, the schema, the seed, the run options and the
samples (drawn here, once, by the same seeded streams as a local context), and answers
:meth:`neighbours`, :meth:`search` of a space's rows, :meth:`nearest_outside_groups` and
:meth:`entropies` from the cluster (:mod:`privgate.sharded.search`), and hitting_rate's
:meth:`box_query` per pair of partitions (:mod:`privgate.sharded.boxes`). Its spaces are
:class:`RowsOf` handles — which role's rows of which space — not matrices; the FAMD space's
axes are fitted here from the real partitions' R factors (or, with coded columns, by a Lanczos
iteration whose products are summed over them), and dcr's jackknife refits from their Gram
matrices (:mod:`privgate.sharded.famd`). The label-free view's correspondence is learnt from the
partitions (:meth:`label_free_correspondence`, :mod:`privgate.sharded.label_free`). A metric that
reads whole frames or matrices raises :class:`NotShardedError`, naming it, before it computes
anything; :data:`SHARDED_METRICS` lists the metrics that run here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import seeds
from ..context import EvaluationContext
from ..errors import NotApplicableError, TooFewRowsError
from ..neighbours import Neighbours
from ..options import RunOptions
from .encode import Inputs
from .search import ShardedSearch, View

__all__ = ["SHARDED_METRICS", "NotShardedError", "RowsOf", "ShardedContext"]

#: the metrics a sharded evaluation computes (the others read whole frames or matrices)
SHARDED_METRICS = (
    "memorisation",
    "authenticity",
    "identifiability",
    "median_dcr",
    "nnaa",
    "common_rows",
    "identifier_reuse",
    "hitting_rate",
    "dcr",
    "label_free_memorisation",
    "label_free_copies",
    "label_free_authenticity",
)
#: why the other metrics of the default gate are not sharded (every one is)
NOT_SHARDED: dict[str, str] = {}


class NotShardedError(NotApplicableError):
    """A metric asked a sharded context for whole frames or matrices."""


@dataclass(frozen=True)
class RowsOf:
    """Rows of a role's records in an encoded space, as a metric holds a space's matrix: the
    handle a sharded context's :meth:`ShardedContext.search` resolves. ``rows[i]`` of it (sorted
    positions) is the handle of those rows."""

    space: tuple
    view: View
    n: int

    def __len__(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, -1)

    def __getitem__(self, rows: Any) -> RowsOf:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or np.any(np.diff(rows) < 0):
            raise NotShardedError("a sharded space's rows are taken by sorted positions only")
        return RowsOf(self.space, self.view.sub(rows), int(rows.size))


class _Space:
    """A space of a sharded context: per role the :class:`RowsOf` handle, and its layout; a FAMD
    space's fit details and axes."""

    def __init__(
        self, key: tuple, views: dict[str, View], inputs: Inputs, details: dict | None = None, axes: Any = None
    ) -> None:
        self.key = key
        self.name = key[0]
        self.matrices = {r: RowsOf(key, v, v.size(inputs)) for r, v in views.items()}
        if key[0] == "famd":  # projected coordinates: no categorical layout
            self.coded_columns, self.categorical_slices = [], []
        else:
            self.coded_columns, self.categorical_slices = inputs.layout(key)
        self.details: dict = dict(details or {})
        self.axes = axes

    def __getitem__(self, role: str) -> RowsOf:
        return self.matrices[role]

    @property
    def real(self) -> RowsOf:
        return self.matrices["real"]

    @property
    def synthetic(self) -> RowsOf:
        return self.matrices["synthetic"]

    @property
    def holdout(self) -> RowsOf | None:
        return self.matrices.get("holdout")


class ShardedContext(EvaluationContext):
    """An evaluation context over partitioned inputs (module docstring)."""

    def __init__(
        self,
        search: ShardedSearch,
        views: dict[str, View],
        *,
        seed: int,
        options: RunOptions,
        shared: dict | None = None,
        column_report: dict | None = None,
    ) -> None:
        from ..options import check_seed

        self._search_on = search
        self._views = views
        inputs = search.inputs
        self.schema = inputs.schema
        self.identifiers = list(inputs.identifiers)
        self._heights = {r: v.size(inputs) for r, v in views.items()}
        self.seed = check_seed(seed)
        self.keys = None
        self.sensitive = None
        self.pairing = None
        self._set_options(options)
        self._samples = {}
        self._searches_used = {}
        self._shared = shared if shared is not None else {"real_nn": {}, "entropy": {}}
        self._nn = {}
        self._baseline_ctx = None
        self._encoded_by = None
        self._label_free_parent: ShardedContext | None = None
        self.derived = {"coded_columns": dict(column_report or {})}
        self._frames, self._scans = {}, {}

    # ------------------------------------------------------------------ what stays in partitions
    def frame(self, role: str):
        raise NotShardedError(
            f"this metric reads the whole {role} frame, which a sharded evaluation never "
            'gathers (docs/cluster.md, "Sharded gate")'
        )

    def lazy(self, role: str):
        return self.frame(role)

    def columns(self, role: str, columns: Any):
        return self.frame(role)

    @property
    def holdout(self) -> Any:
        return self._views.get("holdout")

    def require_rows(self, role: str, minimum: int, metric: str) -> None:
        n = self._heights.get(role, 0)
        if n < minimum:
            raise TooFewRowsError(f"{metric} needs at least {minimum} {role} rows; got {n}")

    def release_spaces(self, keep: Any) -> list[str]:
        return []  # no matrix is held here

    def compact_spaces(self) -> bool:
        return self._search_on.inputs.compact

    def space(self, key: tuple) -> _Space:
        key = (key, None) if isinstance(key, str) else tuple(key)
        if key == ("famd", None) or (key[0] == "famd" and isinstance(key[1], int)):
            return self._famd_space(("famd", 2 if key[1] is None else key[1]))
        if key not in (("mixed", None), ("identifiability", None)):
            raise NotShardedError(
                f"the {key[0]} space (over {key[1] or 'every column'}) is not encoded by a sharded evaluation"
            )
        if key[0] == "identifiability" and self._search_on.inputs.weights is None:
            raise NotShardedError("the identifiability weights were not measured for this sharded evaluation")
        return _Space(key, self._views, self._search_on.inputs)

    def famd(self, n_components: int = 2) -> _Space:
        """The FAMD projection fitted on the real records (:mod:`privgate.sharded.famd`)."""
        return self.space(("famd", n_components))

    def _famd_encoder(self) -> Any:
        """The FAMD encoder of the real records, merged once per evaluation (shared with the
        holdout baseline): every categorical column coded when some has more real levels than
        the evaluation's ``coded_above``, as a local fit's."""
        from .famd import famd_encoder_of

        if "famd_encoder" not in self._shared:
            self._shared["famd_encoder"] = famd_encoder_of(self._search_on)
        return self._shared["famd_encoder"][0]

    def _famd_space(self, key: tuple) -> _Space:
        """The FAMD space ``key``: fitted once per evaluation (:func:`privgate.sharded.famd.fit_famd`),
        its projection sent to the workers, which search it as any space."""
        from .famd import FamdProjection, fit_famd, fit_famd_coded

        fits = self._shared.setdefault("famd", {})
        if key not in fits:
            encoder = self._famd_encoder()
            search = self._search_on
            if encoder.coded:
                try:
                    axes, details, found = fit_famd_coded(search, encoder, key[1])
                except ValueError as exc:
                    raise NotShardedError(f"this FAMD projection is not sharded: {exc}") from None
            else:
                axes, details = fit_famd(search, encoder, key[1])
                found = axes
            search.add_projection(key, FamdProjection(encoder, axes))
            fits[key] = (found, details)
        found, details = fits[key]
        return _Space(key, self._views, self._search_on.inputs, details=details, axes=found)

    def famd_refit_nearest(self, labels: np.ndarray, n_components: int, q: np.ndarray) -> np.ndarray:
        """dcr's jackknife refits (:func:`privgate.metrics.distance._dcr_without_groups`): per group
        g, the distance of each real record ``q`` outside g to its nearest release record in the
        FAMD projection refitted without g (NaN for g's records), from Gram matrices summed over
        the real partitions (:func:`privgate.sharded.famd.refit_axes`), searched on the workers."""
        import hashlib

        from .famd import refit_axes, refit_axes_coded, refit_nearest

        encoder = self._famd_encoder()
        search = self._search_on
        labels = np.asarray(labels, dtype=np.int64)
        # the axes depend on the real records and the labels only: shared with the holdout baseline
        store = self._shared.setdefault("dcr_refit_axes", {})
        tag = (n_components, hashlib.blake2b(labels.tobytes(), digest_size=16).hexdigest())
        if tag not in store:
            try:
                if encoder.coded:
                    start = self.famd(n_components).axes
                    store[tag] = refit_axes_coded(search, encoder, labels, n_components, start)
                else:
                    store[tag] = refit_axes(search, encoder, labels, n_components)
            except ValueError as exc:
                raise NotShardedError(f"dcr's jackknife refit is not sharded here: {exc}") from None
        near = refit_nearest(
            search, encoder, store[tag], labels, np.asarray(q, dtype=np.int64), self._views["synthetic"]
        )
        self._searches_used["dcr refitted famd real→synthetic"] = self._description()
        return near

    def entropies(self) -> dict[str, float]:
        weights = self._search_on.inputs.weights
        ent = self._shared.get("entropy_values")
        if weights is None or ent is None:
            raise NotShardedError("the real columns' entropies were not measured for this sharded evaluation")
        return dict(ent)

    # ------------------------------------------------------------------ searches on the cluster
    def _search_space(
        self, key: tuple, query: str, target: str, k: int, rows: np.ndarray | None, target_rows: np.ndarray | None
    ) -> Neighbours:
        self.space(key)  # refuses a space that is not sharded
        for role in (query, target):
            if role not in self._views:
                raise NotApplicableError(f"this evaluation has no {role} data")
        same = query == target
        t_size = self._heights[target] if target_rows is None else len(target_rows)
        if t_size - (1 if same else 0) < k:
            raise TooFewRowsError(
                f"a {k}-nearest-neighbour search among {target} records needs at least "
                f"{k + (1 if same else 0)} {target} rows; got {t_size}"
            )
        q_rows = rows
        if same and target_rows is not None:  # within those rows: each against the others
            q_rows = np.asarray(target_rows, dtype=np.int64)
        dist, idx = self._search_on.knn(
            key, self._views[query], q_rows, self._views[target], target_rows, k, exclude_self=same
        )
        return Neighbours(dist, idx, self._description())

    def _description(self) -> dict:
        parts = self._search_on.inputs.parts
        return {
            "exact": True,
            "method": "sharded exact search (Dask): per query and target partition, merged",
            "partitions": {r: len(p) for r, p in parts.items()},
        }

    def search(
        self,
        query: Any,
        target: Any,
        k: int = 1,
        *,
        name: str,
        exclude_self: bool = False,
        rows: np.ndarray | None = None,
        categorical_slices: Any = None,
        coded_columns: Any = None,
    ) -> Neighbours:
        if not isinstance(query, RowsOf) or not isinstance(target, RowsOf) or query.space != target.space:
            raise NotShardedError("this metric searches matrices of its own, which a sharded evaluation does not hold")
        if exclude_self and query.view.role != target.view.role:
            raise NotShardedError("a search excluding each record itself needs one set of records")
        t_view = target.view
        dist, idx = self._search_on.knn(
            query.space, query.view, rows, View(t_view.role, None), t_view.keep, k, exclude_self=exclude_self
        )
        nb = Neighbours(dist, idx, self._description())
        self._searches_used[name] = nb.search
        return nb

    def nearest_outside_groups(
        self,
        nb: Neighbours,
        labels: np.ndarray,
        query: Any,
        target: Any,
        *,
        same: bool,
        name: str = "jackknife refill",
        **_: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per group g and query row, the nearest target outside g: (G, n) distances and
        positions, NaN / −1 for a query of group g when ``same`` — read from ``nb``'s lists, and
        for the rows whose listed neighbours all lie in one group, one sharded search more that
        never lists that group's targets (the same answers as the local look-up)."""
        if not isinstance(query, RowsOf) or not isinstance(target, RowsOf) or target.view.keep is not None:
            raise NotShardedError("a jackknife of this kind is not sharded")
        labels = np.asarray(labels, dtype=np.int64)
        groups = int(labels.max()) + 1
        n = nb.idx.shape[0]
        lab = labels[nb.idx]
        out_d = np.full((groups, n), np.nan)
        out_i = np.full((groups, n), -1, dtype=np.int64)
        all_one = np.all(lab == lab[:, :1], axis=1)
        for g in range(groups):
            other = lab != g
            has = other.any(axis=1)
            first = np.argmax(other, axis=1)
            out_d[g, has] = nb.dist[has, first[has]]
            out_i[g, has] = nb.idx[has, first[has]]
        todo = np.flatnonzero(all_one)
        if todo.size:
            q_rows = todo if query.view.keep is None else None
            if q_rows is None:
                raise NotShardedError("a jackknife of sampled query rows is not sharded")
            d, i = self._search_on.knn(
                query.space,
                query.view,
                q_rows,
                target.view,
                None,
                1,
                exclude_self=same,
                exclude=lab[todo, 0],
                labels=labels,
            )
            out_d[lab[todo, 0], todo] = d[:, 0]
            out_i[lab[todo, 0], todo] = i[:, 0]
            self._searches_used[name] = self._description()
        if same:
            own = labels[:n]
            out_d[own, np.arange(n)] = np.nan
            out_i[own, np.arange(n)] = -1
        for a in (out_d, out_i):
            a.flags.writeable = False
        return out_d, out_i

    def copied_real_rows(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """common_rows' count, joined by hash buckets on the workers (:mod:`privgate.sharded.joins`)."""
        from .joins import sharded_copies

        inputs = self._search_on.inputs
        kinds = inputs.schema.as_dict()
        release = self._views["synthetic"]  # a holdout baseline's: the holdout sample
        return sharded_copies(
            self._search_on.client,
            inputs.parts["real"],
            inputs.parts[release.role],
            release.keep,
            kinds,
            list(kinds),
            None if rows is None else np.asarray(rows, dtype=np.int64),
            {"codes": inputs.codes, "sources": inputs.sources} if inputs.codes or inputs.sources else None,
            self._search_on.mapped.get(release.role),
        )

    def identifier_hits(self, role: str) -> np.ndarray:
        """identifier_reuse's flags, joined by hash buckets on the workers."""
        from .joins import sharded_identifier_hits

        inputs = self._search_on.inputs
        view = self._views.get(role)
        if view is None or view.keep is not None:
            raise NotShardedError(f"identifier reuse is counted on the whole {role} input only")
        kinds = {c: "categorical" for c in inputs.identifiers}
        return sharded_identifier_hits(
            self._search_on.client, dict(inputs.parts), kinds, list(inputs.identifiers), view.role
        )

    def label_free_correspondence(self, *, name: str, metric: str | None = None) -> Any:
        """The label-free view's correspondence (:func:`privgate.metrics.label_free.correspondence`),
        learnt once from the partitions (:func:`privgate.sharded.label_free.learn_sharded`, numeric
        maps applied on the workers); a holdout baseline's context takes its main context's
        reference codes for both sides, as locally. A view not computed on a cluster (more exact
        pairs than the record-by-record search gathers) raises
        :class:`~privgate.sharded.label_free.LabelFreeViewNotShardedError` (naming ``metric``),
        every time it is asked for."""
        from ..label_free import Correspondence
        from ..numeric_maps import ForeignScaleError
        from .label_free import LabelFreeViewNotShardedError, learn_sharded

        if "label_free_refused" in self.derived:
            raise LabelFreeViewNotShardedError(self.derived["label_free_refused"], metric)
        if "label_free_foreign" in self.derived:  # learnt once: the same refusal for every metric
            raise self.derived["label_free_foreign"]
        if "label_free" not in self.derived:
            try:
                if self._label_free_parent is not None:
                    main = self._label_free_parent.label_free_correspondence(name=name, metric=metric)
                    codes = main.reference_codes
                    self.derived["label_free"] = Correspondence(
                        codes, codes, main.remapped, main.columns, 0, left_out=main.left_out
                    )
                else:
                    self.derived["label_free"] = learn_sharded(self, name=name)
            except LabelFreeViewNotShardedError as exc:
                self.derived["label_free_refused"] = exc.what
                raise LabelFreeViewNotShardedError(exc.what, metric) from None
            except ForeignScaleError as exc:
                self.derived["label_free_foreign"] = exc
                raise
        return self.derived["label_free"]

    def label_free_recoded(self, corr: Any, with_holdout: bool) -> ShardedContext:
        """The label-free view's recoded context (:func:`privgate.sharded.label_free.recoded_context`)."""
        from .label_free import recoded_context

        return recoded_context(self, corr, with_holdout)

    def any_within_box(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotShardedError("box queries over whole columns are not sharded")

    def box_query(self, tolerance_divisor: float, *, real_rows: np.ndarray | None = None) -> Any:
        """hitting_rate's box queries, per pair of partitions on the workers
        (:class:`privgate.sharded.boxes.ShardedBoxQuery`: the local gate's flags); no
        coordinates are held here, so ``real_rows`` changes nothing."""
        from .boxes import ShardedBoxQuery

        return ShardedBoxQuery(self._search_on, self._views, tolerance_divisor, self._shared, self._searches_used)

    # ------------------------------------------------------------------ the holdout baseline
    def holdout_baseline(self) -> ShardedContext:
        """The baseline context: a seeded sample of min(holdout, release) holdout records in place
        of the release (the same rows a local context draws), the real records' searches shared."""
        if "holdout" not in self._views:
            raise NotApplicableError("a holdout baseline needs holdout data")
        if self._baseline_ctx is None:
            n_h, n_s = self._heights["holdout"], self._heights["synthetic"]
            size = min(n_h, n_s)
            rows = np.sort(seeds.rng(self.seed, "holdout_baseline").choice(n_h, size, replace=False))
            view = View("holdout", None if size == n_h else rows)
            base = ShardedContext(
                self._search_on,
                {"real": self._views["real"], "synthetic": view},
                seed=self.seed,
                options=self.options,
                shared=self._shared,
                column_report=self.derived.get("coded_columns"),
            )
            base.threads = self.threads
            base._label_free_parent = self
            self._baseline_ctx = base
        return self._baseline_ctx

    def with_synthetic(self, synthetic: Any) -> EvaluationContext:
        raise NotShardedError("a sharded evaluation scores no other release in place of its own")
