"""The memory guard: before an evaluation starts, estimate its peak resident memory from the input
sizes, the metrics asked and the options, and refuse (:class:`privgate.errors.MemoryLimitError`)
when it would not fit, instead of being killed by the system part-way.

The model (one line per metric; metrics run one after another, so the run's peak is the largest):

    peak(metric) = BASE_BYTES + SEARCH_BYTES + unit · (held · frames + cost(metric) · q/n + lists)

* ``unit`` = n × features × 8 bytes: one frame's encoded mixed space (n = the larger of the real
  and release row counts; features = numeric columns + the categorical levels of the real data);
* ``frames`` = the real, release and holdout row counts over n: the encoded spaces, the input
  frames and the searches a context keeps for every record; ``held`` = ``HELD_PER_FRAME`` units
  per frame, ``HELD_PER_FRAME_COMPACT`` above ``privgate.context_spaces.COMPACT_SPACES_ABOVE`` rows
  (float32 spaces), ``HELD_PER_FRAME_NO_SPACE`` when none of the run's metrics reads an encoded
  space (:func:`held_per_frame`);
* ``cost(metric)`` the metric's own transient memory per unit when it computes on every record —
  its registry declaration's ``memory_cost`` (``MetricSpec.memory_cost``; ``DEFAULT_COST`` for a
  plugin's metric that declares none) — × ``COMPACT_COST_SHARE`` above ``COMPACT_SPACES_ABOVE``
  rows for a metric that reads an encoded space; ``q/n`` the share of query records it computes
  on — below 1 when it is sampled (a metric whose declaration lists ``sampled`` sides, under
  ``sample`` / ``sample_real``) or caps its own records (its ``memory_share``: proximity_score
  scores at most ``MAX_SCORED_ROWS`` records, the classifiers stack at most ``max_records`` per
  class);
* ``SEARCH_BYTES`` (a search's block scratch, independent of the sizes) and ``lists`` only for the
  metrics that read an encoded space;
* ``lists`` = ``SCREEN_LISTS`` when an approximate screen runs (a search above
  ``SearchSettings.exact_below_pairs`` pairs, not ``exact``): the k-means lists, a float32 copy of the
  searched targets, kept per target matrix.

The coefficients are calibrated by ``benchmarks/bench_metric_costs.py`` (Texas-like data, all
registered metrics, 25k and 50k rows: the peak during each metric minus the RSS before any metric,
fitted as intercept + slope × unit) and rounded up; the estimate is meant to be above the measured
peak, not equal to it.
The limit is ``memory_limit`` (bytes, or a string such as "8G"), else the environment variable
``PRIVGATE_MEMORY_LIMIT``, else what the system can give this process: its current RSS plus
``MemAvailable`` from /proc/meminfo, lowered to the cgroup's limit minus its usage when that is
smaller. "off" (or 0) switches the guard off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .errors import MemoryLimitError, UnknownMetricError
from .options import parse_limit

MIB = 2**20
GIB = 2**30

#: RSS of the interpreter with privgate's libraries loaded (NumPy, Polars, SciPy, faiss,
#: LightGBM), measured before any metric: 190–250 MiB at 25k–100k rows.
BASE_BYTES = 256 * MIB
#: Scratch of a neighbour search, whatever the sizes: the blocked path's float32 distance block
#: (``SearchSettings.block_bytes``, 192 MiB) and its candidate copies — the ~270 MiB the
#: 25k→50k fit leaves as intercept for proximity_score and identifiability, rounded up. Counted for
#: the metrics that read an encoded space (``MetricSpec.spaces``).
SEARCH_BYTES = 384 * MIB
#: Held per frame, in units, for the rest of the run: the frame, its encoded mixed space
#: (float64), cached neighbour lists of every record, prepared target copies.
HELD_PER_FRAME = 3.0
#: The same above ``privgate.context_spaces.COMPACT_SPACES_ABOVE`` rows, where the spaces are float32
#: (half a unit each), the exact search reads them without a centred copy, category codes are
#: int16 and FAMD is fitted in row blocks: the default gate with a holdout on Texas-like rows
#: (bench_million.py, 95 features, sample auto) peaked at 3.66 GiB at 1M and 10.32 GiB at 3M,
#: which 1.12 would reach; 1.25 estimates 4.41 and 11.1 GiB (measured / estimated 0.83, 0.93).
HELD_PER_FRAME_COMPACT = 1.25


#: The same above ``COMPACT_SPACES_ABOVE`` rows when no metric of the run reads an encoded space
#: (a step of the statistical, disclosure or attack family when an evaluation is split by family,
#: or a run of such metrics alone): the input frames and what those metrics build from them, no
#: encoded space, no neighbour lists. Measured at 1M Texas-like rows per frame with a holdout
#: (bench_metric_costs.py, those metrics in one process): disclosure_identity peaked at
#: 2,321 MiB, which 0.79 units per frame reach with its cost; 1.1 estimates 2,980. Below
#: that size the fixed parts dominate (the same metric at 100k needed 1.06) and HELD_PER_FRAME
#: is kept.
HELD_PER_FRAME_NO_SPACE = 1.1


def _compact_above() -> int:
    from .context_spaces import COMPACT_SPACES_ABOVE

    return COMPACT_SPACES_ABOVE


def held_per_frame(n: int, reads_space: bool = True) -> float:
    """Units held per frame: HELD_PER_FRAME, or above ``COMPACT_SPACES_ABOVE`` rows
    HELD_PER_FRAME_COMPACT (the spaces are float32) — HELD_PER_FRAME_NO_SPACE when none of the
    run's metrics reads an encoded space (``reads_space`` False)."""
    if n <= _compact_above():
        return HELD_PER_FRAME
    return HELD_PER_FRAME_COMPACT if reads_space else HELD_PER_FRAME_NO_SPACE


