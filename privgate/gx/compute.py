"""Compute one privgate metric on a batch — the part of the expectations that knows privgate.

:func:`compute_risk` takes the synthetic batch (pandas, as GX hands it over, or Polars), the
real-data reference string and the metric's parameters, runs the registered metric and returns
a JSON-safe payload: the risk ``value`` (observed value), ``raw``, per-attribute breakdown and
the metric's aggregate details. Nothing in the payload is a value of a real record; per-record
risks are reduced to their summary.

Errors: every failure is raised as :class:`~privgate.errors.MetricComputationError` whose
message names the metric and the privgate error. An exception inside the metric already
arrives with its message withheld (``privgate.registry.run_spec``); what is withheld here is
the message of a non-privgate exception raised *around* the metric (building the context,
converting the batch), and the exception chain is cut in every case: GX puts the formatted
traceback, chained exceptions included, in ``exception_info``.

This module does not import Great Expectations.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Mapping, Sequence

import polars as pl

from privgate.errors import MetricComputationError, ParameterError, PrivgateError
from privgate.io import load_frame

from .references import resolve_reference

MAX_DETAILS_CHARS = 20_000
_CONTEXT_CACHE_SIZE = 2
_ctx_cache: "OrderedDict[tuple, Any]" = OrderedDict()
_ctx_lock = threading.Lock()


def _context_for(
    real_ref: str,
    synthetic: pl.DataFrame,
    *,
    holdout_ref: str | None,
    schema: Mapping[str, str] | None,
    keys: Sequence[str] | None,
    sensitive: Sequence[str] | None,
    seed: int,
    paired: bool = False,
) -> Any:
    """An EvaluationContext for (real, synthetic, ...), reused across the expectations of one
    suite run on the same batch so shared neighbour searches are computed once."""
    from privgate.context import EvaluationContext
    from privgate.gates import frame_fingerprint

    real, real_key = resolve_reference(real_ref, role="real")
    holdout, holdout_key = (None, None)
    if holdout_ref:
        holdout, holdout_key = resolve_reference(holdout_ref, role="holdout")
    cache_key = (
        real_key,
        holdout_key,
        frame_fingerprint(synthetic)["content_sha256"],  # the gate's content hash
        json.dumps(dict(schema or {}), sort_keys=True),
        tuple(keys) if keys is not None else None,
        tuple(sensitive) if sensitive is not None else None,
        int(seed),
        bool(paired),
    )
    with _ctx_lock:
        ctx = _ctx_cache.get(cache_key)
        if ctx is not None:
            _ctx_cache.move_to_end(cache_key)
            return ctx
    ctx = EvaluationContext(
        real,
        synthetic,
        holdout=holdout,
        schema=dict(schema) if schema else None,
        keys=list(keys) if keys is not None else None,
        sensitive=list(sensitive) if sensitive is not None else None,
        seed=int(seed),
        pairing=True if paired else None,
    )
    with _ctx_lock:
        _ctx_cache[cache_key] = ctx
        while len(_ctx_cache) > _CONTEXT_CACHE_SIZE:
            _ctx_cache.popitem(last=False)
    return ctx


def clear_context_cache() -> None:
    """Drop the cached evaluation contexts (frees their neighbour searches)."""
    with _ctx_lock:
        _ctx_cache.clear()


def compute_risk(
    synthetic: Any,
    *,
    metric: str,
    real: str,
    holdout: str | None = None,
    params: Mapping[str, Any] | None = None,
    keys: Sequence[str] | None = None,
    sensitive: Sequence[str] | None = None,
    seed: int = 0,
    schema: Mapping[str, str] | None = None,
    paired: bool = False,
    baseline: bool = False,
) -> dict[str, Any]:
    """Run the registered metric ``metric`` with the synthetic batch against the real data.

    With ``baseline=True`` (needs ``holdout``) the metric is also computed with a holdout
    sample of the release's size in place of the release — the same sample
    :func:`privgate.evaluate` draws with ``baseline=True`` — and the payload carries
    ``baseline`` and ``excess`` = value − baseline (docs/gates.md, baseline rules).

    Returns the JSON-safe payload described in the module docstring. Raises
    :class:`MetricComputationError` (message names the metric) on any failure.
    """
    try:
        return _compute(
            synthetic,
            metric=metric,
            real=real,
            holdout=holdout,
            params=params,
            keys=keys,
            sensitive=sensitive,
            seed=seed,
            schema=schema,
            paired=paired,
            baseline=baseline,
        )
    except PrivgateError as exc:
        # privgate's own messages carry no record values (run_spec already withheld the text
        # of an exception inside the metric); the chain is cut all the same
        raise MetricComputationError(
            f"privgate metric {metric!r} could not be computed: {type(exc).__name__}: {exc}"
        ) from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - message withheld: it may quote data values
        # SystemExit too: a metric calling sys.exit(0) must not end a validation run with
        # status 0 (KeyboardInterrupt still interrupts it: nothing passes)
        raise MetricComputationError(
            f"privgate metric {metric!r} could not be computed: {type(exc).__name__} "
            "(message withheld: it may quote data values)"
        ) from None


def _compute(
    synthetic: Any,
    *,
    metric: str,
    real: str,
    holdout: str | None,
    params: Mapping[str, Any] | None,
    keys: Sequence[str] | None,
    sensitive: Sequence[str] | None,
    seed: int,
    schema: Mapping[str, str] | None,
    paired: bool,
    baseline: bool,
) -> dict[str, Any]:
    from privgate.catalogue import get_metric
    from privgate.registry import run_spec

    spec = get_metric(metric)
    params = dict(params or {})
    reserved = sorted(set(params) & {"holdout", "schema", "keys", "sensitive", "seed", "pairing"})
    if reserved:
        raise ParameterError(
            f"params of {metric!r} must not contain {reserved}; use the expectation's own "
            "fields (holdout, keys, sensitive, seed, schema)"
        )
    if baseline and not holdout:
        raise ParameterError(f"{metric!r}: comparing against the holdout baseline needs a holdout reference")
    if baseline:
        from privgate.registry import has_baseline

        if not has_baseline(spec):  # as privgate.evaluate(baseline=True) and the gate decide
            raise ParameterError(
                f"{metric!r} has no holdout baseline (it compares with the holdout itself, or needs "
                "a pairing holdout records lack): use compare_to='value'"
            )
    synth = load_frame(synthetic, role="synthetic batch")
    ctx = _context_for(
        real, synth, holdout_ref=holdout, schema=schema, keys=keys, sensitive=sensitive, seed=seed, paired=paired
    )
    result = _valid(run_spec(spec, ctx, params), metric)
    if baseline:
        # the same holdout sample privgate.evaluate(baseline=True) uses
        from privgate.evaluation import attach_baseline

        base = _valid(run_spec(spec, ctx.holdout_baseline(), params), metric)
        attach_baseline(result, base, ctx.seed)  # the excess interval privgate.evaluate gives
    payload = payload_from_result(_valid(result, metric), spec)
    payload["release_view"] = _release_view(ctx, spec)
    return payload


def _release_view(ctx: Any, spec: Any) -> dict[str, Any] | None:
    """For a metric that compares labels or values as they are (not a label-free one), whether
    the batch's labels or scales differ from the real data's (the label-free view's finding,
    ``privgate.metrics.label_free.view_status``): its "0.0" then says nothing about copies in
    disguise. None for the label-free metrics, which compare in that view themselves."""
    from privgate.metrics.label_free import LABEL_FREE_METRICS, view_status

    return None if spec.name in LABEL_FREE_METRICS else view_status(ctx)


def _valid(result: Any, metric: str) -> Any:
    """The gate's check of a metric result (value finite in [0, 1], intervals and p-value in
    range): junk from a custom metric is errored, not compared (a value below 0 passed)."""
    from privgate.gates.deciding import result_problem

    problem = result_problem(result)
    if problem is not None:
        raise MetricComputationError(f"metric {metric!r} {problem}")
    return result


def payload_from_result(result: Any, spec: Any) -> dict[str, Any]:
    """The JSON-safe, record-free summary of a MetricResult that the expectations publish."""
    d = result.to_dict(include_per_record=False)
    details = d.get("details") or {}
    text = json.dumps(details, default=str)
    if len(text) > MAX_DETAILS_CHARS:
        details = {
            "omitted": f"metric details too large for a GX result ({len(text)} characters); "
            "run privgate.evaluate for the full report",
            "keys": sorted(str(k) for k in details)[:50],
        }
    return {
        "metric": spec.name,
        "family": spec.family,
        "attack": spec.attack,
        "reference": spec.reference,
        "orientation": spec.orientation,
        "value": float(d["value"]),
        "raw": d.get("raw"),
        "raw_description": d.get("raw_description", ""),
        "params": d.get("params") or {},
        "n_real": d.get("n_real"),
        "n_synthetic": d.get("n_synthetic"),
        "n_holdout": d.get("n_holdout"),
        "per_attribute": d.get("per_attribute"),
        "per_record_summary": d.get("per_record_summary"),
        "details": details,
        "baseline": d.get("baseline"),
        "excess": d.get("excess"),
        "ci": d.get("ci"),
        "baseline_ci": d.get("baseline_ci"),
        "excess_ci": d.get("excess_ci"),
        "p_value": d.get("p_value"),
        "seconds": d.get("seconds"),
    }
