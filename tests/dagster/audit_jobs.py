"""Code the multiprocess executor's step processes load (tests/dagster/test_dagster_audit.py): a
small generator audit (two chunks of eight runs) with its settings from the environment
(PRIVGATE_WORK_DIR, PRIVGATE_REPORTS_DIR, PRIVGATE_STORAGE_DIR), run by Dagster's multiprocess
executor (a spawned process per step, as in production).

Fault injection for the test of a run step that dies: while the file PRIVGATE_TEST_KILL_FILE
exists, the generator run with seed PRIVGATE_TEST_KILL_SEED deletes it and ends its process with
os._exit (as an OOM-killed pod would), before the step writes anything."""

from __future__ import annotations

import os

import polars as pl

from privgate.dagster.audit_example import EXAMPLE_DOMAIN, LaplaceHistogram, example_real

AUDIT = "tiny_audit"
JOB = "tiny_audit_job"
VERSION = "v1"


class _DyingOnce:
    """The audited generator, dying once on the run of seed $PRIVGATE_TEST_KILL_SEED."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __call__(self, training, n_rows, seed):
        marker = os.environ.get("PRIVGATE_TEST_KILL_FILE")
        if marker and str(seed) == os.environ.get("PRIVGATE_TEST_KILL_SEED") and os.path.exists(marker):
            os.unlink(marker)
            os._exit(17)
        return self.inner(training, n_rows, seed)


GENERATOR = LaplaceHistogram(1.0, EXAMPLE_DOMAIN)
SETTINGS = dict(claimed_epsilon=1.0, design="shared", runs=16, n_targets=3, training_rows=200, seed=5)
CHUNK = 8


def tiny_real() -> pl.DataFrame:
    """600 records of the example's three categorical columns."""
    return example_real().head(600)


def copying(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """A generator that releases its training records (no privacy at all)."""
    return training


def audit_definitions(executor=None):
    import dagster as dg

    from privgate.dagster import PrivgateResource, build_generator_audit

    audit = build_generator_audit(
        AUDIT,
        generate=_DyingOnce(GENERATOR),
        real=tiny_real,
        chunk_size=CHUNK,
        versions=[VERSION],
        generator_name="tiny",
        run_threads=1,
        **SETTINGS,
    )
    job = dg.define_asset_job(JOB, selection=dg.AssetSelection.assets(audit))
    return dg.Definitions(
        assets=[audit],
        jobs=[job],
        resources={
            "privgate": PrivgateResource(
                real_path="unused",
                work_dir=os.environ["PRIVGATE_WORK_DIR"],
                reports_dir=os.environ["PRIVGATE_REPORTS_DIR"],
            ),
            "io_manager": dg.FilesystemIOManager(base_dir=os.environ["PRIVGATE_STORAGE_DIR"]),
        },
        executor=executor or dg.multiprocess_executor.configured({"max_concurrent": 2}),
    )


def audit_job():
    return audit_definitions().resolve_job_def(JOB)
