"""The fail-open paths, one test each (each fails where the path is open), and
the error messages that must name their culprit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from fault_metrics import fault_metric
from generators import SECRET, secret_real

from privgate import baselines
from privgate.cli import main
from privgate.errors import HistoryError, IncompatibleDtypeError
from privgate.history import HistoryStore
from privgate.schema import infer_schema

N = 60


@pytest.fixture(scope="module")
def real() -> pl.DataFrame:
    return secret_real(N)


def _write(frame: pl.DataFrame, path: Path) -> Path:
    frame.write_csv(path) if path.suffix == ".csv" else frame.write_parquet(path)
    return path


def _config(tmp_path: Path, metrics: str) -> Path:
    p = tmp_path / "gate.yaml"
    p.write_text(f"dataset: paths\nmetrics:\n{metrics}")
    return p


COMMON = "  common_rows:\n    threshold: {warn: 0.0, block: 0.5}\n"


def _gate(tmp_path, real, synthetic, cfg=None, *extra, db="h.sqlite"):
    argv = [
        "gate",
        "--config",
        str(cfg or _config(tmp_path, COMMON)),
        "--real",
        str(real),
        "--synthetic",
        str(synthetic),
        "--release-id",
        "r",
        "--history",
        str(tmp_path / db),
        "--quiet",
        *extra,
    ]
    return main(argv)


def _runs(tmp_path, db="h.sqlite") -> pl.DataFrame:
    with HistoryStore(tmp_path / db) as h:
        return h.runs("paths")


def _assert_blocked_row(tmp_path, db="h.sqlite"):
    runs = _runs(tmp_path, db)
    assert runs["decision"].to_list()[-1] == "block" and runs["exit_code"].to_list()[-1] == 3
    assert runs["accepted"].to_list()[-1] is False


# 1. ------------------------------------------------------------------------------------------
def test_boolean_column_against_strings_is_refused(tmp_path, real, capsys):
    """An exact copy with the Boolean column written as "1"/"0" passed (common_rows = 0)."""
    copy = real.with_columns(pl.col("flag").cast(pl.Int8).cast(pl.String))
    code = _gate(tmp_path, _write(real, tmp_path / "real.parquet"), _write(copy, tmp_path / "syn.parquet"))
    out = capsys.readouterr()
    assert code == 3
    assert "column 'flag'" in out.out and "boolean" in out.out and "string" in out.out
    _assert_blocked_row(tmp_path)
    with pytest.raises(IncompatibleDtypeError, match="cast synthetic to Boolean"):
        infer_schema({"real": real, "synthetic": copy})


# 2. ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind",
    [
        "value_nan",
        "value_inf",
        "value_neg_inf",
        "value_above_1",
        "value_below_0",
        "value_string",
        "excess_inf",
        "ci_nan",
        "p_value_2",
        "raw_string",
    ],
)
def test_junk_metric_values_block(tmp_path, real, capsys, kind):
    """NaN passed every rule and was stored as NULL with verdict pass."""
    with fault_metric(kind) as name:
        cfg = _config(tmp_path, f"  {name}:\n    threshold: {{block: 0.5}}\n")
        code = _gate(
            tmp_path,
            _write(real, tmp_path / "real.parquet"),
            _write(baselines.uniform_random(real, seed=1), tmp_path / "syn.parquet"),
            cfg,
        )
    out = capsys.readouterr()
    assert code == 3, out.out
    assert name in out.out and "expected a" in out.out and SECRET not in out.out + out.err
    _assert_blocked_row(tmp_path)
    with HistoryStore(tmp_path / "h.sqlite") as h:
        score = h.metric_history("paths", name)
    assert score["verdict"].to_list() == ["error"] and score["value"].to_list() == [None]


# 3. ------------------------------------------------------------------------------------------
def test_unwritable_report_blocks_and_is_recorded_blocked(tmp_path, real, capsys):
    """The run was recorded as pass/accepted before the report failed, and trend rules later
    compared against it."""
    real_p = _write(real, tmp_path / "real.parquet")
    syn_p = _write(baselines.uniform_random(real, seed=1), tmp_path / "syn.parquet")
    (tmp_path / "afile").write_text("a regular file")
    json_p = tmp_path / "report.json"
    code = _gate(tmp_path, real_p, syn_p, None, "--html", str(tmp_path / "afile" / "r.html"), "--json", str(json_p))
    out = capsys.readouterr()
    assert code == 3 and "cannot write" in out.err and "r.html" in out.out
    _assert_blocked_row(tmp_path)
    # the report that could be written states the final decision, not the earlier pass
    doc = json.loads(json_p.read_text())
    assert doc["decision"] == "block" and doc["exit_code"] == 3
    assert doc["history"]["runs"][-1]["decision"] == "block"
    # a later run's trend rule has no accepted release to compare with
    cfg = _config(tmp_path, COMMON + "  hitting_rate:\n    trend: {warn: 0.0}\n")
    assert _gate(tmp_path, real_p, syn_p, cfg, "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    trend = [c for c in doc["checks"] if c["rule"] == "trend"][0]
    assert trend["skipped"] and "first accepted release" in trend["message"]


# 4. ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("side", ["real", "synthetic"])
def test_repeated_csv_header_is_refused(tmp_path, real, capsys, side):
    """`age,age` was renamed `age_duplicated_0` and gated."""
    frame = real.select("x", pl.col("x").alias("x2"), "c")
    good = _write(frame.rename({"x2": "y"}), tmp_path / "good.csv")
    bad = tmp_path / "dup.csv"
    bad.write_text(good.read_text().replace("x,y,c", "x,x,c", 1))
    code = _gate(tmp_path, bad if side == "real" else good, good if side == "real" else bad)
    out = capsys.readouterr()
    assert code == 3
    assert "dup.csv" in out.out and "column 2 repeats the name of column 1" in out.out
    assert "['x']" not in out.out  # positions, never the (possibly real-record) names
    _assert_blocked_row(tmp_path)


# 5. ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind",
    ["system_exit", "keyboard_interrupt", "value_none", "returns_none", "returns_string", "value_error_quoting_data"],
)
def test_metric_escaping_or_returning_none_blocks_with_a_row(tmp_path, real, capsys, kind):
    """SystemExit gave exit 0 and no row; KeyboardInterrupt 130 and no row; value None exit 3 and
    no row."""
    with fault_metric(kind) as name:
        cfg = _config(tmp_path, COMMON + f"  {name}:\n    threshold: {{block: 0.5}}\n")
        code = _gate(
            tmp_path,
            _write(real, tmp_path / "real.parquet"),
            _write(baselines.uniform_random(real, seed=1), tmp_path / "syn.parquet"),
            cfg,
        )
    out = capsys.readouterr()
    assert code == 3
    assert SECRET not in out.out + out.err
    _assert_blocked_row(tmp_path)


# messages ------------------------------------------------------------------------------------
def test_messages_name_their_culprit(tmp_path, real, capsys):
    real_p = _write(real, tmp_path / "real.parquet")
    cases = {}
    inf = real.with_columns(pl.when(pl.int_range(N) == 3).then(float("inf")).otherwise(pl.col("x")).alias("x"))
    cases["inf"] = (_write(inf, tmp_path / "inf.parquet"), "column 'x' of synthetic has 1 infinite value")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    cases["parquet"] = (bad, f"cannot read {bad}: it is not a readable Parquet file")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("x,flag,c\n0.5,true,Jos\xe9\n".encode("latin-1"))
    cases["latin1"] = (latin, "is not UTF-8 encoded text")
    for what, (syn, expected) in cases.items():
        assert _gate(tmp_path, real_p, syn) == 3, what
        out = capsys.readouterr().out
        # the decision table wraps a long note at spaces to fit 100 columns
        assert expected in " ".join(out.split()), (what, out)
        assert SECRET not in out and "José" not in out
    cfg = _config(tmp_path, "  disclosure_identity:\n    threshold: {block: 0.5}\n")
    assert _gate(tmp_path, real_p, real_p, cfg) == 3
    out = capsys.readouterr().out
    assert "keys=[...]" in out and "targets=[...]" in out


def test_history_path_under_a_file_is_named(tmp_path):
    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "h.sqlite"
    with pytest.raises(HistoryError, match=r"plain is a file, not a folder"):
        HistoryStore(target)


def test_history_unknown_metric_is_an_error(tmp_path, real, capsys):
    _gate(tmp_path, _write(real, tmp_path / "real.parquet"), _write(real, tmp_path / "syn.parquet"))
    capsys.readouterr()
    code = main(["history", "--dataset", "paths", "--metric", "nosuch", "--history", str(tmp_path / "h.sqlite")])
    assert code != 0 and "'nosuch'" in capsys.readouterr().err
    assert (
        main(["history", "--dataset", "paths", "--metric", "common_rows", "--history", str(tmp_path / "h.sqlite")]) == 0
    )


def test_metrics_into_a_closed_pipe_has_no_traceback():
    # `true` exits before privgate prints a line: every write meets a closed pipe
    cmd = f"{sys.executable} -m privgate.cli metrics | true; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "141" and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_leak_paths_found_in_review_carry_no_values(tmp_path):
    """Three outputs that quoted data: a headerless CSV's first record in the repeated-header
    error, an Enum column's level labels in Dagster's column schema, a foreign exception's text
    in GX results. Each now carries positions, counts or types only."""
    from privgate.errors import InputLoadError
    from privgate.io import load_frame

    headerless = tmp_path / "headerless.csv"
    headerless.write_text("zzsecret,zzsecret,1\nzzother,zzother,2\n")
    with pytest.raises(InputLoadError) as err:
        load_frame(headerless, role="real")
    assert "zzsecret" not in str(err.value) and "column 2 repeats the name of column 1" in str(err.value)

    dg = pytest.importorskip("dagster")  # noqa: F841
    from privgate.dagster.assets import frame_metadata

    frame = pl.DataFrame({"city": pl.Series(["zzsecret", "b"], dtype=pl.Enum(["zzsecret", "b"]))})
    assert "zzsecret" not in repr(frame_metadata(frame))

    pytest.importorskip("great_expectations")
    from privgate.gx.results import error_message

    class EVR:  # the shape of an errored GX expectation result
        exception_info = {
            "raised_exception": True,
            "exception_message": "could not append value: 'zzsecret' of type: str",
        }

    assert "zzsecret" not in error_message(EVR())
    EVR.exception_info = {
        "raised_exception": True,
        "exception_message": "privgate metric 'common_rows' could not be computed: TypeError",
    }
    assert error_message(EVR()).startswith("privgate metric 'common_rows'")
