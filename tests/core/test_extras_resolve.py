"""Every extra installs beside the base: ``privgate[all,test]`` (the base and every optional extra
of pyproject.toml at once) installs under constraints.txt in a fresh virtual environment, and the
base's NumPy, pyarrow, Polars, pandas and scikit-learn pins hold, as does every pin of a library
an extra names. One set of versions for the base and every extra together means each extra alone
installs beside the base too. A library that pins a stack incompatible with the base is not
offered as an extra (dpmm: docs/audit-generators.md). Needs the package index for what is not
installed (CI has it)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
CONSTRAINTS = REPO / "constraints.txt"


def pins() -> dict[str, str]:
    out = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            out[_norm(name)] = version
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(extra: str) -> list[str]:
    """The extra's requirements with privgate's own extras (``privgate[a,b]``) expanded."""
    out: list[str] = []
    for req in EXTRAS[extra]:
        m = re.fullmatch(r"privgate\[([^\]]+)\]", req.replace(" ", ""))
        if m:
            for sub in m.group(1).split(","):
                out.extend(requirements(sub))
        else:
            out.append(req)
    return out


def _release(version: str) -> str:
    return version.split("+", 1)[0]  # 2.13.0+cpu is a build of 2.13.0


def test_no_extra_needs_a_library_outside_the_constraints():
    pinned = pins()
    for extra in EXTRAS:
        for req in requirements(extra):
            name = _norm(re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0])
            if name not in ("pytest", "hypothesis"):
                assert name in pinned, f"[{extra}] needs {name}, which constraints.txt does not pin"
    assert "dpmm" not in EXTRAS and "dpmm" not in pinned  # its own environment


def test_all_is_every_extra_but_the_test_suite():
    """``pip install privgate[all]`` installs every extra that installs beside the base (the
    test suite's tools aside), and the test extra everything but the heavy sdv."""
    assert set(requirements("all")) == {r for e in EXTRAS if e not in ("all", "test") for r in requirements(e)}
    assert EXTRAS["all"] == [f"privgate[{','.join(e for e in EXTRAS if e not in ('all', 'test'))}]"]
    tested = set(requirements("test"))
    assert {r for e in EXTRAS if e not in ("all", "test", "sdv") for r in requirements(e)} <= tested


def test_torch_is_pinned_to_its_cpu_build():
    """PyPI's Linux torch is a CUDA build of several GB: the pin names the CPU build, so pip takes
    it or stops, never the CUDA one."""
    assert pins()["torch"].endswith("+cpu")


def test_privgate_and_its_adapters_import_in_this_environment():
    code = (
        "import privgate, privgate.audit, privgate.audit.cluster, privgate.audit.generators.isolated\n"
        "from privgate.audit.generators import ADAPTERS, load_adapter\n"
        "[load_adapter(n) for n in ADAPTERS]\n"
        "import numpy, pyarrow; print(numpy.__version__, pyarrow.__version__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def closure(reqs: list[str], found: dict[str, tuple[str, list[str]]]) -> dict[str, str]:
    """Every distribution ``reqs`` need, by name → version, following each one's requirements
    (with the extras asked of it) through ``found``: name → (version, its requirements)."""
    from packaging.requirements import Requirement

    out: dict[str, str] = {}
    done: set[tuple[str, str]] = set()
    todo = [Requirement(r) for r in reqs]
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        extras = sorted(req.extras) or [""]
        if all((name, e) in done for e in extras) or name == "privgate":
            continue
        assert name in found, f"{req} is needed but neither installed nor resolved"
        version, requires = found[name]
        out[name] = version
        for extra in extras:
            done.add((name, extra))
            todo += [r for r in map(Requirement, requires) if r.marker is None or r.marker.evaluate({"extra": extra})]
    return out


def test_the_closure_follows_requirements_with_the_extras_asked():
    found = {
        "a": ("1", ["b>=1", "c; extra == 'x'"]),
        "b": ("2", ["e; python_version < '3'"]),
        "c": ("3", ["d"]),
        "d": ("4", []),
        "e": ("5", []),
    }
    assert closure(["a"], found) == {"a": "1", "b": "2"}
    assert closure(["A[x]"], found) == {"a": "1", "b": "2", "c": "3", "d": "4"}
    with pytest.raises(AssertionError, match="neither installed nor resolved"):
        closure(["z"], found)


@pytest.mark.slow
def test_all_installs_beside_the_pinned_base_and_privgate_imports_with_it(tmp_path):
    """``pip install -c constraints.txt 'privgate[all,test]'`` in a fresh virtual environment (it
    sees this environment's packages, so only what they lack is installed: SDV and torch's CPU
    build), then: the base's NumPy, pyarrow, Polars, pandas and scikit-learn pins hold, every
    library an extra names is there at its pin, constraints.txt pins nothing that no install of
    privgate brings, and privgate, its adapters and every generator adapter import. One set of
    versions for the base and every extra together means each extra alone installs beside the
    base too. Needs the package index (CI has it)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own privgate
    venv, report = tmp_path / "venv", tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            str(report),
            "-c",
            str(CONSTRAINTS),
            f"{REPO}[all,test]",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = {_norm(d.metadata["Name"]): (d.version, d.requires or []) for d in importlib.metadata.distributions()}
    for item in json.loads(report.read_text())["install"]:  # what the venv holds in place of this one's
        meta = item["metadata"]
        found[_norm(meta["name"])] = (meta["version"], meta.get("requires_dist", []))
    reqs = list(PROJECT["dependencies"]) + [r for e in sorted(EXTRAS) for r in requirements(e)]
    got = closure(reqs, found)
    pinned = pins()
    for name in ("numpy", "pyarrow", "polars", "pandas", "scikit-learn"):
        assert _release(got[name]) == pinned[name], f"the extras move {name} to {got[name]}"
    needed = {_norm(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for e in EXTRAS for r in requirements(e)}
    assert needed <= set(got)
    assert {n: got[n] for n in needed if n in pinned and got[n] != pinned[n]} == {}
    assert sorted(set(pinned) - set(got)) == [], "constraints.txt pins packages nothing installs"
    code = (
        "import privgate, privgate.dagster, privgate.gx, privgate.audit.cluster, torch\n"
        "from privgate.audit.generators import ADAPTERS, load_adapter\n"
        "[load_adapter(n) for n in ADAPTERS]\n"
        "print(privgate.__file__, torch.__version__)"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    where, torch_version = done.stdout.split()
    assert where.startswith(str(venv)) and torch_version.endswith("+cpu")
