"""Audits in the history store: round trip on SQLite and PostgreSQL, migration of a version-2
database, and no value of a record in a stored row."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest
import sqlalchemy as sa
from audit_helpers import MARKER_NUMBER, MARKER_TEXT, copy_gen, make_result, real_frame

from privgate.audit import audit_generator
from privgate.errors import HistoryError
from privgate.gates.audit_rules import decide_audit
from privgate.history import SCHEMA_VERSION, HistoryStore
from privgate.history import schema as S

RULES = {"rules": {"epsilon": {"block": "claimed"}, "auc_lower": {"warn": 0.6}}}


def test_record_and_read_audits(store_url):
    with HistoryStore(store_url) as store:
        passing = decide_audit(make_result(0.3, 0.55, name="g", version="1"), RULES)
        blocked = decide_audit(make_result(1.7, 0.65, name="g", version="2"), RULES)
        other = decide_audit(make_result(0.1, 0.5, name="h", version="1"), RULES)
        for o in (passing, blocked, other):
            store.record_audit(o, dataset="adult")
        assert passing.recorded
        frame = store.audits()
        assert frame["generator"].to_list() == ["g", "g", "h"]
        assert frame["decision"].to_list() == ["pass", "block", "pass"]
        assert frame["exit_code"].to_list() == [0, 2, 0]
        assert frame["epsilon_lower"].to_list() == [0.3, 1.7, 0.1]
        assert frame["claimed_epsilon"].to_list() == [1.0, 1.0, 1.0]
        assert frame["n_audited"].to_list() == [2, 2, 2] and frame["n_targets"].to_list() == [3, 3, 3]
        assert frame["runs"].to_list() == [100, 100, 100] and frame["seconds"].to_list() == [6.0, 6.0, 6.0]
        assert frame["dataset"].to_list() == ["adult"] * 3
        assert store.audits("g")["generator_version"].to_list() == ["1", "2"]
        assert store.audits("g", "2")["run_id"].to_list() == [blocked.run_id]
        assert store.audits("nobody").is_empty()
        last = store.last_audit("g", "1")
        assert last.run_id == passing.run_id and last.accepted and last.decision == "pass"
        assert last.created_at.tzinfo is not None
        assert last.result["epsilon_lower"] == 0.3 and "roc" not in last.result
        assert [c["rule"] for c in last.checks] == ["epsilon", "auc_lower"]
        assert store.last_audit("g").run_id == blocked.run_id  # any version: the latest
        assert store.last_audit("g", "3") is None
        # a newer audit of the same version supersedes the older one
        again = decide_audit(make_result(1.2, 0.55, name="g", version="1"), RULES)
        store.record_audit(again)
        assert store.last_audit("g", "1").decision == "block"


def test_an_audit_without_a_generator_name_is_not_recorded(tmp_path):
    with HistoryStore(tmp_path / "h.sqlite") as store:
        with pytest.raises(HistoryError, match="no generator name"):
            store.record_audit(decide_audit(make_result(name=None)))
        assert store.audits().is_empty()


def _version_2_database(url: str) -> None:
    """A database as a privgate of schema version 2 left it: no audits table, one run."""
    engine = sa.create_engine(url)
    old = [t for name, t in S.metadata.tables.items() if name != "privgate_audits"]
    with engine.begin() as conn:
        S.metadata.create_all(conn, tables=old)
        conn.execute(sa.insert(S.meta).values(key="schema_version", value="2"))
        conn.execute(
            sa.insert(S.runs).values(
                run_id="old",
                dataset="d",
                release_id="r0",
                decision="pass",
                exit_code=0,
                accepted=True,
                has_holdout=False,
                created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
            )
        )
        assert "privgate_audits" not in sa.inspect(conn).get_table_names()
    engine.dispose()


def test_a_version_2_database_is_migrated_in_place(store_url):
    url = store_url if "://" in store_url else f"sqlite:///{store_url}"
    _version_2_database(url)
    with HistoryStore(store_url) as store:
        assert SCHEMA_VERSION == 4 and store.schema_version == 4
        assert store.runs()["run_id"].to_list() == ["old"]
        store.record_audit(decide_audit(make_result(name="g")))
        assert store.audits()["generator"].to_list() == ["g"]
    with HistoryStore(store_url) as again:  # reopening a migrated database changes nothing
        assert again.schema_version == 4 and again.audits().height == 1


def test_a_stored_audit_holds_no_value_of_a_record(tmp_path):
    real = real_frame()
    result = audit_generator(
        copy_gen,
        real,
        design="shared",
        runs=60,
        n_targets=3,
        training_rows=60,
        attacks=["distance"],
        claimed_epsilon=1.0,
        workers=1,
        threads=1,
        generator_name="copy",
        generator_version="1",
    )
    assert 7 in [t["real_row"] for t in result.targets]  # the marker row is a target
    outcome = decide_audit(result, RULES)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.record_audit(outcome)
        with store.engine.connect() as conn:
            row = conn.execute(sa.select(S.audits)).mappings().one()
    text = json.dumps({k: str(v) for k, v in row.items()})
    # measured seconds are not record values, and their digits can contain the marker's by chance
    text = re.sub(r'(seconds[a-z_]*|[a-z_]*_time)\\*"?: ?[0-9.e+-]+', "", text)
    assert MARKER_TEXT not in text
    # the marker's integer part with its decimals (a leaked value as it would be written); its four
    # digits alone occur by chance inside the row's ids and long scores
    assert "9137.12" not in text and str(MARKER_NUMBER) not in text
    assert 7 in [t["real_row"] for t in json.loads(row["result_json"])["targets"]]
