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
    affine_map_of,
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


def test_bulk_and_tails_by_hand():
    """The bulk off the scale (most values outside the range, a spread squeezed into a corner) is
    refused; far tails alone (values beyond one real range, a spread they inflate) are not."""
    ref = np.arange(11.0)  # range 0..10, std 3.16
    assert scale_check(ref + 7.0, ref).bulk_off  # 6 of 11 outside the widened range
    assert scale_check(ref / 316.2, ref).bulk_off  # standard deviation 1/316 of the real one's
    tails = scale_check(np.r_[ref, 23.0, 25.0, 30.0], ref)  # 3 values beyond one real range
    assert tails.off and not tails.bulk_off
    inflated = scale_check(np.r_[np.tile(ref, 10), 1e5, 2e5, 3e5], ref)  # std ~ 20,000 × the real one's
    assert inflated.spread_ratio > 100 and inflated.off and not inflated.bulk_off


def test_a_collapsing_line_is_no_map():
    """A slope near 0 sends every release value onto one reference value: the pairs anchored on a
    zero-inflated column's 0 all lie on it, but an invertible map joins distinct values to
    distinct ones, so it is no map; the same pairs with three distinct reference values are one."""
    rng = np.random.default_rng(0)
    s = rng.uniform(1.0, 100.0, 60)
    tol = 1e-7 * 101.0
    assert affine_map_of(s, np.zeros(60), tol, 60, lambda a, b: True, rng) is None
    # ... nor with a few chance pairs elsewhere on the line (three distinct reference values): the
    # pairs beyond its most common reference value are too few to be evidence
    big, ref = np.r_[s, 1e7, 2e7], np.r_[np.zeros(60), 1.0, 2.0]  # 1e-7·v: within tol of 0 for v ≤ 100
    assert affine_map_of(big, ref, tol, 62, lambda a, b: True, np.random.default_rng(2)) is None
    m = affine_map_of(s, 1000.0 * s + 7.0, tol, 60, lambda a, b: True, np.random.default_rng(1))
    assert m is not None and m.a == pytest.approx(1000.0) and m.b == pytest.approx(7.0, abs=1e-6)


def test_a_column_off_the_scale_in_its_tails_is_left_out_of_the_view():
    """An honest release whose x reaches far beyond the real range on 5 % of its records (a
    generator sampling a published domain wider than the training range): x is left out of the
    view, and each label-free metric is the plain metric on the frames without x — by hand."""
    real, hold, honest = _tiny(seed=0), _tiny(seed=1), _tiny(seed=9)
    far = np.zeros(honest.height)
    far[::20] = 1000.0  # 10 of 200 values about 10 real ranges beyond the range
    release = honest.with_columns((pl.col("x") + pl.Series(far)).alias("x"))
    ctx = _ctx(real, release, holdout=hold)
    corr = correspondence(ctx)
    assert corr.left_out == ("x",) and not corr.identity and corr.numeric_maps == {}
    assert view_status(ctx)["columns_left_out"] == 1 and not view_status(ctx)["foreign_scale"]
    names = ["label_free_copies", "label_free_authenticity", "label_free_memorisation"]
    got = privgate.evaluate(real, release, names, holdout=hold).results
    plain = privgate.evaluate(
        real.drop("x"), release.drop("x"), ["common_rows", "authenticity", "memorisation"], holdout=hold.drop("x")
    ).results
    for lf, pm in zip(names, ["common_rows", "authenticity", "memorisation"]):
        assert got[lf].value == pytest.approx(plain[pm].value, abs=1e-12), lf
        assert got[lf].details["label_free"]["left_out_columns"] == [0]


def test_a_minority_copied_and_scaled_is_mapped_back_record_by_record():
    """A release of other people with 10 % of it copies of real records whose x and y were scaled
    ×1000 (a whole-column map cannot explain a minority: the honest 90 % keep the real scale).
    Plain common_rows sees no copy; the far records' own maps bring them back (exact copies
    again) and label_free_copies counts them; nothing is left out."""
    real, hold, honest = _wide(seed=0), _wide(seed=1), _wide(seed=9)
    copies = real.head(20).with_columns(pl.col("x") * 1000.0, (pl.col("y") * 1000.0 + 5.0))
    release = pl.concat([honest.head(180), copies])
    out = privgate.evaluate(real, release, ["common_rows", "label_free_copies"], holdout=hold).results
    assert out["common_rows"].value == 0.0
    assert out["label_free_copies"].value == pytest.approx(20 / 200)
    lf = out["label_free_copies"].details["label_free"]
    assert lf["left_out_columns"] == [] and lf["numeric_maps"] == {}
    assert lf["far_records"]["far_records"] == 20 and lf["far_records"]["mapped_columns"] == [0, 1]


