"""The scale-free part of the label-free view: numeric maps learnt from the records, checked by
hand on tiny data, and the foreign-scale refusal."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.baselines import NUMERIC_DISGUISES, transformed_copy
from privgate.context import EvaluationContext
from privgate.metrics.label_free import correspondence, view_status
from privgate.numeric_maps import (
    ForeignScaleError,
    NumericMap,
    _marginal_gap,
    _snap,
    apply_numeric_maps,
    ks_distance,
    scale_check,
    suspect,
)


def _ctx(real, release, holdout=None):
    return EvaluationContext(real, release, holdout=holdout, _shared={"real_nn": {}, "entropy": {}})


def _tiny(n: int = 200, seed: int = 0) -> pl.DataFrame:
    """Two numerics that identify records (no lattice) and one categorical column."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "x": rng.normal(50.0, 10.0, n).round(3),
            "y": rng.lognormal(3.0, 1.0, n).round(2),
            "c": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
        }
    )


def test_scale_check_by_hand():
    # 0..10: range 10, sd 3.162, so the width is max(10, 4 sd) = 12.65: beyond is < -12.65 or > 22.65
    ref = np.arange(11, dtype=float)
    assert scale_check(ref, ref).off is False
    # three values beyond 22.65 (3 ≥ FOREIGN_MIN and ≥ 0.1 % of 14): off; two are not enough
    assert scale_check(np.r_[ref, 23.0, 25.0, 30.0], ref).beyond_range == 3
    assert scale_check(np.r_[ref, 22.0, 25.0, 30.0], ref).beyond_range == 0
    # moved by 7 (7..17): 6 of 11 values above 10 + 1 (the range widened by 10 %): off (≥ half)
    assert scale_check(ref + 7.0, ref).outside_share == pytest.approx(6 / 11) and scale_check(ref + 7.0, ref).off
    # moved by 3 (3..13): 12 and 13 outside, on the scale; a uniform draw inside the range is on it too
    assert scale_check(ref + 3.0, ref).outside_share == pytest.approx(2 / 11) and not scale_check(ref + 3.0, ref).off
    assert not scale_check(np.random.default_rng(0).uniform(0, 10, 500), ref).off
    # squeezed into a corner of the range: sd 0.01 against 3.16 (ratio 1/316 < 1/100): off
    assert scale_check(ref / 316.2, ref).spread_ratio == pytest.approx(1 / 316.2) and scale_check(ref / 316.2, ref).off


def test_ks_and_suspect_by_hand():
    ref = np.arange(10, dtype=float)
    assert ks_distance(ref, ref) == 0.0
    assert ks_distance(ref + 5.0, ref) == pytest.approx(0.5)  # half the mass moved past
    assert ks_distance(ref + 100.0, ref) == 1.0
    assert suspect(np.log1p(ref), ref) and not scale_check(np.log1p(ref), ref).off
    assert not suspect(ref + 1.0, ref)


def test_snap_and_gap_by_hand():
    ref = np.array([1.0, 2.0, 4.0])
    out = _snap(np.array([1.0 + 1e-12, 2.5, 3.9999999999, np.nan]), ref, 1e-9)
    assert out[0] == 1.0 and out[1] == 2.5 and out[2] == 4.0 and np.isnan(out[3])
    assert _marginal_gap(ref + 2.0, ref) == pytest.approx(2.0)
    assert _marginal_gap(ref, ref) == 0.0


def test_an_affine_map_is_learnt_exactly_and_undone():
    real = _tiny()
    release = real.with_columns((pl.col("x") * -1000.0 + 7.0).alias("x"))
    corr = correspondence(_ctx(real, release))
    m = corr.numeric_maps["x"]
    assert m.kind == "affine" and m.a == pytest.approx(-0.001) and m.b == pytest.approx(0.007)
    assert "y" not in corr.numeric_maps and corr.remapped == ()
    # mapped and snapped: the release is the real data again, value for value
    back = apply_numeric_maps(release, real, corr.numeric_maps)
    assert back["x"].to_list() == real["x"].to_list()
    assert corr.describe(_ctx(real, release).schema)["numeric_maps"]["0"]["decreasing"] is True


