"""The CLI at 100 columns: every table fits by default (``--wide`` shows every column), mistyped
flags, metric names, families and datasets get a "did you mean", required flags are shown as
required, and ``history`` on an unknown dataset exits 1 naming the known ones."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate import baselines
from privgate.cli import build_parser, main
from privgate.text_tables import format_table

N = 150
WIDTH = 100


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("clitables")
    rng = np.random.default_rng(0)
    real = pl.DataFrame(
        {"x": rng.normal(size=N), "y": rng.normal(size=N) * 3, "c": rng.choice(["a", "b", "c", "d"], N)}
    )
    paths = {
        "real": d / "real.parquet",
        "holdout": d / "holdout.parquet",
        "leaky": d / "leaky.parquet",
        "copy": d / "copy.parquet",
        "config": d / "gate.yaml",
        "db": d / "h.sqlite",
    }
    real.write_parquet(paths["real"])
    baselines.uniform_random(real, seed=5).write_parquet(paths["holdout"])
    pl.concat([baselines.uniform_random(real, seed=2)[: N - 3], real[:3]]).write_parquet(paths["leaky"])
    baselines.copy(real).write_parquet(paths["copy"])
    # long release ids and every rule kind with a long note, so the widest rows are exercised
    paths["config"].write_text(
        "dataset: a-dataset-with-a-rather-long-name\nmetrics:\n"
        "  common_rows:\n    threshold: {warn: 0.0, block: 0.01}\n"
        "    baseline: {warn: 0.001, block: 0.01}\n    trend: {warn: 0.002}\n"
        "  hitting_rate:\n    threshold: {on: upper, block: 0.5}\n    trend: {warn: 0.03}\n"
    )
    for release, path in (
        ("release-2026-11-25-first-of-the-month", "leaky"),
        ("release-2026-11-26-second-of-the-month", "copy"),
    ):
        code = main(
            [
                "gate",
                "--config",
                str(paths["config"]),
                "--real",
                str(paths["real"]),
                "--holdout",
                str(paths["holdout"]),
                "--synthetic",
                str(paths[path]),
                "--release-id",
                release,
                "--history",
                str(paths["db"]),
                "--quiet",
            ]
        )
        assert code in (1, 2)
    return paths


def _lines(capsys) -> list[str]:
    out = capsys.readouterr().out
    assert out.strip()
    return out.splitlines()


def _fits(lines: list[str]) -> None:
    too_long = [ln for ln in lines if len(ln) > WIDTH]
    assert not too_long, too_long


def test_every_cli_table_fits_100_columns(files, capsys):
    db = str(files["db"])
    gate = [
        "gate",
        "--config",
        str(files["config"]),
        "--real",
        str(files["real"]),
        "--holdout",
        str(files["holdout"]),
        "--synthetic",
        str(files["copy"]),
        "--release-id",
        "release-2026-11-27-third-of-the-month",
        "--history",
        db,
        "--quiet",
    ]
    commands = [
        ["metrics"],
        ["metrics", "--family", "gdpr-attack"],
        ["history", "--history", db],
        ["history", "--history", db, "--dataset", "a-dataset-with-a-rather-long-name"],
        ["history", "--history", db, "--dataset", "a-dataset-with-a-rather-long-name", "--runs"],
        ["history", "--history", db, "--dataset", "a-dataset-with-a-rather-long-name", "--regressions"],
        [
            "evaluate",
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files["copy"]),
            "--holdout",
            str(files["holdout"]),
            "--baseline",
            "--metrics",
            "common_rows,hitting_rate",
            "--quiet",
        ],
        gate,
    ]
    wide_seen = False
    for argv in commands:
        assert main(argv) in (0, 2), argv
        lines = _lines(capsys)
        _fits(lines)
        assert main(argv + ["--wide"]) in (0, 2), argv
        wide_seen |= max(len(ln) for ln in _lines(capsys)) > WIDTH
    assert wide_seen  # --wide shows what the compact tables leave out


def test_compact_gate_table_keeps_the_reason_in_words(files, capsys):
    main(
        [
            "gate",
            "--config",
            str(files["config"]),
            "--real",
            str(files["real"]),
            "--holdout",
            str(files["holdout"]),
            "--synthetic",
            str(files["copy"]),
            "--release-id",
            "r",
            "--no-history",
            "--quiet",
        ]
    )
    lines = _lines(capsys)
    assert lines[0].split() == ["metric", "rule", "compared", "[95%", "CI]", "limits", "verdict"]
    # a copy of the real data: every record is copied, 1.0 > block 0.01, with the reason below
    row = next(i for i, ln in enumerate(lines) if ln.startswith("common_rows") and "threshold" in ln)
    assert lines[row].split()[-1] == "BLOCK" and "block 0.01" in lines[row]
    assert lines[row + 1].startswith("    ") and "> 0.01" in lines[row + 1]
    assert any(ln.startswith("decision: BLOCK") for ln in lines[-2:])


def test_format_table_wraps_to_the_width():
    text = format_table(["name", "text"], [["a", "word " * 40], ["b", None], ["c", 0.5]], width=30, wrap=("text",))
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 30
    assert " ".join(ln[len("name  ") :].strip() for ln in lines[2:-2]) == ("word " * 40).strip()
    assert lines[-2].split() == ["b", "-"] and lines[-1].split() == ["c", "0.5000"]


def test_mistyped_flag_gets_the_commands_usage_and_a_suggestion(files, capsys):
    assert main(["history", "--history", str(files["db"]), "--datset", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: privgate history") and "did you mean --dataset?" in err
    with pytest.raises(SystemExit) as exc:  # --release-id is required: argparse stops there
        main(["gate", "--real", "a", "--synthetic", "b", "--relase-id", "x"])
    assert exc.value.code == 3  # the gate's usage errors exit 3 (never 2 = block)
    assert "did you mean --release-id?" in capsys.readouterr().err


def test_mistyped_command_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit):
        main(["hsitory"])
    assert "did you mean 'history'?" in capsys.readouterr().err


def test_mistyped_metric_and_family_get_a_suggestion(files, capsys):
    assert (
        main(
            [
                "history",
                "--history",
                str(files["db"]),
                "--dataset",
                "a-dataset-with-a-rather-long-name",
                "--metric",
                "comon_rows",
            ]
        )
        == 3
    )
    assert "did you mean 'common_rows'?" in capsys.readouterr().err
    assert main(["metrics", "--family", "gdpr-atack"]) == 3
    assert "did you mean 'gdpr-attack'?" in capsys.readouterr().err
    from privgate.catalogue import get_metric
    from privgate.errors import UnknownMetricError

    with pytest.raises(UnknownMetricError, match="did you mean 'hitting_rate'"):
        get_metric("hiting_rate")


def test_history_of_an_unknown_dataset_exits_1_listing_the_known_ones(files, capsys):
    assert main(["history", "--history", str(files["db"]), "--dataset", "a-dataset-with-a-long-name"]) == 1
    err = capsys.readouterr().err
    assert "'a-dataset-with-a-long-name'" in err and "did you mean 'a-dataset-with-a-rather-long-name'" in err
    assert err.rstrip().endswith("datasets: a-dataset-with-a-rather-long-name")


def test_required_gate_flags_are_shown_as_required():
    gate = next(a for a in build_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith(" gate"))
    usage = gate.format_usage()
    for flag in ("--real REAL", "--synthetic SYNTHETIC", "--release-id RELEASE_ID"):
        assert flag in usage and f"[{flag}]" not in usage
    assert "[--holdout HOLDOUT]" in usage
