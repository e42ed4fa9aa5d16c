"""Metrics estimated on seeded samples of SYNTHETIC query records (memorisation, nnaa) and
median_dcr on sampled real records; the ``sample`` run option ("auto" above a size, off, N)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate.context as context_mod
import privgate.metrics as m
from privgate import evaluate
from privgate.context import EvaluationContext
from privgate.errors import ConfigError, ParameterError
from privgate.gates.config_validate import parse_gate_config as parse_config
from privgate.options import parse_options


def _people(n: int, rng) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(float),
            "income": np.round(rng.lognormal(10, 0.5, n), -2),
            "score": rng.normal(size=n),
            "sex": rng.choice(["f", "m"], n),
            "region": rng.choice(list("abcde"), n),
        }
    )


def _data(n: int, seed: int, copied: float = 0.2) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Training, holdout (same population) and a release: fresh people plus noisy copies of a
    share ``copied`` of the training records."""
    rng = np.random.default_rng(seed)
    real, holdout, fresh = _people(n, rng), _people(n, rng), _people(n, rng)
    k = int(copied * n)
    copies = real[:k].with_columns(pl.col("score") + rng.normal(scale=0.01, size=k))
    release = pl.concat([copies, fresh[k:]])
    return real, holdout, release


def _every(ctx, monkeypatch, role: str) -> None:
    """Make ``role``'s sample every record (the sampled code path over all rows)."""
    n = ctx.n_real if role == "real" else ctx.n_synthetic
    monkeypatch.setattr(ctx, f"{role}_sample", lambda auto=True: np.arange(n))
    monkeypatch.setattr(
        ctx,
        "sample_description",
        lambda r="real": {
            "n": ctx.n_real if r == "real" else ctx.n_synthetic,
            "of": ctx.n_real if r == "real" else ctx.n_synthetic,
            "seed": 0,
            "side": r,
        },
    )


def test_memorisation_on_a_sample_of_every_release_record_is_the_unsampled_test(monkeypatch):
    real, holdout, release = _data(400, 1)
    full = m.memorisation(EvaluationContext(real, release, holdout=holdout))
    ctx = EvaluationContext(real, release, holdout=holdout)
    _every(ctx, monkeypatch, "synthetic")
    every = m.memorisation(ctx)
    assert every.value == full.value and every.raw == full.raw and every.p_value == full.p_value
    for a, b in zip(every.details["tails"], full.details["tails"]):
        assert (a["training_side"], a["holdout_side"], a["share"]) == (
            b["training_side"],
            b["holdout_side"],
            b["share"],
        )
        # the bound moves down by exactly the record-sampling half-width, nothing else
        assert a["lower"] == pytest.approx(b["lower"] - a["sampling_halfwidth"], abs=1e-12)
        assert a["sampling_halfwidth"] > 0
    np.testing.assert_array_equal(every.per_record, full.per_record)
    assert every.details["flagged_rows"] == full.details["flagged_rows"]
    assert every.details["sampled"]["side"] == "synthetic"
    assert every.ci[0] <= full.ci[0] and every.ci[1] >= full.ci[1]


def test_nnaa_on_samples_of_every_record_is_the_unsampled_value(monkeypatch):
    real, holdout, release = _data(300, 2)
    full = m.nnaa(EvaluationContext(real, release))
    ctx = EvaluationContext(real, release)
    _every(ctx, monkeypatch, "real")
    monkeypatch.setattr(ctx, "synthetic_sample", lambda: np.arange(ctx.n_synthetic))
    every = m.nnaa(ctx)
    assert every.value == pytest.approx(full.value, abs=1e-12)
    np.testing.assert_array_equal(every.per_record, full.per_record)
    assert set(every.details["sampled"]) >= {"n", "of", "synthetic"}
    assert every.ci[0] <= every.value <= every.ci[1]


def test_median_dcr_on_a_sample_of_every_real_record_is_the_unsampled_value(monkeypatch):
    real, _, release = _data(300, 3)
    full = m.median_dcr(EvaluationContext(real, release))
    ctx = EvaluationContext(real, release)
    _every(ctx, monkeypatch, "real")
    every = m.median_dcr(ctx)
    assert every.value == full.value and every.raw == full.raw
    assert "bootstrap" in every.details["ci_method"] and every.details["sampled"]["n"] == 300


def test_median_by_hand_on_a_sample():
    """Both medians over the sampled real records: hand-checkable on one numeric column."""
    real = pl.DataFrame({"x": [0.0, 1.0, 3.0, 7.0, 15.0, 31.0]})
    syn = pl.DataFrame({"x": [0.5, 1.0, 3.5, 7.0, 14.0, 40.0]})
    ctx = EvaluationContext(real, syn, sample_real=3, seed=0)
    rows = ctx.real_sample()
    res = m.median_dcr(ctx)
    x, s = real["x"].to_numpy(), syn["x"].to_numpy()
    span = x.std()  # the mixed space standardises a numeric by the real (population) std
    d_rs = np.abs(x[rows, None] - s[None, :]).min(axis=1) / span
    others = np.abs(x[rows, None] - x[None, :])
    others[np.arange(rows.size), rows] = np.inf
    d_rr = others.min(axis=1) / span
    assert res.details["median_real_synthetic"] == pytest.approx(np.median(d_rs))
    assert res.details["median_real_real"] == pytest.approx(np.median(d_rr))


@pytest.mark.parametrize("name", ["memorisation", "nnaa", "median_dcr"])
def test_sampled_intervals_contain_the_full_value_over_seeds(name):
    """Over 30 sample seeds the 95 % interval of the sampled estimate contains the full value
    in at least 90 % of them."""
    real, holdout, release = _data(1500, 4, copied=0.1)
    full = getattr(m, name)(EvaluationContext(real, release, holdout=holdout, seed=0)).value
    hits = []
    for seed in range(30):
        res = getattr(m, name)(EvaluationContext(real, release, holdout=holdout, seed=seed, sample=300))
        assert res.details["sampled"]["n"] == 300
        hits.append(res.ci[0] <= full <= res.ci[1])
    assert np.mean(hits) >= 0.9, (name, np.mean(hits))