def test_a_monotone_map_is_learnt_where_no_affine_one_fits():
    real = _tiny()
    release = real.with_columns(pl.col("y").log().alias("y"))  # inside the real range, far from its marginal
    corr = correspondence(_ctx(real, release))
    assert corr.numeric_maps["y"].kind == "monotone"
    back = apply_numeric_maps(release, real, corr.numeric_maps)
    # a copy of the whole reference: the quantile map gives every value back exactly
    assert back["y"].to_list() == real["y"].to_list()


def test_the_quantile_map_by_hand():
    ref = pl.DataFrame({"v": [10.0, 20.0, 30.0, 40.0]})
    rel = pl.DataFrame({"v": [4.0, 1.0, 3.0, 2.0]})
    # mid-ranks (r − 0.5)/4 = 0.875, 0.125, 0.625, 0.375 → reference positions 3, 0, 2, 1
    out = apply_numeric_maps(rel, ref, {"v": NumericMap("monotone")})
    assert out["v"].to_list() == [40.0, 10.0, 30.0, 20.0]
    out = apply_numeric_maps(rel, ref, {"v": NumericMap("monotone", decreasing=True)})
    assert out["v"].to_list() == [10.0, 40.0, 20.0, 30.0]


def test_a_release_on_the_real_scale_keeps_the_identity():
    real = _tiny()
    honest = _tiny(seed=9)
    corr = correspondence(_ctx(real, honest))
    assert corr.identity and corr.numeric_maps == {} and corr.records is None


def test_a_foreign_scale_no_map_explains_is_refused_by_name():
    """An honest release (other people) standardised and never brought back: no record supports a
    map, so the column is refused by name, and every label-free metric errors (a gate blocks)."""
    real = _tiny()
    honest = _tiny(seed=9)
    foreign = honest.with_columns(((pl.col("x") - 50.0) / 10.0).alias("x"))
    ctx = _ctx(real, foreign)
    with pytest.raises(ForeignScaleError, match="column 'x' of synthetic is not on the real data's scale") as e:
        correspondence(ctx)
    assert e.value.column == "x"
    assert view_status(ctx)["foreign_scale"] and view_status(ctx)["foreign_column_position"] == 0
    out = privgate.evaluate(real, foreign, ["label_free_copies"], on_error="record")
    assert "label_free_copies" not in out.results and "ForeignScaleError" in str(out.errors)


@pytest.mark.parametrize("how", NUMERIC_DISGUISES)
def test_every_numeric_disguise_of_a_copy_is_seen_as_a_copy(how):
    """A copy of the Adult sample under each numeric disguise: the plain metrics see few or no
    copies, the label-free ones most of the release (with a holdout)."""
    from privgate.data import load_example

    full = load_example()
    real, holdout = full.head(600), full.tail(600)
    release = transformed_copy(real, how, seed=3)
    ctx = _ctx(real, release, holdout)
    assert privgate.metrics.label_free_memorisation(ctx).ci[0] > 0.5, how
    assert view_status(ctx)["numeric_columns_mapped"] >= 1


def test_a_fired_label_free_rule_says_why_the_view_differs():
    """A blocked ×1000 copy with permuted labels: the label-free checks' messages give the view's
    counts (columns recoded, numeric columns mapped); a plain copy's messages say nothing of it."""
    from privgate.data import load_example
    from privgate.gates import default_gate_config, run_gate

    full = load_example()
    real, holdout = full.head(600), full.tail(600)
    out = run_gate(
        default_gate_config(),
        real,
        transformed_copy(real, "scaled", labels="permuted", seed=3),
        holdout,
        release_id="r",
        record=False,
    )
    fired = [c for c in out.checks if c.metric.startswith("label_free") and c.verdict == "block"]
    assert fired and all("numeric column(s) on another scale" in c.message for c in fired)
    assert all(
        "6 numeric column(s)" in c.message and "categorical column(s) with other labels" in c.message for c in fired
    )
    plain = run_gate(default_gate_config(), real, real, holdout, release_id="r", record=False)
    assert not any("differs from the real data" in c.message for c in plain.checks)
