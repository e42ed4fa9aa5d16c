"""The README's documentation index names every page of docs/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_readme_indexes_every_doc_page():
    index = (REPO / "README.md").read_text(encoding="utf-8").split("## Documentation", 1)[1]
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert pages and [p for p in pages if f"`docs/{p}`" not in index] == []
