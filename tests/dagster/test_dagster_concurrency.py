"""Two releases of one dataset evaluated at the same time get the verdicts they get one after
the other.

The trend rule compares a release with the last accepted release before it. Without the
per-dataset lock, two concurrent runs would both read the history before either recorded its run, so release 2 would find no
earlier release and its trend warning would silently disappear (the CLI demo fires it). The gate's
metric computation is slowed down here (1 s) so the two evaluations overlap on every machine.
Without the lock both tests fail with ``{'r1': 'pass', 'r2': 'pass'}``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

GATE = """\
version: 1
dataset: race
seed: 0
metrics:
  common_rows:
    threshold: {block: 0.9}
  authenticity:
    trend: {warn: 0.5}
"""

# One run of the bundled release job in its own process (Dagster's execute_in_process is not
# thread-safe), on a shared SQLite Dagster instance, with the gate slowed down.
CHILD = """\
import sys, time
import dagster as dg

root, gate, history, release_id, slow_load = sys.argv[1:6]
from privgate.gates import run
original = run._evaluate
def slow_evaluate(*a, **k):
    time.sleep(1.0)  # the two evaluations overlap on any machine
    return original(*a, **k)
run._evaluate = slow_evaluate
import privgate.dagster.assets as assets
load = assets.load_frame
def slow(path, *a, **k):
    if str(path).endswith("r1.parquet"):
        time.sleep(float(slow_load))  # release 1's run reaches the gate late
    return load(path, *a, **k)
assets.load_frame = slow
import privgate.dagster.definitions as definitions
defs = definitions.build_definitions(data_dir=root, gate_config=gate, history_url="sqlite:///" + history,
                                     executor="in_process", env={})
with dg.DagsterInstance.get() as instance:
    defs.resolve_job_def("evaluate_release").execute_in_process(
        instance=instance, partition_key=release_id, raise_on_error=False)
"""


def _permuted(frame, seed):
    import polars as pl

    return pl.DataFrame({c: frame[c].sample(fraction=1.0, shuffle=True, seed=seed + i)
                         for i, c in enumerate(frame.columns)})


@pytest.fixture
def race(tmp_path, real_frame):
    root = tmp_path / "data"
    (root / "releases").mkdir(parents=True)
    real_frame.write_parquet(root / "real.parquet")
    releases = {"r1": _permuted(real_frame, 5).head(300),  # new rows: accepted, trend baseline
                "r2": real_frame.head(300)}                # copies: authenticity jumps by ~0.6
    for rid, frame in releases.items():
        frame.write_parquet(root / "releases" / f"{rid}.parquet")
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE, encoding="utf-8")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {home}\ntelemetry:\n  enabled: false\n")
    return {"root": root, "gate": gate, "history": tmp_path / "history.sqlite", "home": home,
            "releases": releases, "real": real_frame, "child": tmp_path / "child.py"}


def _sequential_decisions(race, tmp_path) -> dict[str, str]:
    """The reference: the same releases through privgate's gate one after the other."""
    from privgate.gates import run_gate
    from privgate.history import HistoryStore

    store = HistoryStore(f"sqlite:///{tmp_path / 'sequential.sqlite'}")
    try:
        return {rid: str(run_gate(str(race["gate"]), race["real"], frame, release_id=rid,
                                  history=store).decision)
                for rid, frame in race["releases"].items()}
    finally:
        store.close()


def _recorded_decisions(race) -> dict[str, str]:
    from privgate.history import HistoryStore

    store = HistoryStore(f"sqlite:///{race['history']}")
    try:
        runs = store.runs("race")
        return dict(zip(runs["release_id"].to_list(), runs["decision"].to_list()))
    finally:
        store.close()


def _run_concurrently(race, *, slow_r1_load: float, r2_delay: float) -> dict[str, str]:
    import dagster as dg

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIVGATE_", "DAGSTER_HOME"))}
    env.update(DAGSTER_HOME=str(race["home"]), DAGSTER_DISABLE_TELEMETRY="1",
               PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""))
    with dg.DagsterInstance.from_config(str(race["home"])) as instance:
        instance.add_dynamic_partitions("releases", ["r1", "r2"])
    race["child"].write_text(CHILD, encoding="utf-8")
    procs = []
    for rid, delay in (("r1", 0.0), ("r2", r2_delay)):
        time.sleep(delay)
        procs.append(subprocess.Popen(
            [sys.executable, str(race["child"]), str(race["root"]), str(race["gate"]),
             str(race["history"]), rid, str(slow_r1_load)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    return _recorded_decisions(race)


def test_reference_verdicts(race, tmp_path):
    """One after the other: release 1 passes, release 2 warns on the authenticity trend."""
    assert _sequential_decisions(race, tmp_path) == {"r1": "pass", "r2": "warn"}


@pytest.mark.slow
def test_two_overlapping_releases_get_the_sequential_verdicts(race, tmp_path):
    """Release 2 reaches the gate while release 1 is being evaluated."""
    decisions = _run_concurrently(race, slow_r1_load=0.0, r2_delay=0.5)
    assert decisions == _sequential_decisions(race, tmp_path) == {"r1": "pass", "r2": "warn"}


@pytest.mark.slow
def test_later_release_reaching_the_gate_first_waits_for_the_earlier(race, tmp_path):
    """Release 1's run is in progress but reaches the gate after release 2: release 2 still
    compares with release 1 (partition order), not with whatever was recorded first."""
    decisions = _run_concurrently(race, slow_r1_load=4.0, r2_delay=0.5)
    assert decisions == _sequential_decisions(race, tmp_path) == {"r1": "pass", "r2": "warn"}
