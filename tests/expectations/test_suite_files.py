"""The project's expectation suite files (expectations/*.json): each is what
privgate.gx.suite_from_gate_config builds from its gate configuration, and loaded from the file
it decides a release like the gate does."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")

import privgate  # noqa: E402
import privgate.gx as pe  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SUITE_FILE = REPO / "expectations" / "default_gate.json"
N = 300


@pytest.fixture(scope="module")
def build():
    return runpy.run_path(str(REPO / "expectations" / "build.py"))


def test_default_gate_suite_file_is_what_the_code_builds_from_the_default_gate(build):
    assert build["SUITES"]["default_gate.json"] == "privgate/configs/default_gate.yaml"
    stored = json.loads(SUITE_FILE.read_text(encoding="utf-8"))
    assert stored == build["build"]("default_gate.json"), (
        "expectations/default_gate.json is out of date: run python3 expectations/build.py"
    )
    # built from the configuration privgate ships (not a copy of it)
    from privgate.gates import DEFAULT_CONFIG_PATH, default_gate_config

    assert Path(DEFAULT_CONFIG_PATH).resolve() == (REPO / "privgate/configs/default_gate.yaml").resolve()
    from privgate.gates import check_name

    # with a holdout: every rule but the history's trend rules and the no-holdout ones
    applying = {
        check_name(m.name, r.kind, r.severity)
        for m in default_gate_config().metrics.values()
        for r in m.rules
        if r.kind != "trend" and r.when != "no_holdout"
    }
    assert {e["meta"]["check_name"] for e in stored["expectations"]} == applying


def test_check_mode_reports_a_stale_file(build, tmp_path, monkeypatch, capsys):
    assert build["main"](["--check"]) == 0
    stale = tmp_path / "default_gate.json"
    data = json.loads(SUITE_FILE.read_text(encoding="utf-8"))
    data["expectations"][0]["kwargs"]["threshold"] = 0.5
    stale.write_text(json.dumps(data), encoding="utf-8")
    main = build["main"]
    monkeypatch.setitem(main.__globals__, "HERE", tmp_path)
    assert main(["--check"]) == 1
    assert "out of date: default_gate.json" in capsys.readouterr().out


def test_the_suite_file_loaded_and_run_decides_like_the_gate(gx_context, adult_small, adult_holdout_path, tmp_path):
    """The example: load the suite file, give it the real data and the holdout as suite
    parameters, validate a release."""
    from privgate.gates import check_name, run_gate

    real = tmp_path / "real.parquet"
    adult_small.head(N).write_parquet(real)
    holdout = pl.read_parquet(adult_holdout_path).head(N)
    # 10 % copied training records + a noisy copy of non-members
    release = pl.concat([adult_small.head(30), privgate.baselines.noisy_copy(holdout, seed=1).head(N - 30)])
    holdout_path = tmp_path / "holdout.parquet"
    holdout.write_parquet(holdout_path)

    suite = pe.load_suite_json(SUITE_FILE)
    result = pe.validate_release(
        release,
        suite,
        context=gx_context,
        expectation_parameters={"privgate_real": str(real), "privgate_holdout": str(holdout_path)},
    )
    status = {pe.summarise(r)["meta"]["check_name"]: pe.summarise(r)["status"] for r in result.results}

    outcome = run_gate(privgate.gates.DEFAULT_CONFIG_PATH, str(real), release, str(holdout_path))
    gate = {
        check_name(c.metric, c.rule, c.severity): c.verdict
        for c in outcome.checks
        if c.rule in ("threshold", "baseline") and not c.skipped
    }
    assert set(status) == set(gate) and gate
    assert not [n for n, s in status.items() if s == "errored"]
    assert {n: s == "failed" for n, s in status.items()} == {n: v != "pass" for n, v in gate.items()}
    assert gate["common_rows__baseline_block"] == "block" and status["common_rows__baseline_block"] == "failed"
