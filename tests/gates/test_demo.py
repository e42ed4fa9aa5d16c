"""`privgate demo`: three releases of the bundled example — pass, warn, block — with reports and
a history, from nothing but the installed package."""

from __future__ import annotations

import json

from privgate.cli import main
from privgate.commands.demo import DATASET, EXPECTED
from privgate.history import HistoryStore


def test_demo_makes_pass_warn_block(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "history.sqlite").write_text("left over from an earlier demo run")  # started afresh
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    for release, decision in EXPECTED.items():
        assert f"{release}" in printed and decision.upper() in printed
        html = (out / "reports" / f"{release}.html").read_text()
        assert html.count("data:image/png;base64,") == 3
        doc = json.loads((out / "reports" / f"{release}.json").read_text())
        assert doc["decision"] == decision and doc["dataset"] == DATASET
        assert (out / "releases" / f"{release}.parquet").exists()
    assert str(out / "history.sqlite") in printed
    store = HistoryStore(out / "history.sqlite")
    runs = store.runs(DATASET)
    assert runs["release_id"].to_list() == list(EXPECTED)
    assert runs["decision"].to_list() == list(EXPECTED.values())
    assert runs["exit_code"].to_list() == [0, 1, 2]
    store.close()
