"""Every exit code of ``privgate audit`` is true: a generator that exits, interrupts, crashes, hangs
or raises privgate's own error with a record in its message ends the audit with exit 3 and one
line naming the exception's type, never its message; the deadline covers the import, the planning
and every run; sizes and numeric options are bounded with named errors; killing an audit leaves no
worker process alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from audit_helpers import real_frame, work_folder

from privgate.audit import audit_generator
from privgate.audit.limits import MAX_ROWS, MAX_RUNS, MAX_TARGETS, check_sizes, deadline_seconds
from privgate.audit.single_run import GeneratorExited
from privgate.cli import main
from privgate.errors import AuditError, ParameterError

SECRET = "Zq7xRecord Alice 1970-01-01 SSN-078-05-1120"

HOSTILE = textwrap.dedent(f"""
    import os
    import sys
    import time
    from pathlib import Path

    SECRET = {SECRET!r}

    def sys_exit_0(training, n_rows, seed):
        sys.exit(0)

    def raise_system_exit(training, n_rows, seed):
        raise SystemExit(SECRET)

    def os_exit_0(training, n_rows, seed):
        os._exit(0)

    def keyboard_interrupt(training, n_rows, seed):
        raise KeyboardInterrupt(SECRET)

    def sleeps_forever(training, n_rows, seed):
        Path(f"started_{{os.getpid()}}").write_text("")
        time.sleep(3600)

    def privgate_error_with_a_record(training, n_rows, seed):
        from privgate.errors import InputError

        raise InputError(f"bad record: {{SECRET}}")
""")

EXITS_ON_IMPORT = "import sys\nsys.exit(0)\n\ndef gen(training, n_rows, seed):\n    return training\n"
HANGS_ON_IMPORT = "import time\ntime.sleep(3600)\n\ndef gen(training, n_rows, seed):\n    return training\n"

FAST = [
    "--design",
    "shared",
    "--runs",
    "8",
    "--n-targets",
    "2",
    "--training-rows",
    "40",
    "--workers",
    "1",
    "--threads",
    "1",
    "--quiet",
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    return work_folder(
        tmp_path,
        monkeypatch,
        real_frame(120),
        {"hostile_gens.py": HOSTILE, "exits_on_import.py": EXITS_ON_IMPORT, "hangs_on_import.py": HANGS_ON_IMPORT},
    )


def cli(*args):
    try:
        return main(["audit", "--real", "real.parquet", *FAST, "--json", "out.json", "--html", "out.html", *args])
    except SystemExit as exc:  # a usage error: argparse exits with this command's code
        return exc.code


# generator → the words its one error line must hold
CASES = [
    ("hostile_gens:sys_exit_0", [], "raised SystemExit"),
    ("hostile_gens:raise_system_exit", [], "raised SystemExit"),
    ("hostile_gens:os_exit_0", [], "worker process died"),
    ("hostile_gens:keyboard_interrupt", [], "raised KeyboardInterrupt"),
    ("exits_on_import:gen", [], "importing its module) raised SystemExit"),
    ("hostile_gens:privgate_error_with_a_record", [], "InputError"),
    ("hostile_gens:sleeps_forever", ["--deadline", "4"], "deadline of 4 s"),
    ("hangs_on_import:gen", ["--deadline", "4"], "deadline of 4 s"),
]


@pytest.mark.parametrize("generator, extra, words", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_generator_ends_the_audit_with_exit_3_and_its_type_only(workdir, capsys, generator, extra, words):
    start = time.monotonic()
    code = cli("--generator", generator, *extra)
    out, err = capsys.readouterr()
    assert code == 3
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and words in errors[0], err
    assert "Traceback" not in err
    assert SECRET not in out + err and "Zq7x" not in out + err
    assert not (workdir / "out.json").exists() and not (workdir / "out.html").exists()
    assert time.monotonic() - start < 60  # the hanging ones end at their deadline (a bound, not a timing)


def test_a_record_in_a_privgate_error_raised_by_the_generator_is_withheld_from_the_result(workdir):
    import hostile_gens

    with pytest.raises(AuditError) as err:
        audit_generator(
            hostile_gens.privgate_error_with_a_record,
            real_frame(120),
            design="shared",
            runs=8,
            n_targets=2,
            canaries=False,
            training_rows=40,
            workers=1,
            threads=1,
        )
    assert "InputError" in str(err.value) and "Zq7x" not in str(err.value)


def test_an_exit_in_a_generator_run_in_this_process_is_an_audit_error():
    # a lambda cannot be pickled: its runs are made in this process, where SystemExit is caught too
    with pytest.raises(GeneratorExited, match="raised SystemExit") as err:
        audit_generator(
            lambda training, n_rows, seed: sys.exit(SECRET),
            real_frame(120),
            design="shared",
            runs=8,
            n_targets=2,
            canaries=False,
            training_rows=40,
            workers=1,
            threads=1,
        )
    assert "Zq7x" not in str(err.value)


# ------------------------------------------------------------------ bounds and numeric options
@pytest.mark.parametrize(
    "flag, value",
    [
        ("--runs", "10000000"),
        ("--n-rows", "1000000000"),
        ("--training-rows", "1000000000"),
        ("--n-targets", "5000"),
        ("--claimed-epsilon", "1e308"),
        ("--claimed-epsilon", "nan"),
        ("--claimed-epsilon", "-1"),
        ("--delta", "inf"),
        ("--delta", "1"),
        ("--seed", "-1"),
        ("--seed", "1e3"),
        ("--deadline", "inf"),
        ("--deadline", "nan"),
        ("--deadline", "0"),
        ("--deadline", "1e12"),
        ("--workers", "100000"),
    ],
)
def test_an_out_of_range_option_exits_3_naming_it(workdir, capsys, flag, value):
    code = cli("--generator", "hostile_gens:sys_exit_0", flag, value)
    err = capsys.readouterr().err
    assert code == 3
    assert f"argument {flag}: {flag} must be" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "sizes, words",
    [
        (dict(design="shared", runs=MAX_RUNS + 1, n_targets=1), "runs must be at most 100,000"),
        (dict(design="shared", runs=8, n_targets=MAX_TARGETS + 1), "n_targets must be at most 1,000"),
        (dict(design="shared", runs=8, n_targets=2, n_rows=10**9), "n_rows must be at most 10,000,000"),
        (dict(design="shared", runs=8, n_targets=2, training_rows=MAX_ROWS + 1), "training_rows must be at most"),
        (dict(design="shared", runs=100_000, n_targets=1_000), "runs × targets"),
        (dict(runs=20_000, n_targets=30, design="separate"), "runs × targets"),
        (dict(design="shared", runs=8, n_targets=None, user_targets=MAX_TARGETS + 1), "at most 1,000 target records"),
    ],
)
def test_sizes_beyond_their_bounds_are_named(sizes, words):
    with pytest.raises(ParameterError, match=words):
        check_sizes(**sizes)


def test_sizes_a_real_audit_uses_pass():
    check_sizes(design="shared", runs=200, n_targets=10, training_rows=1000, n_rows=1000)
    check_sizes(design="shared", runs=10_000, n_targets=1_000, training_rows=MAX_ROWS, n_rows=MAX_ROWS)


def test_the_api_refuses_a_huge_release_before_any_work():
    start = time.monotonic()
    with pytest.raises(ParameterError, match="n_rows must be at most"):
        audit_generator(lambda t, n, s: t, real_frame(120), design="shared", runs=8, n_targets=2, n_rows=10**9)
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0, -1, True, "600", 1e12])
def test_a_bad_deadline_is_named(value):
    with pytest.raises(ParameterError, match="deadline must be"):
        deadline_seconds(value)


def test_the_default_deadline_is_a_day():
    assert deadline_seconds(None) == 24 * 3600


def test_the_deadline_covers_the_planning():
    # a deadline that passed during planning stops the audit before the first run
    import privgate.audit.api as api

    def slow_select(*a, **k):
        time.sleep(2.5)
        return select(*a, **k)

    select = api.select_targets
    api.select_targets = slow_select
    try:
        with pytest.raises(AuditError, match=r"deadline of 2 s \(it passed before building the feature space\)"):
            audit_generator(
                lambda t, n, s: t,
                real_frame(120),
                design="shared",
                runs=8,
                n_targets=2,
                training_rows=40,
                workers=1,
                threads=1,
                deadline=2,
            )
    finally:
        api.select_targets = select


# ------------------------------------------------------------------ no worker outlives the audit
def _children() -> dict[int, int]:
    """pid → parent pid of every live (not zombie) process, from /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            out[int(entry.name)] = int(fields[1])
    return out


