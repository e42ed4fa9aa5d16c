"""The latest release's checks, as the Dagster UI shows them: after a blocked release and then an
honest one, the latest-release view's check list says passed (the honest release's), the release
asset keeps each partition's own results, and re-gating the older, blocked partition does not move
the view back. Asserted through Dagster's own API (the latest check execution records the UI
reads, and the materialisation that names the release)."""

import shutil
import tempfile
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from privgate.dagster import (
    PrivgateResource,
    build_privgate_checks,
    build_privgate_latest_release,
    build_privgate_scorecards,
)
from privgate.dagster.check_body import CheckTarget, gate_config_of
from privgate.dagster.latest_report import replay_newest
from privgate.dagster.translator import PrivgateTranslator

GATE = """\
version: 1
dataset: latest
metrics:
  common_rows:
    threshold: {warn: 0.02, block: 0.3}
  hitting_rate:
    threshold: {block: 0.95}
"""
RELEASES = ["2026-01-copy", "2026-02-honest", "2026-03-later"]


def permuted(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    return pl.DataFrame(
        {c: frame[c].sample(fraction=1.0, shuffle=True, seed=seed + i) for i, c in enumerate(frame.columns)}
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory, real_frame):
    tmp = tmp_path_factory.mktemp("latest")
    real = tmp / "real.parquet"
    real_frame.write_parquet(real)
    (tmp / "gate.yaml").write_text(GATE)
    parts = dg.StaticPartitionsDefinition(RELEASES)

    @dg.asset(partitions_def=parts)
    def monthly_release(context: dg.AssetExecutionContext) -> pl.DataFrame:
        if context.partition_key.endswith("copy"):
            return real_frame.head(300)  # an exact copy: blocked
        return permuted(real_frame, 7).head(300)

    resource = PrivgateResource(real_path=str(real), history_url=f"sqlite:///{tmp / 'h.sqlite'}")
    defs = dg.Definitions(
        assets=[
            monthly_release,
            *build_privgate_scorecards(assets=[monthly_release]),
            *build_privgate_latest_release(assets=[monthly_release], gate_config=tmp / "gate.yaml"),
        ],
        asset_checks=build_privgate_checks(assets=[monthly_release], gate_config=tmp / "gate.yaml"),
        resources={"privgate": resource},
    )
    shm = Path("/dev/shm")
    temp_dir = tempfile.mkdtemp(prefix="privgate-latest-", dir=shm if shm.is_dir() else None)
    try:
        with dg.instance_for_test(temp_dir=temp_dir) as instance:
            yield {
                "defs": defs,
                "instance": instance,
                "asset": monthly_release,
                "resource": resource,
                "gate": tmp / "gate.yaml",
            }
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def _statuses(instance, key: dg.AssetKey, names) -> dict[str, str]:
    records = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(key, n) for n in names]
    )
    return {k.name: r.status.value for k, r in records.items()}


def _shown(instance, view):
    event = instance.get_latest_materialization_event(view)
    return event.asset_materialization.metadata["release"].value


def test_the_view_shows_the_latest_release_checks(world):
    inst, defs, asset = world["instance"], world["defs"], world["asset"]
    job = defs.resolve_implicit_global_asset_job_def()
    view = PrivgateTranslator().get_asset_key({"kind": "latest_release", "asset_key": asset.key})
    names = [
        "gate_decision",
        "common_rows__threshold_warn",
        "common_rows__threshold_block",
        "hitting_rate__threshold_block",
    ]
    assert {k.name for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key == view} == set(names)

    blocked = job.execute_in_process(instance=inst, partition_key=RELEASES[0], raise_on_error=False)
    assert not blocked.success
    assert _shown(inst, view) == RELEASES[0]
    after_block = _statuses(inst, view, names)
    assert after_block["gate_decision"] == "FAILED" and after_block["common_rows__threshold_block"] == "FAILED"

    honest = job.execute_in_process(instance=inst, partition_key=RELEASES[1], raise_on_error=False)
    assert honest.success
    assert _shown(inst, view) == RELEASES[1]
    assert _statuses(inst, view, names) == {n: "SUCCEEDED" for n in names}
    # the release asset keeps each release's own result per partition
    by_partition = {
        (e.partition, e.check_name): e.passed for r in (blocked, honest) for e in r.get_asset_check_evaluations()
    }
    assert by_partition[(RELEASES[0], "gate_decision")] is False
    assert by_partition[(RELEASES[1], "gate_decision")] is True

    # re-gating the older, blocked partition does not move the view back
    job.execute_in_process(instance=inst, partition_key=RELEASES[0], raise_on_error=False)
    assert _shown(inst, view) == RELEASES[1]
    assert _statuses(inst, view, names) == {n: "SUCCEEDED" for n in names}

    # executed alone, the view's checks replay the newest recorded release from the history
    target = CheckTarget.of(asset, gate_config_of(world["gate"]), "privgate", PrivgateTranslator())
    outcome = replay_newest(world["resource"], target)
    assert outcome.release_id == RELEASES[1] and str(outcome.decision) == "pass"
    results = {r.check_name: r.passed for r in target.results(outcome, {})}
    assert results == {n: True for n in names}
