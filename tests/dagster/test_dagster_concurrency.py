"""Two releases of one dataset evaluated at the same time get the verdicts they get one after
the other.

The trend rule compares a release with the last accepted release before it. Two runs evaluate in
two processes, synchronised by files (a cross-process barrier), not by sleeps:

- the per-dataset lock: release 1's evaluation, having read the history, waits at the barrier
  for release 2's to read it too. With the lock, release 2 cannot get in until release 1 has
  recorded (the wait runs out, release 1 goes on) and then finds release 1 — release 2 warns.
  Without the lock both read the history before either recorded, and release 2 passes;
- release order: release 2's run reaches the gate while release 1's run is still loading
  release 1, and waits for it (partition order), whatever reached the gate first.
"""

from __future__ import annotations

import os
import subprocess
import sys
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

# What both children share: a file barrier (wait until a file exists, or the timeout passes).
BARRIER = """\
import sys, time
from pathlib import Path

def wait_for(path, timeout):
    end = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
"""

#: how long an evaluation holding the lock waits for the other to read the history: it cannot
#: (the lock keeps it out), so every passing run waits this long once; without the lock the other
#: reads within it (it only has to load the inputs)
LOCKED_WAIT = 10.0

# One unpartitioned release asset of the user's own (the release id from the run config), its
# checks from build_privgate_checks, in a process of its own (execute_in_process is not
# thread-safe).
CHILD_LOCK = (
    BARRIER
    + f"""
import dagster as dg
import polars as pl

real, gate, history, release_id, release_path, barrier, lock_dir = sys.argv[1:8]
barrier = Path(barrier)
other = {{"r1": "r2", "r2": "r1"}}[release_id]

from privgate.history import HistoryStore
read = HistoryStore.last_accepted
def last_accepted(self, *a, **k):
    answer = read(self, *a, **k)
    (barrier / f"read_{{release_id}}").touch()
    wait_for(barrier / f"read_{{other}}", {LOCKED_WAIT})  # both read before either records?
    return answer
HistoryStore.last_accepted = last_accepted

from privgate.dagster import PrivgateResource, build_privgate_checks
if release_id == "r2":  # release 2 goes to the gate once release 1 is in it
    evaluate = PrivgateResource.evaluate
    def evaluate_after_r1(self, *a, **k):
        assert wait_for(barrier / "read_r1", 300), "release 1 never read the history"
        return evaluate(self, *a, **k)
    PrivgateResource.evaluate = evaluate_after_r1

@dg.asset
def release():
    return pl.read_parquet(release_path)

dg.materialize(
    [release, *build_privgate_checks(assets=[release], gate_config=gate)], raise_on_error=False,
    resources={{"privgate": PrivgateResource(real_path=real, history_url="sqlite:///" + history,
                                            lock_dir=lock_dir)}},
    run_config={{"ops": {{"privgate_release": {{"config": {{"release_id": release_id}}}}}}}})
"""
)

# One run of the bundled release job (partitioned) in its own process, on a shared SQLite
# Dagster instance.
CHILD_ORDER = (
    BARRIER
    + """
import dagster as dg

root, gate, history, release_id, barrier = sys.argv[1:6]
barrier = Path(barrier)
if release_id == "r1":  # release 1's run starts, then loads its release once release 2 waits
    import privgate.dagster.assets as assets
    load = assets.load_frame
    def load_when_r2_waits(path, *a, **k):
        if str(path).endswith("r1.parquet"):
            (barrier / "r1_started").touch()
            wait_for(barrier / "r2_waiting", 120)
        return load(path, *a, **k)
    assets.load_frame = load_when_r2_waits
else:  # release 2's run starts while release 1's is in progress, and notes when it waits
    assert wait_for(barrier / "r1_started", 300), "release 1's run never started"
    from privgate.dagster import PrivgateResource
    evaluate = PrivgateResource.evaluate
    def evaluate_noting_waits(self, *a, earlier_in_progress=None, **k):
        def in_progress():
            waiting = list(earlier_in_progress())
            if waiting:
                (barrier / "r2_waiting").touch()
            return waiting
        return evaluate(self, *a, earlier_in_progress=in_progress if earlier_in_progress else None, **k)
    PrivgateResource.evaluate = evaluate_noting_waits
import privgate.dagster.definitions as definitions
defs = definitions.build_definitions(data_dir=root, gate_config=gate, history_url="sqlite:///" + history,
                                     executor="in_process", env={})
with dg.DagsterInstance.get() as instance:
    defs.resolve_job_def("evaluate_release").execute_in_process(
        instance=instance, partition_key=release_id, raise_on_error=False)
"""
)


