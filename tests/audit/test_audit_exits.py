"""Every exit code of ``privgate audit`` is true: a generator (or its module) that exits, is
interrupted, ends its process, hangs or raises with a training record in its message ends the
audit with exit 3 and one line naming the exception's type only; sizes and numbers out of range
are refused by name; killing the audit leaves no worker process alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from privgate.cli import main
from privgate.data import load_example

SECRET = "SECRETCELL"

HOSTILE = textwrap.dedent(f'''
    import os, sys, time
    from privgate.errors import InputError

    def exit_zero(training, n_rows, seed):
        sys.exit(0)

    def raise_system_exit(training, n_rows, seed):
        raise SystemExit

    def hard_exit(training, n_rows, seed):
        os._exit(0)

    def interrupt(training, n_rows, seed):
        raise KeyboardInterrupt

    def sleeps(training, n_rows, seed):
        time.sleep(600)

    def leaks(training, n_rows, seed):
        raise InputError("{SECRET} " + repr(training.row(0)))

    def slow(training, n_rows, seed):
        time.sleep(0.3)
        return training.sample(n_rows, with_replacement=True, seed=seed)

    class LeakyFactory:
        def __init__(self, **kw):
            raise InputError("{SECRET} in the constructor")
''')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    (d / "hostile_generators.py").write_text(HOSTILE)
    (d / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n\ndef g(training, n_rows, seed):\n    return training\n")
    load_example().head(200).write_parquet(d / "real.parquet")
    return d


def _exit_code(call) -> int:
    try:
        return call()
    except SystemExit as exc:  # argparse's usage errors exit (with the audit's code 3)
        return exc.code


def _audit(workdir: Path, generator: str, *extra: str, capsys) -> tuple[int, str]:
    old = os.getcwd()
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    try:
        code = _exit_code(lambda: main(["audit", "--generator", generator, "--real", "real.parquet", "--runs", "8", "--n-targets", "2",
                     "--training-rows", "60", "--quiet", *extra]))
    finally:
        os.chdir(old)
        sys.path.remove(str(workdir))
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("generator, says", [
    ("hostile_generators:exit_zero", "SystemExit"),
    ("hostile_generators:raise_system_exit", "SystemExit"),
    ("hostile_generators:hard_exit", "ended its worker process"),
    ("hostile_generators:interrupt", "KeyboardInterrupt"),
    ("hostile_generators:leaks", "InputError"),
    ("hostile_generators:LeakyFactory", "InputError"),
    ("exits_on_import:g", "SystemExit"),
])
def test_a_generator_that_exits_or_leaks_ends_the_audit_with_exit_3(workdir, capsys, generator, says):
    code, text = _audit(workdir, generator, capsys=capsys)
    assert code == 3, text
    assert says in text
    assert SECRET not in text and "Traceback" not in text


def test_a_generator_that_hangs_on_its_first_run_meets_the_deadline(workdir, capsys):
    start = time.monotonic()
    code, text = _audit(workdir, "hostile_generators:sleeps", "--deadline", "4", capsys=capsys)
    assert code == 3 and "deadline" in text
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("flag, value", [
    ("--runs", "10000000"), ("--n-rows", "1000000000"), ("--training-rows", "100000000"), ("--n-targets", "5000"),
    ("--claimed-epsilon", "1e308"), ("--claimed-epsilon", "nan"), ("--delta", "inf"), ("--seed", "-1"),
    ("--deadline", "inf"),
])
def test_numbers_out_of_range_are_refused_by_name(workdir, capsys, flag, value):
    code, text = _audit(workdir, "hostile_generators:slow", flag, value, capsys=capsys)
    assert code == 3 and flag in text and "Traceback" not in text


def test_the_api_refuses_sizes_by_name():
    from privgate.audit import audit_generator
    from privgate.errors import ParameterError

    with pytest.raises(ParameterError, match="runs must be a whole number"):
        audit_generator(lambda t, n, s: t, load_example().head(50), runs=10**9)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_killing_the_audit_leaves_no_worker_alive(workdir):
    proc = subprocess.Popen(
        [sys.executable, "-m", "privgate.cli", "audit", "--generator", "hostile_generators:slow", "--real",
         "real.parquet", "--runs", "200", "--n-targets", "2", "--training-rows", "60", "--workers", "2", "--quiet"],
        cwd=workdir, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(workdir), *sys.path])},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def children() -> set[int]:
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
        return {int(x) for x in out.split()}

    try:
        deadline = time.monotonic() + 90
        while len(children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        kids = children()
        assert len(kids) >= 2, "the audit's workers never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(Path(f"/proc/{k}").exists() for k in kids):
            time.sleep(0.3)
        alive = [k for k in kids if Path(f"/proc/{k}").exists()
                 and "Z" not in Path(f"/proc/{k}/stat").read_text().split()[2]]
        assert not alive, f"workers outlived the killed audit: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()
