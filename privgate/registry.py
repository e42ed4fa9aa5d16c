"""The metric registry: every metric privgate knows, with what it models and needs.

A metric module registers its metrics here when it is imported; the registry never imports a
metric module. Looking metrics up by name — privgate's own loaded on first use — is
:mod:`privgate.catalogue` (``get_metric``, ``metric_names``, ``list_metrics``), above the metric
modules.

A metric is a plain function ``fn(ctx: EvaluationContext, **params) -> MetricResult`` registered
with :func:`register_metric`. The decorator returns a public callable that accepts either an
:class:`~privgate.context.EvaluationContext` or raw inputs::

    privgate.metrics.common_rows(real, synthetic)                  # builds a context
    privgate.metrics.common_rows(ctx)                               # reuses a shared context

so a metric's registry name, its function name and its docs entry are the same word.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .errors import MetricComputationError, ParameterError, PrivgateError, UnknownMetricError
from .results import MetricResult
from .spaces import SPACE_KINDS

if TYPE_CHECKING:  # pragma: no cover
    from .context import EvaluationContext

# "gdpr-attack": the WP29 risks singling out, linkability and inference, each an attack scored
# against a control set of holdout records (privgate/attacks/)
FAMILIES = ("reconstruction", "re-identification", "tracing", "statistical", "disclosure", "gdpr-attack")
# what a metric may need beyond real + synthetic
NEEDS = ("sensitive", "keys", "holdout", "pairing", "targets")
# the sides whose records a metric may compute its per-record terms on a sample of
SAMPLED_SIDES = ("real", "synthetic")


@dataclass(frozen=True)
class QuerySizes:
    """What a metric's ``memory_share`` reads to say which share of the query records it
    computes on: the row counts, the run's explicit query sample (None: none, or the size
    ``sample: auto`` chose) and whether the run's ``sample`` is off."""

    n_real: int
    n_synthetic: int
    sample: int | None = None
    sample_off: bool = False


@dataclass(frozen=True)
class MetricSpec:
    """Registry entry of one metric."""

    name: str
    func: Callable[..., MetricResult]
    family: str
    attack: str
    reference: str
    orientation: str
    needs: tuple[str, ...] = ()
    summary: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)
    # True for metrics that already compare the release with the holdout themselves (the
    # memorisation test, the attacks with a control set): scoring a holdout sample in place of
    # the release as a "baseline" would be meaningless, so evaluate(baseline=True) skips them.
    self_controlled: bool = False
    # the kinds of encoded space the metric may read (privgate.spaces.SPACE_KINDS): an
    # evaluation drops a space once no metric still to run reads its kind. None: not declared,
    # which keeps every space while the metric is still to run (a declaration that is too
    # narrow only costs a rebuild; tests/core/test_space_release.py checks them all).
    spaces: tuple[str, ...] | None = None
    # the memory guard's facts (privgate.memory_guard): the metric's own transient memory on every
    # record, in units of one frame's encoded mixed space (None: not declared — a plugin's metric,
    # estimated at memory_guard.DEFAULT_COST); the sides whose per-record terms follow the run's
    # `sample` / `sample_real` (docs/performance.md "Sampling"), whose cost then scales with the
    # sampled share; for a metric that caps its own records instead, the share it computes on
    # (memory_share(QuerySizes) -> share in [0, 1]); and the units each worker process of its
    # own holds (detection_mlp's folds), per worker.
    memory_cost: float | None = None
    sampled: tuple[str, ...] = ()
    memory_share: Callable[[QuerySizes], float] | None = None
    worker_memory_cost: float = 0.0

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "attack": self.attack,
            "needs": list(self.needs),
            "orientation": self.orientation,
            "reference": self.reference,
            "summary": self.summary,
            "self_controlled": self.self_controlled,
        }


_REGISTRY: dict[str, MetricSpec] = {}


