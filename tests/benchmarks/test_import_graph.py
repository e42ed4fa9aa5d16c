"""benchmarks/import_graph.py: relative and function-local imports become arrows, imports for type
checkers only on request, circles are found — and privgate has none, so no module imports one
that imports it back (docs/architecture.md "Layers")."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import import_graph  # noqa: E402


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .low import X\n")
    (root / "low.py").write_text("X = 1\n")
    (root / "high.py").write_text("from . import low\n\ndef f():\n    from .sub import leaf\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\nfrom .. import low\nif TYPE_CHECKING:\n    from ..high import f\n"
    )
    return root


def test_arrows_of_relative_local_and_typing_imports(tmp_path):
    root = _package(tmp_path)
    arrows = import_graph.graph(root)
    assert arrows["pkg"] == {"pkg.low"}
    assert arrows["pkg.high"] == {"pkg.low", "pkg.sub.leaf"}  # the function-local import counts
    assert arrows["pkg.sub.leaf"] == {"pkg.low"}
    assert import_graph.cycles(arrows) == []
    typed = import_graph.graph(root, typing=True)
    assert typed["pkg.sub.leaf"] == {"pkg.low", "pkg.high"}
    assert import_graph.cycles(typed) == [["pkg.high", "pkg.sub.leaf"]]
    assert "pkg.sub" in import_graph.graph(root, packages=True)["pkg.high"]


def test_imports_by_module_name_are_arrows(tmp_path):
    """A module named in a string — a command table of dotted names, a relative name given to
    importlib with the package, a package's lazy attribute table — is imported by name: an arrow,
    so a circle through it is found; a docstring naming a module is not."""
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "from ._lazy import lazy_attributes\n"
        "__getattr__, __dir__ = lazy_attributes(__name__, {'run': ('cli', 'run')})\n"
    )
    (root / "_lazy.py").write_text("def lazy_attributes(package, names):\n    return None, None\n")
    (root / "cli.py").write_text(
        '"""See pkg.low for the commands."""\nimport importlib\nCOMMANDS = ["pkg.low"]\n\n'
        "def run():\n    return importlib.import_module('.high', __package__)\n"
    )
    (root / "low.py").write_text('"""pkg.cli is above."""\n')
    (root / "high.py").write_text("from . import cli\n")
    arrows = import_graph.graph(root)
    assert arrows["pkg"] == {"pkg._lazy", "pkg.cli"}
    assert arrows["pkg.cli"] == {"pkg.low", "pkg.high"}
    assert arrows["pkg.low"] == set()  # a docstring names a module, it does not import it
    assert import_graph.cycles(arrows) == [["pkg.cli", "pkg.high"]]


def test_cycles_are_the_strongly_connected_components():
    arrows = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert import_graph.cycles(arrows) == [["a", "b", "c"], ["d", "e"]]


def test_rooms_and_layers():
    arrows = {"p.a.x": {"p.a.y", "p.b.z"}, "p.a.y": set(), "p.b.z": {"p.c"}, "p.c": set()}
    rooms = import_graph.by_package(arrows)
    assert rooms == {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": set()}
    assert import_graph.layers(rooms) == {"p.c": 0, "p.b": 1, "p.a": 2}
    rooms["p.c"].add("p.a")
    assert import_graph.cycles(rooms) == [["p.a", "p.b", "p.c"]]


def test_privgate_has_no_import_circle():
    """Imports by module name included: the CLI's command table, the catalogue of built-in metric
    modules, the packages' lazy attribute tables."""
    arrows = import_graph.graph()
    assert "privgate.commands.gate" in arrows["privgate.cli"]
    assert "privgate.metrics.distance" in arrows["privgate.catalogue"]
    assert import_graph.cycles(arrows) == []
    assert import_graph.cycles(import_graph.graph(typing=True)) == []


def test_privgate_rooms_have_no_circle_and_every_arrow_points_down():
    """Counted by subpackage and top-level module too: no room imports one that imports it back
    (the gates decide, render draws, finalise writes the reports and then the record)."""
    rooms = import_graph.by_package(import_graph.graph(typing=True))
    assert import_graph.cycles(rooms) == []
    layer = import_graph.layers(rooms)
    assert all(layer[a] > layer[b] for a, targets in rooms.items() for b in targets)


def test_the_architecture_doc_gives_the_layers_as_built():
    """docs/architecture.md orders the layers once, in the table of its "Layers" section: each
    room in the layer the import graph puts it."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    section = doc.split("## Layers: which module sits below which", 1)[1].split("\n## ", 1)[0]
    documented = {}
    for layer, rooms in re.findall(r"^\| (\d+) \| ([^|]*) \|", section, re.M):
        for name in re.findall(r"`([^`]+)`", rooms):
            name = name.rstrip("/")
            documented["privgate" if name == "privgate" else f"privgate.{name}"] = int(layer)
    built = import_graph.layers(import_graph.by_package(import_graph.graph()))
    assert documented == built
