import dagster as dg
import polars as pl

from privgate.dagster import PrivgateResource, build_privgate_checks, build_privgate_scorecards


@dg.asset
def synthetic_customers() -> pl.DataFrame:  # your generator's output (Polars, pandas, Arrow or a path)
    return pl.read_parquet("synthetic_customers.parquet")


defs = dg.Definitions(
    assets=[synthetic_customers, *build_privgate_scorecards(assets=[synthetic_customers])],
    asset_checks=build_privgate_checks(assets=[synthetic_customers]),
    resources={"privgate": PrivgateResource(real_path="customers.parquet")},
)
