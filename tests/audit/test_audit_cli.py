"""``privgate audit`` and ``privgate audits`` end to end: exit codes, reports, history, errors
that leave nothing half-written."""

from __future__ import annotations

import json

import pytest
from audit_helpers import GENERATOR_MODULE, real_frame, work_folder

from privgate.audit import AuditResult
from privgate.cli import main
from privgate.history import HistoryStore

FAST = [
    "--design",
    "shared",
    "--runs",
    "100",
    "--n-targets",
    "2",
    "--training-rows",
    "100",
    "--workers",
    "1",
    "--threads",
    "1",
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder holding the real data and a generator module, as the current directory."""
    return work_folder(tmp_path, monkeypatch, real_frame(), {"cli_audit_gens.py": GENERATOR_MODULE})


def audit(*extra):
    return main(["audit", "--real", "real.parquet", *FAST, *extra])


def test_a_proven_violation_blocks_writes_reports_and_records(workdir, capsys):
    code = audit(
        "--generator",
        "cli_audit_gens:copy_gen",
        "--claimed-epsilon",
        "1",
        "--attacks",
        "distance",
        "--json",
        "out.json",
        "--html",
        "out.html",
        "--history",
        "h.sqlite",
        "--generator-version",
        "7",
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert "DP VIOLATION proven" in out and "decision: BLOCK" in out
    assert all(len(line) <= 100 for line in out.splitlines())
    progress = [line for line in err.splitlines() if line.startswith("audit: ")]
    assert 1 <= len(progress) <= 11 and progress[-1].startswith("audit: 100/100 runs")
    report = json.loads((workdir / "out.json").read_text())
    assert report["decision"] == "block" and report["exit_code"] == 2
    assert report["generator"] == "cli_audit_gens:copy_gen" and report["generator_version"] == "7"
    result = AuditResult.from_dict(report["result"])
    assert result.violation and result.epsilon_lower > 1.0
    assert "DP violation proven" in (workdir / "out.html").read_text()
    with HistoryStore(workdir / "h.sqlite") as store:
        last = store.last_audit("cli_audit_gens:copy_gen", "7")
    assert last.decision == "block" and last.run_id == report["run_id"]
    assert main(["audits", "--history", "h.sqlite", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["decision"] for r in listed] == ["block"] and listed[0]["generator_version"] == "7"


def test_a_generator_that_ignores_its_data_passes(workdir, capsys):
    code = audit("--generator", "cli_audit_gens:blind_gen", "--claimed-epsilon", "1", "--json", "out.json")
    out = capsys.readouterr().out
    assert code == 0 and "decision: PASS" in out
    assert json.loads((workdir / "out.json").read_text())["result"]["epsilon_lower"] == 0.0


def test_a_class_or_factory_with_generator_args(workdir, capsys):
    assert (
        audit(
            "--generator",
            "cli_audit_gens:Noisy",
            "--generator-args",
            '{"scale": 0.0}',
            "--claimed-epsilon",
            "1",
            "--attacks",
            "distance",
            "--quiet",
        )
        == 2
    )
    assert audit("--generator", "cli_audit_gens:factory", "--generator-args", '{"kind": "blind"}', "--quiet") == 0
    assert audit("--generator", "cli_audit_gens:Noisy", "--generator-args", '{"nope": 1}') == 3
    assert "does not take these --generator-args" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, words",
    [
        (["--generator", "cli_audit_gens:copy_gen", "--real", "missing.parquet"], "missing.parquet"),
        (["--generator", "no_such_module:gen"], "cannot import module 'no_such_module'"),
        (["--generator", "cli_audit_gens:nothing"], "has no attribute 'nothing'"),
        (["--generator", "cli_audit_gens"], "module:name"),
        (["--generator", "cli_audit_gens:Noisy", "--generator-args", "{bad"], "not valid JSON"),
        (
            ["--generator", "cli_audit_gens:copy_gen", "--config", "audit.yaml", "--claimed-epsilon", "2"],
            "audit.claimed_epsilon",
        ),
        (["--generator", "cli_audit_gens:copy_gen", "--config", "bad.yaml"], "audit.rules.epsilon.block"),
        (["--generator", "cli_audit_gens:copy_gen", "--history", "afile/sub/h.sqlite"], "history"),
        (["--generator", "cli_audit_gens:copy_gen", "--runs", "0"], "--runs must be a positive integer"),
    ],
)
def test_bad_input_exits_3_with_one_line_and_writes_nothing(workdir, capsys, args, words):
    (workdir / "audit.yaml").write_text("audit:\n  claimed_epsilon: 1\n  rules: {epsilon: {block: claimed}}\n")
    (workdir / "bad.yaml").write_text("audit:\n  rules: {epsilon: {block: -1}}\n")
    (workdir / "afile").write_text("a file where a folder is expected\n")
    before = set(p.name for p in workdir.iterdir())
    try:
        code = main(
            ["audit", "--real", "real.parquet", *FAST, "--json", "out.json", "--html", "out.html", "--quiet", *args]
        )
    except SystemExit as exc:  # a usage error: argparse exits, with this command's code
        code = exc.code
    err = capsys.readouterr().err
    assert code == 3
    assert words in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1
    assert set(p.name for p in workdir.iterdir()) - {"__pycache__"} == before  # no report, no temporary file


def test_a_report_folder_that_does_not_exist_is_refused_before_the_audit(workdir, capsys):
    assert audit("--generator", "cli_audit_gens:copy_gen", "--json", "nowhere/out.json") == 3
    assert "--json: the folder of nowhere/out.json does not exist" in capsys.readouterr().err


def test_audits_listing_filters_and_says_when_there_is_no_database(workdir, capsys):
    assert main(["audits", "--history", "none.sqlite"]) == 1
    assert audit("--generator", "cli_audit_gens:blind_gen", "--dataset", "d", "--history", "h.sqlite", "--quiet") == 0
    capsys.readouterr()
    assert main(["audits", "--history", "h.sqlite", "--generator", "other", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["audits", "--history", "h.sqlite"]) == 0
    table = capsys.readouterr().out
    assert "cli_audit_gens:blind_gen" in table and "pass" in table
    assert main(["audits", "--history", "h.sqlite", "--format", "json"]) == 0
    digest = json.loads(capsys.readouterr().out)[0]["generator_digest"]
    assert len(digest) == 64
    for wanted, count in ((digest, 1), (digest.upper(), 1), ("0" * 64, 0)):
        assert main(["audits", "--history", "h.sqlite", "--generator-digest", wanted, "--format", "json"]) == 0
        assert len(json.loads(capsys.readouterr().out)) == count


def test_audit_and_audits_tables_fit_100_columns(workdir, capsys):
    code = audit(
        "--generator",
        "cli_audit_gens:copy_gen",
        "--claimed-epsilon",
        "1",
        "--attacks",
        "distance",
        "--history",
        "h.sqlite",
        "--generator-version",
        "a-rather-long-generator-version-name",
    )
    assert code == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(ln) for ln in lines) <= 100, [ln for ln in lines if len(ln) > 100]
    assert main(["audits", "--history", "h.sqlite"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(ln) for ln in lines) <= 100, [ln for ln in lines if len(ln) > 100]


BROKEN_HISTOGRAM = [
    "--generator",
    "privgate.audit.mechanisms:LaplaceHistogram",
    "--generator-args",
    json.dumps({"epsilon": 1.0, "domain": None, "release": "rounded", "domain_from_data": True}),
    "--claimed-epsilon",
    "1",
    "--training-rows",
    "150",
    "--workers",
    "1",
    "--threads",
    "1",
    "--quiet",
    "--json",
    "out.json",
]


def _categorical_real(path):
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    pl.DataFrame(
        {
            "a": rng.choice(list("pqrs"), 400, p=[0.4, 0.3, 0.2, 0.1]),
            "b": rng.choice(list("xyz"), 400),
            "x": rng.normal(0.0, 1.0, 400),
        }
    ).write_parquet(path)


def test_the_canaries_design_from_the_command_line_proves_the_domain_fault_in_a_few_fits(workdir, capsys):
    _categorical_real(workdir / "cat.parquet")
    code = main(
        [
            "audit",
            "--real",
            "cat.parquet",
            "--design",
            "canaries",
            "--runs",
            "4",
            "--n-targets",
            "40",
            *BROKEN_HISTOGRAM,
        ]
    )
    out = capsys.readouterr().out
    assert code == 2, out
    result = AuditResult.from_dict(json.loads((workdir / "out.json").read_text())["result"])
    assert result.violation and result.cost["runs"] + result.cost["preflight_runs"] <= 5
    assert result.design["design"] == "canaries"
    # the 40 pooled canaries are one line per kind in the target table, not 40 lines of dashes
    pooled = [line for line in out.splitlines() if " pooled " in line]
    assert 1 <= len(pooled) <= 3 and any(line.startswith("t0–t") and "×" in line for line in pooled)


def test_a_sequential_audit_from_the_command_line_stops_at_the_first_convincing_look(workdir, capsys):
    _categorical_real(workdir / "cat.parquet")
    code = main(
        [
            "audit",
            "--real",
            "cat.parquet",
            "--runs",
            "120",
            "--n-targets",
            "4",
            "--looks",
            "4",
            "--seed",
            "1",
            *BROKEN_HISTOGRAM,
        ]
    )
    assert code == 2, capsys.readouterr()
    seq = AuditResult.from_dict(json.loads((workdir / "out.json").read_text())["result"]).design["sequential"]
    assert seq["stopped_early"] and seq["stopped_after_runs"] < 120


@pytest.mark.parametrize(
    "args, words",
    [
        (["--looks", "0"], "--looks must be a positive integer"),
        (["--looks", "101"], "--looks"),
        (["--design", "many"], "--design"),
        (["--background", "shuffled"], "--background"),
    ],
)
def test_design_flags_out_of_range_exit_3_naming_the_flag(workdir, capsys, args, words):
    with pytest.raises(SystemExit) as stop:
        audit("--generator", "cli_audit_gens:copy_gen", *args)
    assert stop.value.code == 3 and words in capsys.readouterr().err