#: The approximate screen's k-means lists (a float32 copy of each searched target matrix).
SCREEN_LISTS = 1.0
#: Each metric's own memory on every record, in units, is its registry declaration's
#: ``memory_cost``: the slope of (peak during the metric − RSS before any metric) between 25k and
#: 50k Texas-like rows (bench_metric_costs.py, one run each; nnaa, close_values and median_dcr
#: lowered to what 100k showed) minus the held 2 × HELD_PER_FRAME, rounded up, at least 0.5. The
#: slope includes memory that earlier metrics left held (measured in evaluate's order), so the
#: estimate is above what a metric run alone needs: at 25k, 50k and 100k every estimate was above
#: the measured peak (measured / estimated at most 0.76, 0.81, 0.88; the run's peak 620 / 894,
#: 811 / 1,142 and 1,073 / 1,644 MiB). singling_out at 1M rows per frame (its candidates counted
#: in bounded blocks of bitsets): 3,384 MiB peak, under the 4,056 that 2.0 estimates without a
#: space held (5,253 before the blocks).
#: A metric that declares no cost (a plugin's).
DEFAULT_COST = 2.0
#: Above ``privgate.context_spaces.COMPACT_SPACES_ABOVE`` rows the spaces a metric reads are float32 and
#: its searches settle in blocks: a metric that reads an encoded space needs this share of its
#: cost. The full suite with a holdout at 1M Texas-like rows per frame (bench_metric_costs.py, one
#: process, each metric's peak including what earlier ones left held) peaked at 3,571 MiB; with
#: this share every metric's estimate is at least 1.16 times its measured peak (proximity_score's
#: the closest) and the run's 7.1 GiB (10.3 with the whole cost); the 5M default gate's phases
#: at least 1.5 times.
COMPACT_COST_SHARE = 0.5
#: detection_mlp trains its folds in worker processes when the run has more than one thread: each
#: worker holds a fold's training copies besides the main process (measured at 1M × 1M on every
#: record with two workers: 4.6 GiB for both, 3.2 units each) — its declaration's
#: ``worker_memory_cost`` per unit and worker, scaled like its cost by the share of records it
#: stacks (its ``memory_share``), so above its cap its own cost stays the same however many rows
#: the run has.
DETECTION_FOLDS = 5
#: The smallest sample the guard suggests (a smaller one gives intervals too wide to gate on).
MIN_SUGGESTED_SAMPLE = 5_000


