"""Plain-text tables for terminal output: what every CLI table and the gate's decision table are
printed with (a library module: the gate and the audit rules print tables without the CLI)."""

from __future__ import annotations

import textwrap
from typing import Any, Sequence

# the width every CLI table fits by default (``--wide``: no limit, every column)
TABLE_WIDTH = 100
_GAP = "  "
_NARROW_GAP = " "  # a table that does not fit with two spaces between its columns
_MIN_COLUMN = 8


def cell_text(v: Any) -> str:
    """A value as table text: numbers to 4 decimals, None as '-'."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, width: int | None = None, wrap: Sequence[str] = ()
) -> str:
    """Left-aligned text columns, numbers to 4 decimals, None as '-'.

    With ``width``, no line is longer than ``width`` characters: the columns named in ``wrap``
    (the widest first), then any column, are narrowed and their cells wrapped onto more lines."""
    head, body = table_blocks(headers, rows, width=width, wrap=wrap)
    return "\n".join(head + [line for block in body for line in block])


def table_blocks(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, width: int | None = None, wrap: Sequence[str] = ()
) -> tuple[list[str], list[list[str]]]:
    """:func:`format_table` as (the header lines, the lines of each row): a wrapped row has
    more than one line. A table too wide for ``width`` that fits with one space between its
    columns gets one space (no cell is wrapped); one that does not keeps two and narrows columns."""
    cells = [[cell_text(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    gap = _GAP
    if width is not None:
        if _line_width(widths, gap) > width >= _line_width(widths, _NARROW_GAP):
            gap = _NARROW_GAP
        _narrow(widths, [i for i, h in enumerate(headers) if h in wrap], width, gap)
        _narrow(widths, list(range(len(widths))), width, gap)
    head = _row_lines(list(headers), widths, gap) + [gap.join("-" * w for w in widths)]
    return ([line.rstrip() for line in head], [[line.rstrip() for line in _row_lines(r, widths, gap)] for r in cells])


def _line_width(widths: Sequence[int], gap: str) -> int:
    return sum(widths) + len(gap) * (len(widths) - 1)


def _narrow(widths: list[int], candidates: list[int], width: int, gap: str = _GAP) -> None:
    excess = _line_width(widths, gap) - width
    while excess > 0:
        shrinkable = [i for i in candidates if widths[i] > _MIN_COLUMN]
        if not shrinkable:
            return
        i = max(shrinkable, key=lambda j: widths[j])
        widths[i] -= 1
        excess -= 1


def _row_lines(values: Sequence[str], widths: Sequence[int], gap: str = _GAP) -> list[str]:
    parts = [_wrap(v, w) if len(v) > w else [v] for v, w in zip(values, widths)]
    height = max(len(p) for p in parts)
    return [gap.join((p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)) for k in range(height)]


def wrap_line(text: str, width: int | None = TABLE_WIDTH, indent: str = "") -> str:
    """``text`` wrapped at spaces to ``width`` (continuation lines indented by ``indent``);
    unchanged without a width. A word longer than the width (a file path) is kept whole, so it
    can be copied."""
    if width is None or len(text) <= width:
        return text
    return "\n".join(
        textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    )
