"""Reading GX validation results: passed, failed or *errored*.

GX 1.x reports a metric that raised as ``success: False`` with ``exception_info`` keyed by the
metric configuration id (``{"MetricConfigurationID(...)": {"raised_exception": True, ...}}``);
an exception in the expectation itself gives a top-level ``{"raised_exception": True, ...}``.
A gate must not read either as an ordinary failure (or, worse, a pass): :func:`is_errored`
checks both shapes. Works on result objects and on their JSON dicts; does not import GX.
"""

from __future__ import annotations

from typing import Any, Iterable

from .references import describe_reference


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _exception_entries(evr: Any) -> list[dict]:
    info = _get(evr, "exception_info") or {}
    if not isinstance(info, dict):
        return []
    if "raised_exception" in info:
        return [info]
    return [v for v in info.values() if isinstance(v, dict)]


def is_errored(evr: Any) -> bool:
    """True when the expectation could not be evaluated (an exception was raised)."""
    return any(bool(e.get("raised_exception")) for e in _exception_entries(evr))


def error_message(evr: Any) -> str | None:
    """The first exception message of an errored result (None when it did not error)."""
    for e in _exception_entries(evr):
        if e.get("raised_exception"):
            text = str(e.get("exception_message") or "unknown error")
            # privgate's own messages name metrics, columns and sizes only; anything raised
            # around them (GX, pandas, a database driver) may quote a cell value: type only
            if text.startswith(_OWN_PREFIXES):
                return text
            return "the expectation raised outside privgate (message withheld: it may quote data values)"
    return None


# how the messages privgate's expectations raise begin (metric computation, the expectation's
# own parameter and fail-closed checks); they carry names, settings and sizes, never cell values
_OWN_PREFIXES = ("privgate metric ", "metric ", "expect_synthetic_", "real must be ", "a p-value ")


def expectation_results(validation_result: Any) -> list[Any]:
    """Flatten a CheckpointResult, ExpectationSuiteValidationResult, a single
    ExpectationValidationResult (or their JSON dicts, or a list of any) into a list of
    per-expectation results."""
    if validation_result is None:
        return []
    if isinstance(validation_result, (list, tuple)):
        out: list[Any] = []
        for item in validation_result:
            out.extend(expectation_results(item))
        return out
    run_results = _get(validation_result, "run_results")
    if run_results:
        out = []
        values: Iterable[Any] = run_results.values() if isinstance(run_results, dict) else run_results
        for suite_result in values:
            out.extend(expectation_results(suite_result))
        return out
    results = _get(validation_result, "results")
    if results is not None and not isinstance(results, dict):
        return list(results)
    return [validation_result]


def expectation_config(evr: Any) -> dict[str, Any]:
    """``{"type", "kwargs", "meta", "severity"}`` of the expectation behind a result."""
    cfg = _get(evr, "expectation_config")
    if cfg is None:
        return {"type": "", "kwargs": {}, "meta": {}, "severity": "critical"}
    if not isinstance(cfg, dict):
        cfg = cfg.to_json_dict()
    return {
        "type": cfg.get("type") or cfg.get("expectation_type") or "",
        "kwargs": dict(cfg.get("kwargs") or {}),
        "meta": dict(cfg.get("meta") or {}),
        "severity": cfg.get("severity") or "critical",
    }


def summarise(evr: Any) -> dict[str, Any]:
    """One flat, record-free row per expectation result: type, metric, status (passed /
    failed / errored), risk (the point estimate: the value, or the excess with
    ``compare_to="excess"``), the number compared with the threshold (``compared``: the
    estimate, the ``on`` = lower / upper end of its interval, or the p-value) and ``on``,
    threshold, raw value, the 95 % interval of the risk (``interval``: of the excess with
    ``compare_to="excess"``), baseline, excess, p-value, per-attribute breakdown, error
    message."""
    cfg = expectation_config(evr)
    kwargs = cfg["kwargs"]
    result = _get(evr, "result") or {}
    details = (result.get("details") or {}) if isinstance(result, dict) else {}
    errored = is_errored(evr)
    success = bool(_get(evr, "success"))
    status = "errored" if errored else ("passed" if success else "failed")
    metric = details.get("metric") or kwargs.get("metric") or _named_metric(cfg["type"])
    threshold = details.get("threshold", kwargs.get("threshold"))
    observed = result.get("observed_value") if isinstance(result, dict) else None
    return {
        "expectation_type": cfg["type"],
        "metric": metric,
        "status": status,
        "passed": status == "passed",
        "errored": errored,
        "risk": details.get("risk", observed),
        "compared": observed,
        "on": details.get("on") or kwargs.get("on") or "estimate",
        "threshold": threshold,
        "raw": details.get("raw"),
        "interval": details.get("interval"),
        "baseline": details.get("baseline"),
        "excess": details.get("excess"),
        "p_value": details.get("p_value"),
        "raw_description": details.get("raw_description"),
        "per_attribute": details.get("per_attribute"),
        "real": describe_reference(kwargs["real"]) if kwargs.get("real") else None,
        "severity": cfg["severity"],
        "meta": cfg["meta"],
        "kwargs": kwargs,
        "error": error_message(evr) if errored else None,
        "warning": details.get("warning"),
    }


def _named_metric(expectation_type: str) -> str | None:
    try:
        from .core import NAMED
    except Exception:  # noqa: BLE001 - GX missing: no named metrics to look up
        return None
    for metric, cls in NAMED.items():
        if getattr(cls, "expectation_type", None) == expectation_type:
            return metric
    return None
