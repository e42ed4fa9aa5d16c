"""History store on SQLite and PostgreSQL: recording, queries, schema versioning, concurrency."""

from __future__ import annotations

import multiprocessing as mp

import polars as pl
import pytest
import sqlalchemy as sa
from history_helpers import make_outcome

from privgate.errors import HistoryError
from privgate.history import SCHEMA_VERSION, HistoryStore, resolve_url
from privgate.history import schema as S


def test_record_and_query(store_url):
    store = HistoryStore(store_url)
    assert store.schema_version == SCHEMA_VERSION
    o1 = make_outcome({"common_rows": 0.0, "authenticity": 0.20, "nnaa": 0.3}, release_id="v1")
    o2 = make_outcome({"common_rows": 0.5, "authenticity": 0.90, "nnaa": 0.3}, release_id="v2")  # blocked
    o3 = make_outcome(
        {"common_rows": 0.004, "authenticity": 0.28, "nnaa": 0.3}, release_id="v3", previous={"authenticity": 0.20}
    )  # warn (copies + trend)
    assert (str(o1.decision), str(o2.decision), str(o3.decision)) == ("pass", "block", "warn")
    for o in (o1, o2, o3):
        assert store.record(o) == o.run_id
    store.record(make_outcome({"common_rows": 0.0, "authenticity": 0.1, "nnaa": 0.1}, dataset="other"))

    runs = store.runs("adult")
    assert runs["release_id"].to_list() == ["v1", "v2", "v3"]
    assert runs["decision"].to_list() == ["pass", "block", "warn"]
    assert runs["accepted"].to_list() == [True, False, True]
    assert runs["exit_code"].to_list() == [0, 2, 1]
    assert runs["n_real"].to_list() == [3, 3, 3]
    assert runs.schema["created_at"] == pl.Datetime("us", "UTC")
    assert store.datasets() == ["adult", "other"]

    hist = store.metric_history("adult", "authenticity")
    assert hist["value"].to_list() == pytest.approx([0.20, 0.90, 0.28])
    assert hist["release_id"].to_list() == ["v1", "v2", "v3"]
    full = store.metric_history("adult")
    assert full.height == 9 and set(full["metric"]) == {"common_rows", "authenticity", "nnaa"}
    cr = full.filter(pl.col("metric") == "common_rows")
    # the deciding rule: v1 passes (first limit shown), v2 blocks at 0.01, v3 warns at 0.0
    assert cr["verdict"].to_list() == ["pass", "block", "warn"]
    assert cr["threshold"].to_list() == [0.0, 0.01, 0.0]
    assert cr["severity"].to_list() == ["warn", "block", "warn"]

    last = store.last_accepted("adult")
    assert last.release_id == "v3" and last.metrics["authenticity"] == pytest.approx(0.28)
    before = store.last_accepted("adult", before_run=o3.run_id)
    assert before.release_id == "v1"  # v2 was blocked
    assert store.last_accepted("nobody") is None

    reg = store.regressions("adult")
    # v2 vs v1: common_rows +0.5, authenticity +0.7; v3 vs v1 (v2 not accepted): +0.004, +0.08
    got = {(r["release_id"], r["metric"]): r["increase"] for r in reg.iter_rows(named=True)}
    assert got.keys() == {("v2", "common_rows"), ("v2", "authenticity"), ("v3", "common_rows"), ("v3", "authenticity")}
    assert got[("v3", "authenticity")] == pytest.approx(0.08)
    assert set(reg["previous_release_id"]) == {"v1"}
    assert store.regressions("adult", "authenticity", min_increase=0.1)["release_id"].to_list() == ["v2"]

    checks = store.checks(o3.run_id)
    trend = checks.filter(pl.col("rule") == "trend")
    assert trend["verdict"].to_list() == ["warn"] and trend["compared"][0] == pytest.approx(0.08)
    store.close()


