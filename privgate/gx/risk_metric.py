"""The GX table metric ``table.privgate.privacy_risk``: the computation behind every privgate
expectation. It hands the batch (a pandas frame, or a SQL table or query read once into Polars)
to :func:`privgate.gx.compute.compute_risk` as the synthetic release, with the metric, the
reference data and the parameters the expectation passes as metric value kwargs
(:data:`VALUE_KEYS`).

Importing this module imports GX and registers the metric with GX's registry (defining a
``TableMetricProvider`` subclass does). The expectation classes that read it are
:mod:`privgate.gx.core`, which imports this module.
"""

from __future__ import annotations

from typing import Any, Dict

from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import PandasExecutionEngine, SqlAlchemyExecutionEngine
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider

from privgate.gates.rule_kinds import gx_kind

from .compute import compute_risk

RISK_METRIC = "table.privgate.privacy_risk"
VALUE_KEYS = (
    "metric",
    "real",
    "holdout",
    "params",
    "keys",
    "sensitive",
    "seed",
    "column_kinds",
    "paired",
    "compare_to",
)


class TablePrivgatePrivacyRisk(TableMetricProvider):
    """GX table metric: one privgate metric with the batch as the synthetic release."""

    metric_name = RISK_METRIC
    value_keys = VALUE_KEYS

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
        df, _, _ = execution_engine.get_compute_domain(metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE)
        return _risk(df, metric_value_kwargs)

    @metric_value(engine=SqlAlchemyExecutionEngine)
    def _sqlalchemy(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
        # a SQL table or query asset: the whole batch is read once into Polars (the metrics
        # compare every synthetic record with the real data; nothing is computed in SQL)
        selectable, _, _ = execution_engine.get_compute_domain(
            metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
        return _risk(sql_batch_frame(execution_engine.engine, selectable), metric_value_kwargs)


def sql_batch_frame(engine: Any, selectable: Any):
    """Every row of a GX SQL batch (a table or a query) as a Polars DataFrame."""
    import polars as pl
    import sqlalchemy as sa

    if isinstance(selectable, sa.sql.expression.TextClause):
        stmt: Any = selectable
    else:
        if not isinstance(selectable, sa.sql.expression.FromClause):
            selectable = selectable.subquery()
        stmt = sa.select(sa.text("*")).select_from(selectable)
    with engine.connect() as conn:
        return pl.read_database(stmt, connection=conn, infer_schema_length=None)


def _risk(batch: Any, metric_value_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    kw = {k: metric_value_kwargs.get(k) for k in VALUE_KEYS}
    return compute_risk(
        batch,
        metric=kw["metric"],
        real=kw["real"],
        holdout=kw["holdout"],
        params=kw["params"],
        keys=kw["keys"],
        sensitive=kw["sensitive"],
        seed=kw["seed"] if kw["seed"] is not None else 0,
        schema=kw["column_kinds"],
        paired=bool(kw["paired"]),
        baseline=gx_kind("risk", kw["compare_to"] or "value").needs_holdout,
    )
