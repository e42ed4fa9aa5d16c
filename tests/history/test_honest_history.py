"""A run that never ran says so in the history: a gate stopped by its inputs or its configuration
stores no score whose verdict is ``pass``, a broken gate file's run is stored under the dataset it
names, and ``privgate history`` lists such runs and every dataset it stores."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from privgate.cli import main
from privgate.gates import run_gate
from privgate.history import HistoryStore

N = 120
CONFIG = (
    "dataset: honest\nmetrics:\n"
    "  common_rows:\n    threshold: {warn: 0.0, block: 0.01}\n"
    "  hitting_rate:\n    threshold: {block: 0.5}\n"
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("honest")
    rng = np.random.default_rng(3)
    real = pl.DataFrame({"x": rng.normal(size=N), "c": rng.choice(["a", "b", "c"], N)})
    release = pl.DataFrame({"x": rng.normal(size=N), "c": rng.choice(["a", "b", "c"], N)})
    paths = {
        "real": d / "real.parquet",
        "release": d / "release.parquet",
        "config": d / "gate.yaml",
        "other_schema": d / "other.parquet",
        "empty": d / "empty.csv",
        "typo": d / "typo.yaml",
    }
    real.write_parquet(paths["real"])
    release.write_parquet(paths["release"])
    release.rename({"x": "z"}).write_parquet(paths["other_schema"])
    paths["empty"].write_text("")
    paths["config"].write_text(CONFIG)
    paths["typo"].write_text(CONFIG.replace("metrics:", "metrcs:"))
    return paths


@pytest.mark.parametrize("case", ["wrong_path", "schema_mismatch", "empty_file"])
def test_a_run_stopped_by_its_inputs_stores_no_pass(files, tmp_path, case):
    synthetic = {
        "wrong_path": tmp_path / "no-such-release.parquet",
        "schema_mismatch": files["other_schema"],
        "empty_file": files["empty"],
    }[case]
    with HistoryStore(tmp_path / "h.sqlite") as store:
        outcome = run_gate(files["config"], files["real"], synthetic, release_id="r1", history=store)
        assert outcome.exit_code == 3 and outcome.recorded
        scores = store.metric_history("honest")
        # nothing was computed: no score row at all, so none can read "pass"
        assert scores.is_empty(), scores
        checks = store.checks(outcome.run_id)
        assert set(checks["verdict"]) == {"block"} and set(checks["rule"]) == {"error"}


def test_scores_of_a_run_that_evaluated_say_error_and_pass_only_with_a_value(files, tmp_path, monkeypatch):
    """One metric fails inside an evaluation that ran: its row says ``error``, the other's
    ``pass`` with a value."""
    import privgate.gates.run as run_mod

    real_evaluate = run_mod._evaluate

    def failing(*args, **kwargs):
        report = real_evaluate(*args, **kwargs)
        del report.results["hitting_rate"]
        report.errors["hitting_rate"] = "metric 'hitting_rate' failed: RuntimeError"
        return report

    monkeypatch.setattr(run_mod, "_evaluate", failing)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        run_gate(files["config"], files["real"], files["release"], release_id="r1", history=store)
        rows = {r["metric"]: r for r in store.metric_history("honest").to_dicts()}
    assert rows["hitting_rate"]["verdict"] == "error" and rows["hitting_rate"]["value"] is None
    assert rows["common_rows"]["verdict"] == "pass" and rows["common_rows"]["value"] == 0.0


def test_a_metric_never_evaluated_reads_not_run():
    from privgate.history.rows import score_verdict

    assert score_verdict(None, [], None) == "not run"


def test_a_config_typo_is_stored_under_its_dataset_and_listed(files, tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    code = main(
        [
            "gate",
            "--config",
            str(files["typo"]),
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files["release"]),
            "--release-id",
            "t1",
            "--history",
            str(db),
            "--quiet",
        ]
    )
    assert code == 3
    assert (
        main(
            [
                "gate",
                "--config",
                str(files["config"]),
                "--real",
                str(files["real"]),
                "--synthetic",
                str(tmp_path / "missing.csv"),
                "--release-id",
                "m1",
                "--history",
                str(db),
                "--quiet",
            ]
        )
        == 3
    )
    capsys.readouterr()
    with HistoryStore(db) as store:
        assert store.datasets() == ["honest"]
        runs = store.runs("honest")
    assert runs["release_id"].to_list() == ["t1", "m1"] and runs["exit_code"].to_list() == [3, 3]

    # the dataset listing counts them as error runs
    assert main(["history", "--history", str(db), "--format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [(d["dataset"], d["runs"], d["errors"]) for d in listing] == [("honest", 2, 2)]

    # the score view lists each, verdict error, with its reason; no "pass" anywhere
    assert main(["history", "--history", str(db), "--dataset", "honest", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["release_id"], r["verdict"], r["metric"]) for r in rows] == [
        ("t1", "error", None),
        ("m1", "error", None),
    ]
    assert "metrcs" in rows[0]["error"] and "synthetic" in rows[1]["error"]
    assert main(["history", "--history", str(db), "--dataset", "honest"]) == 0
    table = capsys.readouterr()
    assert "error" in table.out and "no rows" not in table.err


def test_an_unreadable_config_is_still_listed(tmp_path, files, capsys):
    """A gate file that is not even YAML names no dataset: its run is stored under ``unknown``,
    and ``privgate history --dataset unknown`` shows it."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("metrics: [\n")
    db = tmp_path / "h.sqlite"
    assert (
        main(
            [
                "gate",
                "--config",
                str(bad),
                "--real",
                str(files["real"]),
                "--synthetic",
                str(files["release"]),
                "--release-id",
                "u1",
                "--history",
                str(db),
                "--quiet",
            ]
        )
        == 3
    )
    capsys.readouterr()
    assert main(["history", "--history", str(db), "--dataset", "unknown", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["release_id"], r["verdict"]) for r in rows] == [("u1", "error")]


def test_unscored_runs_and_last_config_on_every_back_end(store_url):
    """The store's queries behind the listing and the trend page, on SQLite and PostgreSQL."""
    import uuid

    from privgate.gates import GateOutcome, decision_of, parse_gate_config
    from privgate.gates.checks import error_check

    cfg = parse_gate_config({"dataset": "honest", "metrics": {"common_rows": {"threshold": {"block": 0.01}}}})
    checks = [
        error_check("(synthetic)", "cannot load synthetic: file not found"),
        error_check("(input)", "second error"),
    ]
    decision, code = decision_of(checks)
    outcome = GateOutcome(
        run_id=uuid.uuid4().hex,
        dataset="honest",
        release_id="r-missing",
        decision=decision,
        checks=checks,
        exit_code=code,
        config=cfg,
        config_hash=cfg.hash,
    )
    with HistoryStore(store_url) as store:
        assert store.last_config("honest") is None
        store.record(outcome)
        assert store.metric_history("honest").is_empty()
        rows = store.unscored_runs("honest").to_dicts()
        assert [(r["release_id"], r["verdict"], r["error"], r["metric"]) for r in rows] == [
            ("r-missing", "error", "cannot load synthetic: file not found (fails closed)", None)
        ]
        assert store.last_config("honest")["metrics"]["common_rows"]["rules"][0]["limit"] == 0.01
