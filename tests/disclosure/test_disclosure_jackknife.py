"""The grouped-jackknife replicates that disclosure_attribute (DiSCO) and disclosure_identity
(repU) keep for the holdout excess: each must be the measure recomputed from scratch on the data
without that group of real or synthetic records."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.context import EvaluationContext
from privgate.disclosure.metrics import disclosure_attribute, disclosure_identity
from privgate.evaluation import attach_baseline
from privgate.stats.metric_intervals import jackknife_labels, jackknife_sources

KW = dict(seed=4, keys=["k1", "k2"], sensitive=["s", "t"])


def _frame(rng, n: int) -> pl.DataFrame:
    # 8 × 5 key combinations for 60-70 records: many keys unique in one data set, some in both
    return pl.DataFrame(
        {
            "k1": rng.choice(list("abcdefgh"), n),
            "k2": rng.choice(list("vwxyz"), n),
            "s": rng.choice(list("PQ"), n, p=[0.8, 0.2]),
            "t": rng.choice(list("PQR"), n),
        }
    )


def _without_groups(ctx, role: str, n: int) -> list[pl.Series]:
    labels = jackknife_labels(ctx, role, n)
    return [pl.Series(labels != g) for g in range(int(labels.max()) + 1)]


@pytest.mark.parametrize("fn", [disclosure_attribute, disclosure_identity])
def test_replicates_are_the_measure_recomputed_without_each_group(fn):
    rng = np.random.default_rng(11)
    real, syn = _frame(rng, 64), _frame(rng, 70)
    ctx = EvaluationContext(real, syn, **KW)
    res = fn(ctx)
    jk = jackknife_sources(res)
    worst = max(res.per_attribute, key=lambda t: res.per_attribute[t])
    fresh = lambda r, s: fn(EvaluationContext(r, s, **KW)).per_attribute[worst]  # noqa: E731
    want_r = [fresh(real.filter(k), syn) for k in _without_groups(ctx, "real", 64)]
    want_s = [fresh(real, syn.filter(k)) for k in _without_groups(ctx, "synthetic", 70)]
    assert len(jk["real"]) == 8 and len(jk["synthetic"]) == 8
    assert jk["real"] == pytest.approx(want_r)
    assert jk["synthetic"] == pytest.approx(want_s)
    # the replicates vary (the check could not pass with constant replicates by accident)
    assert np.ptp(want_r) > 0 and np.ptp(want_s) > 0
    assert "grouped-jackknife replicates kept" in res.details["ci_method"]


def test_excess_interval_uses_the_jackknife_of_both_results():
    rng = np.random.default_rng(5)
    real, syn, hold = _frame(rng, 64), _frame(rng, 64), _frame(rng, 64)
    res = disclosure_attribute(EvaluationContext(real, syn, **KW))
    base = disclosure_attribute(EvaluationContext(real, hold, **KW))
    out = attach_baseline(res, base, seed=4)
    assert out.details["excess_ci_method"].startswith("grouped jackknife")
    assert out.excess_ci[0] <= out.value - base.value <= out.excess_ci[1]


@pytest.mark.parametrize(
    "options, reason",
    [
        ({"exclude_ov_denom_lim": True, "denom_lim": 2}, "exclusions active"),
        ({"not_targetlev": "P"}, "exclusions active"),
    ],
)
def test_no_replicates_when_the_tables_are_trimmed(options, reason):
    rng = np.random.default_rng(11)
    ctx = EvaluationContext(_frame(rng, 64), _frame(rng, 70), **KW)
    for fn in (disclosure_attribute, disclosure_identity):
        res = fn(ctx, targets=["t"], **options)
        assert jackknife_sources(res) == {}
        assert f"no grouped-jackknife replicates for the holdout excess ({reason})" in res.details["ci_method"]


def test_no_replicates_when_a_numeric_key_is_grouped():
    rng = np.random.default_rng(2)
    real = _frame(rng, 64).with_columns(pl.Series("k2", rng.normal(size=64)))
    syn = _frame(rng, 70).with_columns(pl.Series("k2", rng.normal(size=70)))
    res = disclosure_attribute(EvaluationContext(real, syn, **KW), ngroups_keys=[0, 4])
    assert jackknife_sources(res) == {}
    assert "numeric keys or target grouped" in res.details["ci_method"]
