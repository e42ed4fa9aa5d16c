"""``privgate history`` and ``privgate audits`` read the history: a SQLite file that is not there
is reported (exit 1) and never created."""

from __future__ import annotations

import pytest

from privgate.cli import main
from privgate.commands.audits import AUDIT_VIEW


@pytest.mark.parametrize("command", ["history", "audits"])
def test_a_missing_sqlite_history_is_reported_and_not_created(command, tmp_path, capsys):
    db = tmp_path / "missing.sqlite"
    assert main([command, "--history", str(db)]) == 1
    assert f"privgate {command}: no history database at {db}" in capsys.readouterr().err
    assert not db.exists()


@pytest.mark.parametrize(
    "command, header", [("history", "dataset,runs,errors,last_run"), ("audits", ",".join(AUDIT_VIEW))]
)
def test_an_empty_history_lists_as_json_and_csv(command, header, tmp_path, capsys):
    from privgate.history import HistoryStore

    db = tmp_path / "h.sqlite"
    HistoryStore(str(db)).close()
    assert main([command, "--history", str(db), "--format", "json"]) == 0
    assert capsys.readouterr().out.strip() == "[]"
    assert main([command, "--history", str(db), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [header]