def _descendants(pid: int) -> set[int]:
    table = _children()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in table.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _children()
    return {p for p in pids if p in table}


def _start_audit(workdir: Path) -> tuple[subprocess.Popen, set[int]]:
    """A CLI audit in its own process whose two workers are inside a generator that sleeps;
    returns it with its descendant processes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), str(workdir)])}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "privgate.cli",
            "audit",
            "--real",
            "real.parquet",
            "--runs",
            "8",
            "--n-targets",
            "2",
            "--training-rows",
            "40",
            "--workers",
            "2",
            "--threads",
            "2",
            "--quiet",
            "--generator",
            "hostile_gens:sleeps_forever",
        ],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not list(workdir.glob("started_*")):
        if proc.poll() is not None:
            pytest.fail(f"the audit ended early: {proc.communicate()}")
        time.sleep(0.2)
    started = {int(p.name.split("_")[1]) for p in workdir.glob("started_*")}
    assert started, "no worker started the generator"
    family = _descendants(proc.pid)
    assert started <= family  # the generator runs in a descendant of the audit, not in it
    return proc, family


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end and _alive(pids):
        time.sleep(0.1)
    return _alive(pids)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_kill_9_of_an_audit_leaves_no_worker_alive(workdir):
    proc, family = _start_audit(workdir)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert _gone_within(family, 10) == set()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_sigterm_stops_an_audit_with_exit_3_and_no_worker_alive(workdir):
    proc, family = _start_audit(workdir)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert "SIGTERM" in err and "Traceback" not in err
    # the workers are killed by the audit; the fork server they came from ends with the audit
    assert _gone_within(family, 10) == set()
