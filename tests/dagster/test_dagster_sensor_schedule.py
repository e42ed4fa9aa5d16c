"""The release sensor (build_sensor_context) and the re-evaluation schedule."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

import dagster as dg
import polars as pl
import pytest

from privgate.dagster.data_locations import DataLocations
from privgate.dagster.definitions import EVALUATE_JOB, REEVALUATE_JOB


def _locations(example) -> DataLocations:
    root = example["root"]
    return DataLocations(releases_dir=str(root / "releases"), publish_dir=str(root / "published"))


def _tick(defs, instance, example, cursor=None):
    sensor = defs.resolve_sensor_def("new_release_sensor")
    ctx = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"locations": _locations(example)}, definitions=defs
    )
    return sensor(ctx)


def test_sensor_adds_partitions_and_requests_runs_for_new_files(defs, example, instance):
    result = _tick(defs, instance, example)
    assert isinstance(result, dg.SensorResult)
    keys = sorted(r.partition_key for r in result.run_requests)
    assert keys == ["r-block", "r-pass", "r-warn"]
    assert {r.run_key for r in result.run_requests} == {f"release:{k}" for k in keys}
    (add,) = result.dynamic_partitions_requests
    assert add.partitions_def_name == "releases" and sorted(add.partition_keys) == keys
    assert defs.resolve_sensor_def("new_release_sensor").job_name == EVALUATE_JOB
    # once the partitions exist (the daemon applies the request), nothing new is requested
    instance.add_dynamic_partitions("releases", keys)
    again = _tick(defs, instance, example)
    assert isinstance(again, dg.SkipReason)
    # a new release file is picked up on the next tick, and only it
    pl.read_parquet(example["root"] / "releases" / "r-pass.parquet").write_parquet(
        example["root"] / "releases" / "r-new.parquet"
    )
    third = _tick(defs, instance, example)
    assert [r.partition_key for r in third.run_requests] == ["r-new"]


def test_sensor_ignores_temporary_unusable_and_ambiguous_files(defs, example, instance):
    releases = example["root"] / "releases"
    for p in releases.iterdir():
        p.unlink()
    frame = pl.DataFrame({"a": [1.0, 2.0]})
    frame.write_parquet(releases / ".hidden.parquet")  # hidden
    frame.write_parquet(releases / "half.parquet.tmp")  # being written
    (releases / "notes.txt").write_text("x")  # unsupported suffix
    frame.write_parquet(releases / "bad name!.parquet")  # id not usable as a partition key
    frame.write_parquet(releases / "twice.parquet")  # one id, two files
    frame.write_csv(releases / "twice.csv")
    frame.write_parquet(releases / "ok_1.parquet")
    result = _tick(defs, instance, example)
    assert [r.partition_key for r in result.run_requests] == ["ok_1"]


def test_sensor_waits_until_a_file_has_settled(example, instance):
    from privgate.dagster.definitions import build_definitions

    defs = build_definitions(
        data_dir=example["root"], gate_config=example["gate"], executor="in_process", sensor_settle_seconds=60, env={}
    )
    # files just written are younger than 60 s: skipped this tick
    assert isinstance(_tick(defs, instance, example), dg.SkipReason)
    old = time.time() - 120
    os.utime(example["root"] / "releases" / "r-pass.parquet", (old, old))
    result = _tick(defs, instance, example)
    assert [r.partition_key for r in result.run_requests] == ["r-pass"]


def test_sensor_on_missing_directory_skips(defs, example, instance, tmp_path):
    sensor = defs.resolve_sensor_def("new_release_sensor")
    loc = DataLocations(releases_dir=str(tmp_path / "nope"), publish_dir="p")
    result = sensor(dg.build_sensor_context(instance=instance, resources={"locations": loc}, definitions=defs))
    assert isinstance(result, dg.SkipReason)
    assert result.skip_message == f"no new release in {tmp_path / 'nope'} (0 known release file(s))"


def test_reevaluation_schedule_requests_the_latest_releases(defs, instance):
    schedule = defs.resolve_schedule_def("reevaluation_schedule")
    assert schedule.job_name == REEVALUATE_JOB
    assert schedule.cron_schedule == "0 3 * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    repo = defs.get_repository_def()
    ctx = dg.build_schedule_context(instance=instance, repository_def=repo)
    assert schedule.evaluate_tick(ctx).skip_message == "no release partitions yet"
    keys = [f"r{i}" for i in range(7)]
    instance.add_dynamic_partitions("releases", keys)
    when = datetime(2026, 11, 21, 3, 0, tzinfo=timezone.utc)
    data = schedule.evaluate_tick(
        dg.build_schedule_context(instance=instance, scheduled_execution_time=when, repository_def=repo)
    )
    # default: the 5 most recently added releases
    assert [r.partition_key for r in data.run_requests] == keys[-5:]
    assert all(r.tags["privgate/trigger"] == "reevaluation" for r in data.run_requests)
    assert data.run_requests[0].run_key == f"reevaluate:r2:{when.isoformat()}"


def test_release_ids_that_are_not_file_names_are_refused(example):
    from privgate.errors import InputError

    loc = _locations(example)
    assert loc.release_file("r-pass").name == "r-pass.parquet"
    for bad in ("../real", "a/b", "", ".hidden", "x" * 200):
        with pytest.raises(InputError, match="not usable as a partition key"):
            loc.release_file(bad)
        with pytest.raises(InputError):
            loc.publish_path(bad)
