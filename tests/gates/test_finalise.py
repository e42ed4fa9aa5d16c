"""finalise_run: reports first, then the final decision recorded once; a report that still says
an earlier decision is never returned as a report of the run."""

from __future__ import annotations

import polars as pl

from privgate import finalise
from privgate.gates import run_gate

CFG = {"dataset": "t", "metrics": {"common_rows": {"threshold": {"block": 0.5}}}}


def _passing_outcome():
    real = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    out = run_gate(CFG, real, pl.DataFrame({"a": [9.0, 8.0, 7.0, 6.0]}), record=False)
    assert out.exit_code == 0
    return out


def test_a_report_that_cannot_be_rewritten_is_not_returned(tmp_path, monkeypatch):
    """The JSON report is written (PASS), the HTML one fails → the run blocks; rewriting the JSON
    to say so also fails → it is named and not returned, so nobody links a stale PASS report."""
    from privgate import render

    calls = {"json": 0}

    def json_writer(outcome, path, history=None):
        calls["json"] += 1
        if calls["json"] > 1:
            raise OSError(28, "No space left on device")
        path.write_text(str(outcome.decision))

    def html_writer(outcome, path, history=None):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(render, "write_json_report", json_writer)
    monkeypatch.setattr(render, "write_html_report", html_writer)
    told = []
    out = _passing_outcome()
    written = finalise.finalise_run(
        out,
        None,
        [(tmp_path / "r.json", "json"), (tmp_path / "r.html", "html")],
        on_report_error=lambda p, k, r: told.append((k, r)),
    )
    assert written == [] and out.exit_code == 3 and str(out.decision) == "block"
    assert told == [("html", "PermissionError: Permission denied"), ("json", "OSError: No space left on device")]
    assert sum(c.metric == "(report)" for c in out.checks) == 2


def test_reports_written_then_recorded(tmp_path):
    from privgate.history import HistoryStore

    out = _passing_outcome()
    with HistoryStore(tmp_path / "h.sqlite") as store:
        written = finalise.finalise_run(out, store, [(tmp_path / "r.json", "json")])
        assert [k for _, k in written] == ["json"] and out.recorded
        assert store.runs("t")["decision"].to_list() == ["pass"]
    assert '"decision": "pass"' in (tmp_path / "r.json").read_text()