@dataclass
class MemoryEstimate:
    """The guard's estimate for one run: ``peak`` bytes (the largest metric's), ``per_metric``
    {metric: bytes}, and the model's inputs (``unit`` bytes, ``features``, ``n``)."""

    peak: float
    per_metric: dict[str, float]
    unit: float
    features: int
    n: int
    inputs: dict[str, Any] = field(default_factory=dict)


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _rss_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def available_bytes() -> int | None:
    """What this process may still grow by: ``MemAvailable`` (/proc/meminfo), lowered to the
    cgroup's limit minus its usage (cgroup v2 ``memory.max``/``memory.current``, v1
    ``memory.limit_in_bytes``/``memory.usage_in_bytes``) when smaller; None when unknown."""
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    for limit_path, usage_path in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit, usage = _read_int(limit_path), _read_int(usage_path)
        if limit is not None and usage is not None and limit < 2**60:
            room = max(0, limit - usage)
            avail = room if avail is None else min(avail, room)
            break
    return avail


def resolve_limit(memory_limit: Any = "auto") -> tuple[int | None, str]:
    """(limit in bytes or None for no guard, where it came from)."""
    if memory_limit != "auto":
        return parse_limit(memory_limit), "memory_limit"
    env = os.environ.get("PRIVGATE_MEMORY_LIMIT")
    if env is not None:
        return parse_limit(env), "PRIVGATE_MEMORY_LIMIT"
    avail = available_bytes()
    if avail is None:
        return None, "unknown"
    return _rss_bytes() + avail, "this process's RSS + the memory available (MemAvailable / cgroup)"


def _features(ctx) -> int:
    """Columns of the encoded mixed space of the context ``ctx`` (:func:`encoded_features`)."""
    return encoded_features(ctx.schema.as_dict(), ctx.lazy("real"))


def encoded_features(kinds: dict[str, str], real) -> int:
    """Columns of the encoded mixed space, from the column kinds (column → "numeric" or
    "categorical") and the real data's level counts (``real``: a LazyFrame; no encoding is
    made, and a scanned input is not loaded). A column of more levels than
    :data:`privgate.spaces.HIGH_CARDINALITY_LEVELS` is one coordinate (its level code), not a
    one-hot block."""
    import polars as pl

    from .context_spaces import coded_above

    cats = [c for c, kind in kinds.items() if kind != "numeric"]
    levels = 0
    if cats:
        # a lazy query: a Parquet input still being scanned is read column by column, not loaded
        counts = real.select([pl.col(c).n_unique() for c in cats]).collect(engine="streaming").row(0)
        levels = int(sum(k if k <= coded_above() else 1 for k in counts))
    return max(1, len(kinds) - len(cats) + levels)


def _spec(name: str) -> Any:
    """The registry declaration of metric ``name``; None for a metric the registry does not know
    here (a plugin's, registered elsewhere)."""
    from .catalogue import get_metric

    try:
        return get_metric(name)
    except UnknownMetricError:  # unknown here: estimated from the defaults
        return None


def metric_cost(name: str) -> float:
    """The metric's own memory on every record, in units: its declaration's ``memory_cost``,
    ``DEFAULT_COST`` for a metric that declares none or that the registry does not know."""
    spec = _spec(name)
    cost = getattr(spec, "memory_cost", None)
    return DEFAULT_COST if cost is None else float(cost)


def _searches(name: str) -> bool:
    """Whether the metric reads an encoded space (and so runs neighbour searches); True for a
    metric the registry does not know or that does not declare its spaces."""
    spec = _spec(name)
    if spec is None:  # unknown here: assume it searches
        return True
    return spec.spaces is None or bool(spec.spaces)


def _scores_baseline(name: str) -> bool:
    """Whether a run with a holdout scores the metric's holdout baseline (not the self-controlled
    attacks, not the metrics that need a pairing: ``privgate.registry.has_baseline``); True for a
    metric the registry does not know."""
    from .registry import has_baseline

    spec = _spec(name)
    return True if spec is None else has_baseline(spec)