def test_errors_are_recorded_without_values(store_url):
    store = HistoryStore(store_url)
    o = make_outcome(
        {"common_rows": 0.0, "nnaa": 0.1},
        errors={"authenticity": "metric 'authenticity' failed: ValueError: 'Jane' is bad"},
    )
    assert o.exit_code == 3
    store.record(o)
    row = store.metric_history("adult", "authenticity").row(0, named=True)
    assert row["value"] is None and row["verdict"] == "error"
    assert "ValueError" in row["error"] and "Jane" not in row["error"]
    assert store.runs("adult")["exit_code"].to_list() == [3]


def test_empty_queries_have_typed_columns(store_url):
    store = HistoryStore(store_url)
    assert store.runs("x").is_empty() and "decision" in store.runs("x").columns
    assert store.metric_history("x").schema["value"] == pl.Float64
    assert store.regressions("x").is_empty()


def test_reopening_keeps_rows_and_newer_schema_is_refused(tmp_path):
    path = tmp_path / "h.sqlite"
    HistoryStore(path).record(make_outcome({"common_rows": 0.0, "authenticity": 0.1, "nnaa": 0.1}))
    store = HistoryStore(path)
    assert store.runs("adult").height == 1
    with store.engine.begin() as conn:
        conn.execute(sa.update(S.meta).values(value=str(SCHEMA_VERSION + 1)))
    with pytest.raises(HistoryError, match="schema version"):
        HistoryStore(path)


