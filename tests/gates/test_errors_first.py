"""Errors first and helpful: a gate-file typo is reported (exit 3, with "did you mean") before any
input is opened; columns that differ are named where the format keeps names apart from records
and given by position, counted from 1, in a CSV; an empty file is called empty."""

from __future__ import annotations

import sys

import numpy as np
import polars as pl
import pytest

from privgate.cli import main
from privgate.errors import ConfigError
from privgate.gates import parse_gate_config, run_gate
from privgate.io import column_difference, load_frame, scan_frame

GOOD = "dataset: typo\nmetrics:\n  common_rows:\n    threshold: {block: 0.01}\n"


@pytest.mark.parametrize(
    "text, key, suggestion",
    [
        (GOOD.replace("metrics:", "metrcs:"), "metrcs", "metrics"),
        (
            GOOD.replace("threshold: {block: 0.01}", "threshold: {block: 0.01}\n    optinal: true"),
            "metrics.common_rows.optinal",
            "optional",
        ),
        (GOOD.replace("{block: 0.01}", "{blok: 0.01}"), "metrics.common_rows.threshold.blok", "block"),
        (GOOD + "options: {thread: 2}\n", "options.thread", "threads"),
    ],
)
def test_a_config_typo_exits_3_with_a_suggestion_before_any_input_is_opened(
    tmp_path, monkeypatch, capsys, text, key, suggestion
):
    cfg = tmp_path / "gate.yaml"
    cfg.write_text(text)
    real, synthetic = tmp_path / "real.parquet", tmp_path / "synthetic.csv"
    pl.DataFrame({"x": [1.0, 2.0]}).write_parquet(real)
    synthetic.write_text("x\n1\n2\n")
    inputs = {str(real), str(synthetic)}
    opened: list[str] = []

    def refuse(*args, **_kwargs):
        opened.append(f"loader: {args[:1]}")  # recorded: the run would turn a raise into an error check
        raise AssertionError("an input was loaded although the configuration is invalid")

    # Python-level opens of the inputs are seen by an audit hook (it stays installed; it only
    # records while this test's paths are the inputs); Polars' own readers are replaced
    sys.addaudithook(
        lambda event, args: opened.append(str(args[0])) if event == "open" and args and str(args[0]) in inputs else None
    )
    for name in ("load_frame", "scan_frame"):
        monkeypatch.setattr(f"privgate.io.{name}", refuse)
    monkeypatch.setattr("privgate.gates.run.inputs_fingerprint", refuse)
    code = main(
        [
            "gate",
            "--config",
            str(cfg),
            "--real",
            str(real),
            "--synthetic",
            str(synthetic),
            "--release-id",
            "r1",
            "--history",
            str(tmp_path / "h.sqlite"),
            "--quiet",
        ]
    )
    out = capsys.readouterr()
    assert code == 3
    assert f"{key}: unknown key; did you mean {suggestion!r}?" in out.err  # said at once, on stderr
    assert f"did you mean {suggestion!r}?" in out.out  # and in the decision table
    assert opened == []


def test_did_you_mean_for_a_parameter_name():
    with pytest.raises(ConfigError, match=r"params.max_record: .*did you mean 'max_records'\?"):
        parse_gate_config({"metrics": {"detection_mlp": {"params": {"max_record": 10}, "threshold": {"block": 0.5}}}})


def test_an_unknown_key_far_from_any_gets_no_suggestion():
    with pytest.raises(ConfigError) as e:
        parse_gate_config({"zzzzqq": 1, "metrics": {"common_rows": {"threshold": 0.1}}})
    assert "did you mean" not in str(e.value) and "allowed top-level keys" in str(e.value)


