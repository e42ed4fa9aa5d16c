"""Module names tell the rooms apart: no package holds a module and its plural
(``resource.py`` beside ``resources.py``), which say nothing of what differs. The CLI's command
modules are named after their commands (``privgate audit``, ``privgate audits``) and are left out."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "privgate"
NAMED_AFTER_COMMANDS = {PACKAGE / "commands"}


def plural_pairs(root: Path = PACKAGE) -> list[tuple[str, str]]:
    """(package, name) for every module or subpackage whose plural sits beside it."""
    out = []
    for init in root.rglob("__init__.py"):
        folder = init.parent
        if folder in NAMED_AFTER_COMMANDS:
            continue
        names = {p.stem for p in folder.glob("*.py")}
        names |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
        out += [(str(folder.relative_to(root.parent)), n) for n in names if f"{n}s" in names]
    return sorted(out)


def test_no_module_sits_beside_its_plural():
    assert plural_pairs() == []


def test_a_module_beside_its_plural_is_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    for name in ("__init__", "resource", "resources", "checks"):
        (tmp_path / "pkg" / f"{name}.py").write_text("")
    assert plural_pairs(tmp_path / "pkg") == [("pkg", "resource")]
