"""Packaging: the library does not need Dagster or GX; the adapters live
under privgate.dagster / privgate.gx; the old top-level names still work, with a warning."""

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
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def test_library_and_cli_work_without_dagster_and_gx():
    code = BLOCK + """
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
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "value 1.0" in out
    assert "refused privgate.dagster | privgate.dagster needs Dagster: pip install 'privgate[dagster]'" in out
    assert "refused privgate.gx | privgate.gx needs Great Expectations: pip install 'privgate[gx]'" in out
    assert out.strip().endswith("[]")


def test_old_names_warn_and_are_the_same_modules():
    code = """
import warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    import dagster_defs, dagster_defs.definitions, dagster_defs.gate_checks
    import privgate.dagster.definitions, privgate.dagster.gate_checks
print("dagster", dagster_defs.definitions is privgate.dagster.definitions,
      dagster_defs.gate_checks is privgate.dagster.gate_checks,
      dagster_defs.build_definitions is privgate.dagster.build_definitions,
      [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)
       and "dagster_defs" in str(x.message)])
with warnings.catch_warnings(record=True) as w:
    import expectations, expectations.core
    import privgate.gx.core
print("gx", expectations.core is privgate.gx.core,
      expectations.ExpectSyntheticExactCopyRateToBeBelow is privgate.gx.core.ExpectSyntheticExactCopyRateToBeBelow,
      [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)
       and "'expectations'" in str(x.message)])
"""
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert lines["dagster"].startswith("True True True [")
    assert "the top-level package 'dagster_defs' is deprecated" in lines["dagster"]
    assert "import 'privgate.dagster' instead" in lines["dagster"]
    assert lines["gx"].startswith("True True [")
    assert "the top-level package 'expectations' is deprecated" in lines["gx"]


def test_python_m_old_example_still_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dagster_defs.example", "--dir", str(tmp_path / "ex"),
                           "--prepare-only"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "dagster dev -m privgate.dagster" in proc.stdout


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
    pins = {line.split("==")[0].lower().replace("_", "-")
            for line in (REPO / "constraints.txt").read_text().splitlines() if "==" in line}
    for dep in [*meta["dependencies"], *(d for v in extras.values() for d in v)]:
        name = dep.split(">")[0].split("=")[0].split("[")[0].strip().lower().replace("_", "-")
        assert name == "privgate" or name in pins, f"{name} not pinned in constraints.txt"
