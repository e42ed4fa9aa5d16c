"""No function of the library runs over 60 lines of body (its signature, which the formatter
writes one parameter a line, and its docstring aside): a longer one is split into helpers that
each do one job, so that a reader finds each step by its name."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / "privgate"
LIMIT = 60


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines from the function's first statement after its docstring to its last line."""
    body = node.body
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return node.end_lineno - body[0].lineno + 1 if body else 0


def long_functions(root: Path = LIBRARY, limit: int = LIMIT) -> list[str]:
    """'path:line name (lines)' of every function over ``limit`` code lines under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and code_lines(node) > limit:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({code_lines(node)})")
    return found


def test_no_library_function_runs_over_60_lines():
    assert long_functions() == []


def test_the_count_leaves_the_signature_and_docstring_out_and_catches_a_long_body(tmp_path):
    def body(n: int) -> str:
        return "\n".join(f"    x{i} = {i}" for i in range(n))

    (tmp_path / "pkg").mkdir()
    # LIMIT statements fit, however long the signature and the docstring; one more does not
    (tmp_path / "pkg" / "m.py").write_text(
        f'def fits(\n    a,\n    b,\n):\n    """A\n    long\n    docstring."""\n{body(LIMIT)}\n\n\n'
        f"def over():\n{body(LIMIT + 1)}\n",
        encoding="utf-8",
    )
    assert long_functions(tmp_path / "pkg") == [f"pkg/m.py:{LIMIT + 10} over ({LIMIT + 1})"]
