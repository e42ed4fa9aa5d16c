"""Fixtures for the Dagster integration tests: a small example on the bundled Adult sample.

Real data: the first 600 rows of ``privgate/data/adult_sample.parquet``. Releases (300 rows):

- ``r-pass``: every column permuted independently (seeded) -- the joint rows are new, so
  (almost surely) no real record is copied: common_rows = 0;
- ``r-warn``: 270 permuted rows + 30 exact copies of real rows: common_rows = 30/600 = 0.05,
  over the warn limit 0.02, under the block limit 0.3;
- ``r-block``: 300 exact copies of real rows: common_rows = 300/600 = 0.5 > 0.3 (block).

The test gate configuration keeps the runs fast: three distance metrics on 600 × 300 rows.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "privgate" / "data" / "adult_sample.parquet"

GATE_YAML = """\
version: 1
dataset: dagster-test
seed: 0
metrics:
  common_rows:
    threshold: {warn: 0.02, block: 0.3}
  hitting_rate:
    threshold: {max: 0.95, severity: block}
  authenticity:
    trend: {warn: 0.5}
"""

RELEASES = ("r-pass", "r-warn", "r-block")


def permuted(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Each column shuffled independently with its own seed (keeps marginals, breaks rows)."""
    return pl.DataFrame(
        {c: frame[c].sample(fraction=1.0, shuffle=True, seed=seed + i) for i, c in enumerate(frame.columns)}
    )


def release_frames(real: pl.DataFrame) -> dict[str, pl.DataFrame]:
    base = permuted(real, 11).head(300)
    return {
        "r-pass": base,
        "r-warn": pl.concat([base.head(270), real.head(30)]),
        "r-block": real.head(300),
    }


@pytest.fixture(scope="session")
def real_frame() -> pl.DataFrame:
    if not SAMPLE.exists():
        pytest.skip(f"bundled example data missing: {SAMPLE}")
    return pl.read_parquet(SAMPLE).head(600)


def make_example(tmp_path: Path, real_frame: pl.DataFrame) -> dict[str, Path]:
    """A data root with real.parquet, releases/{r-pass,r-warn,r-block}.parquet, a gate config
    and a SQLite history URL; returns the paths."""
    root = tmp_path / "data"
    (root / "releases").mkdir(parents=True)
    real_frame.write_parquet(root / "real.parquet")
    for rid, frame in release_frames(real_frame).items():
        frame.write_parquet(root / "releases" / f"{rid}.parquet")
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE_YAML, encoding="utf-8")
    return {"root": root, "gate": gate, "history": tmp_path / "history.sqlite"}


@pytest.fixture
def example(tmp_path: Path, real_frame: pl.DataFrame) -> dict[str, Path]:
    return make_example(tmp_path, real_frame)


def make_defs(example: dict[str, Path]):
    from privgate.dagster.definitions import build_definitions

    return build_definitions(
        data_dir=example["root"],
        gate_config=example["gate"],
        history_url=f"sqlite:///{example['history']}",
        executor="in_process",
        sensor_settle_seconds=0,
        env={},
    )


@pytest.fixture
def defs(example):
    return make_defs(example)


@contextlib.contextmanager
def fast_instance():
    """A Dagster test instance; its SQLite storage lives in /dev/shm when there is one (the
    event log does many small synced writes, which are slow on a busy disk)."""
    import shutil
    import tempfile

    import dagster as dg

    shm = Path("/dev/shm")
    temp_dir = tempfile.mkdtemp(prefix="privgate-dagster-", dir=shm if shm.is_dir() else None)
    try:
        with dg.instance_for_test(temp_dir=temp_dir) as inst:
            yield inst
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def instance():
    with fast_instance() as inst:
        yield inst


def run_release(defs, instance, release_id: str, job: str = "evaluate_release"):
    """Add the partition and run ``job`` for it in process; returns the result (not raising)."""
    instance.add_dynamic_partitions("releases", [release_id])
    return defs.resolve_job_def(job).execute_in_process(
        instance=instance, partition_key=release_id, raise_on_error=False
    )


@pytest.fixture(scope="module")
def three(tmp_path_factory, real_frame):
    """The three example releases run once through the release job on one instance; the
    tests read the results (keeps the pipeline tests to a handful of gate runs)."""
    example = make_example(tmp_path_factory.mktemp("three"), real_frame)
    defs = make_defs(example)
    with fast_instance() as inst:
        results = {rid: run_release(defs, inst, rid) for rid in RELEASES}
        yield {"example": example, "defs": defs, "instance": inst, "results": results}
