"""Trends by release: each gated metric's value and 95 % interval release by release, with the
rule's warn and block limits drawn as lines on the same chart.

:func:`trend_charts` turns a dataset's stored runs and scores (:mod:`privgate.history`) and its
latest gate configuration into one :class:`TrendChart` per (metric, rule kind) — a threshold rule
plots the value and its interval, a baseline rule the excess over the holdout baseline and its
interval, a test rule the p-value — with the release ids, in run order, as the x axis labels (no
hover needed: every point is labelled by its release, and its decision is its marker).
:func:`trend_figure` draws one as a base64 PNG (Matplotlib, no network), :func:`trend_page` writes
a self-contained HTML page of every dataset (``privgate history --html``), and the Dagster
scorecard shows the same charts (:mod:`privgate.dagster.scorecard`). Scores and limits only.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

from ..gates.rule_kinds import rule_kind
from .plots import COLOURS, figure_to_data_uri, new_figure

# the most recent runs a chart shows (their labels stay readable)
MAX_RUNS = 40
_MARKERS = {"pass": "o", "warn": "s", "block": "X"}
_DECIDED = {"pass": "release passed", "warn": "release warned", "block": "release blocked"}


@dataclass(frozen=True)
class TrendChart:
    """One metric's quantity by release: ``releases`` (x labels, run order), ``decisions`` (each
    run's), ``values`` / ``lows`` / ``highs`` (None where absent) and the ``limits`` of the rules
    of that kind (severity, limit, which end of the interval the rule compares)."""

    dataset: str
    metric: str
    kind: str
    quantity: str
    releases: list[str]
    decisions: list[str]
    values: list[float | None]
    lows: list[float | None]
    highs: list[float | None]
    limits: list[tuple[str, float, str]] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.metric}: {self.quantity} by release ({self.kind} rule)"


def gated_rules(
    config: Mapping[str, Any] | None, has_holdout: bool | None
) -> dict[str, dict[str, list[tuple[str, float, str]]]]:
    """metric → rule kind (threshold, baseline, test) → its (severity, limit, on) of the stored
    canonical configuration ``config``, the rules that apply to a run with / without a holdout
    (``has_holdout`` None: every rule). A kind draws the history columns of its declaration's
    ``chart``; trend rules compare with the last accepted release, not a fixed limit: they add
    no line."""
    out: dict[str, dict[str, list[tuple[str, float, str]]]] = {}
    for name, metric in ((config or {}).get("metrics") or {}).items():
        for rule in metric.get("rules") or []:
            when = rule.get("when", "always")
            if has_holdout is not None and when != "always" and (when == "with_holdout") != has_holdout:
                continue
            if rule_kind(rule.get("kind")).chart is None:  # no fixed limit to draw (a trend rule)
                continue
            out.setdefault(name, {}).setdefault(rule["kind"], []).append(
                (str(rule.get("severity")), float(rule.get("limit")), str(rule.get("on") or "estimate"))
            )
    return out


def trend_charts(
    dataset: str,
    runs: pl.DataFrame,
    scores: pl.DataFrame,
    config: Mapping[str, Any] | None,
    *,
    max_runs: int = MAX_RUNS,
) -> list[TrendChart]:
    """The charts of ``dataset``: one per gated (metric, rule kind) of ``config`` (the latest
    configuration) over the last ``max_runs`` runs that stored a score (``runs``: the store's
    ``runs()`` frame, ``scores``: its ``metric_history()`` frame)."""
    if runs.is_empty() or scores.is_empty():
        return []
    scored = runs.filter(pl.col("run_id").is_in(scores["run_id"].unique().implode())).sort("seq").tail(max_runs)
    if scored.is_empty():
        return []
    latest_holdout = bool(scored["has_holdout"][-1]) if "has_holdout" in scored.columns else None
    order = scored.select("run_id", "release_id", "decision")
    charts = []
    for metric, kinds in gated_rules(config, latest_holdout).items():
        part = order.join(scores.filter(pl.col("metric") == metric), on="run_id", how="left", suffix="_score")
        for kind, limits in kinds.items():
            col, lo, hi, label = rule_kind(kind).chart
            charts.append(
                TrendChart(
                    dataset=dataset,
                    metric=metric,
                    kind=kind,
                    quantity=label,
                    releases=part["release_id"].to_list(),
                    decisions=part["decision"].to_list(),
                    values=part[col].to_list(),
                    lows=part[lo].to_list() if lo else [None] * part.height,
                    highs=part[hi].to_list() if hi else [None] * part.height,
                    limits=limits,
                )
            )
    return charts


def trend_figure(chart: TrendChart, *, dpi: int = 100, colours: int | None = None) -> str:
    """``chart`` as a base64 PNG data URI: one point per release (its marker and colour its run's
    decision), the interval as an error bar, each limit a horizontal line labelled with its
    severity and value, the release ids as x labels. ``colours``: a palette of that many colours
    (a PNG about a quarter the size, for metadata stored with every event)."""
    n = len(chart.releases)
    fig = new_figure(figsize=(max(5.5, min(12.0, 0.45 * n + 3.0)), 3.2))
    ax = fig.add_subplot()
    x = list(range(n))
    for i in x:
        v, lo, hi = chart.values[i], chart.lows[i], chart.highs[i]
        if v is None:
            continue
        if lo is not None and hi is not None:
            ax.errorbar([i], [v], yerr=[[max(0.0, v - lo)], [max(0.0, hi - v)]], color="#455a64", lw=1, capsize=3)
        decision = chart.decisions[i]
        ax.plot([i], [v], _MARKERS.get(decision, "o"), color=COLOURS.get(decision, COLOURS["none"]), ms=7)
    styles = {"warn": (COLOURS["warn"], "--"), "block": (COLOURS["block"], "-")}
    for severity, limit, on in chart.limits:
        colour, style = styles.get(severity, (COLOURS["none"], ":"))
        end = "" if on == "estimate" else f" (on the interval's {on} end)"
        ax.axhline(limit, color=colour, ls=style, lw=1.2, label=f"{severity} limit {limit:g}{end}")
    for decision, marker in _MARKERS.items():  # the legend says what a marker means
        if decision in chart.decisions:
            ax.plot([], [], marker, color=COLOURS[decision], ls="none", label=_DECIDED[decision])
    ax.set_xticks(x, chart.releases, rotation=30 if n > 3 else 0, ha="right" if n > 3 else "center", fontsize=8)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylabel(chart.quantity, fontsize=8)
    ax.set_title(chart.title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    uri = figure_to_data_uri(fig, dpi=dpi)
    return uri if colours is None else _palette(uri, colours)


def _palette(uri: str, colours: int) -> str:
    """A PNG data URI redrawn with a palette of ``colours`` colours."""
    import base64
    import io

    from PIL import Image

    head, data = uri.split(",", 1)
    image = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB").quantize(colors=colours)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return f"{head},{base64.b64encode(out.getvalue()).decode('ascii')}"


def dataset_charts(store: Any, dataset: str, *, max_runs: int = MAX_RUNS) -> list[TrendChart]:
    """The trend charts of ``dataset`` read from the history ``store``."""
    return trend_charts(
        dataset, store.runs(dataset), store.metric_history(dataset), store.last_config(dataset), max_runs=max_runs
    )


def trend_page(store: Any, datasets: Sequence[str] | None = None, *, max_runs: int = MAX_RUNS) -> str:
    """A self-contained HTML page (inline CSS, base64 PNG charts; no script, no link, nothing
    fetched) of the trends of ``datasets`` (default: every dataset in ``store``): per dataset its
    runs by release and one chart per gated metric and rule kind."""
    names = list(datasets) if datasets is not None else store.datasets()
    e = html.escape
    parts = [
        f"<h1>privgate: trends by release</h1><p class=meta>History {e(repr(store))}; written "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Each chart: one point per gate run, labelled by "
        "its release (oldest left; the last "
        f"{max_runs} runs with scores), the bar its 95 % interval, the marker its decision; the "
        "lines are the latest configuration's warn (dashed) and block (solid) limits.</p>"
    ]
    for ds in names:
        runs = store.runs(ds)
        parts.append(f"<h2>Dataset {e(ds)}</h2>")
        parts.append(_runs_table(runs.tail(max_runs)))
        charts = dataset_charts(store, ds, max_runs=max_runs)
        if not charts:
            parts.append(
                "<p>No stored scores to chart (every run stopped before its evaluation, or no "
                "configuration is stored).</p>"
            )
        for chart in charts:
            parts.append(
                f'<figure><img alt="{e(chart.title)}" src="{trend_figure(chart)}">'
                f"<figcaption>{e(chart.title)}: {e(_limits_text(chart))}</figcaption></figure>"
            )
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>privgate trends</title>"
        f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>"
    )


def write_trend_page(store: Any, path: str | Path, datasets: Sequence[str] | None = None) -> Path:
    """Write :func:`trend_page` to ``path`` (completely or not at all); returns the path."""
    from .files import _atomic_write

    out = Path(path)
    _atomic_write(out, trend_page(store, datasets))
    return out


def _limits_text(chart: TrendChart) -> str:
    return ", ".join(f"{s} {v:g}" + ("" if on == "estimate" else f" on the {on} end") for s, v, on in chart.limits)


def _runs_table(runs: pl.DataFrame) -> str:
    e = html.escape
    rows = "".join(
        f"<tr class={e(str(r['decision']))}><td>{e(str(r['release_id']))}</td><td>{e(str(r['decision']))}</td>"
        f"<td>{r['exit_code']}</td><td>{r['created_at']:%Y-%m-%d %H:%M:%S}</td></tr>"
        for r in runs.iter_rows(named=True)
    )
    return (
        "<table><thead><tr><th>release</th><th>decision</th><th>exit code</th><th>time (UTC)</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;font-size:90%}"
    "tr.block td:nth-child(2){color:#c62828;font-weight:bold}tr.warn td:nth-child(2){color:#a66f00}"
    "figure{margin:1.5em 0}img{max-width:100%}figcaption{font-size:85%;color:#555}.meta{color:#555}"
)