def estimate_run(
    ctx, metrics: Sequence[str], *, baseline: bool = False, exact: bool | None = None, sample: int | None = None
) -> MemoryEstimate:
    """The guard's estimate for running ``metrics`` on the context ``ctx`` (its sizes, sampling
    and ``exact`` option; ``exact`` / ``sample`` override them, to see what an option would
    change). ``baseline``: the holdout baseline is scored too (its context shares the encoded
    matrices). The sizes go to :func:`estimate_sizes`."""
    from .metrics.classifier import _n_jobs

    exact = ctx.exact if exact is None else exact
    q_sampled = sample if sample is not None else ctx.sample_size("real")
    # "auto"'s size lowers no classifier's cap (they take explicit samples only)
    auto = sample is None and q_sampled is not None and ctx.sample_size("real", auto=False) is None
    return estimate_sizes(
        ctx.n_real,
        ctx.n_synthetic,
        ctx.n_holdout or 0,
        _features(ctx),
        metrics,
        exact=exact,
        sample=q_sampled,
        threads=_n_jobs(None, getattr(ctx, "threads", None)),
        baseline=baseline,
        sample_off=sample is None and getattr(ctx, "sample", "auto") is None,
        sample_auto=auto,
    )


def estimate_sizes(
    n_real: int,
    n_synthetic: int,
    n_holdout: int,
    features: int,
    metrics: Sequence[str],
    *,
    exact: bool,
    sample: int | None,
    threads: int,
    baseline: bool = False,
    sample_off: bool = False,
    sample_auto: bool = False,
) -> MemoryEstimate:
    """The guard's estimate from sizes alone (no data): ``n_real`` / ``n_synthetic`` /
    ``n_holdout`` rows (0: no holdout), ``features`` columns of the encoded mixed space
    (:func:`encoded_features`), ``metrics`` run one after another, ``exact`` searches forced
    exact, ``sample`` the real query records a sampled metric computes on (None: every record;
    what ``EvaluationContext.sample_size("real")`` gives), ``threads`` the run's classifier
    workers (detection_mlp's folds run in worker processes above 1), ``baseline`` the holdout
    baseline scored too, ``sample_off`` the run's ``sample`` is off (the classifier metrics then
    stack every record instead of their per-class caps), ``sample_auto`` ``sample`` is the size
    "auto" chose (the classifier metrics keep their caps: only an explicit sample lowers them). Pure: the same sizes give the same
    estimate on any machine."""
    from .neighbours.settings import resolve
    from .registry import QuerySizes

    n_r, n_s, n_h = n_real, n_synthetic, n_holdout or 0
    n = max(n_r, n_s, 1)
    unit = float(n) * features * 8
    frames = (n_r + n_s + n_h) / n
    q_sampled = sample
    lists = SCREEN_LISTS if (not exact and n_r * n_s > resolve(None).exact_below_pairs) else 0.0
    held = held_per_frame(n, any(_searches(name) for name in metrics))
    compact_share = COMPACT_COST_SHARE if n > _compact_above() else 1.0
    per_metric = {}
    sizes = QuerySizes(n_real=n_r, n_synthetic=n_s, sample=None if sample_auto else sample, sample_off=sample_off)
    for name in metrics:
        spec = _spec(name)
        search = SEARCH_BYTES if _searches(name) else 0
        cost = metric_cost(name) * (compact_share if search else 1.0)
        if spec is not None and spec.sampled and q_sampled is not None:
            share = min(1.0, q_sampled / max(n_r, 1))
        elif spec is not None and spec.memory_share is not None:
            share = spec.memory_share(sizes)
        else:
            share = 1.0
        # the baseline's own scratch, for the metrics that score one
        extra = (1.0 if baseline and n_h and _scores_baseline(name) else 0.0) * cost * share * 0.5
        if spec is not None and spec.worker_memory_cost:
            extra += spec.worker_memory_cost * share * _fold_workers(threads)
        per_metric[name] = (
            BASE_BYTES + search + unit * (held * frames + cost * share + extra + (lists if search else 0.0))
        )
    peak = max(per_metric.values(), default=float(BASE_BYTES))
    return MemoryEstimate(
        peak=peak,
        per_metric=per_metric,
        unit=unit,
        features=features,
        n=n,
        inputs={
            "n_real": n_r,
            "n_synthetic": n_s,
            "n_holdout": n_h,
            "exact": exact,
            "sample": q_sampled,
            "held_per_frame": held,
        },
    )


def metric_family(name: str) -> str:
    """The registry family of metric ``name`` (:mod:`privgate.registry`); raises
    UnknownMetricError naming the known metrics."""
    from .catalogue import get_metric

    return get_metric(name).family


