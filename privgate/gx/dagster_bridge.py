"""Bridge: a GX validation result → Dagster ``AssetCheckResult``s (no dagster-ge).

The official dagster-ge integration is pinned to GX < 1 (it is built on the removed
``DataContext``), so privgate maps GX 1.x results itself:

* one check per expectation; its name is ``meta["check_name"]`` when the expectation has one,
  otherwise ``privacy_<metric>`` for privgate expectations and the expectation type for
  others (made unique and Dagster-safe; :func:`check_names` gives the names for a suite so
  ``AssetCheckSpec``s can be declared up front with :func:`asset_check_specs`);
* ``passed`` is True only for a result that succeeded and did not error;
* an *errored* expectation (the metric raised) is a failed check with severity ERROR and
  ``errored: True`` in its metadata — never a pass, and a warning only for a metric a privgate
  gate configuration marks ``optional`` (``meta["privgate_optional"]``, see
  :mod:`privgate.gx.gate_config`);
* a failed expectation gets severity ERROR when its GX ``severity`` is ``critical`` (the
  default) and WARN for ``warning`` / ``info``;
* metadata: risk (the point estimate) with its 95 % interval (``risk_lower`` /
  ``risk_upper``), the number compared with the threshold (``compared``, the observed value)
  and what it is (``on``: estimate / lower / upper; the p-value for a test), threshold, raw value, baseline / excess, p-value, metric, status, the per-attribute breakdown
  and the error message — scores and aggregates only.

Dagster is imported inside the functions (``import dagster`` takes ~2 s).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Iterable, Sequence

from privgate.names import identifier

from .results import expectation_config, expectation_results, summarise


def _base_name(cfg: dict[str, Any]) -> str:
    meta_name = cfg["meta"].get("check_name")
    if meta_name:
        return identifier(meta_name)
    metric = cfg["kwargs"].get("metric")
    if not metric:
        from .results import _named_metric

        metric = _named_metric(cfg["type"])
    if metric:
        return "privacy_" + identifier(metric)
    return identifier(cfg["type"] or "expectation")


# kwargs GX adds at validation time (absent from the suite's stored configuration)
_RUNTIME_KWARGS = ("batch_id", "result_format", "catch_exceptions", "include_config")


def _disambiguator(cfg: dict[str, Any]) -> str:
    kwargs = {k: v for k, v in cfg["kwargs"].items() if k not in _RUNTIME_KWARGS}
    text = json.dumps({"type": cfg["type"], "kwargs": kwargs}, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def _names_for(configs: Sequence[dict[str, Any]]) -> list[str]:
    """Check names for expectation configs, independent of their order: a base name shared
    by several expectations gets a short hash of the expectation's type and kwargs."""
    bases = [_base_name(c) for c in configs]
    counts: dict[str, int] = {}
    for b in bases:
        counts[b] = counts.get(b, 0) + 1
    names = [b if counts[b] == 1 else f"{b}_{_disambiguator(c)}" for b, c in zip(bases, configs)]
    seen: dict[str, int] = {}
    out = []
    for n in names:  # identical duplicates (same kwargs): numbered in the given order
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


def _suite_configs(suite: Any) -> list[dict[str, Any]]:
    configs = []
    for exp in suite.expectations:
        cfg = exp.configuration.to_json_dict() if hasattr(exp, "configuration") else exp
        configs.append(expectation_config({"expectation_config": cfg}))
    return configs


def check_names(suite: Any) -> list[str]:
    """The Dagster check name of each expectation of ``suite`` (suite order)."""
    return _names_for(_suite_configs(suite))


