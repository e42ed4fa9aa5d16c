"""The memory guard: limits parsed, the estimate responds to sizes, metrics and options as its
model says, and a run that would not fit is refused before any metric runs — by evaluate
(MemoryLimitError naming the metric and the options that fit) and by the gate (exit 3)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate.memory_guard as guard
from privgate import evaluate
from privgate.context import EvaluationContext
from privgate.errors import MemoryLimitError, ParameterError


def _frames(n, seed=0):
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "x": rng.normal(size=n),
            "y": rng.normal(size=n),
            "c": rng.choice(list("abcd"), n),
            "d": rng.choice(list("pq"), n),
        }
    )


def test_limits_are_parsed():
    assert guard.parse_limit("8G") == 8 * 2**30
    assert guard.parse_limit("512MiB") == 512 * 2**20
    assert guard.parse_limit("1.5g") == int(1.5 * 2**30)
    assert guard.parse_limit(1000) == 1000
    for off in ("off", "none", 0, None):
        assert guard.parse_limit(off) is None
    for bad in ("lots", -1, True):
        with pytest.raises(ParameterError, match="memory_limit"):
            guard.parse_limit(bad)


def test_the_limit_comes_from_the_option_then_the_environment_then_the_system(monkeypatch):
    assert guard.resolve_limit("2G") == (2 * 2**30, "memory_limit")
    monkeypatch.setenv("PRIVGATE_MEMORY_LIMIT", "3G")
    assert guard.resolve_limit("auto") == (3 * 2**30, "PRIVGATE_MEMORY_LIMIT")
    monkeypatch.delenv("PRIVGATE_MEMORY_LIMIT")
    monkeypatch.setattr(guard, "available_bytes", lambda: 5 * 2**30)
    monkeypatch.setattr(guard, "_rss_bytes", lambda: 2**30)
    assert guard.resolve_limit("auto")[0] == 6 * 2**30


def test_the_estimate_follows_its_model():
    real, syn = _frames(1000), _frames(800, 1)
    ctx = EvaluationContext(real, syn)
    est = guard.estimate_run(ctx, ["authenticity", "chi_squared"])
    # features: 2 numeric + 4 + 2 levels; unit = 1000 rows × 8 features × 8 bytes
    assert est.features == 8 and est.unit == 1000 * 8 * 8
    frames = 1.8
    expected = (
        guard.BASE_BYTES
        + guard.SEARCH_BYTES
        + est.unit * (guard.HELD_PER_FRAME * frames + guard.metric_cost("authenticity"))
    )
    assert est.per_metric["authenticity"] == pytest.approx(expected)
    assert est.peak == est.per_metric["authenticity"]  # the largest metric's
    # a sample shrinks a sampled metric's own part only
    sampled = guard.estimate_run(ctx, ["authenticity", "chi_squared"], sample=250)
    assert sampled.per_metric["authenticity"] == pytest.approx(
        expected - est.unit * guard.metric_cost("authenticity") * 0.75
    )
    assert sampled.per_metric["chi_squared"] == est.per_metric["chi_squared"]
    # more rows, more memory: linear in the rows
    big = guard.estimate_run(EvaluationContext(_frames(2000), _frames(1600, 1)), ["authenticity"])
    fixed = guard.BASE_BYTES + guard.SEARCH_BYTES
    assert big.peak - fixed == pytest.approx(2 * (est.peak - fixed))
    # a metric that reads no encoded space has no search scratch
    assert est.per_metric["chi_squared"] == pytest.approx(
        guard.BASE_BYTES + est.unit * (guard.HELD_PER_FRAME * frames + guard.metric_cost("chi_squared"))
    )


def test_a_large_run_whose_metrics_read_no_space_holds_the_frames_only():
    sizes = (10**6, 10**6, 10**6, 100)
    alone = guard.estimate_sizes(*sizes, ["chi_squared", "disclosure_identity"], exact=False, sample=50_000, threads=1)
    assert alone.inputs["held_per_frame"] == guard.HELD_PER_FRAME_NO_SPACE < guard.HELD_PER_FRAME_COMPACT
    assert alone.per_metric["chi_squared"] == pytest.approx(
        guard.BASE_BYTES + alone.unit * (guard.HELD_PER_FRAME_NO_SPACE * 3 + guard.metric_cost("chi_squared"))
    )
    # the same metric beside one that encodes a space counts the space the run will hold
    mixed = guard.estimate_sizes(*sizes, ["chi_squared", "authenticity"], exact=False, sample=50_000, threads=1)
    assert mixed.inputs["held_per_frame"] == guard.HELD_PER_FRAME_COMPACT
    assert mixed.per_metric["chi_squared"] > alone.per_metric["chi_squared"]
    # split by family, the statistical step is estimated without the search families' spaces
    steps = guard.family_estimates(*sizes, ["chi_squared", "authenticity"], exact=False, sample=50_000, threads=1)
    assert steps["statistical"].inputs["held_per_frame"] == guard.HELD_PER_FRAME_NO_SPACE
    assert steps["statistical"].peak < steps["re-identification"].peak
    # small runs keep the calibrated HELD_PER_FRAME whatever they read (fixed parts dominate there)
    small = guard.estimate_run(EvaluationContext(_frames(1000), _frames(800, 1)), ["chi_squared"])
    assert small.inputs["held_per_frame"] == guard.HELD_PER_FRAME


def test_a_run_that_would_not_fit_is_refused_before_any_metric():
    real, syn = _frames(3000), _frames(3000, 1)
    ctx = EvaluationContext(real, syn)
    metrics = ["chi_squared", "authenticity"]
    est = guard.estimate_run(ctx, metrics)
    assert est.per_metric["authenticity"] > est.per_metric["chi_squared"]  # it searches
    limit = int((est.per_metric["authenticity"] + est.per_metric["chi_squared"]) / 2)
    ran = []

    def progress(name, i, total):
        ran.append(name)

    with pytest.raises(MemoryLimitError) as err:
        evaluate(real, syn, metrics, memory_limit=limit, progress=progress)
    assert not ran
    text = str(err.value)
    assert "in metric 'authenticity'" in text and "3,000 real" in text and "leave out 'authenticity'" in text
    assert "memory_limit" in text
    # no record value is named
    for v in ("abcd", "pq", str(real["x"][0])[:6]):
        assert v not in text
    evaluate(real, syn, ["chi_squared"], memory_limit=limit, progress=progress)  # fits
    evaluate(real, syn, metrics, memory_limit="off", progress=progress)
    assert ran == ["chi_squared", "chi_squared", "authenticity"]


def test_the_suggested_sample_fits():
    real, syn = _frames(30_000), _frames(30_000, 1)
    ctx = EvaluationContext(real, syn)
    full = guard.estimate_run(ctx, ["authenticity"]).peak
    at_5k = guard.estimate_run(ctx, ["authenticity"], sample=5_000).peak
    limit = int((full + at_5k) / 2)
    with pytest.raises(MemoryLimitError, match="sample=") as err:
        guard.check_run(ctx, ["authenticity"], memory_limit=limit)
    size = int(str(err.value).split("sample=")[1].split(" ")[0])
    assert guard.estimate_run(ctx, ["authenticity"], sample=size).peak <= limit


def test_the_gate_refuses_with_exit_3(monkeypatch):
    from privgate.gates import parse_gate_config, run_gate

    cfg = parse_gate_config({"dataset": "d", "metrics": {"authenticity": {"threshold": {"warn": 0.5, "block": 0.9}}}})
    monkeypatch.setenv("PRIVGATE_MEMORY_LIMIT", "1M")
    out = run_gate(cfg, _frames(500), _frames(500, 1), record=False)
    assert out.exit_code == 3 and out.decision == "block"
    assert any("MemoryLimitError" in c.message and "'authenticity'" in c.message for c in out.checks)
    monkeypatch.setenv("PRIVGATE_MEMORY_LIMIT", "off")
    assert run_gate(cfg, _frames(500), _frames(500, 1), record=False).exit_code != 3
    out = run_gate(cfg, _frames(500), _frames(500, 1), record=False, memory_limit="1M")  # the option
    assert out.exit_code == 3 and any("MemoryLimitError" in c.message for c in out.checks)


def test_the_estimate_does_not_load_a_scanned_input(tmp_path):
    path = tmp_path / "real.parquet"
    _frames(1000).write_parquet(path)
    ctx = EvaluationContext(path, _frames(800, 1))
    est = guard.estimate_run(ctx, ["chi_squared"])
    assert est.features == 8
    assert "real" not in ctx._frames  # still a scan


def test_detection_mlp_fold_workers_are_counted_when_the_run_has_threads():
    """With more than one thread detection_mlp trains its folds in worker processes, each holding
    a fold's training copies: the estimate adds them (its declaration's worker_memory_cost units
    per worker), and with one thread (folds in this process) it does not."""
    from privgate.catalogue import get_metric
    from privgate.data import load_example
    from privgate.memory_guard import estimate_run
    from privgate.threads import available_cores

    if available_cores() < 2:
        pytest.skip("one core: detection_mlp never starts fold workers here")
    real = load_example().head(400)
    one = estimate_run(EvaluationContext(real, real, threads=1), ["detection_mlp", "nnaa"])
    two = estimate_run(EvaluationContext(real, real, threads=2), ["detection_mlp", "nnaa"])
    assert two.per_metric["nnaa"] == one.per_metric["nnaa"]
    assert two.per_metric["detection_mlp"] - one.per_metric["detection_mlp"] == pytest.approx(
        2 * get_metric("detection_mlp").worker_memory_cost * one.unit
    )


def test_detection_mlp_estimate_is_flat_above_its_records_per_class():
    """detection_mlp stacks at most MAX_DETECTION_RECORDS records per class: its own term of the
    estimate (the peak minus the base, the search scratch and the held frames) grows with the
    rows up to that cap and stays flat above it; with sample off it grows with every record."""
    from privgate.memory_guard import BASE_BYTES, SEARCH_BYTES, estimate_run, held_per_frame, metric_cost
    from privgate.metrics.classifier import MAX_DETECTION_RECORDS

    def own(n, sample="auto"):
        ctx = EvaluationContext(_frames(n), _frames(n, 1), threads=1, sample=sample)
        est = estimate_run(ctx, ["detection_mlp"], exact=True)
        return est.per_metric["detection_mlp"] - BASE_BYTES - SEARCH_BYTES - est.unit * held_per_frame(est.n) * 2, est

    small, est = own(20_000)
    assert small == pytest.approx(metric_cost("detection_mlp") * est.unit)  # every record below the cap
    capped = [own(n)[0] for n in (60_000, 120_000, 180_000)]  # below the compact size
    assert capped == pytest.approx([capped[0]] * 3)
    assert capped[0] == pytest.approx(metric_cost("detection_mlp") * est.unit * MAX_DETECTION_RECORDS / 20_000)
    off = [own(n, "off")[0] for n in (60_000, 120_000)]
    assert off[1] == pytest.approx(2 * off[0]) and off[0] > capped[0]


def test_membership_inference_estimate_is_flat_above_its_records_per_class():
    from privgate.memory_guard import BASE_BYTES, SEARCH_BYTES, estimate_run, held_per_frame, metric_cost
    from privgate.metrics.classifier import MAX_MEMBERSHIP_RECORDS

    def own(n, sample="auto"):
        ctx = EvaluationContext(_frames(n), _frames(n, 1), threads=1, sample=sample)
        est = estimate_run(ctx, ["membership_inference"], exact=True)
        return est.per_metric["membership_inference"] - BASE_BYTES - SEARCH_BYTES - est.unit * held_per_frame(
            est.n
        ) * 2, est

    capped = [own(n)[0] for n in (60_000, 120_000)]
    unit_60k = own(60_000)[1].unit
    assert capped == pytest.approx(
        [metric_cost("membership_inference") * unit_60k * MAX_MEMBERSHIP_RECORDS / 60_000] * 2
    )
    off = own(120_000, "off")[0]
    assert off == pytest.approx(2 * metric_cost("membership_inference") * unit_60k)


def test_a_holdout_baseline_is_counted_only_for_the_metrics_that_score_one():
    sizes = (10**6, 10**6, 10**6, 100)
    names = ["authenticity", "singling_out", "memorisation"]
    without = guard.estimate_sizes(*sizes, names, exact=False, sample=50_000, threads=1)
    with_ = guard.estimate_sizes(*sizes, names, exact=False, sample=50_000, threads=1, baseline=True)
    assert with_.per_metric["authenticity"] > without.per_metric["authenticity"]
    # self-controlled: the attacks and memorisation compare with the holdout themselves
    assert with_.per_metric["singling_out"] == without.per_metric["singling_out"]
    assert with_.per_metric["memorisation"] == without.per_metric["memorisation"]
