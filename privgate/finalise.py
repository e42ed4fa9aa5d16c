"""Finishing a gate run: write its reports, then record its FINAL decision once.

It sits above both the gates (which decide) and :mod:`privgate.render` (which draws a decision):
neither of those imports the other's caller.

Shared by every way a run ends (``privgate gate``, ``privgate demo``, the Dagster checks): a
report that was asked for and cannot be written blocks the release (exit 3) *before* anything is
recorded, and a run that cannot be recorded blocks too — then the reports already written are
rewritten to say so (best effort). So the history row of a run is always its final decision and
trend rules never compare with a run a later step of which failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from . import render
from .gates.outcome import GateOutcome, add_error
from .gates.run import record_outcome

if TYPE_CHECKING:  # pragma: no cover
    from .history.store import HistoryStore

ReportTarget = tuple[str | Path, str]  # (path, "html" | "json")
OnReportError = Callable[[str | Path, str, str], None]


def finalise_run(
    outcome: GateOutcome,
    history: "HistoryStore | None",
    reports: Sequence[ReportTarget] = (),
    *,
    on_report_error: OnReportError | None = None,
) -> list[ReportTarget]:
    """Write ``reports`` of ``outcome``, then record it in ``history`` (when given). Returns the
    reports written. ``on_report_error(path, kind, reason)`` is told about each report that
    could not be written (the run is then blocked with a ``(report)`` error check)."""
    targets = list(reports)
    written = _write(outcome, targets, history, on_report_error)
    if len(written) < len(targets):
        # the decision changed: they must say block; one that cannot be rewritten still says
        # the old decision, so it is named as an error and not returned as a report of this run
        written = _write(outcome, written, history, on_report_error)
    if history is not None:
        before = outcome.exit_code
        record_outcome(outcome, history)
        if outcome.exit_code != before:
            written = _write(outcome, written, history, on_report_error)
    return written


def _write(
    outcome: GateOutcome,
    targets: Sequence[ReportTarget],
    history: "HistoryStore | None",
    on_error: OnReportError | None,
) -> list[ReportTarget]:
    writers = {"html": render.write_html_report, "json": render.write_json_report}
    ok: list[ReportTarget] = []
    for path, kind in targets:
        try:
            writers[kind](outcome, path, history=history)
            ok.append((path, kind))
        except Exception as exc:  # noqa: BLE001 - a report that cannot be written blocks the release
            reason = (
                f"{type(exc).__name__}: {exc.strerror}"
                if isinstance(exc, OSError) and exc.strerror
                else type(exc).__name__
            )
            add_error(outcome, "(report)", f"cannot write the {kind.upper()} report {path}: {reason}")
            if on_error is not None:
                on_error(path, kind, reason)
    return ok