def asset_check_specs(
    suite: Any, asset: Any, *, blocking: bool = True, additional_deps: Iterable[Any] | None = None
) -> list[Any]:
    """One ``AssetCheckSpec`` per expectation of ``suite`` on ``asset`` (blocking by default),
    for ``@dg.multi_asset_check(specs=...)`` or an asset's ``check_specs``."""
    import dagster as dg

    suite_cfgs = _suite_configs(suite)
    return [
        dg.AssetCheckSpec(
            name,
            asset=asset,
            blocking=blocking,
            description=_describe(cfg),
            additional_deps=list(additional_deps) if additional_deps else None,
        )
        for name, cfg in zip(_names_for(suite_cfgs), suite_cfgs)
    ]


def _describe(cfg: dict[str, Any]) -> str:
    try:
        from great_expectations.expectations.registry import get_expectation_impl

        cls = get_expectation_impl(cfg["type"])
        if hasattr(cls, "sentence"):
            return cls.sentence(cfg["kwargs"])
    except Exception:  # noqa: BLE001 - fall back to the type name
        pass
    return cfg["type"]


def _severity(dg: Any, status: str, gx_severity: str, default: str, optional: bool) -> Any:
    if status == "errored":
        # an optional metric of a privgate gate config does not block when it errors
        return dg.AssetCheckSeverity.WARN if optional else dg.AssetCheckSeverity.ERROR
    if str(gx_severity).lower() in ("warning", "info"):
        return dg.AssetCheckSeverity.WARN
    return dg.AssetCheckSeverity[default.upper()]


def _metadata(dg: Any, row: dict[str, Any]) -> dict[str, Any]:
    md: dict[str, Any] = {
        "status": dg.MetadataValue.text(row["status"]),
        "errored": dg.MetadataValue.bool(bool(row["errored"])),
        "expectation_type": dg.MetadataValue.text(row["expectation_type"] or ""),
    }
    if row["metric"]:
        md["metric"] = dg.MetadataValue.text(str(row["metric"]))
    numbers = {key: row.get(key) for key in ("risk", "compared", "threshold", "raw", "baseline", "excess", "p_value")}
    interval = row.get("interval")
    if isinstance(interval, (list, tuple)) and len(interval) == 2:
        numbers["risk_lower"], numbers["risk_upper"] = interval
    for key, value in numbers.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            md[key] = dg.MetadataValue.float(float(value))
    md["on"] = dg.MetadataValue.text(str(row.get("on") or "estimate"))
    if row["raw_description"]:
        md["raw_description"] = dg.MetadataValue.text(str(row["raw_description"]))
    if row["per_attribute"]:
        md["per_attribute"] = dg.MetadataValue.json(row["per_attribute"])
    if row["real"]:
        md["real"] = dg.MetadataValue.text(row["real"])
    if row["error"]:
        md["error"] = dg.MetadataValue.text(row["error"])
    if row.get("warning"):
        md["warning"] = dg.MetadataValue.text(row["warning"])
    return md


def to_asset_check_results(
    validation_result: Any,
    *,
    asset_key: Any = None,
    default_severity: str = "ERROR",
) -> list[Any]:
    """Turn a GX validation result (checkpoint result, suite result, single expectation result,
    their JSON dicts, or a list of any) into Dagster ``AssetCheckResult``s, one per expectation.

    ``asset_key`` is required when the results are yielded from a ``multi_asset_check``; it may
    be left out inside an asset that declares the checks in ``check_specs``.
    """
    import dagster as dg

    evrs = expectation_results(validation_result)
    configs = [expectation_config(e) for e in evrs]
    check_name_list = _names_for(configs)
    out = []
    for evr, name in zip(evrs, check_name_list):
        row = summarise(evr)
        kwargs: dict[str, Any] = {
            "check_name": name,
            "passed": row["status"] == "passed",
            "severity": _severity(
                dg, row["status"], row["severity"], default_severity, bool(row["meta"].get("privgate_optional"))
            ),
            "metadata": _metadata(dg, row),
            "description": _describe(expectation_config(evr)),
        }
        if asset_key is not None:
            kwargs["asset_key"] = asset_key
        out.append(dg.AssetCheckResult(**kwargs))
    return out
