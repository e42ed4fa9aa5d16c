"""Every command of docs/audit.md and docs/audit-generators.md, run as written, does what its
comment says: the exit code (0 pass, 1 warn, 2 block: a proven violation, 3 error). A fenced
``python`` block whose first line is ``# file: NAME`` is written to NAME first; the ``console``
blocks' ``$`` lines are run in order in one folder.

Here an audit documented to pass (exit 0) runs with its ``--runs`` cut to ``PASSING_RUNS``: a
passing audit's runs cost minutes and prove nothing more about the command than a few of them do
(the promised violations run as written: a sequential audit stops at its first look).
``benchmarks/audit_docs.py`` runs every command exactly as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = [Path(__file__).resolve().parents[2] / "docs" / name for name in ("audit.md", "audit-generators.md")]
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)
EXIT = re.compile(r"\s+#\s*exit\s+(\d)\s*$")
#: runs of an audit documented to pass, in this test (None: as written)
PASSING_RUNS = 8


def documented() -> list[tuple[str, list[tuple[str, str]], list[tuple[str, int | None]]]]:
    """Per document: its files (name, text) and its commands (line, promised exit code)."""
    out = []
    for doc in DOCS:
        files, commands = [], []
        for lang, body in FENCE.findall(doc.read_text(encoding="utf-8")):
            first = body.splitlines()[0] if body.strip() else ""
            if lang == "python" and first.startswith("# file: "):
                files.append((first[len("# file: ") :].strip(), body))
            elif lang == "console":
                for line in body.splitlines():
                    if line.startswith("$ "):
                        m = EXIT.search(line)
                        commands.append((EXIT.sub("", line[2:]).strip(), int(m.group(1)) if m else None))
        if commands:
            out.append((doc.name, files, commands))
    return out


def test_the_documents_have_commands_with_promised_outcomes():
    found = documented()
    assert [d for d, _, _ in found] == ["audit.md", "audit-generators.md"]
    promised = [code for _, _, cmds in found for _, code in cmds if code is not None]
    assert 2 in promised and 0 in promised


@pytest.mark.parametrize("doc", [d for d, _, _ in documented()])
def test_every_documented_command_does_what_the_document_says(doc, tmp_path):
    pytest.importorskip("DataSynthesizer")
    run_documented(doc, tmp_path, PASSING_RUNS)


def with_runs(argv: list[str], runs: int) -> list[str]:
    """``argv`` with its ``--runs`` value (added if absent) lowered to ``runs``."""
    if "--runs" not in argv:
        return [*argv, "--runs", str(runs)]
    at = argv.index("--runs") + 1
    return [*argv[:at], str(min(runs, int(argv[at]))), *argv[at + 1 :]]


def run_documented(doc: str, tmp_path: Path, passing_runs: int | None) -> None:
    """Runs ``doc``'s commands in ``tmp_path`` and asserts each one's documented exit code;
    ``passing_runs``: the runs of an audit documented to pass (None: as written)."""
    _, files, commands = next(d for d in documented() if d[0] == doc)
    for name, text in files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "PRIVGATE_THREADS": "1",
    }
    for line, expected in commands:
        argv = shlex.split(line)
        if argv[0] == "privgate":
            argv = [sys.executable, "-m", "privgate.cli", *argv[1:], "--quiet"]
            if expected == 0 and argv[3] == "audit" and passing_runs is not None:
                argv = with_runs(argv, passing_runs)
        elif argv[0] == "python":
            argv = [sys.executable, *argv[1:]]
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        want = 0 if expected is None else expected
        assert done.returncode == want, f"{line}\nexit {done.returncode}, documented {want}\n{done.stderr[-2000:]}"
        if want == 2:
            assert "DP VIOLATION proven" in done.stdout and "Next: do not publish" in done.stdout
        if "--html" in argv:
            assert (tmp_path / argv[argv.index("--html") + 1]).stat().st_size > 0
