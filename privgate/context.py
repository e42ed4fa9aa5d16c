"""EvaluationContext: validated inputs plus every encoding and neighbour search, built lazily
and computed at most once per evaluation, shared by all metrics.

The context is one object; its jobs are three modules: the inputs, their samples and baselines
here; the encoded spaces in :mod:`privgate.context_spaces` (``SpacesMixin``, with
``COMPACT_SPACES_ABOVE``); the neighbour searches and their cache in
:mod:`privgate.context_search` (``SearchMixin``, with ``merge_search_reports``); import their names from there."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from . import seeds
from .context_search import SearchMixin
from .context_spaces import SpacesMixin
from .errors import NotApplicableError, ParameterError, TooFewRowsError
from .io import collect_scan, load_frame, scan_frame
from .neighbours import Neighbours, SearchMemo
from .options import AUTO_SAMPLE_ABOVE, AUTO_SAMPLE_SIZE, RunOptions, call_options  # sample="auto"
from .schema import (
    Schema,
    check_codebooks,
    check_not_empty,
    check_same_columns,
    check_values_lazily,
    identifier_columns,
    infer_schema,
    normalise_frame,
)
from .spaces import EncodedSpace
from .threads import resolve_threads


class EvaluationContext(SpacesMixin, SearchMixin):
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
        exact: True forces exact neighbour searches at every size; by default the rows the exact
            shortcuts leave open of a search are screened approximately when they still make
            more than ``SearchSettings.exact_below_pairs`` query × target pairs and reports its measured recall
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
        self._set_aside_identifiers()
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

    def _set_aside_identifiers(self) -> None:
        """Detect the identifier columns (:func:`privgate.schema.identifier_columns`: categorical,
        distinct per real record) and set them aside: their values are kept for
        ``identifier_reuse`` (:meth:`identifier_frame`) and every other metric reads the frames and
        schema without them — an identifier brings no two records nearer, and a copy under fresh
        identifiers must still be seen as a copy. A key or sensitive column the caller named, or
        a table of identifiers only, is kept. Decided here, before any metric runs."""
        found = identifier_columns(self.lazy("real"), self.schema, self.n_real)
        named = set(self.keys or []) | set(self.sensitive or [])
        ids = [c for c in found if c not in named]
        if len(ids) == len(self.schema.columns):
            ids = []
        self.identifiers: list[str] = ids
        self._identifier_frames: dict[str, pl.DataFrame | pl.LazyFrame] = {}
        if not ids:
            return
        for role in self._heights:
            if role in self._frames:
                self._identifier_frames[role] = self._frames[role].select(ids)
                self._frames[role] = self._frames[role].drop(ids)
            else:
                self._identifier_frames[role] = self._scans[role].select(ids)
                self._scans[role] = self._scans[role].drop(ids)
        self.schema = self.schema.subset([c for c in self.schema.columns if c not in ids])

    def coded_columns(self) -> dict[str, int]:
        """The categorical columns the encoded spaces hold as level codes (more levels over all
        frames than :data:`privgate.spaces.HIGH_CARDINALITY_LEVELS`), with their level counts
        (nulls a level): one streamed count per frame, made once."""
        if "coded_columns" not in self.derived:
            from .context_spaces import coded_above

            cats = list(self.schema.categorical)
            found: dict[str, int] = {}
            if cats:  # one streamed query over the frames stacked
                counts = (
                    pl.concat([self.lazy(r).select(cats) for r in self._heights])
                    .select([pl.col(c).n_unique() for c in cats])
                    .collect(engine="streaming")
                    .row(0)
                )
                found = {c: int(n) for c, n in zip(cats, counts) if n > coded_above()}
            self.derived["coded_columns"] = found
        return dict(self.derived["coded_columns"])

    def identifier_hits(self, role: str) -> np.ndarray:
        """Per record of ``role``: whether in some identifier column (:attr:`identifiers`) it holds
        a value some real record holds (identifier_reuse's count)."""
        from .copies import carries_real_identifier

        return carries_real_identifier(
            self.identifier_frame("real"), self.identifier_frame(role), list(self.identifiers)
        )

    def copied_real_rows(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """(sorted positions of the real records — of ``rows`` only when given — equal on every
        column to some synthetic record, how many distinct records they are): common_rows' count,
        streamed from the frames or scans (:func:`privgate.copies.copied_rows`)."""
        from .copies import copied_rows

        cols = self.schema.columns
        real = self.lazy("real").with_row_index("__row")
        if rows is not None:
            real = real.join(pl.LazyFrame({"__row": pl.Series(rows, dtype=pl.UInt32)}), on="__row", how="semi")
        hit_rows = copied_rows(real, self.lazy("synthetic"), cols)
        if not hit_rows.size:
            return hit_rows, 0
        hits = pl.LazyFrame({"__row": pl.Series(hit_rows, dtype=pl.UInt32)})
        n_distinct = int(
            real.join(hits, on="__row", how="semi")
            .select(cols)
            .unique()
            .select(pl.len())
            .collect(engine="streaming")
            .item()
        )
        return hit_rows, n_distinct

    def identifier_frame(self, role: str) -> pl.DataFrame:
        """The identifier columns (:attr:`identifiers`) of ``role``'s normalised frame."""
        if role not in self._heights:
            raise NotApplicableError(f"this evaluation has no {role} data")
        held = self._identifier_frames[role]
        return held if isinstance(held, pl.DataFrame) else collect_scan(held, role)

    def _set_options(self, opts: RunOptions) -> None:
        """The run options this context computes with (resolved: the thread budget as a number,
        ``sample`` None for off)."""
        self.options = opts
        self.threads = resolve_threads(opts.threads)
        self.exact = bool(opts.exact)
        self.sample_real = opts.sample_real
        self.sample = None if opts.sample == "off" else opts.sample

    def _validate_inputs(
        self,
        inputs: dict[str, Any],
        frames: dict[str, pl.DataFrame],
        scans: dict[str, pl.LazyFrame],
        schema: Any,
        *,
        check_codebooks_: bool,
    ) -> None:
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
            check_values_lazily(
                {r: (scans[r] if r in scans else frames[r].lazy()).select(order) for r in inputs},
                self.schema,
                self._heights,
            )
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
            real,
            synthetic,
            schema=self.schema.as_dict(),
            keys=self.keys,
            sensitive=self.sensitive,
            seed=self.seed,
            options=replace(self.options, threads=self.threads),
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
                sample = _Scan(
                    self._scans["holdout"]
                    .with_row_index("__pg_row")
                    .join(keep, on="__pg_row", how="semi")
                    .sort("__pg_row")
                    .drop("__pg_row")
                )
            base = self.with_synthetic(sample)
            base._encoded_by = (self, None if size == self.n_holdout else rows)
            base._memo = self._memo  # the same matrices: their category codes and k-means lists too
            self._baseline_ctx = base
        return self._baseline_ctx

    # ------------------------------------------------------------- parameters
    def key_sensitive(
        self, keys: Sequence[str] | None = None, sensitive: Sequence[str] | str | None = None
    ) -> tuple[list[str], list[str]]:
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

    # --------------------------------------------------------------- sampling
    def sample_size(self, role: str, auto: bool = True) -> int | None:
        """How many query records of ``role`` ("real" or "synthetic") a sampled metric computes its
        per-record terms on, or None for every record: ``sample_real`` (real side) if given, else
        the ``sample`` option — an integer N, or "auto": ``AUTO_SAMPLE_SIZE`` when the side has
        more than ``AUTO_SAMPLE_ABOVE`` rows and the searches are not forced exact. ``auto=False``:
        only an explicit size counts (a metric whose full computation is cheap at any size —
        common_rows' join — is not sampled by "auto")."""
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
        rule = (
            "explicit sample size"
            if explicit
            else f"auto: more than {AUTO_SAMPLE_ABOVE:,} rows, {AUTO_SAMPLE_SIZE:,} sampled"
        )
        return {
            "n": int(rows.size),
            "of": self.n_real if role == "real" else self.n_synthetic,
            "seed": self.seed,
            "side": role,
            "method": "simple random sample without replacement",
            "rule": rule,
        }

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


def _as_list(value: Sequence[str] | str | None, name: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    out = list(value)
    if not all(isinstance(v, str) for v in out):
        raise ParameterError(f"{name} must be column names (strings); got {out!r}")
    return out
