"""The project is clean under its linter and formatter: ``ruff check`` with the rules
pyproject.toml selects (pyflakes, the syntax and statement errors of pycodestyle, import order)
and ``ruff format --check``. Ruff comes with the ``[test]`` extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_ruff_check_is_clean():
    out = ruff("check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_ruff_format_leaves_every_file_as_it_is():
    out = ruff("format", "--check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_linter_reads_the_project_rules_and_would_fail(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "bad.py").write_text("import os\nimport sys\n\nprint(undefined_name)\n", encoding="utf-8")
    out = ruff("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert out.returncode == 1
    assert "F401" in out.stdout and "F821" in out.stdout
