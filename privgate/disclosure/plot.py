"""The multi_disclosure plot: per target the original attribute measure (Dorig, or CAPd for DCAP)
and the synthetic one (DiSCO by default) as a dot plot, targets ordered by the synthetic measure
with synthpop's row labels (rank, target, "1way"/"2way" check flags), plus the identity measures
(UiO, repU) as reference lines — the figure synthpop's ``multi.disclosure(plot = TRUE)`` draws.

Only aggregates are drawn (percentages and target names), never values of records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class MultiMeasures(Protocol):
    """What the plot reads of a :class:`~privgate.disclosure.api.MultiDisclosureResult` (which
    calls it from its ``plot`` method, so the plot names the fields, not the class)."""

    keys: list[str]
    attrib_table: Any  # polars DataFrame
    attrib_meas: str
    ident_orig: list[float]
    ident_syn: list[float]
    ident_meas: str


def plot_multi(res: MultiMeasures, path: Any = None):
    """Draw (and save to ``path`` when given: .png, .pdf, .svg) the summary of ``res`` (a
    :class:`~privgate.disclosure.api.MultiDisclosureResult`); returns the matplotlib Figure."""
    # a bare Figure (no pyplot) needs no backend switch, so the caller's backend is left alone
    from matplotlib.figure import Figure

    table = res.attrib_table
    n = table.height
    fig = Figure(figsize=(9.0, 1.6 + 0.45 * n))
    ax = fig.add_subplot(1, 1, 1)
    y = list(range(n))
    orig = table["attrib.orig"].to_list()
    syn = table["attrib.syn"].to_list()
    for yi, o, s in zip(y, orig, syn):
        ax.plot([o, s], [yi, yi], color="0.75", linewidth=1.5, zorder=1)
    orig_label = "CAPd (original)" if res.attrib_meas == "DCAP" else "Dorig (original)"
    ax.scatter(orig, y, marker="o", s=45, color="#1f77b4", label=orig_label, zorder=2)
    ax.scatter(syn, y, marker="D", s=45, color="#d62728", label=f"{res.attrib_meas} (synthetic)", zorder=3)
    if res.ident_orig:
        ax.axvline(
            res.ident_orig[0], color="#1f77b4", linestyle=":", linewidth=1, label=f"UiO {res.ident_orig[0]:.2f} %"
        )
        ax.axvline(
            res.ident_syn[0],
            color="#d62728",
            linestyle=":",
            linewidth=1,
            label=f"{res.ident_meas} {res.ident_syn[0]:.2f} %",
        )
    ax.set_yticks(y)
    ax.set_yticklabels(table["row"].to_list())
    ax.set_xlabel("% of original records")
    ax.set_xlim(0, max([100.0] + [v for v in orig + syn if v == v]))
    ax.set_title("Disclosure risk from keys: " + ", ".join(res.keys), fontsize=10)
    ax.grid(axis="x", color="0.9")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path))
    return fig
