"""Great Expectations (GX Core 1.x) custom expectations over privgate's privacy metrics.

``import privgate.gx`` imports GX (several seconds) and registers the expectation classes with
GX — do it **before** loading a saved suite, or GX silently drops the privgate expectations
from it (:func:`get_suite` checks for that). ``import privgate`` never imports GX.

Quick use::

    import great_expectations as gx
    import privgate.gx as pe

    ctx = gx.get_context(mode="ephemeral")
    check = pe.ExpectSyntheticExactCopyRateToBeBelow(real="data/real.parquet", threshold=0.0)
    result = pe.validate_release(synthetic_polars_frame, [check], context=ctx)
    pe.summarise(result.results[0])   # status passed / failed / errored, risk, threshold, ...

See docs/great_expectations.md.
"""

from __future__ import annotations

try:
    import great_expectations  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("privgate.gx needs Great Expectations: pip install 'privgate[gx]'") from exc

from .batches import (
    batch_definition,
    get_batch,
    sql_batch_definition,
    to_pandas_batch,
    validate_release,
    validate_table,
)
from .core import (
    ALL_EXPECTATIONS,
    NAMED,
    ExpectSyntheticAttributeDisclosureRiskToBeBelow,
    ExpectSyntheticAttributeInferenceRiskToBeBelow,
    ExpectSyntheticDistanceToClosestRecordRiskToBeBelow,
    ExpectSyntheticExactCopyRateToBeBelow,
    ExpectSyntheticIdentityDisclosureRiskToBeBelow,
    ExpectSyntheticMembershipInferenceRiskToBeBelow,
    ExpectSyntheticPrivacyRiskToBeBelow,
    ExpectSyntheticPrivacyTestPValueToBeAbove,
    PrivacyRiskExpectation,
)
from .gate_config import suite_from_gate_config
from .references import (
    clear_cache,
    describe_reference,
    register_real,
    registered_names,
    resolve_reference,
    unregister_real,
)
from .results import error_message, expectation_results, is_errored, summarise
from .risk_metric import RISK_METRIC
from .suites import get_suite, load_suite_json, save_suite_json

__all__ = [
    "ALL_EXPECTATIONS",
    "NAMED",
    "RISK_METRIC",
    "ExpectSyntheticAttributeDisclosureRiskToBeBelow",
    "ExpectSyntheticAttributeInferenceRiskToBeBelow",
    "ExpectSyntheticDistanceToClosestRecordRiskToBeBelow",
    "ExpectSyntheticExactCopyRateToBeBelow",
    "ExpectSyntheticIdentityDisclosureRiskToBeBelow",
    "ExpectSyntheticMembershipInferenceRiskToBeBelow",
    "ExpectSyntheticPrivacyRiskToBeBelow",
    "ExpectSyntheticPrivacyTestPValueToBeAbove",
    "PrivacyRiskExpectation",
    "batch_definition",
    "clear_cache",
    "describe_reference",
    "error_message",
    "expectation_results",
    "get_batch",
    "get_suite",
    "is_errored",
    "load_suite_json",
    "register_real",
    "registered_names",
    "resolve_reference",
    "save_suite_json",
    "sql_batch_definition",
    "suite_from_gate_config",
    "summarise",
    "to_pandas_batch",
    "unregister_real",
    "validate_release",
    "validate_table",
]
