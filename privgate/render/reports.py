"""HTML and JSON reports of one gate run.

``write_html_report(outcome, path, history=None)`` writes one self-contained HTML file (inline
CSS, plots as base64 PNG, no external resource): the decision, the decision table, values
against limits, per-record risk distributions, the dataset's score history when a
:class:`~privgate.history.HistoryStore` is given, and the input fingerprint.
``write_json_report`` writes the same content as JSON (``outcome.to_dict()`` plus the history).

Neither contains a value of a real record: only scores, aggregates, column names, dtypes, row
counts and hashes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup, escape

from ..gates.decision_table import columns, decision_rows, fmt_number, fmt_p, with_interval
from ..gates.present import column_handling_rows, sampling_summary, unchecked_note
from ..results import _jsonable
from . import plots
from .files import _atomic_write

REPORT_FORMAT = 1
_LABEL = {0: "PASS", 1: "WARN", 2: "BLOCK", 3: "BLOCK (error)"}
_TEXT = {
    0: "Every rule passed: the release may be published.",
    1: "A warn rule fired and no block rule: the release may be published; review the warnings.",
    2: "A block rule fired: the release must not be published.",
    3: "The gate could not decide completely (invalid configuration, missing or corrupt input, a "
    "metric that failed, or an unavailable history): it fails closed and blocks the release.",
}


# the report templates, beside this module (read from the folder, not through the package: the
# package imports this module)
TEMPLATES = Path(__file__).resolve().parent / "templates"


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
    )


def history_of(outcome: Any, history: Any) -> tuple[Any, Any]:
    """The dataset's stored runs and scores, with ``outcome``'s own rows appended when it is not
    recorded yet (the CLI writes reports before it records the final decision)."""
    scores = history.metric_history(outcome.dataset)
    runs = history.runs(outcome.dataset)
    if not outcome.recorded and outcome.run_id not in set(runs["run_id"].to_list()):
        pending_runs, pending_scores = history.pending_frames(outcome)
        runs = pl.concat([runs, pending_runs], how="vertical_relaxed")
        scores = pl.concat([scores, pending_scores], how="vertical_relaxed")
    return runs, scores


def _history_frames(outcome: Any, history: Any) -> tuple[Any, list[dict[str, Any]]]:
    if history is None:
        return None, []
    runs, scores = history_of(outcome, history)
    rows = runs.drop("fingerprint_json").with_columns(runs["created_at"].dt.strftime("%Y-%m-%d %H:%M:%S")).to_dicts()
    return scores, rows[-50:]


def render_html(outcome: Any, history: Any = None) -> str:
    """The HTML report as a string."""
    scores, history_rows = _history_frames(outcome, history)
    metrics = list(outcome.config.metrics) if outcome.config is not None else None
    cfg_source = "inline configuration"
    if outcome.config is not None and outcome.config.source:
        cfg_source = Path(outcome.config.source).name
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            o=outcome,
            decision=str(outcome.decision),
            decision_label=_LABEL.get(outcome.exit_code, str(outcome.decision).upper()),
            decision_text=_TEXT.get(outcome.exit_code, "") + unchecked_note(outcome),
            created=outcome.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            config_source=cfg_source,
            results=outcome.results,
            check_columns=columns(),
            check_rows=decision_rows(outcome),
            fmt=fmt_number,
            fmt_p=fmt_p,
            with_ci=with_interval,
            num=_num,
            plot_values=plots.plot_values(outcome),
            plot_per_record=plots.plot_per_record(outcome),
            plot_history=plots.plot_history(scores, outcome.run_id, metrics) if scores is not None else None,
            history_rows=history_rows,
            sampling=sampling_summary(outcome.results),
            column_rows=column_handling_rows(outcome),
        )
    )


def _num(text: str) -> Markup:
    """A value with its interval, the interval muted: ``0.0120 <span class=ci>[0.0040, 0.0310]</span>``."""
    value, _, interval = str(text).partition(" [")
    if not interval:
        return escape(value)
    return Markup(f'{escape(value)} <span class="ci">[{escape(interval)}</span>')


def report_dict(outcome: Any, history: Any = None) -> dict[str, Any]:
    """The JSON report's content."""
    out = {"report_format": REPORT_FORMAT, **outcome.to_dict()}
    if history is not None:
        runs, scores = history_of(outcome, history)
        runs = runs.drop("fingerprint_json")
        out["history"] = {
            "runs": _jsonable([{**r, "created_at": r["created_at"].isoformat()} for r in runs.to_dicts()]),
            "scores": _jsonable(
                [
                    {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()}
                    for r in scores.to_dicts()
                ]
            ),
        }
    return out


def write_html_report(outcome: Any, path: str | os.PathLike[str], history: Any = None) -> Path:
    """Write the self-contained HTML report of ``outcome`` to ``path``; returns the path."""
    return _atomic_write(path, render_html(outcome, history))


def write_json_report(outcome: Any, path: str | os.PathLike[str], history: Any = None) -> Path:
    """Write the JSON report of ``outcome`` to ``path``; returns the path."""
    text = json.dumps(report_dict(outcome, history), indent=2, allow_nan=False, default=str)
    return _atomic_write(path, text + "\n")