def test_far_records_are_anchored_on_a_stride_and_all_mapped(monkeypatch):
    """With at most 12 far records anchored (every 2nd of 24), the maps their 12 anchors support
    are applied to all 24: every copy counts."""
    import privgate.tail_maps as tail_maps

    monkeypatch.setattr(tail_maps, "MAP_ANCHOR_ROWS", 12)
    real, hold, honest = _wide(seed=0), _wide(seed=1), _wide(seed=9)
    copies = real.head(24).with_columns(pl.col("x") * 1000.0)
    release = pl.concat([honest.head(176), copies])
    corr = correspondence(_ctx(real, release, holdout=hold))
    assert corr.tail_maps is not None and corr.tail_maps.rows.size == 24
    assert corr.tail_maps.maps["x"].anchored == 12
    out = privgate.evaluate(real, release, ["label_free_copies"], holdout=hold).results
    assert out["label_free_copies"].value == pytest.approx(24 / 200)


def _wide(n: int = 200, seed: int = 0) -> pl.DataFrame:
    """Four numerics and two categorical columns: records a minority's own anchors can tell apart."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "x": rng.normal(50.0, 10.0, n).round(3),
            "y": rng.lognormal(3.0, 1.0, n).round(2),
            "z": rng.uniform(0.0, 1.0, n).round(4),
            "w": rng.gamma(2.0, 3.0, n).round(3),
            "c": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "d": rng.choice(["p", "q", "r", "s"], n),
        }
    )


def test_honest_far_records_get_no_map_of_their_own():
    """Far values drawn at random (an honest generator's wide domain) lie on no line with their
    anchors: no far-record map, and the column is left out."""
    real, hold, honest = _tiny(seed=0), _tiny(seed=1), _tiny(seed=9)
    far = np.zeros(honest.height)
    far[::10] = np.random.default_rng(4).uniform(500.0, 5000.0, 20)
    corr = correspondence(_ctx(real, honest.with_columns(pl.col("x") + pl.Series(far)), holdout=hold))
    assert corr.tail_maps is None and corr.left_out == ("x",)


def test_tails_alone_are_not_searched_for_a_whole_column_map():
    """A column off the scale only in its tails is not suspect (a monotone map of the whole
    column would bend the honest majority to explain a minority); its bulk off is."""
    ref = np.arange(11.0)
    assert not suspect(np.r_[np.tile(ref, 10), 1e5, 2e5, 3e5], ref)
    assert suspect(ref * 1000.0, ref)


def test_nothing_left_to_compare_is_refused():
    """Every column off the scale in its tails: nothing is left to compare, refused by name."""
    real = _tiny().select("x", "y")
    release = _tiny(seed=9).select("x", "y")
    far = np.zeros(release.height)
    far[::20] = 1e6
    release = release.with_columns(pl.col("x") + pl.Series(far), pl.col("y") + pl.Series(far))
    with pytest.raises(ForeignScaleError, match="only 0 of the 200 real records are told apart by the other 0"):
        correspondence(_ctx(real, release))


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


def test_a_fired_rule_says_how_many_far_records_were_mapped_back():
    """Honest records with 5 % of the release real copies ×1000 in every numeric column: the fired
    label-free rules name the far records mapped back (a count), never a value."""
    from privgate.data import load_example
    from privgate.gates import default_gate_config, run_gate

    full = load_example()
    real, holdout = full.head(600), full.tail(600)
    honest = load_example("adult_holdout").head(570)
    release = pl.concat([honest, transformed_copy(real, "scaled").head(30)], how="vertical_relaxed")
    out = run_gate(default_gate_config(), real, release, holdout, release_id="r", record=False)
    fired = [c for c in out.checks if c.metric.startswith("label_free") and c.verdict in ("warn", "block")]
    assert fired and all("record(s) far beyond the real range mapped back" in c.message for c in fired)


def test_a_value_ranked_among_other_values_by_counts():
    """The mid-rank from counts (below, equal) over the frame's size, for a value from elsewhere:
    a frame's own values get exactly ``_ranks`` (ties averaged, a null 0.5), and 2.5 among
    {1, 2, 2, 3, 5, null} has 3 below and none equal: (3 + 0.5 − 0.5) / 6."""
    from privgate.numeric_maps import _ranks
    from privgate.tail_maps import _reference_ranks

    ref = pl.Series([3.0, 1.0, None, 2.0, 2.0, 5.0])
    assert np.array_equal(_reference_ranks(ref, ref), _ranks(ref))
    assert _reference_ranks(ref, ref).tolist() == pytest.approx([3.5 / 6, 0.5 / 6, 0.5, 2.0 / 6, 2.0 / 6, 4.5 / 6])
    assert _reference_ranks(pl.Series([2.5, None]), ref).tolist() == pytest.approx([3 / 6, 0.5])
