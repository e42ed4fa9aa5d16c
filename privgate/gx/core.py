"""Great Expectations (GX Core 1.x) custom expectations over privgate's privacy metrics.

Importing this module imports GX (~8 s) and registers, with GX's registries:

* the table metric ``table.privgate.privacy_risk`` (:mod:`privgate.gx.risk_metric`: pandas and
  SQL execution engines), which runs one registered privgate metric with the batch as the
  synthetic release;
* :class:`ExpectSyntheticPrivacyRiskToBeBelow` — any registered metric by name;
* named expectations for the main attacks, each fixed to one metric (see :data:`NAMED`);
* :class:`ExpectSyntheticPrivacyTestPValueToBeAbove` — the p-value of a metric that is a
  hypothesis test (e.g. ``memorisation``), the GX form of a gate ``test`` rule.

The risk expectations pass when the metric's risk ``value`` (0 = no risk, 1 = no privacy; see
docs/metrics.md) — or its excess over the holdout baseline (``compare_to="excess"``), or with
``on="lower"`` / ``"upper"`` that end of its 95 % interval — is **at most** ``threshold``, as a
gate ``threshold`` / ``baseline`` rule with the same ``on`` passes. The p-value expectation
passes when the p-value is **at least** ``threshold`` (a gate ``test`` rule fires strictly
below its limit). ``observed_value`` is the compared quantity; ``details`` carry the point
estimate, the raw value of the original definition, the threshold, the intervals, the
per-attribute breakdown and the metric's aggregate details — never a value of a real record.
A metric that cannot be computed, or that lacks the interval or p-value the expectation
compares, makes the expectation *errored* (GX ``exception_info`` with ``raised_exception: True``
and ``success: False``), never a pass and never an ordinary fail (the gate fails closed the
same way); :func:`privgate.gx.results.is_errored` tells the two apart.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Dict, List, Literal, Optional, Tuple, Union

from great_expectations.compatibility import pydantic
from great_expectations.core.suite_parameters import SuiteParameterDict
from great_expectations.expectations.expectation import (
    BatchExpectation,
    render_suite_parameter_string,
)
from great_expectations.render import LegacyRendererType, RenderedStringTemplateContent
from great_expectations.render.renderer.renderer import renderer
from great_expectations.validator.metric_configuration import MetricConfiguration

from privgate.errors import MetricComputationError, ParameterError
from privgate.gates import rules
from privgate.gates.rule_kinds import RuleKind, gx_kind, gx_quantities, rule_kind

from .references import describe_reference
from .release_view import release_view_warning

# the table metric the expectations read (importing it registers it with GX)
from .risk_metric import RISK_METRIC


def _fmt(x: Any) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        return f"{x:.4g}"
    return str(x)


class PrivacyRiskExpectation(BatchExpectation):
    """Shared fields and behaviour of the privgate expectations (not registered itself).

    Fields:
        real: the real data the generator was trained on — a file path (Parquet; ``~`` and
            ``$VARS`` expanded) or ``"registry:<name>"`` for a frame registered in this process
            with :func:`privgate.gx.register_real`; may be a suite parameter
            ``{"$PARAMETER": "real_path"}`` supplied at run time.
        threshold: the highest acceptable risk in [0, 1] (pass when risk ≤ threshold); may be a
            suite parameter ``{"$PARAMETER": "name"}``.
        holdout: optional reference to real records *not* used for training (metrics that
            need one).
        keys / sensitive: quasi-identifier and sensitive column lists (attribute inference and
            disclosure families).
        params: the metric's own parameters (see ``privgate metrics`` / docs/metrics.md).
        seed: seed of every random step.
        column_kinds: optional schema ``{column: "numeric" | "categorical"}`` overriding inference.
        paired: synthetic row i was generated from real row i (``hidden_rate`` needs it).
        compare_to: ``"value"`` (default) gates the metric's risk value; ``"excess"`` (needs
            ``holdout``) gates value − baseline, the baseline being the same metric with a
            holdout sample of the release's size in place of the release (docs/metrics.md,
            "resembles the population" vs "memorised individuals"). ``observed_value`` is then
            the excess, which can be negative.
        on: what of that quantity is compared with ``threshold``, as in a gate rule's ``on``:
            ``"estimate"`` (default: the value or excess itself), ``"lower"`` or ``"upper"``
            (that end of its 95 % interval: the metric's ``ci``, or ``excess_ci`` with
            ``compare_to="excess"``). ``on="lower"`` fails only when the evidence puts the
            risk above the threshold. A metric that reports no such interval makes the
            expectation errored (fails closed).
    """

    real: Union[str, SuiteParameterDict]
    threshold: Union[float, SuiteParameterDict]
    holdout: Union[str, SuiteParameterDict, None] = None
    keys: Optional[List[str]] = None
    sensitive: Optional[List[str]] = None
    params: Optional[Dict[str, Any]] = None
    seed: int = 0
    column_kinds: Optional[Dict[str, str]] = None
    paired: bool = False
    compare_to: str = "value"  # "value" | "excess": a result field a declared rule kind compares
    on: Literal["estimate", "lower", "upper"] = "estimate"

    # the registered privgate metric a named expectation is fixed to
    privgate_metric: ClassVar[Optional[str]] = None
    # what the Data Docs sentence calls the risk, and what it measures (default: the attack
    # the metric's registry entry models)
    risk_label: ClassVar[str] = "Privacy risk"
    risk_explanation: ClassVar[str] = ""
    # the GX form of the gate rule kinds this expectation decides like
    # (privgate.gates.rule_kinds.GxForm: "risk", compared by ``compare_to``, or "p_value")
    gx_form: ClassVar[str] = "risk"

    metric_dependencies: ClassVar[Tuple[str, ...]] = (RISK_METRIC,)
    success_keys: ClassVar[Tuple[str, ...]] = (
        "real",
        "threshold",
        "holdout",
        "keys",
        "sensitive",
        "params",
        "seed",
        "column_kinds",
        "paired",
        "compare_to",
        "on",
    )
    args_keys: ClassVar[Tuple[str, ...]] = ("real", "threshold")

    library_metadata: ClassVar[Dict[str, Any]] = {
        "maturity": "experimental",
        "tags": ["privacy", "synthetic data", "privgate"],
        "contributors": ["privgate"],
        "requirements": ["privgate"],
    }

    @classmethod
    def is_abstract(cls) -> bool:
        return cls.__name__ == "PrivacyRiskExpectation" or super().is_abstract()

    @pydantic.validator("compare_to")
    def _compare_to_is_a_rule_quantity(cls, v: Any) -> Any:  # noqa: N805 - pydantic v1 validator
        if v not in gx_quantities():
            raise ValueError(f"compare_to must be one of {', '.join(map(repr, gx_quantities()))}, got {v!r}")
        return v

    @pydantic.validator("real")
    def _real_not_empty(cls, v: Any) -> Any:  # noqa: N805 - pydantic v1 validator
        if isinstance(v, dict):  # a suite parameter, resolved at validation time
            return v
        if not isinstance(v, str) or not v.strip():
            raise ValueError("real must be a file path, 'registry:<name>' or a $PARAMETER")
        return v

    # ----------------------------------------------------------------- metric plumbing
    def _metric_name(self) -> str:
        return self.privgate_metric or ""

    def _metric_value_kwargs(self) -> Dict[str, Any]:
        kw = self._get_success_kwargs()
        return {
            "metric": self._metric_name(),
            "real": kw.get("real"),
            "holdout": kw.get("holdout"),
            "params": kw.get("params") or None,
            "keys": kw.get("keys"),
            "sensitive": kw.get("sensitive"),
            "seed": kw.get("seed") if kw.get("seed") is not None else 0,
            "column_kinds": kw.get("column_kinds"),
            "paired": bool(kw.get("paired")),
            "compare_to": kw.get("compare_to") or "value",
        }

    def get_validation_dependencies(self, execution_engine=None, runtime_configuration=None):
        deps = super().get_validation_dependencies(
            execution_engine=execution_engine, runtime_configuration=runtime_configuration
        )
        base = deps.get_metric_configuration(RISK_METRIC)
        deps.set_metric_configuration(
            metric_name=RISK_METRIC,
            metric_configuration=MetricConfiguration(
                metric_name=RISK_METRIC,
                metric_domain_kwargs=base.metric_domain_kwargs,
                metric_value_kwargs=self._metric_value_kwargs(),
            ),
        )
        return deps

    def _validate(
        self, metrics: Dict, runtime_configuration: Optional[dict] = None, execution_engine=None
    ) -> Dict[str, Any]:
        payload = metrics[RISK_METRIC]
        kw = self._get_success_kwargs()
        thr = self._threshold(kw.get("threshold"))
        compare_to = kw.get("compare_to") or "value"
        on = kw.get("on") or "estimate"
        comparison = self._comparison(payload, compare_to, on)
        compared = comparison.number
        estimate, interval = self._shown(payload, comparison)
        details = {
            "metric": payload["metric"],
            "family": payload["family"],
            "attack": payload["attack"],
            "risk": float(payload[compare_to]),
            "compared": compare_to,
            "on": on,
            "estimate": estimate,
            "value": float(payload["value"]),
            "threshold": thr,
            "raw": payload["raw"],
            "raw_description": payload["raw_description"],
            "per_attribute": payload["per_attribute"],
            "n_real": payload["n_real"],
            "n_synthetic": payload["n_synthetic"],
            "n_holdout": payload["n_holdout"],
            "params": payload["params"],
            "metric_details": payload["details"],
            "per_record_summary": payload["per_record_summary"],
            "real": describe_reference(kw.get("real") or ""),
            "reference": payload["reference"],
            "seconds": payload["seconds"],
        }
        if payload.get("baseline") is not None:
            details["baseline"] = payload["baseline"]
            details["excess"] = payload["excess"]
        # the 95 % intervals and the p-value (None where the metric has none)
        details["value_ci"] = payload.get("ci")
        details["baseline_ci"] = payload.get("baseline_ci")
        details["excess_ci"] = payload.get("excess_ci")
        details["interval"] = interval
        details["p_value"] = payload.get("p_value")
        view = payload.get("release_view")
        if view is not None:
            details["release_view"] = view
            if view["differs"]:
                details["warning"] = release_view_warning(payload["metric"], view)
        return {
            "success": not rules.fires(comparison.kind, compared, thr),
            "result": {"observed_value": compared, "details": details},
        }

    def _threshold(self, threshold: Any) -> float:
        try:
            thr = float(threshold)
        except (TypeError, ValueError):
            raise ParameterError(
                f"{self.expectation_type}: threshold must be a number in [0, 1], got "
                f"{threshold!r} (is the suite parameter supplied?)"
            ) from None
        if math.isnan(thr) or thr < 0.0 or thr > 1.0:
            raise ParameterError(f"{self.expectation_type}: threshold must be in [0, 1], got {thr!r}")
        return thr

    @staticmethod
    def _shown(payload: Dict[str, Any], comparison: "rules.Comparison") -> Tuple[float, Any]:
        """The estimate and 95 % interval the details show: the compared quantity's."""
        field = rule_kind(comparison.kind).interval_field
        return comparison.estimate, payload.get(field) if field is not None else None

    def _rule_kind(self, compare_to: str) -> RuleKind:
        """The gate rule kind this expectation decides like: the kind whose GX form is this
        class's and compares ``compare_to`` (a ``threshold`` rule the value, a ``baseline`` rule
        the excess over the holdout baseline; a ``test`` rule the p-value)."""
        return gx_kind(self.gx_form, compare_to if self.gx_form == "risk" else "value")

    def _comparison(self, payload: Dict[str, Any], compare_to: str, on: str) -> "rules.Comparison":
        """What the gate rule of this expectation compares on the payload
        (:func:`privgate.gates.rules.compare`); a result that lacks it raises (the expectation
        is errored: fails closed, like the gate)."""
        kind = self._rule_kind(compare_to)
        if not kind.has_interval:
            on = kind.default_on
        elif on not in kind.ons:
            raise ParameterError(f"{self.expectation_type}: on must be 'estimate', 'lower' or 'upper', got {on!r}")
        comparison = rules.compare(kind.name, on, payload)
        if comparison.missing is not None and not kind.has_interval:
            raise MetricComputationError(
                f"{self.expectation_type}: the expectation compares the {kind.words} and metric "
                f"{payload['metric']!r} reports none (fails closed)"
            )
        if comparison.missing is not None and comparison.missing == kind.quantity:
            raise MetricComputationError(
                f"{self.expectation_type}: metric {payload['metric']!r} reports no {comparison.missing} (fails closed)"
            )
        if comparison.missing is not None:
            raise MetricComputationError(
                f"{self.expectation_type}: the expectation compares the {on} end of the "
                f"{comparison.quantity}'s 95 % interval and metric {payload['metric']!r} reports no "
                f"{comparison.missing} (fails closed)"
            )
        return comparison

    # ----------------------------------------------------------------------- rendering
    @classmethod
    def _explanation(cls, metric: str) -> str:
        if cls.risk_explanation:
            return cls.risk_explanation
        try:
            from privgate.catalogue import get_metric

            return "attack: " + get_metric(metric).attack.rstrip(".")
        except Exception:  # noqa: BLE001 - unknown metric: the validation shows the error
            return ""

    @classmethod
    def _sentence(cls, kwargs: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
        """Data Docs template and parameters: one readable sentence."""
        metric = cls.privgate_metric or kwargs.get("metric") or "?"
        params: Dict[str, Any] = {
            "metric": metric,
            "threshold": kwargs.get("threshold"),
            "real": describe_reference(kwargs.get("real") or "?"),
        }
        explanation = cls._explanation(metric).replace("$", "")
        if explanation:
            params["explanation"] = explanation
            subject = f"{cls.risk_label} ($metric: $explanation)"
        else:
            subject = f"{cls.risk_label} ($metric)"
        template = cls._claim(subject, kwargs)
        if kwargs.get("sensitive"):
            params["sensitive"] = ", ".join(kwargs["sensitive"])
            template += " Sensitive: $sensitive."
        if kwargs.get("keys"):
            params["keys"] = ", ".join(kwargs["keys"])
            template += " Keys: $keys."
        if kwargs.get("holdout"):
            label = describe_reference(kwargs["holdout"])
            params["holdout"] = label.replace("real data", "holdout")
            template += " Holdout: $holdout."
        if kwargs.get("params"):
            params["params"] = ", ".join(f"{k}={v}" for k, v in sorted(kwargs["params"].items()))
            template += " Parameters: $params."
        return template, params

    @classmethod
    def _claim(cls, subject: str, kwargs: Dict[str, Any]) -> str:
        """The sentence's main clause: what is compared with ``$threshold``, and how."""
        on = kwargs.get("on") or "estimate"
        compare_to = kwargs.get("compare_to") or "value"
        if compare_to not in ("value", "excess"):  # another declared rule kind's quantity
            words = gx_kind("risk", compare_to).words
            what = f"the {words}" if on == "estimate" else f"the {on} end of the 95 % interval of the {words}"
            return (
                f"For the {subject[:1].lower() + subject[1:]} of the synthetic release, {what} must be "
                "at most $threshold, measured against $real."
            )
        excess = kwargs.get("compare_to") == "excess"
        if on == "estimate":
            if excess:
                return (
                    f"{subject} of the synthetic release must exceed the same risk of an "
                    "equally large holdout sample (real people not in the training data) "
                    "by at most $threshold, measured against $real."
                )
            return (
                f"{subject} of the synthetic release must be at most $threshold "
                "(0 = no risk, 1 = no privacy), measured against $real."
            )
        end = f"The {on} end of the 95 % interval of"
        subject = subject[:1].lower() + subject[1:]
        if excess:
            return (
                f"{end} the amount by which the {subject} of the synthetic release exceeds "
                "the same risk of an equally large holdout sample (real people not in the "
                "training data) must be at most $threshold, measured against $real."
            )
        return (
            f"{end} the {subject} of the synthetic release must be at most $threshold "
            "(0 = no risk, 1 = no privacy), measured against $real."
        )

    @classmethod
    def sentence(cls, kwargs: Dict[str, Any]) -> str:
        """The Data Docs sentence as plain text (for logs and tests)."""
        template, params = cls._sentence(kwargs)
        for name in sorted(params, key=len, reverse=True):
            value = params[name]
            if isinstance(value, dict) and "$PARAMETER" in value:
                value = f"$PARAMETER {value['$PARAMETER']}"
            template = template.replace(f"${name}", str(value))
        return template

    @classmethod
    @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
    @render_suite_parameter_string
    def _prescriptive_renderer(cls, configuration=None, result=None, runtime_configuration=None):
        if configuration is None and result is not None:
            configuration = result.expectation_config
        kwargs = dict(configuration.kwargs) if configuration is not None else {}
        template, params = cls._sentence(kwargs)
        styling = runtime_configuration.get("styling", {}) if runtime_configuration else {}
        return [
            RenderedStringTemplateContent(
                content_block_type="string_template",
                string_template={"template": template, "params": params, "styling": styling},
            )
        ]

    @classmethod
    @renderer(renderer_type="renderer.diagnostic.observed_value")
    def _diagnostic_observed_value_renderer(cls, configuration=None, result=None, runtime_configuration=None) -> str:
        if result is None or not result.result:
            return "--"
        observed = result.result.get("observed_value")
        details = result.result.get("details") or {}
        return observed_text(observed, details)


def observed_text(observed: Any, details: Dict[str, Any]) -> str:
    """The observed value as Data Docs shows it: the compared number and what it is."""
    if details.get("compared") == "p_value":
        return f"p-value {_fmt(observed)} (risk {_fmt(details.get('value'))})"
    if details.get("compared") == "excess":
        text = (
            f"excess {_fmt(details.get('estimate', observed))} (risk "
            f"{_fmt(details.get('value'))} − holdout baseline {_fmt(details.get('baseline'))})"
        )
    else:
        text = f"risk {_fmt(details.get('estimate', observed))}"
        if details.get("raw") is not None:
            text += f" (raw {_fmt(details['raw'])})"
    on = details.get("on") or "estimate"
    interval = details.get("interval")
    if on != "estimate" and isinstance(interval, (list, tuple)) and len(interval) == 2:
        text = f"{on} end {_fmt(observed)} of the 95 % interval {_fmt(interval[0])} to {_fmt(interval[1])}; {text}"
    return text


class ExpectSyntheticPrivacyRiskToBeBelow(PrivacyRiskExpectation):
    """Expect the privacy risk of any registered privgate metric to be at most ``threshold``.

    ``metric`` is a registry name (``privgate metrics`` lists them); ``params`` its parameters.
    An unknown name or invalid parameter makes the expectation errored, not failed.
    """

    metric: str
    success_keys: ClassVar[Tuple[str, ...]] = ("metric",) + PrivacyRiskExpectation.success_keys
    args_keys: ClassVar[Tuple[str, ...]] = ("metric", "real", "threshold")

    def _metric_name(self) -> str:
        return str(self._get_success_kwargs().get("metric") or "")


class ExpectSyntheticExactCopyRateToBeBelow(PrivacyRiskExpectation):
    """Exact copies: share of real records (with multiplicity) that appear unchanged in the
    synthetic release (``common_rows``, docs/metrics.md) is at most ``threshold``."""

    privgate_metric: ClassVar[Optional[str]] = "common_rows"
    risk_label: ClassVar[str] = "Exact-copy rate"
    risk_explanation: ClassVar[str] = "the share of real records that appear unchanged in the release"


class ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(PrivacyRiskExpectation):
    """Distance to closest record: risk 1/(1 + mean real→nearest-synthetic distance) in the
    FAMD projection (``dcr``) is at most ``threshold``."""

    privgate_metric: ClassVar[Optional[str]] = "dcr"
    risk_label: ClassVar[str] = "Distance-to-closest-record risk"
    risk_explanation: ClassVar[str] = "1/(1 + mean distance from a real record to its closest synthetic record)"


class ExpectSyntheticAttributeInferenceRiskToBeBelow(PrivacyRiskExpectation):
    """Attribute inference (Yan et al.): weighted accuracy of guessing each ``sensitive`` column
    from the nearest synthetic record on the keys (``attribute_inference``) is at most
    ``threshold``; with several sensitive columns the worst is gated."""

    privgate_metric: ClassVar[Optional[str]] = "attribute_inference"
    risk_label: ClassVar[str] = "Attribute-inference risk"
    risk_explanation: ClassVar[str] = "how often the closest synthetic record on the keys reveals the sensitive value"


class ExpectSyntheticMembershipInferenceRiskToBeBelow(PrivacyRiskExpectation):
    """Membership inference: clip(2·(1 − recall)) of a LightGBM real-vs-synthetic classifier
    (``membership_inference``) is at most ``threshold``."""

    privgate_metric: ClassVar[Optional[str]] = "membership_inference"
    risk_label: ClassVar[str] = "Membership-inference risk"
    risk_explanation: ClassVar[str] = "how poorly a classifier tells real from synthetic records"


class ExpectSyntheticIdentityDisclosureRiskToBeBelow(PrivacyRiskExpectation):
    """Identity disclosure (synthpop): repU/100, the share of real records unique on the keys
    whose key combination is also unique in the synthetic release (``disclosure_identity``),
    is at most ``threshold``."""

    privgate_metric: ClassVar[Optional[str]] = "disclosure_identity"
    risk_label: ClassVar[str] = "Identity-disclosure risk"
    risk_explanation: ClassVar[str] = (
        "repU/100, real records unique on the keys and re-identified by a unique synthetic match"
    )


class ExpectSyntheticAttributeDisclosureRiskToBeBelow(PrivacyRiskExpectation):
    """Attribute disclosure (synthpop): the largest DiSCO/100 over the targets, the share of
    real records whose target is disclosed correctly from the synthetic release
    (``disclosure_attribute``), is at most ``threshold``."""

    privgate_metric: ClassVar[Optional[str]] = "disclosure_attribute"
    risk_label: ClassVar[str] = "Attribute-disclosure risk"
    risk_explanation: ClassVar[str] = "largest DiSCO/100, real records whose target is disclosed correctly"


class ExpectSyntheticPrivacyTestPValueToBeAbove(PrivacyRiskExpectation):
    """Expect the p-value of a privgate metric that is a hypothesis test (e.g. ``memorisation``,
    whose null hypothesis is "the release is no nearer to the training records than to the
    holdout") to be at least ``threshold`` — the GX form of a gate ``test`` rule, which fires
    when the p-value is strictly below its limit.

    ``observed_value`` is the p-value. A metric that reports no p-value makes the expectation
    errored (fails closed, as the gate does). ``compare_to`` must stay ``"value"`` and ``on``
    ``"estimate"``: the p-value has no interval and no holdout baseline.
    """

    metric: str
    success_keys: ClassVar[Tuple[str, ...]] = ("metric",) + PrivacyRiskExpectation.success_keys
    args_keys: ClassVar[Tuple[str, ...]] = ("metric", "real", "threshold")
    gx_form: ClassVar[str] = "p_value"
    risk_label: ClassVar[str] = "Privacy test"

    def _metric_name(self) -> str:
        return str(self._get_success_kwargs().get("metric") or "")

    @pydantic.validator("on")
    def _p_value_has_no_interval(cls, v: Any) -> Any:  # noqa: N805 - pydantic v1 validator
        if v != "estimate":
            raise ValueError("a p-value has no interval: on must be 'estimate'")
        return v

    @pydantic.validator("compare_to")
    def _p_value_has_no_baseline(cls, v: Any) -> Any:  # noqa: N805 - pydantic v1 validator
        if v != "value":
            raise ValueError("a p-value is not compared with a holdout baseline: compare_to must be 'value'")
        return v

    @staticmethod
    def _shown(payload: Dict[str, Any], comparison: "rules.Comparison") -> Tuple[float, Any]:
        """The risk value and its interval (the p-value has none)."""
        return float(payload["value"]), payload.get("ci")

    def _validate(
        self, metrics: Dict, runtime_configuration: Optional[dict] = None, execution_engine=None
    ) -> Dict[str, Any]:
        out = super()._validate(metrics, runtime_configuration, execution_engine)
        out["result"]["details"].update(compared="p_value", on="p_value")
        return out

    @classmethod
    def _claim(cls, subject: str, kwargs: Dict[str, Any]) -> str:
        return (
            f"The p-value of the {subject[:1].lower() + subject[1:]} on the synthetic "
            "release must be at least $threshold (a smaller p-value is evidence of the "
            "leak the test looks for), measured against $real."
        )


#: named expectation class → the privgate metric it is fixed to
NAMED: Dict[str, type] = {
    cls.privgate_metric: cls  # type: ignore[misc]
    for cls in (
        ExpectSyntheticExactCopyRateToBeBelow,
        ExpectSyntheticDistanceToClosestRecordRiskToBeBelow,
        ExpectSyntheticAttributeInferenceRiskToBeBelow,
        ExpectSyntheticMembershipInferenceRiskToBeBelow,
        ExpectSyntheticIdentityDisclosureRiskToBeBelow,
        ExpectSyntheticAttributeDisclosureRiskToBeBelow,
    )
}

ALL_EXPECTATIONS: Tuple[type, ...] = (
    ExpectSyntheticPrivacyRiskToBeBelow,
    ExpectSyntheticPrivacyTestPValueToBeAbove,
    *NAMED.values(),
)
