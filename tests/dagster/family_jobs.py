"""Code the multiprocess executor's step processes load (tests/dagster/test_dagster_family.py):
the bundled Definitions with evaluation by metric family, configured from the environment
(PRIVGATE_EXECUTOR=multiprocess: a spawned process per step, as in production).

Fault injection for the test of a step that dies: with PRIVGATE_TEST_KILL_STEP=<metric>, the
family step that evaluates that metric ends its process with os._exit (as an OOM-killed pod
would), before writing anything."""

from __future__ import annotations

import os

import privgate.gates as gates
from privgate.dagster.definitions import REEVALUATE_JOB, build_definitions

_KILL = os.environ.get("PRIVGATE_TEST_KILL_STEP")
if _KILL:
    _real = gates.evaluate_for_gate

    def _dying(config, *args, metrics=None, **kwargs):
        if metrics and _KILL in metrics:
            os._exit(17)
        return _real(config, *args, metrics=metrics, **kwargs)

    gates.evaluate_for_gate = _dying


def reevaluate_release_job():
    """The release's checks without publication: the fewest step processes (release, families,
    join) for a test that pays a Python start-up per step."""
    return build_definitions().resolve_job_def(REEVALUATE_JOB)
