import dagster as dg
import polars as pl

from privgate.dagster import PrivgateResource, build_audit_required_check, build_generator_audit

GENERATOR_VERSION = "2.3"


def generate(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Your generator: train on `training`, return `n_rows` synthetic records (here: a leaky resampler)."""
    return training.sample(n_rows, with_replacement=True, seed=seed)


@dg.asset
def customers() -> pl.DataFrame:
    return pl.read_parquet("customers.parquet")


@dg.asset(deps=[customers])
def synthetic_customers() -> dg.Output[pl.DataFrame]:
    release = generate(pl.read_parquet("customers.parquet"), 1000, seed=1)
    return dg.Output(release, metadata={"generator_version": GENERATOR_VERSION})


generator_audit = build_generator_audit(
    "generator_audit", generate=generate, real=customers.key, claimed_epsilon=1.0, runs=200, chunk_size=50
)

defs = dg.Definitions(
    assets=[customers, synthetic_customers, generator_audit],
    asset_checks=[build_audit_required_check(synthetic_customers, generator_audit, "generator_version")],
    resources={"privgate": PrivgateResource(real_path="customers.parquet", work_dir="work", reports_dir="reports")},
)