def test_column_difference_names_or_places():
    cols = {"real": ["age", "zip", "income", "ssn"], "synthetic": ["age", "income", "zz"]}
    named = column_difference(cols, {"real": True, "synthetic": True})
    assert named == "real and synthetic have different columns (only in real: 'zip', 'ssn'; only in synthetic: 'zz')"
    placed = column_difference(cols, {"real": False, "synthetic": True})
    assert "zip" not in placed and "ssn" not in placed
    assert "only in real: 2 column(s) not in the release at position(s) 2, 4 (counted from 1" in placed
    assert column_difference({"real": ["a", "b"], "synthetic": ["b", "a"]}, {"real": False, "synthetic": False}) is None


@pytest.fixture
def frames():
    rng = np.random.default_rng(0)
    real = pl.DataFrame({"x": rng.normal(size=60), "secret_col": rng.normal(size=60), "c": rng.choice(["a", "b"], 60)})
    return real, real.drop("secret_col").with_columns(pl.col("x").shuffle(seed=1))


CFG = {"dataset": "cols", "metrics": {"common_rows": {"threshold": {"block": 0.01}}}}


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "frame"])
def test_real_only_columns_are_named_when_the_format_has_a_schema(tmp_path, frames, fmt):
    real, release = frames
    if fmt == "frame":
        real_in = real
    else:
        real_in = tmp_path / f"real.{fmt}"
        real.write_parquet(real_in) if fmt == "parquet" else real.write_ipc(real_in)
    outcome = run_gate(CFG, real_in, release)
    assert outcome.exit_code == 3
    message = next(c.message for c in outcome.checks if c.rule == "error")
    assert "only in real: 'secret_col'" in message, message


def test_real_only_columns_of_a_csv_are_given_by_position(tmp_path, frames):
    real, release = frames
    real.write_csv(tmp_path / "real.csv")
    outcome = run_gate(CFG, tmp_path / "real.csv", release)
    message = next(c.message for c in outcome.checks if c.rule == "error")
    assert "secret_col" not in message
    assert "only in real: 1 column(s) not in the release at position(s) 2 (counted from 1" in message


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".arrow"])
def test_an_empty_file_is_called_empty(tmp_path, suffix):
    path = tmp_path / f"release{suffix}"
    path.write_bytes(b"")
    for read in (load_frame, scan_frame) if suffix != ".csv" else (load_frame,):  # a CSV is never scanned
        with pytest.raises(Exception, match=r"synthetic: .* is empty \(0 bytes\)"):
            read(path, role="synthetic")


def test_evaluate_names_or_places_differing_columns_before_loading(tmp_path, frames, capsys, monkeypatch):
    real, release = frames
    real.write_parquet(tmp_path / "real.parquet")
    real.write_csv(tmp_path / "real.csv")
    release.write_parquet(tmp_path / "release.parquet")
    evaluated = []
    monkeypatch.setattr("privgate.evaluate", lambda *a, **k: evaluated.append(a))
    for real_path, expected in (
        ("real.parquet", "only in real: 'secret_col'"),
        ("real.csv", "only in real: 1 column(s) not in the release at position(s) 2"),
    ):
        assert (
            main(
                [
                    "evaluate",
                    "--real",
                    str(tmp_path / real_path),
                    "--synthetic",
                    str(tmp_path / "release.parquet"),
                    "--quiet",
                ]
            )
            == 3
        )
        err = capsys.readouterr().err
        assert expected in err
        if real_path.endswith(".csv"):
            assert "secret_col" not in err
    assert evaluated == []


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", "frame"])
def test_an_input_with_columns_and_no_record_is_called_empty(tmp_path, frames, suffix):
    real, release = frames
    empty = release.head(0)
    if suffix != "frame":
        path = tmp_path / f"release{suffix}"
        empty.write_parquet(path) if suffix == ".parquet" else empty.write_ipc(path)
        empty = path
    outcome = run_gate(CFG, real, empty)
    assert outcome.exit_code == 3 and outcome.report is None
    assert [c.message for c in outcome.checks if c.rule == "error"] == [
        "the synthetic input is empty: it has columns but 0 records (fails closed)"
    ]
