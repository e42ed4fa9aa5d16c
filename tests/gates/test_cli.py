"""`privgate gate`, `privgate history` and `privgate demo` through the CLI: every exit code,
failing closed, output formats."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import polars as pl
import pytest

from privgate import baselines
from privgate.cli import main
from privgate.history import HistoryStore

N = 150


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("gatecli")
    rng = np.random.default_rng(0)
    real = pl.DataFrame(
        {"x": rng.normal(size=N), "y": rng.normal(size=N) * 3, "c": rng.choice(["a", "b", "c", "d"], N)}
    )
    warn_release = pl.concat([baselines.uniform_random(real, seed=2)[: N - 1], real[:1]])
    paths = {
        "real": d / "real.parquet",
        "pass": d / "pass.parquet",
        "warn": d / "warn.parquet",
        "block": d / "block.csv",
        "config": d / "gate.yaml",
    }
    real.write_parquet(paths["real"])
    baselines.uniform_random(real, seed=1).write_parquet(paths["pass"])
    warn_release.write_parquet(paths["warn"])
    baselines.copy(real).write_csv(paths["block"])
    # one exact copy in N = 150 rows: common_rows = 1/150 ≈ 0.0067 > warn 0, ≤ block 0.01
    paths["config"].write_text(
        "dataset: cli\nmetrics:\n"
        "  common_rows:\n    threshold: {warn: 0.0, block: 0.01}\n"
        "  hitting_rate:\n    trend: {warn: 0.5}\n"
    )
    return paths


def _gate(files, synthetic, release, db, *extra):
    return main(
        [
            "gate",
            "--config",
            str(files["config"]),
            "--real",
            str(files["real"]),
            "--synthetic",
            str(synthetic),
            "--release-id",
            release,
            "--history",
            str(db),
            "--quiet",
            *extra,
        ]
    )


def test_exit_codes_pass_warn_block(files, tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    assert _gate(files, files["pass"], "p", db) == 0
    assert _gate(files, files["warn"], "w", db) == 1
    assert _gate(files, files["block"], "b", db) == 2
    out = capsys.readouterr().out
    assert "decision: PASS" in out and "decision: WARN" in out and "decision: BLOCK" in out
    runs = HistoryStore(db).runs("cli")
    assert runs["release_id"].to_list() == ["p", "w", "b"] and runs["exit_code"].to_list() == [0, 1, 2]


@pytest.mark.parametrize(
    "case",
    ["missing_input", "corrupt_input", "bad_config", "config_missing", "no_release_id", "unknown_option", "bad_choice"],
)
def test_errors_exit_3_and_block(files, tmp_path, capsys, case):
    db = tmp_path / "h.sqlite"
    base = ["gate", "--real", str(files["real"]), "--history", str(db), "--quiet"]
    if case == "missing_input":
        argv = base + [
            "--config",
            str(files["config"]),
            "--synthetic",
            str(tmp_path / "nope.parquet"),
            "--release-id",
            "x",
        ]
    elif case == "corrupt_input":
        bad = tmp_path / "bad.parquet"
        bad.write_bytes(b"not a parquet file at all")
        argv = base + ["--config", str(files["config"]), "--synthetic", str(bad), "--release-id", "x"]
    elif case == "bad_config":
        cfg = tmp_path / "bad.yaml"
        cfg.write_text("metrics:\n  common_rows:\n    threshold: {block: 2}\n")
        argv = base + ["--config", str(cfg), "--synthetic", str(files["pass"]), "--release-id", "x"]
    elif case == "config_missing":
        argv = base + ["--config", str(tmp_path / "none.yaml"), "--synthetic", str(files["pass"]), "--release-id", "x"]
    elif case == "no_release_id":
        argv = base + ["--config", str(files["config"]), "--synthetic", str(files["pass"])]
    elif case == "unknown_option":
        argv = base + [
            "--config",
            str(files["config"]),
            "--synthetic",
            str(files["pass"]),
            "--release-id",
            "x",
            "--colour",
        ]
    else:
        argv = base + [
            "--config",
            str(files["config"]),
            "--synthetic",
            str(files["pass"]),
            "--release-id",
            "x",
            "--format",
            "xml",
        ]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    assert code == 3
    captured = capsys.readouterr()
    if case == "bad_config":
        assert "metrics.common_rows.threshold.block" in captured.out
    if case in ("missing_input", "corrupt_input", "bad_config", "config_missing"):
        assert "BLOCK" in captured.out
        # the failed run is recorded too (auditable), as blocked
        assert HistoryStore(db).runs()["decision"].to_list() == ["block"]


def test_unusable_history_fails_closed(files, tmp_path, capsys):
    code = main(
        [
            "gate",
            "--config",
            str(files["config"]),
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files["pass"]),
            "--release-id",
            "x",
            "--quiet",
            "--history",
            "postgresql+psycopg2://nobody@127.0.0.1:1/none",
        ]
    )
    assert code == 3


def test_unexpected_failure_exits_3_not_1(files, tmp_path, capsys, monkeypatch):
    # an uncaught exception would exit 1, which reads as "warn" (accepted)
    from privgate.gates import run

    def broken(*a, **k):
        raise RuntimeError("row of RealPerson-0001")

    monkeypatch.setattr(run, "decide", broken)
    code = _gate(files, files["pass"], "x", tmp_path / "h.sqlite")
    assert code == 3
    out = capsys.readouterr()
    assert "RuntimeError" in out.out and "RealPerson" not in out.out + out.err
    # the gate caught it itself, so the run is recorded, as blocked
    runs = HistoryStore(tmp_path / "h.sqlite").runs()
    assert runs["decision"].to_list() == ["block"] and runs["exit_code"].to_list() == [3]


def test_no_history_and_json_output(files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "gate",
            "--config",
            str(files["config"]),
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files["pass"]),
            "--release-id",
            "x",
            "--quiet",
            "--no-history",
            "--format",
            "json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "pass" and doc["release_id"] == "x"
    assert not (tmp_path / "privgate-history.sqlite").exists()


def test_history_command_formats(files, tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    _gate(files, files["pass"], "p", db)
    _gate(files, files["block"], "b", db)
    capsys.readouterr()
    assert main(["history", "--history", str(db)]) == 0
    assert "cli" in capsys.readouterr().out
    assert main(["history", "--history", str(db), "--dataset", "cli", "--metric", "common_rows"]) == 0
    table = capsys.readouterr().out
    assert "common_rows" in table and "hitting_rate" not in table
    assert main(["history", "--history", str(db), "--dataset", "cli", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["release_id"], r["metric"]) for r in rows] == [
        ("p", "common_rows"),
        ("p", "hitting_rate"),
        ("b", "common_rows"),
        ("b", "hitting_rate"),
    ]
    assert rows[2]["value"] == 1.0 and rows[2]["verdict"] == "block"
    assert main(["history", "--history", str(db), "--dataset", "cli", "--format", "csv", "--runs"]) == 0
    runs = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["decision"] for r in runs] == ["pass", "block"]
    assert main(["history", "--history", str(db), "--dataset", "cli", "--regressions", "--format", "json"]) == 0
    reg = json.loads(capsys.readouterr().out)
    assert {r["metric"] for r in reg} == {"common_rows", "hitting_rate"} and reg[0]["previous_release_id"] == "p"
    assert main(["history", "--history", str(tmp_path / "absent.sqlite"), "--dataset", "cli"]) == 1
