"""Parquet inputs stay lazy scans: the group-by metrics stream them, a frame is
loaded only when a metric needs it, and every result equals the eager path's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate.metrics as m
from privgate import evaluate
from privgate.context import EvaluationContext
from privgate.errors import AllNullColumnError, InputLoadError, NonFiniteValueError, NotApplicableError, ParameterError
from privgate.gates import run_gate


def _frames(n=800, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(20, 60, n).astype(float)
    age[rng.random(n) < 0.05] = np.nan  # nulls in a key
    real = pl.DataFrame(
        {
            "age": age,
            "zero": np.where(rng.random(n) < 0.5, 0.0, -0.0),
            "sex": pl.Series(rng.choice(["f", "m", None], n, p=[0.45, 0.45, 0.1]).tolist(), dtype=pl.String),
            "region": rng.choice(list("abcd"), n),
            "label": rng.choice(["lo", "hi"], n),
            "x": rng.normal(size=n).round(1),
        }
    )
    release = pl.concat(
        [
            real.sample(n // 4, seed=1),
            real.sample(n - n // 4, seed=2).with_columns(pl.col("x") + 0.5, pl.col("zero").abs()),
        ]
    )
    holdout = real.sample(n, seed=3, with_replacement=True).with_columns(pl.col("x") * 1.5)
    return real, release, holdout


@pytest.fixture
def files(tmp_path):
    real, release, holdout = _frames()
    out = {}
    for role, frame in (("real", real), ("synthetic", release), ("holdout", holdout)):
        out[role] = tmp_path / f"{role}.parquet"
        frame.write_parquet(out[role])
    return {"frames": (real, release, holdout), **out}


def _same(a, b):
    assert a.value == b.value and a.raw == b.raw and a.ci == b.ci
    np.testing.assert_array_equal(a.per_record, b.per_record)
    assert {k: v for k, v in a.details.items() if k != "neighbour_search"} == {
        k: v for k, v in b.details.items() if k != "neighbour_search"
    }


@pytest.mark.parametrize("sample_real", [None, 300])
@pytest.mark.parametrize(
    "call, streams",
    [
        (lambda c: m.common_rows(c), True),
        (lambda c: m.zero_cap(c, keys=["age", "sex", "region"], sensitive="label"), True),
        (lambda c: m.zero_cap(c, keys=["age", "zero", "sex"], sensitive=["label", "region"]), True),
        # binning numeric keys reads the key columns whole (the real quantiles), still not the frame
        (lambda c: m.zero_cap(c, keys=["age", "x", "sex"], sensitive="label", key_bins=4), True),
        (lambda c: m.generalized_cap(c, keys=["age", "sex", "region"], sensitive=["label", "x"]), True),
        (lambda c: m.generalized_cap(c, keys=["age", "x", "sex"], sensitive="label", key_bins=3), True),
        (lambda c: m.hitting_rate(c), True),
        (lambda c: m.disclosure_identity(c, keys=["age", "sex", "region"], targets=["label"]), True),
        (lambda c: m.disclosure_attribute(c, keys=["age", "sex", "region"], targets=["label", "zero"]), True),
    ],
)
def test_group_by_metrics_stream_the_release_and_equal_the_eager_path(files, call, streams, sample_real):
    real, release, _ = files["frames"]
    eager = call(EvaluationContext(real, release, sample_real=sample_real))
    ctx = EvaluationContext(files["real"], files["synthetic"], sample_real=sample_real)
    assert not ctx.is_loaded("synthetic") and not ctx.is_loaded("real")
    lazy = call(ctx)
    _same(lazy, eager)
    assert ctx.is_loaded("synthetic") is not streams  # streamed: never materialised
    assert ctx.is_loaded("real") is not streams


def test_columns_reads_a_projection_without_loading_and_names_unknown_columns(files):
    real, _, _ = files["frames"]
    ctx = EvaluationContext(files["real"], files["synthetic"])
    got = ctx.columns("real", ["sex", "age", "sex"])
    assert got.columns == ["sex", "age"] and not ctx.is_loaded("real")
    assert got.equals(ctx.real.select("sex", "age"))  # loads now: the same normalised values
    with pytest.raises(ParameterError, match=r"real columns not in the data: \['nope'\]"):
        ctx.columns("real", ["nope"])
    with pytest.raises(NotApplicableError, match="no holdout data"):
        ctx.columns("holdout", ["age"])


def test_a_search_metric_loads_each_file_once_with_the_same_values(files):
    real, release, holdout = files["frames"]
    names = ["common_rows", "authenticity", "zero_cap", "hitting_rate", "dcr"]
    kw = dict(sensitive="label", keys=["age", "sex", "region"], baseline=True)
    eager = evaluate(real, release, names, holdout=holdout, **kw)
    lazy = evaluate(files["real"], files["synthetic"], names, holdout=files["holdout"], **kw)
    for name in names:
        _same(lazy.results[name], eager.results[name])
        assert lazy.results[name].baseline == eager.results[name].baseline
        assert lazy.results[name].excess_ci == eager.results[name].excess_ci


def test_value_checks_on_scans_raise_the_eager_errors(tmp_path):
    real, release, _ = _frames(50)
    bad = release.with_columns(pl.when(pl.col("x") > 0).then(float("inf")).otherwise(pl.col("x")).alias("x"))
    bad.write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(NonFiniteValueError) as lazy_err:
        EvaluationContext(real, tmp_path / "bad.parquet")
    with pytest.raises(NonFiniteValueError) as eager_err:
        EvaluationContext(real, bad)
    assert str(lazy_err.value) == str(eager_err.value)
    real.with_columns(pl.lit(None, dtype=pl.String).alias("sex")).write_parquet(tmp_path / "nulls.parquet")
    with pytest.raises(AllNullColumnError, match="'sex' of real has only nulls"):
        EvaluationContext(tmp_path / "nulls.parquet", release)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputLoadError, match="not a readable Parquet file"):
        EvaluationContext(real, tmp_path / "junk.parquet")


def test_gate_on_parquet_paths_decides_and_fingerprints_like_frames(files):
    real, release, holdout = files["frames"]
    cfg = {
        "dataset": "s",
        "metrics": {
            "common_rows": {"threshold": {"warn": 0.0, "block": 0.9}},
            "authenticity": {"baseline": {"block": 0.5}},
        },
    }
    a = run_gate(cfg, files["real"], files["synthetic"], holdout=files["holdout"], release_id="a")
    b = run_gate(cfg, real, release, holdout=holdout, release_id="b")
    assert a.exit_code == b.exit_code == 1
    for role in ("real", "synthetic", "holdout"):
        fa, fb = dict(a.fingerprint[role]), dict(b.fingerprint[role])
        assert fa.pop("source") == f"{role}.parquet"
        assert fa == fb
    assert [(c.metric, c.compared) for c in a.checks] == [(c.metric, c.compared) for c in b.checks]


def test_gate_refuses_a_file_replaced_during_the_run(files):
    real, release, _ = files["frames"]
    cfg = {
        "dataset": "s",
        "metrics": {"common_rows": {"threshold": {"block": 0.99}}, "hitting_rate": {"threshold": {"block": 0.99}}},
    }

    def replace_release(name, i, total):
        if i == 2:
            release.head(100).write_parquet(files["synthetic"])

    out = run_gate(cfg, files["real"], files["synthetic"], release_id="a", progress=replace_release)
    assert out.exit_code == 3
    assert any("synthetic file(s) changed during the run" in c.message for c in out.checks)
