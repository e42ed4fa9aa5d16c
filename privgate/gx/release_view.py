"""The words a GX result carries when its metric compared labels or values as they are while the
batch's labels or scales differ from the real data's (the label-free view's finding,
``privgate.metrics.label_free.view_status``): counts and positions, never a value."""

from __future__ import annotations

from typing import Any


def release_view_warning(metric: str, view: dict[str, Any]) -> str:
    """Words for a result whose metric compared labels or values as they are while the batch's
    labels or scales differ from the real data's (``view``: the label-free view's finding)."""
    if view.get("foreign_scale"):
        what = (
            f"a numeric column (position {view.get('foreign_column_position')}) is on a scale no real data could have"
        )
    else:
        parts = [
            f"{view['labels_recoded']} categorical column(s) use other labels for the real levels"
            if view.get("labels_recoded")
            else "",
            f"{view['numeric_columns_mapped']} numeric column(s) are on another scale"
            if view.get("numeric_columns_mapped")
            else "",
            f"{view['records_disguised']} record(s) are copies in disguise" if view.get("records_disguised") else "",
            f"{view['columns_left_out']} numeric column(s) reach far beyond the real range"
            if view.get("columns_left_out")
            else "",
        ]
        what = "; ".join(p for p in parts if p)
    return (
        f"the release differs from the real data's labels or scales ({what}): {metric!r} compares "
        "them as they are, so its value does not show copies in disguise — gate with the label-free "
        "metrics (label_free_copies, label_free_memorisation, label_free_authenticity) too"
    )