def family_estimates(
    n_real: int,
    n_synthetic: int,
    n_holdout: int,
    features: int,
    metrics: Sequence[str],
    *,
    exact: bool,
    sample: int | None,
    threads: int,
    baseline: bool = False,
    step_threads: dict[str, int] | None = None,
    sample_off: bool = False,
    sample_auto: bool = False,
) -> dict[str, MemoryEstimate]:
    """The estimate of each family step of an evaluation split by metric family (privgate.dagster's
    ``build_privgate_family_checks``): family → the estimate of a step that loads the inputs,
    builds its own context (the held frames) and runs that family's ``metrics`` alone, its peak
    the largest of them. ``step_threads``: a step's threads by step name (the family as a
    Python identifier, ``re_identification``) or family, else ``threads``. Families in the
    order their first metric comes in ``metrics``."""
    from .names import identifier

    groups: dict[str, list[str]] = {}
    for name in metrics:
        groups.setdefault(metric_family(name), []).append(name)
    step_threads = dict(step_threads or {})
    out = {}
    for family, names in groups.items():
        n_threads = step_threads.get(identifier(family), step_threads.get(family, threads))
        out[family] = estimate_sizes(
            n_real,
            n_synthetic,
            n_holdout,
            features,
            names,
            exact=exact,
            sample_off=sample_off,
            sample_auto=sample_auto,
            sample=sample,
            threads=n_threads,
            baseline=baseline,
        )
    return out


def _fold_workers(threads: int) -> int:
    """The worker processes of a metric with its own workers (detection_mlp's folds) in a run of
    ``threads`` classifier workers (0: the work runs in the main process)."""
    workers = min(threads, DETECTION_FOLDS)
    return workers if workers > 1 else 0


def check_run(
    ctx, metrics: Sequence[str], *, baseline: bool = False, memory_limit: Any = "auto"
) -> MemoryEstimate | None:
    """Refuse a run whose estimated peak exceeds the limit (:func:`resolve_limit`): raise
    :class:`MemoryLimitError` naming the metric that needs most, the sizes, the limit and the
    options that would fit — a ``sample`` size for the metrics that sample, ``exact=True`` when
    the screen's lists are what does not fit, or leaving metrics out. Returns the estimate (None
    when the guard is off or the limit unknown)."""
    limit, source = resolve_limit(memory_limit)
    if limit is None:
        return None
    est = estimate_run(ctx, metrics, baseline=baseline)
    if est.peak <= limit:
        return est
    over = sorted((m for m, b in est.per_metric.items() if b > limit), key=lambda m: -est.per_metric[m])
    worst = over[0]
    options = []
    if est.inputs["sample"] is None or est.inputs["sample"] > MIN_SUGGESTED_SAMPLE:
        for size in (100_000, 50_000, 25_000, 10_000, MIN_SUGGESTED_SAMPLE):
            if size >= ctx.n_real:
                continue
            trial = estimate_run(ctx, metrics, baseline=baseline, sample=size)
            if trial.peak <= limit:
                options.append(f"sample={size} (sample_real={size}; about {trial.peak / GIB:.1f} GiB)")
                break
    if not est.inputs["exact"]:
        trial = estimate_run(ctx, metrics, baseline=baseline, exact=True)
        if trial.peak <= limit and trial.peak < est.peak:
            options.append(f"exact=True (about {trial.peak / GIB:.1f} GiB)")
    keep = [m for m in metrics if m not in over]
    if keep:
        options.append(f"fewer metrics: leave out {', '.join(repr(m) for m in over)}")
    held = (
        BASE_BYTES
        + est.unit * est.inputs["held_per_frame"] * (ctx.n_real + ctx.n_synthetic + (ctx.n_holdout or 0)) / est.n
    )
    if held > limit:
        options.append(f"fewer rows (the encoded records alone need about {held / GIB:.1f} GiB)")
    raise MemoryLimitError(
        f"the run would need about {est.peak / GIB:.1f} GiB at its peak, in metric {worst!r} "
        f"({ctx.n_real:,} real × {ctx.n_synthetic:,} release"
        + (f" × {ctx.n_holdout:,} holdout" if ctx.n_holdout else "")
        + f" rows, {est.features} encoded features), more than the {limit / GIB:.1f} GiB limit ({source}); "
        + ("options that would fit: " + "; ".join(options) if options else "no option fits this limit")
        + ". Set the limit with memory_limit= (or PRIVGATE_MEMORY_LIMIT; 'off' switches the guard off)."
    )
