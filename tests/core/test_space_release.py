"""Encoded spaces at scale: each metric declares the kinds of space it reads, an evaluation runs
the metrics of one kind together and drops a kind's space once no metric still to run reads it,
and a holdout baseline reads the main evaluation's matrices instead of encoding the real records
again. None of it may change a value."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.baselines import noisy_copy
from privgate.catalogue import get_metric, metric_names
from privgate.context import EvaluationContext
from privgate.data import load_example
from privgate.evaluation import run_order, spaces_still_read
from privgate.registry import run_spec
from privgate.spaces import SPACE_KINDS


@pytest.fixture(scope="module")
def frames() -> dict[str, pl.DataFrame]:
    adult = load_example()
    real, holdout = adult[:600], adult[600:1100]
    return {"real": real, "synthetic": noisy_copy(real, seed=3)[:550], "holdout": holdout}


def _ctx(frames, **kw) -> EvaluationContext:
    sens = ["income"] if "income" in frames["real"].columns else [frames["real"].columns[-1]]
    return EvaluationContext(
        frames["real"],
        frames["synthetic"],
        holdout=frames["holdout"],
        sensitive=sens,
        pairing=kw.pop("pairing", None),
        seed=0,
        **kw,
    )


@pytest.mark.parametrize("name", sorted(set(metric_names()) - {"hidden_rate"}))
def test_every_metric_reads_only_the_spaces_it_declares(frames, name):
    spec = get_metric(name)
    assert spec.spaces is not None, f"{name} does not declare the spaces it reads"
    assert set(spec.spaces) <= set(SPACE_KINDS)
    ctx = _ctx(frames)
    run_spec(spec, ctx, {})
    assert ctx.spaces_read() <= set(spec.spaces)
    if not spec.self_controlled:
        base = ctx.holdout_baseline()
        run_spec(spec, base, {})
        assert base.spaces_read() <= set(spec.spaces)


def test_hidden_rate_reads_only_the_famd_space(frames):
    real = frames["real"]
    ctx = EvaluationContext(real, noisy_copy(real, seed=4), pairing=True)
    run_spec(get_metric("hidden_rate"), ctx, {})
    assert ctx.spaces_read() == {"famd"} == set(get_metric("hidden_rate").spaces)


def test_run_order_groups_metrics_by_space_kind_and_keeps_their_order():
    names = ["authenticity", "identifiability", "common_rows", "nnaa", "dcr", "median_dcr", "hitting_rate"]
    order = [s.name for s in run_order([get_metric(n) for n in names])]
    assert order == ["common_rows", "hitting_rate", "authenticity", "nnaa", "median_dcr", "identifiability", "dcr"]
    assert spaces_still_read([get_metric(n) for n in order[3:]]) == {"mixed", "identifiability", "famd"}
    assert spaces_still_read([get_metric(n) for n in order[5:]]) == {"identifiability", "famd"}
    assert spaces_still_read([]) == set()


def test_an_undeclared_metric_keeps_the_order_and_every_space():
    from dataclasses import replace

    specs = [get_metric("identifiability"), replace(get_metric("nnaa"), spaces=None), get_metric("common_rows")]
    assert run_order(specs) == specs
    assert spaces_still_read(specs) is None
    ctx = EvaluationContext(pl.DataFrame({"a": [1.0, 2.0]}), pl.DataFrame({"a": [1.5, 3.0]}))
    ctx.mixed()
    assert ctx.release_spaces(None) == [] and ("mixed", None) in ctx._spaces


def test_release_drops_the_other_kinds_and_a_rebuild_is_identical(frames):
    ctx = _ctx(frames)
    mixed, ident, famd = ctx.mixed(), ctx.identifiability_space(), ctx.famd()
    assert sorted(ctx.release_spaces({"mixed"})) == ["famd2", "identifiability"]
    assert ctx.mixed() is mixed  # kept
    again = ctx.identifiability_space()
    assert again is not ident
    for role in ident.matrices:
        assert np.array_equal(again[role], ident[role])
        assert np.array_equal(ctx.famd()[role], famd[role])


def test_evaluate_gives_the_same_values_with_and_without_reordering_and_release(frames, monkeypatch):
    import importlib

    evaluate_module = importlib.import_module("privgate.evaluation")
    names = [
        "authenticity",
        "identifiability",
        "common_rows",
        "nnaa",
        "dcr",
        "median_dcr",
        "hitting_rate",
        "memorisation",
    ]
    kw = dict(holdout=frames["holdout"], baseline=True, seed=3)
    released = []
    orig = EvaluationContext.release_spaces

    def spy(self, keep):
        out = orig(self, keep)
        released.extend(out)
        return out

    monkeypatch.setattr(EvaluationContext, "release_spaces", spy)
    rep = privgate.evaluate(frames["real"], frames["synthetic"], names, **kw)
    assert list(rep.results) == names  # reported in the order asked for
    assert {"mixed", "identifiability", "famd2"} <= set(released)
    monkeypatch.setattr(evaluate_module, "run_order", list)
    monkeypatch.setattr(evaluate_module, "spaces_still_read", lambda specs: None)
    released.clear()
    ref = privgate.evaluate(frames["real"], frames["synthetic"], names, **kw)
    assert released == []
    for n in names:
        a, b = rep.results[n], ref.results[n]
        assert (a.value, a.ci, a.baseline, a.excess, a.excess_ci) == (
            b.value,
            b.ci,
            b.baseline,
            b.excess,
            b.excess_ci,
        ), n


@pytest.mark.parametrize("n_holdout", [500, 800])
def test_the_holdout_baseline_reads_the_main_matrices(frames, n_holdout):
    adult = load_example()
    holdout = adult[600 : 600 + n_holdout]
    ctx = EvaluationContext(frames["real"], frames["synthetic"], holdout=holdout)
    base = ctx.holdout_baseline()
    main, sp = ctx.mixed(), base.mixed()
    assert sp["real"] is main["real"]
    if n_holdout <= ctx.n_synthetic:  # every holdout record: the same matrix object
        assert sp["synthetic"] is main["holdout"]
    rows = np.sort(np.random.default_rng(ctx.seed).choice(n_holdout, min(n_holdout, ctx.n_synthetic), replace=False))
    assert np.array_equal(sp["synthetic"], main["holdout"][rows])
    # the same encoding as a context of the real records and that sample alone, up to the
    # all-zero columns of levels only the release (or unsampled holdout records) has
    alone = EvaluationContext(frames["real"], holdout[rows]).mixed()
    keep = np.flatnonzero(np.abs(np.vstack([main["real"], sp["synthetic"]])).sum(axis=0) > 0)
    assert np.array_equal(sp["real"][:, keep], alone["real"]) and np.array_equal(
        sp["synthetic"][:, keep], alone["synthetic"]
    )
    own = EvaluationContext(frames["real"], holdout[rows])
    ident, own_ident = base.identifiability_space(), own.identifiability_space()
    keep = np.flatnonzero(np.abs(np.vstack([ident["real"], ident["synthetic"]])).sum(axis=0) > 0)
    assert np.array_equal(ident["synthetic"][:, keep], own_ident["synthetic"])
    np.testing.assert_allclose(base.famd()["synthetic"], own.famd()["synthetic"], rtol=0, atol=1e-12)
    assert base._memo is ctx._memo


def test_holdout_baseline_values_match_a_context_of_the_sample_alone(frames):
    ctx = EvaluationContext(frames["real"], frames["synthetic"], holdout=frames["holdout"], seed=0)
    base = ctx.holdout_baseline()
    alone = EvaluationContext(frames["real"], frames["holdout"], seed=0)
    for name in ("authenticity", "identifiability", "nnaa", "median_dcr", "dcr", "close_values"):
        a, b = run_spec(get_metric(name), base, {}), run_spec(get_metric(name), alone, {})
        assert a.value == pytest.approx(b.value, abs=1e-12), name


def test_register_metric_rejects_an_unknown_space_kind():
    from privgate.registry import register_metric

    with pytest.raises(ValueError, match="unknown space kind 'gower'"):
        register_metric(family="tracing", attack="a", reference="r", orientation="o", spaces=("gower",))


def test_a_full_garbage_collection_runs_only_when_the_dropped_spaces_are_large(frames, monkeypatch):
    import gc

    import privgate.context_spaces as spaces_mod

    runs = []
    monkeypatch.setattr(gc, "collect", lambda *a: runs.append(1) or 0)
    ctx = _ctx(frames)
    ctx.mixed(), ctx.identifiability_space()
    ctx.release_spaces({"mixed"})
    assert runs == []  # a few KiB: nothing worth a collection
    monkeypatch.setattr(spaces_mod, "COLLECT_FROM_BYTES", 1)
    ctx.identifiability_space()
    ctx.release_spaces({"mixed"})
    assert runs == [1]
