"""Timing of privgate's Dagster release job on the bundled example (not a test).

Runs the three demo releases (pass / warn / block) of the bundled Adult sample through the
``evaluate_release`` job in process, with the shipped default gate configuration and the bundled
holdout, on a temporary Dagster instance; prints, per release, the wall time of the Dagster run,
the time the gate itself took (from the outcome recorded in the history) and the difference
(Dagster + IO manager + reports), plus the time to build the Definitions and peak RSS.

    python benchmarks/bench_dagster.py
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path


def _step_seconds(instance, run_id: str) -> dict[str, float]:
    """Wall time of each step of a run, from its STEP_START / STEP_SUCCESS|FAILURE events."""
    start: dict[str, float] = {}
    out: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is None or ev.step_key is None:
            continue
        if ev.event_type_value == "STEP_START":
            start[ev.step_key] = entry.timestamp
        elif ev.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and ev.step_key in start:
            out[ev.step_key] = entry.timestamp - start[ev.step_key]
    return out


def main() -> int:
    import dagster as dg

    from privgate.dagster.definitions import build_definitions
    from privgate.dagster.example import prepare
    from privgate.history import HistoryStore

    with tempfile.TemporaryDirectory(prefix="privgate-bench-") as tmp:
        t0 = time.perf_counter()
        env = prepare(Path(tmp) / "ex")
        t_prepare = time.perf_counter() - t0
        t0 = time.perf_counter()
        defs = build_definitions(env={**env, "PRIVGATE_EXECUTOR": "in_process"})
        t_defs = time.perf_counter() - t0
        job = defs.resolve_job_def("evaluate_release")
        rows = []
        (Path(tmp) / "instance").mkdir()
        with dg.instance_for_test(temp_dir=str(Path(tmp) / "instance")) as instance:
            releases = sorted(defs.resources["locations"].release_files()[0])
            instance.add_dynamic_partitions("releases", releases)
            for rid in releases:
                t0 = time.perf_counter()
                result = job.execute_in_process(instance=instance, partition_key=rid, raise_on_error=False)
                rows.append((rid, result.success, time.perf_counter() - t0, _step_seconds(instance, result.run_id)))
        store = HistoryStore(env["PRIVGATE_HISTORY_URL"])
        runs = {r["release_id"]: r for r in store.runs(env["PRIVGATE_DATASET"]).to_dicts()}
        store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"prepare example folder: {t_prepare:6.2f} s")
    print(f"build Definitions:      {t_defs:6.2f} s (loads + validates the gate configuration)")
    print(f"{'release':24s} {'decision':8s} {'run s':>7s} {'gate s':>7s} {'eval step s':>11s} other steps (s)")
    for rid, ok, secs, steps in rows:
        gate = float(runs[rid]["seconds"])
        others = ", ".join(f"{k} {v:.2f}" for k, v in steps.items() if k != "privgate_synthetic_release")
        print(
            f"{rid:24s} {runs[rid]['decision']:8s} {secs:7.2f} {gate:7.2f} "
            f"{steps.get('privgate_synthetic_release', float('nan')):11.2f} {others}"
            f"{'' if ok else '  (run failed: blocked)'}"
        )
    print(
        "eval step = the privgate check step: gate + history write + HTML/JSON reports; run = all steps + "
        "Dagster's event log (SQLite)"
    )
    print(f"peak RSS: {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
