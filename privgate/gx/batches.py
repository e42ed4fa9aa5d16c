"""Getting a synthetic release into GX.

- In memory: GX 1.24's dataframe path is its pandas data source (its only other dataframe
  source is Spark; there is no Polars one), so Polars frames go through Arrow to pandas with
  Arrow-backed dtypes (lossless: integer columns with nulls stay integers, strings stay strings;
  the Arrow buffers are shared, not copied); the metric turns the batch back into Polars.
  pandas frames are used as they are.
- In a database: :func:`sql_batch_definition` makes a GX SQL data source (PostgreSQL or any
  SQLAlchemy URL) with a table asset; the privacy metric reads the batch into Polars once.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

DEFAULT_SOURCE = "privgate"
DEFAULT_ASSET = "synthetic_release"
DEFAULT_BATCH_DEFINITION = "whole_release"


def to_pandas_batch(data: Any):
    """A pandas DataFrame GX can validate, from Polars (DataFrame / LazyFrame), pyarrow,
    pandas or a file path."""
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from privgate.io import load_frame

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, pl.LazyFrame):
        data = data.collect()
    if isinstance(data, pa.Table):
        return data.to_pandas(types_mapper=pd.ArrowDtype)
    if not isinstance(data, pl.DataFrame):
        data = load_frame(data, role="synthetic")
    return data.to_pandas(use_pyarrow_extension_array=True)


def batch_definition(
    context: Any, *, data_source: str = DEFAULT_SOURCE, asset: str = DEFAULT_ASSET, name: str = DEFAULT_BATCH_DEFINITION
):
    """The whole-dataframe batch definition ``data_source/asset/name`` of ``context``, created
    when missing (pandas data source, dataframe asset)."""
    try:
        source = context.data_sources.get(data_source)
    except Exception:  # noqa: BLE001 - GX raises its own not-found errors
        source = context.data_sources.add_pandas(data_source)
    try:
        df_asset = source.get_asset(asset)
    except Exception:  # noqa: BLE001 - LookupError subclass in GX
        df_asset = source.add_dataframe_asset(asset)
    try:
        return df_asset.get_batch_definition(name)
    except Exception:  # noqa: BLE001
        return df_asset.add_batch_definition_whole_dataframe(name)


def get_batch(context: Any, synthetic: Any, **names: str):
    """A GX batch of the synthetic release (any frame type :func:`to_pandas_batch` takes)."""
    bd = batch_definition(context, **names)
    return bd.get_batch(batch_parameters={"dataframe": to_pandas_batch(synthetic)})


def validate_release(
    synthetic: Any,
    expectations: Any,
    *,
    context: Any = None,
    expectation_parameters: Mapping[str, Any] | None = None,
    result_format: Any = "SUMMARY",
    **names: str,
):
    """Validate a synthetic release against one expectation, a list of them, or a suite.

    Uses an ephemeral GX context when none is given. Returns the GX validation result
    (an ``ExpectationValidationResult`` for one expectation, an
    ``ExpectationSuiteValidationResult`` otherwise).
    """
    import great_expectations as gx

    if context is None:
        context = gx.get_context(mode="ephemeral")
    if isinstance(expectations, (list, tuple)):
        # copies: GX refuses expectations that already belong to a suite
        expectations = gx.ExpectationSuite(name="privgate_release", expectations=[copy.copy(e) for e in expectations])
    batch = get_batch(context, synthetic, **names)
    return batch.validate(
        expectations,
        expectation_parameters=dict(expectation_parameters or {}) or None,
        result_format=result_format,
    )


def sql_batch_definition(
    context: Any,
    connection_string: str,
    table_name: str,
    *,
    schema_name: str | None = None,
    data_source: str = "privgate_sql",
    asset: str | None = None,
    name: str = DEFAULT_BATCH_DEFINITION,
):
    """The whole-table batch definition of ``table_name`` in the database at
    ``connection_string`` (a SQLAlchemy URL; ``postgresql://...`` — mapped to the installed
    driver by :func:`privgate.dburl.sqlalchemy_url`, an error naming ``privgate[gx,postgres]``
    when none is — uses GX's PostgreSQL data source, anything else its generic SQL one), created
    when missing."""
    from ..dburl import sqlalchemy_url
    from ..errors import InputError

    connection_string = sqlalchemy_url(connection_string, extra="gx,postgres", error=InputError)
    try:
        source = context.data_sources.get(data_source)
    except Exception:  # noqa: BLE001 - GX raises its own not-found errors
        if connection_string.startswith("postgresql"):
            source = context.data_sources.add_postgres(data_source, connection_string=connection_string)
        else:
            source = context.data_sources.add_sql(data_source, connection_string=connection_string)
    asset_name = asset or table_name
    try:
        table = source.get_asset(asset_name)
    except Exception:  # noqa: BLE001
        extra = {"schema_name": schema_name} if schema_name else {}
        table = source.add_table_asset(asset_name, table_name=table_name, **extra)
    try:
        return table.get_batch_definition(name)
    except Exception:  # noqa: BLE001
        return table.add_batch_definition_whole_table(name)


def validate_table(
    connection_string: str,
    table_name: str,
    expectations: Any,
    *,
    context: Any = None,
    schema_name: str | None = None,
    expectation_parameters: Mapping[str, Any] | None = None,
    result_format: Any = "SUMMARY",
):
    """:func:`validate_release` for a release stored in a database table."""
    import great_expectations as gx

    if context is None:
        context = gx.get_context(mode="ephemeral")
    if isinstance(expectations, (list, tuple)):
        expectations = gx.ExpectationSuite(name="privgate_release", expectations=[copy.copy(e) for e in expectations])
    bd = sql_batch_definition(context, connection_string, table_name, schema_name=schema_name)
    return bd.get_batch().validate(
        expectations, expectation_parameters=dict(expectation_parameters or {}) or None, result_format=result_format
    )
