"""A sensor on the watched releases directory: a new release file adds a partition and requests
the run that evaluates (and, if it passes, publishes) it.

A file ``<release id>.<suffix>`` (a suffix :func:`privgate.io.load_frame` reads) is a release.
Hidden files (``.name``), ``*.tmp`` / ``*.part`` files and files modified less than
``settle_seconds`` ago are ignored, so a generator that writes in place is not picked up half
written (writing to a temporary name and renaming is better still). A release id is evaluated
once: its run key is ``release:<id>``; re-evaluations come from the schedule. Release files are
expected to be immutable -- a changed file under an existing id is not re-requested (the
publish step refuses a release whose content differs from the evaluated one).
"""

import time
from typing import Any, Sequence

import dagster as dg

from .data_locations import DataLocations
from .partitions import RELEASES_PARTITIONS_NAME, releases_partitions


def build_releases_sensor(
    job: Any,
    *,
    name: str = "new_release_sensor",
    minimum_interval_seconds: int = 30,
    settle_seconds: float = 5.0,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
    asset_selection: Sequence[dg.AssetKey] | None = None,
    asset_check_keys: Sequence[dg.AssetCheckKey] | None = None,
) -> dg.SensorDefinition:
    """The sensor that turns new files in ``DataLocations.releases_dir`` into partitions + runs.

    ``asset_selection`` / ``asset_check_keys``: what each run executes (default: the whole job);
    the bundled Definitions leave out the checks of rules that do not apply (see
    :func:`privgate.dagster.build_checks.applicable_check_keys`)."""

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=(
            "Watches the releases directory; every new release file becomes a "
            "partition of the release assets and a run of the gate."
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext, locations: DataLocations):
        files, skipped = locations.release_files()
        if skipped:
            context.log.warning(
                f"ignored {len(skipped)} file(s) in {locations.releases_dir} that are not usable "
                f"releases (suffix, name or duplicate id): {', '.join(sorted(skipped)[:10])}"
            )
        existing = set(context.instance.get_dynamic_partitions(RELEASES_PARTITIONS_NAME))
        now = time.time()
        new: list[str] = []
        for release_id, path in sorted(files.items(), key=lambda kv: (kv[1].stat().st_mtime, kv[0])):
            if release_id in existing:
                continue
            if now - path.stat().st_mtime < settle_seconds:
                continue  # still being written; next tick
            new.append(release_id)
        if not new:
            return dg.SkipReason(f"no new release in {locations.releases_dir} ({len(files)} known release file(s))")
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    partition_key=rid,
                    run_key=f"release:{rid}",
                    tags={"privgate/release": rid, "privgate/trigger": "new_release"},
                    **_selection(asset_selection, asset_check_keys),
                )
                for rid in new
            ],
            dynamic_partitions_requests=[releases_partitions.build_add_request(new)],
        )

    return _sensor


def _selection(assets: Sequence[dg.AssetKey] | None, checks: Sequence[dg.AssetCheckKey] | None) -> dict[str, Any]:
    if assets is None:
        return {}
    return {"asset_selection": list(assets), "asset_check_keys": list(checks or [])}
