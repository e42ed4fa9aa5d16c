"""Trends by release: the charts' numbers are the stored scores in run order with the latest
configuration's limits, and ``privgate history --html`` writes one self-contained page (no link,
no script) naming every release and limit."""

from __future__ import annotations

import base64
import re
import uuid
from pathlib import Path

import pytest

from privgate.cli import main
from privgate.gates import GateOutcome, decide, decision_of, parse_gate_config
from privgate.history import HistoryStore
from privgate.render.trends import gated_rules, trend_charts

CFG = parse_gate_config(
    {
        "dataset": "trendy",
        "metrics": {
            "common_rows": {"threshold": {"warn": 0.001, "block": 0.01}, "trend": {"warn": 0.002}},
            "memorisation": {"threshold": {"on": "lower", "warn": 0.0, "block": 0.01}},
        },
    }
)


class _Report:
    def __init__(self, results):
        self.results, self.errors = results, {}


def _outcome(release: str, values: dict[str, tuple[float, float, float]]) -> GateOutcome:
    from privgate.results import MetricResult

    results = {n: MetricResult(name=n, value=v, raw=v, ci=(lo, hi)) for n, (v, lo, hi) in values.items()}
    checks = decide(CFG, results, {}, has_holdout=False, previous=None)
    decision, code = decision_of(checks)
    return GateOutcome(
        run_id=uuid.uuid4().hex,
        dataset="trendy",
        release_id=release,
        decision=decision,
        checks=checks,
        exit_code=code,
        report=_Report(results),
        config=CFG,
        config_hash=CFG.hash,
        privgate_version="test",
    )


RELEASES = {
    "rel-2026-01": {"common_rows": (0.0, 0.0, 0.0005), "memorisation": (0.0, 0.0, 0.004)},
    "rel-2026-02-copy": {"common_rows": (0.5, 0.45, 0.55), "memorisation": (0.6, 0.58, 0.62)},
    "rel-2026-03": {"common_rows": (0.0005, 0.0, 0.001), "memorisation": (0.001, 0.0, 0.005)},
}


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "h.sqlite"
    with HistoryStore(path) as store:
        for release, values in RELEASES.items():
            store.record(_outcome(release, values))
    return path


def test_charts_are_the_stored_scores_by_release_with_the_limits(db):
    with HistoryStore(db) as store:
        charts = trend_charts(
            "trendy", store.runs("trendy"), store.metric_history("trendy"), store.last_config("trendy")
        )
    by = {(c.metric, c.kind): c for c in charts}
    assert set(by) == {("common_rows", "threshold"), ("memorisation", "threshold")}  # a trend rule draws no line
    c = by[("common_rows", "threshold")]
    assert c.releases == list(RELEASES) and c.decisions == ["pass", "block", "pass"]
    assert c.values == [0.0, 0.5, 0.0005] and c.lows == [0.0, 0.45, 0.0] and c.highs == [0.0005, 0.55, 0.001]
    assert c.limits == [("warn", 0.001, "estimate"), ("block", 0.01, "estimate")]
    assert by[("memorisation", "threshold")].limits == [("warn", 0.0, "lower"), ("block", 0.01, "lower")]


def test_rules_of_the_other_holdout_case_draw_no_line():
    config = {
        "metrics": {
            "m": {
                "rules": [
                    {"kind": "threshold", "limit": 0.1, "severity": "block", "when": "no_holdout", "on": "estimate"},
                    {"kind": "baseline", "limit": 0.2, "severity": "block", "when": "with_holdout", "on": "estimate"},
                    {"kind": "test", "limit": 0.01, "severity": "warn", "when": "always", "on": "estimate"},
                ]
            }
        }
    }
    assert gated_rules(config, True) == {
        "m": {"baseline": [("block", 0.2, "estimate")], "test": [("warn", 0.01, "estimate")]}
    }
    assert set(gated_rules(config, False)["m"]) == {"threshold", "test"}


def test_history_html_is_one_self_contained_page(db, tmp_path, capsys):
    page = tmp_path / "trends.html"
    assert main(["history", "--history", str(db), "--html", str(page)]) == 0
    text = page.read_text()
    assert "http" not in text.lower() and "<script" not in text and "<link" not in text
    for release in RELEASES:
        assert text.count(release) >= 1
    assert "block 0.01" in text and "warn 0.001" in text and "warn 0 on the lower end" in text
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(images) == 2
    assert all(base64.b64decode(b)[:8] == b"\x89PNG\r\n\x1a\n" for b in images)
    assert "trends:" in capsys.readouterr().err
