"""One gate run evaluated in parts (one per metric family, as the Dagster family steps do):
results survive JSON, the parts merge into the whole, and run_gate(report=) decides exactly as
run_gate does -- or blocks when the parts do not match the run."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from privgate.catalogue import get_metric
from privgate.errors import ParameterError
from privgate.gates import evaluate_for_gate, evaluation_plan, parse_gate_config, run_gate
from privgate.report import Report, merge_reports
from privgate.results import MetricResult

CFG_DICT = {
    "version": 1,
    "dataset": "split",
    "seed": 3,
    "metrics": {
        "common_rows": {"threshold": {"warn": 0.02, "block": 0.3}},
        "authenticity": {"baseline": {"when": "with_holdout", "warn": 0.05, "block": 0.15}},
        "nnaa": {"threshold": {"block": 0.9}, "baseline": {"when": "with_holdout", "warn": 0.05}},
        "memorisation": {"threshold": {"when": "with_holdout", "on": "lower", "warn": 0.0, "block": 0.01}},
        "jensen_shannon": {"threshold": {"warn": 0.9}},
    },
}
CFG = parse_gate_config(CFG_DICT)


@pytest.fixture(scope="module")
def frames():
    from privgate.data import load_example

    real = load_example("adult_sample").head(400)
    holdout = load_example("adult_holdout").head(400)
    rng = np.random.default_rng(0)
    synth = pl.concat(
        [
            real.head(40),  # 10 % copies: memorisation and common_rows see them
            pl.DataFrame(
                {c: real[c].sample(fraction=1.0, shuffle=True, seed=int(rng.integers(1e6))) for c in real.columns}
            ).head(160),
        ]
    )
    return real, synth, holdout


def _parts(real, synth, holdout, cfg=CFG, through_json=True):
    plan = evaluation_plan(cfg, holdout is not None)
    families: dict[str, list[str]] = {}
    for m in plan["metrics"]:
        families.setdefault(get_metric(m).family, []).append(m)
    parts = []
    for names in families.values():
        rep = evaluate_for_gate(cfg, real, synth, holdout, metrics=names, threads=1)
        if through_json:
            arrays = {n: r.per_record for n, r in rep.results.items() if r.per_record is not None}
            rep = Report.from_dict(json.loads(json.dumps(rep.to_dict(), allow_nan=False)), arrays)
        parts.append(rep)
    return plan, families, parts


def _same_outcome(a, b) -> None:
    def norm(o):
        d = o.to_dict()
        for k in ("run_id", "created_at", "seconds"):
            d.pop(k)
        for r in d["results"].values():
            r.pop("seconds")
        for c in d["checks"]:
            c.pop("seconds")
        return d

    assert norm(a) == norm(b)
    for name, res in a.results.items():
        other = b.results[name].per_record
        assert (res.per_record is None and other is None) or np.array_equal(res.per_record, other), name


def test_metric_result_round_trips_through_json():
    res = MetricResult(
        name="x",
        value=0.25,
        raw=float("nan"),
        params={"k": (1, 2)},
        details={"ci_method": "wilson", "n": np.int64(3)},
        per_record=np.array([0.0, 1.0, 0.5]),
        p_value=0.04,
    )
    res.set_ci((0.1, 0.4), "wilson")
    res.with_baseline(0.2, (0.1, 0.3), (-0.05, 0.15))
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    back = MetricResult.from_dict(d, res.per_record)
    assert back.to_dict() == res.to_dict()
    assert np.isnan(back.raw) and back.ci == (0.1, 0.4) and back.excess_ci == (-0.05, 0.15)
    assert back.excess == pytest.approx(0.05)
    assert np.array_equal(back.per_record, res.per_record)


def test_split_parts_decide_as_the_single_run(frames):
    """Families evaluated apart, carried through JSON and merged: the same checks, results,
    intervals, per-record risks and decision as one run_gate (with and without holdout)."""
    real, synth, holdout = frames
    for hold in (holdout, None):
        plan, families, parts = _parts(real, synth, hold)
        assert len(families) >= 2
        merged = merge_reports(parts, order=plan["metrics"])
        single = run_gate(CFG, real, synth, holdout=hold, release_id="r", threads=1)
        split = run_gate(CFG, real, synth, holdout=hold, release_id="r", threads=1, report=merged)
        assert single.exit_code in (1, 2) and not any(c.rule == "error" for c in single.checks)
        _same_outcome(single, split)
        assert list(split.results) == [m for m in plan["metrics"]]


def test_merge_reports_refuses_parts_of_different_evaluations(frames):
    real, synth, holdout = frames
    plan, _, parts = _parts(real, synth, holdout, through_json=False)
    with pytest.raises(ParameterError, match="metric 'common_rows' is in reports 0 and 1"):
        merge_reports([parts[0], parts[0]])
    other = evaluate_for_gate(CFG, real, synth.head(150), holdout, metrics=["nnaa"], threads=1)
    with pytest.raises(ParameterError, match="n_synthetic"):
        merge_reports([parts[0], other])
    with pytest.raises(ParameterError, match="no reports"):
        merge_reports([])


def _errors(outcome) -> list[str]:
    return [f"{c.metric}: {c.message}" for c in outcome.checks if c.rule == "error"]


def test_a_report_that_does_not_match_the_run_blocks(frames):
    """run_gate(report=) fails closed on results from other inputs, settings or configuration,
    and on a planned metric the report lacks."""
    real, synth, holdout = frames
    plan, _, parts = _parts(real, synth, holdout, through_json=False)
    merged = merge_reports(parts, order=plan["metrics"])

    other_synth = run_gate(CFG, real, synth.head(199), holdout=holdout, report=merged, threads=1)
    assert other_synth.exit_code == 3 and "other synthetic data" in " ".join(_errors(other_synth))

    reseeded = CFG_DICT | {"seed": 4}
    wrong_seed = run_gate(reseeded, real, synth, holdout=holdout, report=merged, threads=1)
    assert wrong_seed.exit_code == 3 and "seed 3" in " ".join(_errors(wrong_seed))

    no_digest = merge_reports(parts, order=plan["metrics"])
    no_digest.params.pop("inputs_sha256")
    assert "no input digests" in " ".join(
        _errors(run_gate(CFG, real, synth, holdout=holdout, report=no_digest, threads=1))
    )

    partial = merge_reports(parts[:1], order=plan["metrics"])
    missing = run_gate(CFG, real, synth, holdout=holdout, report=partial, threads=1)
    lost = set(plan["metrics"]) - set(partial.results)
    assert missing.exit_code == 3 and lost
    assert {c.metric for c in missing.checks if c.rule == "error"} == lost
    assert all("no result was produced" in c.message for c in missing.checks if c.rule == "error")

    # results of a metric the configuration does not plan: computed with another configuration
    fewer = CFG_DICT | {"metrics": {"common_rows": {"threshold": {"block": 0.3}}}}
    extra = run_gate(fewer, real, synth, holdout=holdout, report=merged, threads=1)
    assert extra.exit_code == 3 and "does not plan" in " ".join(_errors(extra))
    assert run_gate(CFG, real, synth, holdout=holdout, report={"x": 1}, threads=1).exit_code == 3
