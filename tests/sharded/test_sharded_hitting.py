"""hitting_rate sharded on a Dask ``LocalCluster`` of three worker processes equals the local
metric: value, raw share, interval, hits and the chance share, with and without ``beyond_chance``,
with a holdout baseline, a release larger or smaller than the real data, sampled real records,
nulls (numeric and categorical), a constant numeric column, numeric values exactly one tolerance
apart, and exact copies of real records. And a hand-computed case of the definition."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sharded_data import close, write_folder  # noqa: E402

import privgate  # noqa: E402
import privgate.metrics as m  # noqa: E402
from privgate.options import RunOptions  # noqa: E402
from privgate.sharded.evaluate import evaluate_sharded  # noqa: E402

SCHEMA = {"age": "numeric", "score": "numeric", "sex": "categorical", "plan": "categorical", "unit": "numeric"}


def _records(n: int, seed: int) -> pl.DataFrame:
    """Mixed records on a coarse grid, so that boxes are often hit and often just missed: the
    numeric ``age`` spans 0..60 (h = 2 at the default divisor 30) in steps of 1, so many pairs
    lie exactly one tolerance apart; ``score`` has nulls; ``unit`` is constant in the real data;
    ``plan`` has nulls."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 61, n).astype(float)
    score = np.round(rng.normal(0, 1, n), 1)
    return pl.DataFrame(
        {
            "age": age,
            "score": pl.Series([None if v < -1.2 else v for v in score], dtype=pl.Float64),
            "sex": rng.choice(["F", "M"], n),
            "plan": pl.Series([None if v == "-" else v for v in rng.choice(["a", "b", "-"], n)], dtype=pl.String),
            "unit": np.full(n, 0.5),
        }
    )


def _release(real: pl.DataFrame, n: int, seed: int, copies: int) -> pl.DataFrame:
    """``n`` fresh records (``unit`` not always the real constant, a null now and then), the
    last ``copies`` of them exact copies of real records."""
    fresh = _records(n - copies, seed)
    rng = np.random.default_rng(seed + 7)
    unit = rng.choice([0.5, 0.5, 0.25], fresh.height)
    fresh = fresh.with_columns(pl.Series("unit", [None if i % 17 == 0 else u for i, u in enumerate(unit)]))
    take = np.sort(rng.choice(real.height, copies, replace=False))
    return pl.concat([fresh, real[take]])


def _numbers(res) -> dict:
    keep = ("n_hit", "share_hit", "share_hit_at_size", "chance_share_hit", "size_compared")
    return {
        "value": res.value,
        "raw": res.raw,
        "ci": res.ci,
        "baseline": res.baseline,
        "baseline_ci": res.baseline_ci,
        "excess": res.excess,
        "excess_ci": res.excess_ci,
        **{k: res.details.get(k) for k in keep},
    }


@pytest.mark.parametrize(
    ("n_real", "n_syn", "n_hold", "sample_real", "copies"),
    [
        (900, 900, 800, None, 450),
        (900, 1300, 800, None, 25),
        (1200, 700, 800, None, 350),
        (1000, 1000, 800, 300, 25),
        (700, 900, 1100, None, 300),  # the baseline's holdout sample cut again to the real size
    ],
)
def test_sharded_hitting_rate_equals_the_local_metric(tmp_path, client, n_real, n_syn, n_hold, sample_real, copies):
    real = _records(n_real, 1)
    synth = _release(real, n_syn, 2, copies=copies)
    holdout = _records(n_hold, 3)
    folders = {
        r: str(write_folder(f, tmp_path / r, files=3, row_group=150))
        for r, f in (("real", real), ("synthetic", synth), ("holdout", holdout))
    }
    opts = RunOptions(threads=1, sample_real=sample_real)
    for beyond in (False, True):
        params = {"hitting_rate": {"beyond_chance": beyond}}
        local = privgate.evaluate(
            real, synth, ["hitting_rate"], holdout=holdout, schema=SCHEMA, params=params, baseline=True, options=opts
        ).results["hitting_rate"]
        remote = evaluate_sharded(
            folders["real"],
            folders["synthetic"],
            ["hitting_rate"],
            holdout=folders["holdout"],
            executor=client,
            schema=SCHEMA,
            params=params,
            baseline=True,
            options=opts,
        )
        assert remote.errors == {}
        got, want = _numbers(remote.results["hitting_rate"]), _numbers(local)
        assert {k: (v, want[k]) for k, v in got.items() if not close(v, want[k])} == {}, (beyond, got)
        np.testing.assert_array_equal(remote.results["hitting_rate"].per_record, local.per_record)
        searches = remote.results["hitting_rate"].details["neighbour_search"]["searches"]
        methods = {v["method"].split(": ", 1)[1].split(" ")[1] for v in searches.values()}
        assert methods == ({"target"} if sample_real else {"query"})  # a sample is one block, else pairs
        assert 0 < want["raw"] < 1 and want["n_hit"] >= 25  # hits and misses, the copies among the hits
        if beyond and copies > 300:  # hits beyond chance, with an interval
            assert want["value"] > 0.1 and want["ci"][0] < want["value"] < want["ci"][1]


def test_hitting_rate_by_hand(tmp_path, client):
    """Real ages 0, 30, 60 (h = 2) with a constant unit 1 and a sex: release (2, 1, F) hits
    age 0 (exactly h away, inclusive), (33, 1, F) hits nothing (3 > h), (60, 1, M) does not hit
    the female record of age 60 (a category differs), (60, 2, F) does not (the constant column
    differs), and a null age hits only the real null age."""
    real = pl.DataFrame(
        {
            "age": [0.0, 30.0, 60.0, None],
            "unit": [1.0, 1.0, 1.0, 1.0],
            "sex": ["F", "F", "F", "M"],
        }
    )
    syn = pl.DataFrame(
        {
            "age": [2.0, 33.0, 60.0, 60.0, None],
            "unit": [1.0, 1.0, 1.0, 2.0, 1.0],
            "sex": ["F", "F", "M", "F", "M"],
        }
    )
    schema = {"age": "numeric", "unit": "numeric", "sex": "categorical"}
    res = m.hitting_rate(privgate.EvaluationContext(real, syn, schema=schema))
    assert res.details["n_hit"] == 2 and res.value == pytest.approx(0.5)
    assert res.per_record.tolist() == [1.0, 0.0, 0.0, 1.0]
    folders = {r: str(write_folder(f, tmp_path / r, files=2, row_group=1)) for r, f in (("real", real), ("syn", syn))}
    remote = evaluate_sharded(folders["real"], folders["syn"], ["hitting_rate"], executor=client, schema=schema)
    assert remote.results["hitting_rate"].per_record.tolist() == [1.0, 0.0, 0.0, 1.0]
    # no options given: privgate's defaults, as privgate.evaluate records them (sample "auto")
    local = privgate.evaluate(real, syn, metrics=["hitting_rate"], schema=schema)
    assert remote.params["options"]["sample"] == local.params["options"]["sample"] == "auto"
    assert remote.params["options"]["exact"] == local.params["options"]["exact"] is False
