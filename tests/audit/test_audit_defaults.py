"""The audit's defaults live in one place (privgate.audit.defaults) and every entry point — the
command line, the API, Dagster's asset — takes them from there; and every column type the gate
takes, the audit takes."""

from __future__ import annotations

import json

import pytest
from audit_helpers import constant_gen, resample_gen, typed_frame, work_folder

from privgate.audit import AuditResult, audit_generator, defaults
from privgate.cli import main

TYPED_GENS = """
import polars as pl


def resample_gen(training, n_rows, seed):
    return training.sample(n_rows, with_replacement=True, seed=seed)


def constant_gen(training, n_rows, seed):
    return pl.DataFrame({c: pl.Series(c, [None] * n_rows, dtype=d) for c, d in training.schema.items()})
"""


def test_the_doubling_schedule_and_the_alpha_it_spends():
    assert defaults.doubling_schedule(200) == [4, 8, 16, 32, 64, 128, 200]
    assert defaults.doubling_schedule(4) == [4] and defaults.doubling_schedule(9) == [4, 8, 9]
    spent = defaults.spend_alpha(0.05, 7)
    assert spent[-1] == pytest.approx(0.025) and spent[:-1] == [pytest.approx(0.025 / 6)] * 6
    assert sum(spent) == pytest.approx(0.05) and defaults.spend_alpha(0.05, 1) == [0.05]


def test_which_design_and_how_many_targets_by_default():
    assert defaults.default_design(0.0) == "canaries" and defaults.default_design(1e-5) == "shared"
    assert defaults.default_n_targets("canaries") == 160 and defaults.default_n_targets("shared") == 10
    kw = dict(design="canaries", claimed_epsilon=1.0, delta=0.0, on_cluster=False)
    assert defaults.auto_looks(200, **kw)
    assert not defaults.auto_looks(200, **{**kw, "claimed_epsilon": None})  # nothing to stop at
    assert not defaults.auto_looks(200, **{**kw, "delta": 1e-5})
    assert not defaults.auto_looks(200, **{**kw, "on_cluster": True})
    assert not defaults.auto_looks(200, **{**kw, "design": "separate"})
    assert not defaults.auto_looks(4, **kw)  # no look before the last


def test_an_api_call_without_design_flags_gets_the_documented_defaults():
    """A generator that resamples its training data, claim 1: the default audit is the canaries
    design with 64 canaries, sequential, and proves the violation at its first look (4 runs)."""
    r = audit_generator(resample_gen, typed_frame(), claimed_epsilon=1.0, training_rows=100, workers=1, threads=1)
    assert r.design["design"] == "canaries" and len(r.targets) == defaults.CANARY_TARGETS
    seq = r.design["sequential"]
    assert seq["looks"] == defaults.doubling_schedule(defaults.DEFAULT_RUNS) and seq["schedule"] == "doubling"
    assert r.violation and seq["stopped_after_runs"] == defaults.FIRST_LOOK
    assert seq["alpha_at_stop"] == pytest.approx(0.05 / 2 / 6)
    assert r.cost["preflight_runs"] == 1  # 5 fits in all


def test_the_cli_without_flags_passes_nothing_so_the_api_defaults_apply(tmp_path, monkeypatch):
    work_folder(tmp_path, monkeypatch, typed_frame(), {"typed_gens.py": TYPED_GENS})
    code = main(
        [
            "audit",
            "--generator",
            "typed_gens:resample_gen",
            "--real",
            "real.parquet",
            "--claimed-epsilon",
            "1",
            "--training-rows",
            "100",
            "--workers",
            "1",
            "--threads",
            "1",
            "--quiet",
            "--json",
            "a.json",
        ]
    )
    assert code == 2
    r = AuditResult.from_dict(json.loads((tmp_path / "a.json").read_text())["result"])
    assert r.design["design"] == "canaries" and len(r.targets) == defaults.CANARY_TARGETS
    assert r.design["sequential"]["stopped_after_runs"] == defaults.FIRST_LOOK


def test_a_claim_with_delta_gets_the_shared_design():
    r = audit_generator(
        constant_gen, typed_frame(), claimed_epsilon=1.0, delta=1e-5, runs=8, training_rows=60, workers=1, threads=1
    )
    assert r.design["design"] == "shared" and len(r.targets) == defaults.DEFAULT_TARGETS
    assert "sequential" not in r.design  # δ > 0: no default looks


@pytest.mark.parametrize("generator, exit_code", [("resample_gen", 2), ("constant_gen", 0)])
@pytest.mark.parametrize("design", ["canaries", "shared"])
def test_boolean_date_datetime_columns_through_the_cli(tmp_path, monkeypatch, capsys, generator, exit_code, design):
    """A generator returning the dtypes it was given (Boolean, Date, Datetime, Categorical,
    nulls) is audited, never told it broke the contract."""
    work_folder(tmp_path, monkeypatch, typed_frame(), {"typed_gens.py": TYPED_GENS})
    # the shared design: 100 runs and a claim of 0.2, what a resampling generator's runs disprove
    code = main(
        [
            "audit",
            "--generator",
            f"typed_gens:{generator}",
            "--real",
            "real.parquet",
            "--claimed-epsilon",
            "1" if design == "canaries" else "0.2",
            "--design",
            design,
            "--runs",
            "8" if design == "canaries" else "100",
            "--training-rows",
            "100",
            "--workers",
            "1",
            "--threads",
            "1",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert "contract" not in err and code == exit_code, err


@pytest.mark.parametrize("design", ["canaries", "shared", "separate"])
def test_boolean_date_datetime_columns_through_the_api(design):
    frame = typed_frame()
    kw = dict(
        design=design,
        runs=8 if design != "separate" else 8,
        training_rows=80,
        workers=1,
        threads=1,
        claimed_epsilon=1.0,
    )
    if design != "canaries":
        kw["n_targets"] = 3
    broken = audit_generator(resample_gen, frame, **kw)
    private = audit_generator(constant_gen, frame, **kw)
    assert private.epsilon_lower == 0.0 and private.violation is False
    assert broken.epsilon_lower >= 0.0 and broken.n_audited > 0
    if design == "canaries":
        assert broken.violation  # the level canaries are copied into the release


def test_an_audit_file_whose_claim_conflicts_with_the_flag_is_told_so(tmp_path, monkeypatch, capsys):
    """Not "audit.rules: missing": a file giving only a claim keeps the default rules, and a claim
    that differs from --claimed-epsilon is named, with both numbers and the file."""
    work_folder(
        tmp_path,
        monkeypatch,
        typed_frame(),
        {"typed_gens.py": TYPED_GENS, "claim.yaml": "audit:\n  claimed_epsilon: 2\n"},
    )
    code = main(
        [
            "audit",
            "--generator",
            "typed_gens:constant_gen",
            "--real",
            "real.parquet",
            "--config",
            "claim.yaml",
            "--claimed-epsilon",
            "1",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3 and "rules: missing" not in err
    assert "audit.claimed_epsilon: claim.yaml claims ε = 2 and --claimed-epsilon says 1" in err


def test_runs_help_says_what_the_default_design_counts(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "generator runs: in all for the canaries and shared designs" in text
    assert "per target for the separate design (default 200" in text