def test_memorisation_sampled_flags_name_release_rows():
    real, holdout, release = _data(1000, 5, copied=0.3)
    ctx = EvaluationContext(real, release, holdout=holdout, sample=200)
    res = m.memorisation(ctx)
    rows = set(ctx.synthetic_sample().tolist())
    assert res.details["flagged_rows"] and set(res.details["flagged_rows"]) <= rows
    assert res.per_record.shape == (200,) and res.details["sizes"]["release"] == 1000
    assert res.ci[0] > 0.1  # 30 % copied: found on the sample too


def test_auto_does_nothing_below_its_size(monkeypatch):
    real, holdout, release = _data(400, 6)
    ctx = EvaluationContext(real, release, holdout=holdout)  # sample="auto" by default
    assert ctx.sample == "auto" and ctx.real_sample() is None and ctx.synthetic_sample() is None
    rep = evaluate(
        real, release, ["memorisation", "nnaa", "median_dcr", "authenticity"], holdout=holdout, baseline=True
    )
    off = evaluate(
        real,
        release,
        ["memorisation", "nnaa", "median_dcr", "authenticity"],
        holdout=holdout,
        baseline=True,
        sample="off",
    )
    for name, res in rep.results.items():
        assert "sampled" not in res.details
        assert res.value == off.results[name].value and res.ci == off.results[name].ci
    assert rep.params["options"]["sampled"] == {"real": None, "synthetic": None}
    # above the size (lowered here): each side sampled to the auto size, stated; never with exact
    monkeypatch.setattr(context_mod, "AUTO_SAMPLE_ABOVE", 300)
    monkeypatch.setattr(context_mod, "AUTO_SAMPLE_SIZE", 100)
    big = EvaluationContext(real, release, holdout=holdout)
    assert big.real_sample().size == 100 and big.synthetic_sample().size == 100
    assert big.sample_description("synthetic")["rule"].startswith("auto")
    # common_rows (a join) stays exact under auto; dcr is sampled as the other per-record means (its
    # jackknife refits the FAMD axes per group); an explicit size samples both
    assert "sampled" not in m.common_rows(big).details
    dcr_auto = m.dcr(big)
    assert dcr_auto.details["sampled"]["n"] == 100 and "FAMD projection held fixed" in dcr_auto.details["ci_method"]
    assert m.common_rows(EvaluationContext(real, release, sample=100)).details["sampled"]["n"] == 100
    assert m.nnaa(big).details["sampled"]["n"] == 100
    assert m.dcr(EvaluationContext(real, release, sample=100)).details["sampled"]["n"] == 100
    assert EvaluationContext(real, release, exact=True).real_sample() is None
    assert EvaluationContext(real, release, sample_real=50).real_sample().size == 50  # explicit wins
    assert EvaluationContext(real, release, sample="off").synthetic_sample() is None


def test_the_holdout_baseline_is_scored_on_the_same_design():
    real, holdout, release = _data(600, 7)
    rep = evaluate(real, release, ["nnaa", "median_dcr"], holdout=holdout, baseline=True, sample=200)
    for res in rep.results.values():
        assert res.details["sampled"]["n"] == 200 and res.excess is not None and res.excess_ci is not None
    ctx = EvaluationContext(real, release, holdout=holdout, sample=200)
    base = ctx.holdout_baseline()
    assert base.synthetic_sample().size == 200
    np.testing.assert_array_equal(base.real_sample(), ctx.real_sample())  # the same real records


def test_sample_option_errors_are_specific():
    with pytest.raises(ParameterError, match="sample must be"):
        EvaluationContext(pl.DataFrame({"x": [1.0, 2.0]}), pl.DataFrame({"x": [1.0, 2.0]}), sample="sometimes")
    for bad in ("sometimes", 0, -5, True, 2.5):
        with pytest.raises(ConfigError, match=r"^options\.sample: must be auto .* off .* positive number"):
            parse_options({"sample": bad})
    assert parse_options({"sample": None}).sample == "off"
    assert parse_options({"sample": "100000"}).sample == 100000
    assert (
        parse_options({}).sample is None and parse_options({}).with_defaults().sample == "auto"
    )  # not given: the default


def test_default_sample_keeps_the_config_hash():
    body = {"version": 1, "metrics": {"common_rows": {"threshold": {"block": 0.01}}}}
    plain = parse_config(body)
    auto = parse_config({**body, "options": {"sample": "auto"}})
    off = parse_config({**body, "options": {"sample": "off"}})
    assert plain.hash == auto.hash != off.hash


def test_the_gate_table_and_html_name_the_sampled_metrics(tmp_path):
    from privgate.gates import format_checks, run_gate
    from privgate.render.reports import render_html

    real, holdout, release = _data(600, 8)
    cfg = {
        "version": 1,
        "options": {"sample": 200},
        "metrics": {"nnaa": {"baseline": {"warn": 0.05}}, "memorisation": {"threshold": {"on": "lower", "block": 0.5}}},
    }
    out = run_gate(cfg, real, release, holdout=holdout, record=False, threads=1)
    assert out.exit_code in (0, 1, 2), [c.message for c in out.checks]
    text = format_checks(out)
    assert "sampled query records" in text and "nnaa (real 200 of 600, synthetic 200 of 600)" in text
    assert "memorisation (synthetic 200 of 600)" in text
    assert "sampled query records" in render_html(out)
    assert out.config.options.sample == 200
