"""Periodic re-evaluation of the latest releases.

Scores change when privgate, its metrics or the gate configuration change; the schedule re-runs
the privacy evaluation (and its checks, which record a new history row each) of the most recent
``latest`` releases so the history and the UI reflect the current gate. It does not publish or
unpublish anything: a release that now fails shows a failed check and a ``block`` row in the
history, for people to act on.
"""

from datetime import datetime, timezone
from typing import Any

import dagster as dg

from .partitions import RELEASES_PARTITIONS_NAME
from .sensors import _selection


def build_reevaluation_schedule(
    job: Any,
    *,
    name: str = "reevaluation_schedule",
    cron_schedule: str = "0 3 * * *",
    latest: int = 5,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
    asset_selection: Any = None,
    asset_check_keys: Any = None,
) -> dg.ScheduleDefinition:
    """Re-run the evaluation of the ``latest`` most recently added releases on ``cron_schedule``."""
    if latest < 1:
        raise ValueError(f"latest must be at least 1, got {latest}")

    @dg.schedule(
        name=name,
        job=job,
        cron_schedule=cron_schedule,
        default_status=default_status,
        description=f"Re-evaluates the {latest} most recently added releases.",
    )
    def _schedule(context: dg.ScheduleEvaluationContext):
        keys = list(context.instance.get_dynamic_partitions(RELEASES_PARTITIONS_NAME))
        if not keys:
            return dg.SkipReason("no release partitions yet")
        try:
            when = context.scheduled_execution_time
        except Exception:  # noqa: BLE001 - a manual test tick has no scheduled time
            when = None
        stamp = (when or datetime.now(timezone.utc)).isoformat()
        return [
            dg.RunRequest(
                partition_key=rid,
                run_key=f"reevaluate:{rid}:{stamp}",
                tags={"privgate/release": rid, "privgate/trigger": "reevaluation"},
                **_selection(asset_selection, asset_check_keys),
            )
            for rid in keys[-latest:]
        ]

    return _schedule