def _permuted(frame, seed):
    import polars as pl

    return pl.DataFrame(
        {c: frame[c].sample(fraction=1.0, shuffle=True, seed=seed + i) for i, c in enumerate(frame.columns)}
    )


@pytest.fixture
def race(tmp_path, real_frame):
    root = tmp_path / "data"
    (root / "releases").mkdir(parents=True)
    real_frame.write_parquet(root / "real.parquet")
    releases = {
        "r1": _permuted(real_frame, 5).head(300),  # new rows: accepted, trend baseline
        "r2": real_frame.head(300),
    }  # copies: authenticity jumps by ~0.6
    for rid, frame in releases.items():
        frame.write_parquet(root / "releases" / f"{rid}.parquet")
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE, encoding="utf-8")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {home}\ntelemetry:\n  enabled: false\n")
    return {
        "root": root,
        "gate": gate,
        "history": tmp_path / "history.sqlite",
        "home": home,
        "releases": releases,
        "real": real_frame,
        "child": tmp_path / "child.py",
    }


def _sequential_decisions(race, tmp_path) -> dict[str, str]:
    """The reference: the same releases through privgate's gate one after the other."""
    from privgate.gates import run_gate
    from privgate.history import HistoryStore

    store = HistoryStore(f"sqlite:///{tmp_path / 'sequential.sqlite'}")
    try:
        return {
            rid: str(run_gate(str(race["gate"]), race["real"], frame, release_id=rid, history=store).decision)
            for rid, frame in race["releases"].items()
        }
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


def _env(race) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIVGATE_", "DAGSTER_HOME"))}
    env.update(
        DAGSTER_HOME=str(race["home"]),
        DAGSTER_DISABLE_TELEMETRY="1",
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def _run_both(race, code: str, args_of) -> dict[str, str]:
    """Start one child per release at once (they synchronise through the barrier folder)."""
    race["child"].write_text(code, encoding="utf-8")
    procs = [
        subprocess.Popen(
            [sys.executable, str(race["child"]), *map(str, args_of(rid))],
            env=_env(race),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rid in ("r1", "r2")
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    return _recorded_decisions(race)


def test_reference_verdicts(race, tmp_path):
    """One after the other: release 1 passes, release 2 warns on the authenticity trend."""
    assert _sequential_decisions(race, tmp_path) == {"r1": "pass", "r2": "warn"}


@pytest.mark.slow
def test_the_dataset_lock_keeps_a_second_evaluation_out_until_the_first_recorded(race, tmp_path):
    """Release 2's evaluation starts while release 1's holds the history it read: it must not
    read the history before release 1 recorded (unpartitioned: no release order to wait for)."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    decisions = _run_both(
        race,
        CHILD_LOCK,
        lambda rid: (
            race["root"] / "real.parquet",
            race["gate"],
            race["history"],
            rid,
            race["root"] / "releases" / f"{rid}.parquet",
            barrier,
            tmp_path / "locks",
        ),
    )
    assert {p.name for p in barrier.iterdir()} == {"read_r1", "read_r2"}
    assert decisions == _sequential_decisions(race, tmp_path) == {"r1": "pass", "r2": "warn"}


@pytest.mark.slow
def test_later_release_reaching_the_gate_first_waits_for_the_earlier(race, tmp_path):
    """Release 1's run is in progress but reaches the gate after release 2: release 2 waits and
    still compares with release 1 (partition order), not with whatever was recorded first."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(race["home"])) as instance:
        instance.add_dynamic_partitions("releases", ["r1", "r2"])
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    decisions = _run_both(race, CHILD_ORDER, lambda rid: (race["root"], race["gate"], race["history"], rid, barrier))
    assert {p.name for p in barrier.iterdir()} == {"r1_started", "r2_waiting"}
    assert decisions == _sequential_decisions(race, tmp_path) == {"r1": "pass", "r2": "warn"}
