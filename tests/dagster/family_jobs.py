"""Code the multiprocess executor's step processes load (tests/dagster/test_dagster_family.py):
the bundled Definitions with evaluation by metric family, configured from the environment
(PRIVGATE_EXECUTOR=multiprocess: a spawned process per step, as in production).

Fault injection for the test of a step that dies: with PRIVGATE_TEST_KILL_STEP=<metric>, the
family step that evaluates that metric ends its process with os._exit (as an OOM-killed pod
would), before writing anything."""

from __future__ import annotations

import os

import privgate.gates as gates
from privgate.dagster.definitions import build_definitions

_KILL = os.environ.get("PRIVGATE_TEST_KILL_STEP")
if _KILL:
    _real = gates.evaluate_for_gate

    def _dying(config, *args, metrics=None, **kwargs):
        if metrics and _KILL in metrics:
            os._exit(17)
        return _real(config, *args, metrics=metrics, **kwargs)

    gates.evaluate_for_gate = _dying


CHECKS_JOB = "release_checks"


def release_checks_job():
    """Only the release's checks (its value already stored by an earlier run): the fewest step
    processes -- the families and the join -- for a test that pays a Python start-up per step."""
    import dagster as dg

    from privgate.dagster.assets import synthetic_release

    defs = build_definitions()
    checks = dg.define_asset_job(CHECKS_JOB, selection=dg.AssetSelection.checks_for_assets(synthetic_release))
    return dg.Definitions.merge(defs, dg.Definitions(jobs=[checks])).resolve_job_def(CHECKS_JOB)
