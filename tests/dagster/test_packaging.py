"""Packaging: the library does not need Dagster or GX; the adapters live under
privgate.dagster / privgate.gx; the package is the library alone (the repository's dagster_defs/
and expectations/ folders are not installed)."""

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dagster", "great_expectations", "dagster_webserver"):
            raise ImportError(f"blocked for the test: {name}")
sys.meta_path.insert(0, Block())
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300
    )


def test_library_and_cli_work_without_dagster_and_gx():
    code = (
        BLOCK
        + """
import polars as pl
import privgate
from privgate import cli
from privgate.gates import run_gate
real = pl.DataFrame({"a": [1, 2, 3, 4] * 20, "b": ["x", "y", "z", "w"] * 20})
rep = privgate.evaluate(real, real, metrics=["common_rows"])
print("value", rep.results["common_rows"].value)
for name in ("privgate.dagster", "privgate.gx"):
    try:
        __import__(name)
    except ImportError as exc:
        print("refused", name, "|", exc)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("dagster", "great_expectations")))
"""
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "value 1.0" in out
    assert "refused privgate.dagster | privgate.dagster needs Dagster: pip install 'privgate[dagster]'" in out
    assert "refused privgate.gx | privgate.gx needs Great Expectations: pip install 'privgate[gx]'" in out
    assert out.strip().endswith("[]")


def test_only_the_library_is_packaged():
    """What setuptools finds with the project's package configuration: privgate and its
    subpackages, nothing from the repository's other top-level folders."""
    from setuptools import find_packages

    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    found = find_packages(str(REPO), include=find["include"], exclude=find.get("exclude", ()))
    assert "privgate" in found and "privgate.dagster" in found and "privgate.gx" in found
    assert {name.split(".")[0] for name in found} == {"privgate"}
    # the project's folders exist but are not packages
    assert (REPO / "dagster_defs" / "definitions.py").is_file()
    assert (REPO / "expectations" / "default_gate.json").is_file()
    assert not (REPO / "dagster_defs" / "__init__.py").exists()
    assert not (REPO / "expectations" / "__init__.py").exists()


def test_extras_split_the_dependencies():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = " ".join(meta["dependencies"]).lower()
    for heavy in ("dagster", "great-expectations", "psycopg2"):
        assert heavy not in core
    extras = meta["optional-dependencies"]
    assert any(d.startswith("dagster>=") for d in extras["dagster"])
    assert any(d.startswith("great-expectations") for d in extras["gx"])
    assert any(d.startswith("psycopg2") for d in extras["postgres"])
    test = " ".join(extras["test"])
    for needed in ("dagster", "gx", "postgres", "k8s", "pytest", "hypothesis"):
        assert needed in test
    pins = {
        line.split("==")[0].lower().replace("_", "-")
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line
    }
    for dep in [*meta["dependencies"], *(d for v in extras.values() for d in v)]:
        name = dep.split(">")[0].split("=")[0].split("[")[0].strip().lower().replace("_", "-")
        assert name == "privgate" or name in pins, f"{name} not pinned in constraints.txt"