def test_migrations_run_in_order(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite"
    HistoryStore(path).close()
    applied = []
    monkeypatch.setattr(S, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(S.MIGRATIONS, SCHEMA_VERSION + 1, lambda conn: applied.append(SCHEMA_VERSION + 1))
    assert HistoryStore(path).schema_version == SCHEMA_VERSION + 1
    assert applied == [SCHEMA_VERSION + 1]


def test_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PRIVGATE_HISTORY_URL", raising=False)
    assert resolve_url(None) == f"sqlite:///{tmp_path / 'privgate-history.sqlite'}"
    monkeypatch.setenv("PRIVGATE_HISTORY_URL", "sqlite:///x.db")
    assert resolve_url(None) == "sqlite:///x.db"
    assert resolve_url(tmp_path / "a" / "b.sqlite").endswith("/a/b.sqlite") and (tmp_path / "a").is_dir()
    with pytest.raises(HistoryError, match="history: cannot"):
        HistoryStore("nosuchdialect://host/db")
    with pytest.raises(HistoryError) as err:
        HistoryStore("postgresql+psycopg2://user:s3cret@127.0.0.1:1/none")
    assert "s3cret" not in str(err.value)


# ---------------------------------------------------------------------------- concurrency

N_PROCS, N_RUNS = 4, 25


def _writer(url: str, worker: int, barrier) -> None:
    barrier.wait(60)  # all processes are imported and start together: real contention
    store = HistoryStore(url)  # each process opens its own engine (racing to create the tables)
    for i in range(N_RUNS):
        if i == N_RUNS // 2:
            # every writer has written its first half before any writes its second: the rows
            # interleave whatever the scheduler does (each half still races for the database)
            barrier.wait(60)
        store.record(
            make_outcome({"common_rows": 0.0, "authenticity": i / 100, "nnaa": 0.1}, release_id=f"w{worker}-{i}")
        )
    store.close()


def test_concurrent_writers_lose_no_row(store_url):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(N_PROCS)
    procs = [ctx.Process(target=_writer, args=(store_url, w, barrier)) for w in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * N_PROCS
    store = HistoryStore(store_url)
    runs = store.runs("adult")
    assert runs.height == N_PROCS * N_RUNS
    assert set(runs["release_id"]) == {f"w{w}-{i}" for w in range(N_PROCS) for i in range(N_RUNS)}
    assert store.metric_history("adult").height == 3 * N_PROCS * N_RUNS
    with store.engine.connect() as conn:
        n_checks = conn.execute(sa.select(sa.func.count()).select_from(S.checks)).scalar_one()
    assert n_checks == N_PROCS * N_RUNS * 4  # 2 common_rows + 1 trend + 1 nnaa per run
    # the writers interleaved (otherwise this test would prove nothing about concurrency);
    # with the mid-way barrier each half holds all N_PROCS writers → ≥ 2(N_PROCS − 1) switches
    workers = [r.split("-")[0] for r in runs["release_id"].to_list()]
    switches = sum(a != b for a, b in zip(workers, workers[1:]))
    assert switches > N_PROCS


# columns schema version 2 added (written out here, not read from privgate.history.schema)
V2_ADDED = {
    "privgate_scores": {
        "ci_low",
        "ci_high",
        "baseline_ci_low",
        "baseline_ci_high",
        "excess_ci_low",
        "excess_ci_high",
        "p_value",
    },
    "privgate_checks": {"decided_on", "interval_low", "interval_high", "p_value"},
}


def _make_v1_database(url: str) -> None:
    """A database as privgate with schema version 1 created it, holding one accepted run."""
    md = sa.MetaData()
    for t in S.metadata.sorted_tables:
        if t.name == "privgate_audits":  # added by schema version 3
            continue
        sa.Table(t.name, md, *[c._copy() for c in t.columns if c.name not in V2_ADDED.get(t.name, ())])
    outcome = make_outcome({"common_rows": 0.0, "authenticity": 0.2, "nnaa": 0.1}, release_id="old")
    from privgate.history.rows import gate_rows

    run_row, score_rows, check_rows = gate_rows(outcome, None)
    engine = sa.create_engine(url if "://" in url else f"sqlite:///{url}")
    with engine.begin() as conn:
        md.create_all(conn)
        conn.execute(sa.insert(md.tables["privgate_meta"]).values(key="schema_version", value="1"))
        conn.execute(sa.insert(md.tables["privgate_runs"]), [run_row])
        strip = lambda rows, t: [{k: v for k, v in r.items() if k not in V2_ADDED[t]} for r in rows]  # noqa: E731
        conn.execute(sa.insert(md.tables["privgate_scores"]), strip(score_rows, "privgate_scores"))
        conn.execute(sa.insert(md.tables["privgate_checks"]), strip(check_rows, "privgate_checks"))
    engine.dispose()


def test_version_1_database_is_migrated_and_keeps_its_rows(store_url):
    _make_v1_database(store_url)
    store = HistoryStore(store_url)
    assert store.schema_version == SCHEMA_VERSION == 4
    assert store.audits().is_empty()  # version 3's table, created by the migration
    old = store.metric_history("adult", "authenticity")
    assert old["value"].to_list() == [0.2] and old["ci_low"].to_list() == [None]
    assert store.last_accepted("adult").release_id == "old"
    # a run with intervals and p-values is stored and read back
    new = make_outcome({"common_rows": 0.0, "authenticity": 0.3, "nnaa": 0.1}, release_id="new")
    res = new.report.results["authenticity"]
    res.set_ci((0.25, 0.35), "wilson")
    res.p_value = 0.004
    for c in new.checks:  # the GateCheck fields that carry intervals and p-values
        c.on, c.interval, c.p_value = "lower", (0.25, 0.35), 0.004
    store.record(new)
    row = store.metric_history("adult", "authenticity").filter(pl.col("release_id") == "new").row(0, named=True)
    assert (row["ci_low"], row["ci_high"], row["p_value"]) == (0.25, 0.35, 0.004)
    chk = store.checks(new.run_id).row(0, named=True)
    assert (chk["decided_on"], chk["interval_low"], chk["interval_high"], chk["p_value"]) == (
        "lower",
        0.25,
        0.35,
        0.004,
    )
    store.close()
    # reopening a migrated database changes nothing
    assert HistoryStore(store_url).metric_history("adult").height == 6
