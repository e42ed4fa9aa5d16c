"""Matplotlib figures of a gate run, returned as base64 PNG data URIs.

Uses ``matplotlib.figure.Figure`` directly (no pyplot, no global backend state), so rendering
works headless and never disturbs an interactive session. Every figure shows scores and
aggregates only: values against limits, distributions of per-record risks, and score histories.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..gates.rule_kinds import kind_of_check

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

COLOURS = {"pass": "#2e7d32", "warn": "#f9a825", "block": "#c62828", "none": "#78909c"}
_RANK = {"pass": 0, "warn": 1, "block": 2}


def new_figure(**kwargs: Any) -> "Figure":
    """A Matplotlib figure (imported on first use: a run that draws nothing — a configuration
    error reported at once — does not pay a second of CPU for Matplotlib's import)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def figure_to_data_uri(fig: "Figure", dpi: int = 110) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def metric_verdicts(outcome: Any) -> dict[str, str]:
    """Worst verdict per metric over its checks."""
    out: dict[str, str] = {}
    for c in outcome.checks:
        if c.skipped:
            out.setdefault(c.metric, "pass")
            continue
        prev = out.get(c.metric, "pass")
        out[c.metric] = c.verdict if _RANK[c.verdict] > _RANK[prev] else prev
    return out


def plot_values(outcome: Any) -> str | None:
    """Horizontal bars: each metric's risk value with its 95 % interval (black whisker), its
    holdout baseline (hollow diamond) and the limits of its threshold rules (ticks; amber = warn,
    red = block)."""
    results = outcome.results
    if not results:
        return None
    names = list(results)
    verdicts = metric_verdicts(outcome)
    fig = new_figure(figsize=(7.5, 0.45 * len(names) + 1.2))
    ax = fig.add_subplot()
    y = np.arange(len(names))[::-1]
    vals = [results[n].value for n in names]
    ax.barh(y, vals, color=[COLOURS[verdicts.get(n, "none")] for n in names], height=0.6, alpha=0.85)
    for yi, n in zip(y, names):
        r = results[n]
        if r.baseline is not None:
            ax.plot([r.baseline], [yi], marker="D", mfc="none", mec="black", ms=7, lw=0)
            for c in outcome.checks:
                if c.metric == n and _bar_limit(c.rule) == "baseline" and c.threshold is not None and not c.skipped:
                    ax.plot(
                        [r.baseline + c.threshold] * 2,
                        [yi - 0.35, yi + 0.35],
                        color=COLOURS[c.severity],
                        lw=1.5,
                        ls=":",
                    )
        for c in outcome.checks:
            if c.metric == n and _bar_limit(c.rule) == "value" and c.threshold is not None:
                ax.plot([c.threshold] * 2, [yi - 0.35, yi + 0.35], color=COLOURS[c.severity], lw=2.5)
        right = r.value
        if r.ci is not None:
            ax.plot([r.ci[0], r.ci[1]], [yi, yi], color="black", lw=1.2, marker="|", ms=8)
            right = max(right, r.ci[1])
        ax.text(min(right + 0.01, 0.93), yi, f"{r.value:.3f}", va="center", fontsize=8)
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel("risk value (0 = private, 1 = no privacy)")
    ax.set_title(
        "Metric values against limits  (whisker: 95 % interval; solid tick: threshold; "
        "◇ holdout baseline, dotted: baseline + allowed excess)",
        fontsize=9,
    )
    ax.grid(axis="x", alpha=0.3)
    return figure_to_data_uri(fig)


def plot_per_record(outcome: Any, bins: int = 20) -> str | None:
    """Histograms of per-record risk for every metric that has a per-record breakdown."""
    items = [
        (n, np.asarray(r.per_record, dtype=np.float64))
        for n, r in outcome.results.items()
        if r.per_record is not None and np.size(r.per_record)
    ]
    if not items:
        return None
    cols = min(3, len(items))
    rows = int(np.ceil(len(items) / cols))
    fig = new_figure(figsize=(3.4 * cols, 2.6 * rows))
    for i, (name, arr) in enumerate(items, 1):
        ax = fig.add_subplot(rows, cols, i)
        arr = arr[np.isfinite(arr)]
        lo, hi = (0.0, 1.0) if arr.size == 0 or (arr.min() >= 0 and arr.max() <= 1) else (arr.min(), arr.max())
        ax.hist(arr, bins=bins, range=(lo, hi) if hi > lo else None, color="#5c6bc0")
        ax.set_title(f"{name} (n={arr.size}, mean {arr.mean() if arr.size else float('nan'):.3f})", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylabel("real records", fontsize=7)
    fig.suptitle("Per-record risk of the real records", fontsize=9)
    fig.tight_layout()
    return figure_to_data_uri(fig)


def plot_history(
    history_frame: pl.DataFrame, current_run: str | None = None, metrics: list[str] | None = None
) -> str | None:
    """One line per metric over the dataset's runs (oldest left); blocked runs marked ×, the
    current run circled."""
    if history_frame is None or history_frame.is_empty():
        return None
    df = history_frame.drop_nulls("value")
    if metrics is not None:
        df = df.filter(pl.col("metric").is_in(metrics))
    if df.is_empty():
        return None
    runs = df.select("seq", "run_id", "release_id", "decision").unique("seq").sort("seq")
    if runs.height < 1:
        return None
    pos = {s: i for i, s in enumerate(runs["seq"].to_list())}
    fig = new_figure(figsize=(7.5, 3.6))
    ax = fig.add_subplot()
    for name in df["metric"].unique(maintain_order=True).to_list():
        part = df.filter(pl.col("metric") == name).sort("seq")
        x = [pos[s] for s in part["seq"].to_list()]
        ax.plot(x, part["value"].to_list(), marker="o", ms=3, lw=1.2, label=name)
        blocked = part.filter(pl.col("decision") == "block")
        if not blocked.is_empty():
            ax.plot(
                [pos[s] for s in blocked["seq"].to_list()],
                blocked["value"].to_list(),
                "x",
                color=COLOURS["block"],
                ms=7,
            )
    if current_run is not None:
        cur = runs.filter(pl.col("run_id") == current_run)
        if not cur.is_empty():
            ax.axvline(pos[cur["seq"][0]], color="black", lw=0.8, ls="--")
    labels = runs["release_id"].to_list()
    step = max(1, len(labels) // 12)
    ax.set_xticks(list(range(0, len(labels), step)), labels[::step], rotation=30, ha="right", fontsize=7)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("risk value")
    ax.set_title("Score history of this dataset (× blocked run, dashed: this run)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure_to_data_uri(fig)


def _bar_limit(label: str) -> str | None:
    """Where the bar chart draws the limit of a check's rule (its kind's ``bar_limit``: on the
    value axis, over the holdout baseline), None for checks that are no rule or draw none."""
    kind = kind_of_check(label)
    return kind.bar_limit if kind is not None else None
