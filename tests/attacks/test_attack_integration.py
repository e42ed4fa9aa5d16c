"""The attacks as ordinary registry metrics: privgate.evaluate, a gate configuration, JSON."""

from __future__ import annotations

import json

import pytest

import privgate
from privgate.gates import run_gate
from privgate.gates.config_validate import parse_gate_config

ATTACKS = ["singling_out", "linkability", "inference"]


@pytest.fixture(scope="module")
def frames(adult, adult_holdout):
    real, hold = adult.head(800), adult_holdout.head(800)
    return real, privgate.baselines.noisy_copy(real, seed=4), hold


def test_evaluate_runs_the_attacks_and_skips_their_holdout_baseline(frames):
    real, syn, hold = frames
    rep = privgate.evaluate(
        real,
        syn,
        metrics=ATTACKS,
        holdout=hold,
        baseline=True,
        params={
            "inference": {"secret": "income"},
            "linkability": {"aux_cols": [["age", "sex"], ["race", "education"]]},
        },
    )
    assert list(rep.results) == ATTACKS and not rep.errors
    for name in ATTACKS:
        res = rep.results[name]
        assert res.baseline is None and res.ci is not None and res.details["ci_method"].startswith("anonymeter")
        assert res.n_holdout == 800
    out = json.loads(json.dumps(rep.results["singling_out"].to_dict()))
    assert out["ci"] == list(rep.results["singling_out"].ci)


def test_default_metrics_include_the_attacks_only_when_they_can_run(frames):
    from privgate.context import EvaluationContext
    from privgate.evaluation import default_metrics

    real, syn, hold = frames
    assert not set(ATTACKS) & set(default_metrics(EvaluationContext(real, syn)))
    with_holdout = default_metrics(EvaluationContext(real, syn, holdout=hold))
    assert {"singling_out", "linkability"} <= set(with_holdout) and "inference" not in with_holdout
    assert "inference" in default_metrics(EvaluationContext(real, syn, holdout=hold, sensitive=["income"]))


def test_evaluate_without_holdout_records_a_clear_error(frames):
    real, syn, _ = frames
    rep = privgate.evaluate(real, syn, metrics=["singling_out"], on_error="record")
    assert "needs a holdout" in rep.errors["singling_out"]


CONFIG = {
    "version": 1,
    "dataset": "adult-attacks",
    "metrics": {
        "singling_out": {"params": {"n_attacks": 200}, "threshold": {"block": 0.5}},
        "linkability": {
            "params": {"aux_cols": [["age", "sex", "race"], ["education", "hours_per_week"]], "n_neighbors": 2},
            "threshold": {"warn": 0.5, "block": 0.9},
        },
        "inference": {"params": {"secret": "income", "n_attacks": 500}, "threshold": {"block": 0.99}},
    },
}


def test_a_gate_config_with_the_attacks_validates_and_runs(frames):
    real, syn, hold = frames
    cfg = parse_gate_config(CONFIG)
    assert cfg.metric_names == ATTACKS
    out = run_gate(CONFIG, real, syn, holdout=hold, release_id="r1")
    assert {c.metric for c in out.checks} == set(ATTACKS)
    # a noisy copy scores about 0.18 / 0.06 / 0.74 here: below every limit, so the gate passes
    assert out.exit_code == 0 and str(out.decision) == "pass" and not out.errors
    assert out.results["singling_out"].value == pytest.approx(0.1814, abs=2e-3)
    assert out.results["linkability"].value == pytest.approx(0.0554, abs=2e-3)
    assert out.results["inference"].value == pytest.approx(0.7445, abs=2e-3)
    assert out.results["linkability"].params["n_neighbors"] == 2


def test_a_gate_blocks_a_copy_on_singling_out(frames):
    real, _, hold = frames
    out = run_gate({"version": 1, "metrics": {"singling_out": {"threshold": {"block": 0.5}}}}, real, real, holdout=hold)
    assert out.decision == "block" and out.exit_code == 2


def test_a_gate_without_holdout_fails_closed(frames):
    real, syn, _ = frames
    out = run_gate({"version": 1, "metrics": {"singling_out": {"threshold": {"block": 0.5}}}}, real, syn)
    assert out.decision == "block" and out.exit_code == 3


def test_unknown_parameter_in_config_is_named():
    from privgate.errors import ConfigError

    with pytest.raises(ConfigError, match="n_attack"):
        parse_gate_config({"version": 1, "metrics": {"singling_out": {"params": {"n_attack": 5}, "threshold": 0.5}}})


def test_attack_results_go_into_history_and_reports(frames, tmp_path):
    from privgate.history import HistoryStore
    from privgate.render import write_html_report, write_json_report

    real, syn, hold = frames
    history = HistoryStore(tmp_path / "h.sqlite")
    try:
        out = run_gate(CONFIG, real, syn, holdout=hold, release_id="r1", history=history)
        html = write_html_report(out, tmp_path / "r.html", history=history)
        write_json_report(out, tmp_path / "r.json", history=history)
        scores = history.metric_history("adult-attacks", "inference")
    finally:
        history.close()
    assert not out.errors and html is not None
    assert scores.height == 1
    assert "singling_out" in (tmp_path / "r.json").read_text() and "linkability" in (tmp_path / "r.html").read_text()


def test_anonymeters_control_name_is_the_holdout(frames):
    real, syn, hold = frames
    a = privgate.metrics.linkability(
        real, syn, control=hold, aux_cols=[["age", "sex"], ["race", "education"]], n_attacks=200, seed=3
    )
    b = privgate.metrics.linkability(
        real, syn, holdout=hold, aux_cols=[["age", "sex"], ["race", "education"]], n_attacks=200, seed=3
    )
    assert a.value == b.value and a.ci == b.ci and a.n_holdout == 800
    with pytest.raises(privgate.errors.ParameterError, match="not both"):
        privgate.metrics.linkability(real, syn, control=hold, holdout=hold)
    with pytest.raises(privgate.errors.ParameterError, match="control"):
        privgate.metrics.common_rows(real, syn, control=hold)  # not a control-set metric
