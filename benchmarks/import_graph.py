"""The import graph of ``privgate/``: which module imports which, and the circles in it.

Every ``import`` and ``from ... import`` statement of a privgate module that names another privgate
module is an arrow, at module level or inside a function alike (a function-local import is a
circle postponed, not undone); imports under ``if TYPE_CHECKING:`` are not (they never run).
Imports by module name are arrows too (:func:`named_modules`): a string that names a privgate
module — ``"privgate.commands.gate"`` in the CLI's command table, ``".require_audit"`` given to
``importlib.import_module`` with the package, a submodule of a package's lazy attribute table
(``lazy_attributes(__name__, {"evaluate": ("evaluation", "evaluate")})``) — since a lookup by
name imports the module as surely as an ``import`` statement does. ``from .pkg import name``
points at ``pkg/name.py`` when that is a module, else at ``pkg``.

A circle is a strongly connected component of more than one module (Tarjan, 1972, "Depth-first
search and linear graph algorithms", SIAM J. Comput. 1(2)).

    python benchmarks/import_graph.py                 # the circles, one per line, and their count
    python benchmarks/import_graph.py --arrows        # also every arrow, "a -> b"
    python benchmarks/import_graph.py --packages      # also count importing pkg.mod as importing pkg
    python benchmarks/import_graph.py --typing        # also count the imports for type checkers
    python benchmarks/import_graph.py --by-package    # the rooms: privgate's subpackages and
                                                      # top-level modules, each one node, in layers

``--packages`` adds the arrow a Python import really takes: importing ``privgate.gates.run`` first
runs ``privgate/gates/__init__.py``. Exit status 1 when there is a circle.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "privgate"


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under ``root``: dotted name → file."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, typing: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of ``tree`` that run: everywhere except ``if TYPE_CHECKING:`` bodies
    (those too with ``typing``)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if not typing and isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The privgate modules one import statement of ``module`` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub in known:
            out.append(sub)
        elif target in known:
            out.append(target)
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (a module's, class's or function's first
    string), which name modules in prose, not to import them."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _called(node: ast.Call) -> str:
    """The name of the function a call calls (``f(...)``, ``mod.f(...)``)."""
    return getattr(node.func, "id", getattr(node.func, "attr", ""))


def named_modules(module: str, is_package: bool, tree: ast.AST, known: set[str]) -> set[str]:
    """The privgate modules ``module`` names by string to import them by name: every string
    constant (docstrings aside) that is a known module's dotted name (``"privgate.cli"``, not the
    bare ``"privgate"``, which is also a word), or — starting with a dot — one relative to the
    module's package; and the submodules of a lazy attribute table (the
    first item of each ``(submodule, attribute)`` value of the dict given to
    ``lazy_attributes``)."""
    package = module if is_package else module.rpartition(".")[0]
    skip = _docstrings(tree)
    out: set[str] = set()

    def relative(name: str) -> str:
        level = len(name) - len(name.lstrip("."))
        base = package.split(".")
        base = base[: len(base) - (level - 1)] if level > 1 else base
        rest = name.lstrip(".")
        return ".".join(base + ([rest] if rest else []))

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            # a dotted name ("privgate.commands.gate") or a relative one (".require_audit"); the bare
            # package name is a word too ("privgate" labels pools, kinds and prefixes)
            target = relative(text) if text.startswith(".") and len(text) > 1 else text
            if "." in text and target in known:
                out.add(target)
        elif isinstance(node, ast.Call) and _called(node) == "lazy_attributes":
            for table in node.args[1:2]:
                for value in getattr(table, "values", []):
                    first = value.elts[0] if isinstance(value, ast.Tuple) and value.elts else None
                    if isinstance(first, ast.Constant) and isinstance(first.value, str):
                        target = f"{package}.{first.value}"
                        if target in known:
                            out.add(target)
    out.discard(module)
    return out


def graph(root: Path = ROOT, packages: bool = False, typing: bool = False) -> dict[str, set[str]]:
    """module → the privgate modules it imports (itself never); ``packages``: importing
    ``a.b.c`` also imports ``a.b``; ``typing``: the imports for type checkers count too."""
    mods = module_names(root)
    known = set(mods)
    arrows: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        targets = [t for node in _imports(tree, typing) for t in _resolve(mod, is_package, node, known)]
        for target in targets + sorted(named_modules(mod, is_package, tree, known)):
            names = [target]
            if packages:  # importing a.b.c runs a/__init__ and a/b/__init__ first
                parts = target.split(".")
                names += [".".join(parts[:i]) for i in range(2, len(parts))]
            arrows[mod].update(n for n in names if n != mod and n in known)
    return arrows


def by_package(arrows: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The same graph between rooms: every module counted as its first ``depth`` name parts
    (``privgate.gates.run`` → ``privgate.gates``; a top-level module is a room of its own);
    arrows inside a room dropped."""

    def room(m: str) -> str:
        return ".".join(m.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for mod, targets in arrows.items():
        out.setdefault(room(mod), set()).update(room(t) for t in targets if room(t) != room(mod))
    return out


def layers(arrows: dict[str, set[str]]) -> dict[str, int]:
    """Each node's layer in a graph without circles: 0 for a node that imports nothing, else one
    above the highest node it imports — so every arrow points down."""
    layer: dict[str, int] = {}

    def visit(node: str, seen: tuple[str, ...] = ()) -> int:
        if node not in layer:
            if node in seen:
                raise ValueError(f"circle through {node}")
            below = [visit(t, seen + (node,)) for t in arrows.get(node, ())]
            layer[node] = 1 + max(below) if below else 0
        return layer[node]

    for node in sorted(arrows):
        visit(node)
    return layer


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(arrows):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(arrows.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def main(argv: list[str] | None = None) -> int:
    """Print the circles (and with ``--arrows`` every arrow); exit 1 when there is one."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arrows", action="store_true", help="print every arrow too")
    ap.add_argument(
        "--packages",
        action="store_true",
        help="importing pkg.mod also counts as importing pkg (its __init__ runs first)",
    )
    ap.add_argument(
        "--typing",
        action="store_true",
        help="the imports under `if TYPE_CHECKING:` count too (names for type checkers only)",
    )
    ap.add_argument(
        "--by-package", action="store_true", help="one node per subpackage or top-level module, printed by layer"
    )
    args = ap.parse_args(argv)
    arrows = graph(packages=args.packages, typing=args.typing)
    if args.by_package:
        arrows = by_package(arrows)
    if args.arrows:
        for mod in sorted(arrows):
            for target in sorted(arrows[mod]):
                print(f"{mod} -> {target}")
    found = cycles(arrows)
    if args.by_package and not found:
        for node, level in sorted(layers(arrows).items(), key=lambda kv: (kv[1], kv[0])):
            print(f"layer {level:2d}  {node}")
    for comp in found:
        inner = sum(1 for a in comp for b in arrows[a] if b in comp)
        print(f"circle of {len(comp)} modules, {inner} arrows: {' '.join(comp)}")
    n_arrows = sum(len(v) for v in arrows.values())
    print(f"{len(arrows)} modules, {n_arrows} arrows, {len(found)} circles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