def register_metric(
    *,
    family: str,
    attack: str,
    reference: str,
    orientation: str,
    needs: tuple[str, ...] = (),
    summary: str = "",
    name: str | None = None,
    self_controlled: bool = False,
    spaces: tuple[str, ...] | None = None,
    memory_cost: float | None = None,
    sampled: tuple[str, ...] = (),
    memory_share: Callable[[QuerySizes], float] | None = None,
    worker_memory_cost: float = 0.0,
) -> Callable[[Callable[..., MetricResult]], Callable[..., MetricResult]]:
    """Register ``fn(ctx, **params) -> MetricResult`` under its function name.

    The returned callable is the public metric: it accepts a context or ``(real, synthetic,
    *, holdout=None, schema=None, keys=None, sensitive=None, seed=0, **params)``, times the
    computation, and fills row counts and the decided schema into the result.

    ``spaces``: the kinds of encoded space ``fn`` reads through the context (``"mixed"`` for
    ``ctx.mixed(...)`` or a mixed-space search, ``"identifiability"``, ``"famd"``; ``()`` for
    none), so that an evaluation can drop a space after its last reader. None (the default, for
    a metric that does not say) keeps every space while the metric is still to run.

    What the memory guard (:mod:`privgate.memory_guard`) reads: ``memory_cost``, the metric's own
    transient memory on every record in units of one frame's encoded mixed space (privgate's
    metrics are calibrated by ``benchmarks/bench_metric_costs.py``; None, a plugin's default, is
    estimated at ``memory_guard.DEFAULT_COST``); ``sampled``, the sides (``"real"``,
    ``"synthetic"``) whose per-record terms follow the run's ``sample`` / ``sample_real``;
    ``memory_share``, for a metric that caps its own records, the share it computes on
    (a function of :class:`QuerySizes`); ``worker_memory_cost``, the units each of its own
    worker processes holds.
    """
    _check_declaration(family, needs, spaces, sampled, memory_cost)

    def decorate(fn: Callable[..., MetricResult]) -> Callable[..., MetricResult]:
        metric_name = name or fn.__name__
        public = _public_metric(fn, metric_name)
        spec = MetricSpec(
            name=metric_name,
            func=fn,
            family=family,
            attack=attack,
            reference=reference,
            orientation=orientation,
            needs=tuple(needs),
            summary=summary or _first_paragraph(fn.__doc__),
            self_controlled=self_controlled,
            spaces=tuple(spaces) if spaces is not None else None,
            memory_cost=float(memory_cost) if memory_cost is not None else None,
            sampled=tuple(sampled),
            memory_share=memory_share,
            worker_memory_cost=float(worker_memory_cost),
        )
        if metric_name in _REGISTRY and _REGISTRY[metric_name].func is not fn:
            raise ValueError(f"metric {metric_name!r} registered twice")
        _REGISTRY[metric_name] = spec
        public.spec = spec  # type: ignore[attr-defined]
        return public

    return decorate


def _check_declaration(
    family: str,
    needs: tuple[str, ...],
    spaces: tuple[str, ...] | None,
    sampled: tuple[str, ...] = (),
    memory_cost: float | None = None,
) -> None:
    """A metric's family, needs, space kinds and sampled sides must be ones privgate knows, and
    its memory cost a number ≥ 0."""
    for side in sampled:
        if side not in SAMPLED_SIDES:
            raise ValueError(f"unknown sampled side {side!r}; expected one of {SAMPLED_SIDES}")
    if memory_cost is not None and not (isinstance(memory_cost, (int, float)) and memory_cost >= 0):
        raise ValueError(f"memory_cost must be a number ≥ 0 (units of one encoded frame), got {memory_cost!r}")
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    for kind in spaces or ():
        if kind not in SPACE_KINDS:
            raise ValueError(f"unknown space kind {kind!r}; expected one of {SPACE_KINDS}")
    for need in needs:
        if need not in NEEDS:
            raise ValueError(f"unknown need {need!r}; expected one of {NEEDS}")


def _public_metric(fn: Callable[..., MetricResult], metric_name: str) -> Callable[..., MetricResult]:
    """The callable users call: ``fn``'s name and docs, taking a context or raw inputs, running
    the registered spec of ``metric_name``."""

    @functools.wraps(fn)
    def public(real: Any, synthetic: Any = None, /, **kwargs: Any) -> MetricResult:
        ctx, params = _context_and_params(metric_name, real, synthetic, kwargs)
        return run_spec(_REGISTRY[metric_name], ctx, params)

    return public


def _context_and_params(
    metric_name: str, real: Any, synthetic: Any, kwargs: dict[str, Any]
) -> tuple["EvaluationContext", dict[str, Any]]:
    """The context a public metric call runs on and the metric's own parameters: the given
    context, or one built from the raw inputs and the context's keywords among ``kwargs``
    (anonymeter's ``control=`` taken as the holdout of a self-controlled metric)."""
    from .context import EvaluationContext

    if isinstance(real, EvaluationContext):
        if synthetic is not None:
            raise TypeError(f"{metric_name}(ctx, ...) takes parameters by keyword only")
        return real, kwargs
    if "control" in kwargs and _REGISTRY[metric_name].self_controlled:
        # anonymeter's name for the holdout, so a notebook moves over by its import
        if "holdout" in kwargs:
            raise ParameterError(f"{metric_name}: give holdout= or anonymeter's control=, not both")
        kwargs["holdout"] = kwargs.pop("control")
    ctx_keys = ("holdout", "schema", "keys", "sensitive", "seed", "pairing")
    ctx_kwargs = {k: kwargs.pop(k) for k in ctx_keys if k in kwargs}
    return EvaluationContext(real, synthetic, **ctx_kwargs), kwargs


def run_spec(spec: MetricSpec, ctx: "EvaluationContext", params: dict[str, Any]) -> MetricResult:
    """Run one registered metric on a context; privgate errors pass through, anything else is
    wrapped in :class:`MetricComputationError` naming the metric."""
    start = time.perf_counter()
    take = getattr(ctx, "take_search_report", None)
    if callable(take):
        take()  # searches read before this metric are not its searches
    if not is_builtin(spec):
        return _finish(spec, ctx, _run_user_metric(spec, ctx, params), start, take)
    try:
        result = spec.func(ctx, **params)
    except PrivgateError:
        raise
    except TypeError as exc:
        if "unexpected keyword argument" in str(exc):
            raise ParameterError(f"metric {spec.name!r}: {exc}") from exc
        raise _wrapped(spec.name, exc) from exc
    except Exception as exc:  # noqa: BLE001 - wrapped with the metric's name
        raise _wrapped(spec.name, exc) from exc
    return _finish(spec, ctx, result, start, take)


def is_builtin(spec: MetricSpec) -> bool:
    """Whether ``spec`` is one of privgate's own metrics (a plugin's is user code)."""
    return getattr(spec.func, "__module__", "").startswith("privgate.")


def _run_user_metric(spec: MetricSpec, ctx: "EvaluationContext", params: dict[str, Any]) -> MetricResult:
    """A plugin metric's result. Whatever it raises is user code's: reported by type only, privgate's
    own error types included (a plugin may put a record in an InputError's message). Parameters it
    does not take are refused by name before it runs."""
    import inspect

    try:
        inspect.signature(spec.func).bind(ctx, **params)
    except TypeError:
        raise ParameterError(
            f"metric {spec.name!r} does not take the parameter(s) "
            f"{', '.join(sorted(map(str, params)))} (or misses one it needs)"
        ) from None
    except ValueError:  # no signature to read: the call says
        pass
    try:
        result = spec.func(ctx, **params)
    except Exception as exc:  # noqa: BLE001 - user code: the type only
        raise MetricComputationError(
            f"metric {spec.name!r} failed: {type(exc).__name__} (message withheld: the metric is not "
            "privgate's and its message may quote data values; the original exception is chained for "
            "debugging)"
        ) from exc
    if not isinstance(result, MetricResult):
        raise MetricComputationError(f"metric {spec.name!r} returned {type(result).__name__}, not a MetricResult")
    return result


def _finish(spec: MetricSpec, ctx: "EvaluationContext", result: MetricResult, start: float, take: Any) -> MetricResult:
    """``result`` with its time, name, searches, row counts and schema filled in."""
    result.seconds = time.perf_counter() - start
    result.name = spec.name
    late = take() if callable(take) else None
    if late is not None:  # searches read after the result was made (e.g. by its interval)
        from .context_search import merge_search_reports

        result.details["neighbour_search"] = merge_search_reports(result.details.get("neighbour_search"), late)
    if not result.n_real:
        result.n_real = ctx.n_real
    if not result.n_synthetic:
        result.n_synthetic = ctx.n_synthetic
    if result.n_holdout is None and ctx.holdout is not None:
        result.n_holdout = ctx.n_holdout
    if not result.schema:
        result.schema = ctx.schema.as_dict()
    return result


def _wrapped(name: str, exc: BaseException) -> MetricComputationError:
    """An unexpected exception inside a metric, named by type only: library messages can quote
    data values (a parser's offending cell, a key), so the text stays on the chained exception
    for in-process debugging and never reaches reports, logs or history rows."""
    return MetricComputationError(
        f"metric {name!r} failed: {type(exc).__name__} (message withheld: it may quote data values; "
        "the original exception is chained for debugging)"
    )


def _first_paragraph(doc: str | None) -> str:
    import inspect

    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n")[0].split())


def unregister_metric(name: str) -> None:
    """Forget a registered metric (a plugin's, or one a test registered); privgate's own metrics
    stay."""
    spec = _REGISTRY.get(name)
    if spec is not None and not is_builtin(spec):
        del _REGISTRY[name]


def has_baseline(spec: MetricSpec) -> bool:
    """Self-controlled metrics compare with the holdout themselves; metrics that need a pairing
    (which real record each synthetic record came from) have none for holdout records."""
    return not spec.self_controlled and "pairing" not in spec.needs


def registered(name: str) -> MetricSpec:
    """The entry of metric ``name`` as registered so far (privgate's own metrics only once
    :mod:`privgate.catalogue` has loaded them); raises :class:`UnknownMetricError` naming the
    closest and the known names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        from .suggest import did_you_mean

        raise UnknownMetricError(
            f"unknown metric {name!r}{did_you_mean(name, _REGISTRY)}; known metrics: {', '.join(sorted(_REGISTRY))}"
        ) from None


def registered_specs() -> list[MetricSpec]:
    """Every metric registered so far, in registration order."""
    return list(_REGISTRY.values())
