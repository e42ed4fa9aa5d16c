"""Numeric grouping and labels as synthpop/classInt/R compute them, checked by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.disclosure import disclosure
from privgate.disclosure.grouping import class_breaks, cut_codes, make_grouping, r_quantile7, r_seq_by
from privgate.disclosure.labels import cut_labels, r_double_label


@pytest.mark.parametrize(
    "x, label",
    [
        (57.0, "57"),
        (23.5, "23.5"),
        (1e5, "1e+05"),
        (123456.0, "123456"),
        (0.1 + 0.2, "0.3"),
        (1 / 3, "0.333333333333333"),
        (1e-4, "1e-04"),
        (0.00012, "0.00012"),
        (-8.0, "-8"),
        (100000.5, "100000.5"),
        (1e15, "1e+15"),
        (10000.0, "10000"),
        (0.0, "0"),
    ],
)
def test_r_as_character(x, label):
    # R 4.2: as.character(x) — 15 significant digits, fixed unless scientific is narrower
    assert r_double_label(x) == label


def test_r_quantile_type7():
    # R: quantile(1:10, c(0, .33, .5, 1)) = 1, 3.97, 5.5, 10
    got = r_quantile7(np.arange(1, 11, dtype=float), np.array([0, 0.33, 0.5, 1]))
    assert got.tolist() == pytest.approx([1.0, 3.97, 5.5, 10.0], rel=1e-15)
    assert r_seq_by(3).tolist() == [0.0, 1 / 3, 2 / 3, 1.0]


def test_quantile_breaks_pooled():
    # pooled 1..10 twice (20 values), n = 3: index 1 + 19/3 = 7.33 -> sorted[7] = sorted[8] = 4;
    # 1 + 38/3 = 13.67 -> sorted[13] = sorted[14] = 7 -> breaks 1, 4, 7, 10
    x = np.arange(1, 11, dtype=float)
    g = make_grouping(x, x, 3, [])
    assert g.breaks.tolist() == [1.0, 4.0, 7.0, 10.0]
    assert g.levels == ["[1,4)", "[4,7)", "[7,10]"]
    assert g.style == "quantile"


def test_unique_style_when_groups_reach_distinct_values():
    # distinct {1, 2, 4}, n = 3 (or more): midpoints 1.5, 3; mean gap 1.5 -> ends 0.25, 4.75
    for n in (3, 5):
        b = class_breaks(np.array([1.0, 2.0, 4.0, 4.0]), n)
        assert b.tolist() == [0.25, 1.5, 3.0, 4.75]
    assert cut_labels(np.array([0.25, 1.5, 3.0, 4.75])) == ["[0.25,1.5)", "[1.5,3)", "[3,4.75]"]


def test_equal_fallback_when_fewer_than_3_levels():
    # 17 zeros + 1, 2, 3 with n = 3: quantile breaks collapse to 0, 3 (one level) ->
    # equal: seq(0, 3, length.out = 4)
    x = np.array([0.0] * 17 + [1.0, 2.0, 3.0])
    g = make_grouping(x[:10], x[10:], 3, [])
    assert g.style == "equal"
    assert g.breaks.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert g.levels == ["[0,1)", "[1,2)", "[2,3]"]


def test_cont_na_own_level_and_left_out_of_breaks():
    x = np.array([-8.0, 1.0, 2.0, 3.0, 4.0, np.nan])
    g = make_grouping(x, x, 2, [-8.0])
    # pooled non-missing 1,1,2,2,3,3,4,4: median index 4.5 -> 2.5
    assert g.breaks.tolist() == [1.0, 2.5, 4.0]
    assert g.levels == ["[1,2.5)", "[2.5,4]", "-8"]  # 3 levels with the cont_na level: no fallback


def test_cut_is_left_closed_last_interval_closed():
    b = np.array([1.0, 4.0, 7.0, 10.0])
    assert cut_codes(np.array([1.0, 3.999, 4.0, 7.0, 10.0, 11.0, np.nan]), b).tolist() == [0, 0, 1, 2, 2, -1, -1]


def test_labels_gain_digits_until_distinct():
    # %.8g would print both inner breaks as 1; R raises digits to 10
    b = np.array([0.0, 1.000000001, 1.000000002, 5.0])
    assert cut_labels(b) == ["[0,1.000000001)", "[1.000000001,1.000000002)", "[1.000000002,5]"]


def test_breaks_pool_all_synthetic_sets():
    # real 1..4, syn1 1..4, syn2 101..104; n = 3 over the 12 pooled values
    # sorted 1,1,2,2,3,3,4,4,101,102,103,104:
    #   p = 1/3: index 1 + 11/3 = 4.67 -> 2 + (2/3)(3 - 2) = 2.6666667
    #   p = 2/3: index 1 + 22/3 = 8.33 -> 4 + (1/3)(101 - 4) = 36.333333
    real = pl.DataFrame({"K": ["a"] * 4, "V": [1.0, 2.0, 3.0, 4.0]})
    s1 = real.clone()
    s2 = pl.DataFrame({"K": ["a"] * 4, "V": [101.0, 102.0, 103.0, 104.0]})
    r = disclosure(real, [s1, s2], ["K"], "V", ngroups_target=3)
    orig = r.records.filter(pl.col("source") == "orig")["target"].to_list()
    assert orig == ["[1,2.6666667)", "[1,2.6666667)", "[2.6666667,36.333333)", "[2.6666667,36.333333)"]
    # with only syn1 the 8 pooled values give breaks 1, 2, 3, 4
    r1 = disclosure(real, s1, ["K"], "V", ngroups_target=3)
    assert r1.records.filter(pl.col("source") == "orig")["target"].to_list() == ["[1,2)", "[2,3)", "[3,4]", "[3,4]"]


def test_two_groups_always_fall_back_to_equal_width():
    # n = 2 gives at most 2 levels (< 3) so synthpop regroups with equal widths:
    # seq(1, 104, length.out = 3) = 1, 52.5, 104
    real = pl.DataFrame({"K": ["a"] * 4, "V": [1.0, 2.0, 3.0, 4.0]})
    s2 = pl.DataFrame({"K": ["a"] * 4, "V": [101.0, 102.0, 103.0, 104.0]})
    r = disclosure(real, [real, s2], ["K"], "V", ngroups_target=2)
    assert r.groupings["V"]["style"] == "equal"
    assert set(r.records["target"].to_list()) == {"[1,52.5)", "[52.5,104]"}


def test_ngroups_keys_apply_in_data_order():
    # synthpop: ngroups_keys[i] belongs to the i-th key in the real data's column order
    real = pl.DataFrame({"age": [20.0, 30.0, 40.0, 50.0, 60.0, 70.0], "dep": [1.0, 2, 3, 1, 2, 3], "T": list("xyxyxy")})
    with pytest.warns(UserWarning, match="data order"):
        r = disclosure(real, real, ["dep", "age"], "T", ngroups_keys=[3, 0])
    keys = r.records.filter(pl.col("source") == "orig")["keys"].to_list()
    assert keys[0].startswith("[20,")  # age grouped, dep not
    assert keys[0].endswith(" | 1")


def test_ungrouped_numbers_are_levels_with_r_labels():
    real = pl.DataFrame({"K": [1.0, 1e5, 23.5], "T": [0.1 + 0.2, 2.0, 2.0]})
    r = disclosure(real, real, ["K"], "T")
    orig = r.records.filter(pl.col("source") == "orig")
    assert orig["keys"].to_list() == ["1", "1e+05", "23.5"]
    assert orig["target"].to_list() == ["0.3", "2", "2"]


def test_numeric_vs_text_column_compared_as_text():
    # synorig.compare: a numeric column against a factor becomes a factor (R labels)
    real = pl.DataFrame({"K": [1.0, 2.0], "T": ["x", "y"]})
    syn = pl.DataFrame({"K": ["1", "2"], "T": ["x", "y"]})
    r = disclosure(real, syn, ["K"], "T")
    assert float(r.ident["repU"][0]) == 100.0


def test_grouped_key_with_cont_na_level():
    # pooled non-missing 1..6 twice (12 values; -8 left out): p = 1/3 -> index 4.67 ->
    # 2 + (2/3)(3 - 2) = 2.6666667; p = 2/3 -> index 8.33 -> 4 + (1/3)(5 - 4) = 4.3333333
    real = pl.DataFrame({"K": [-8.0, 1, 2, 3, 4, 5, 6], "T": list("xyxyxyx")})
    r = disclosure(real, real, ["K"], "T", ngroups_keys=[3], cont_na={"K": -8})
    keys = r.records.filter(pl.col("source") == "orig")["keys"].to_list()
    assert keys == [
        "-8",
        "[1,2.6666667)",
        "[1,2.6666667)",
        "[2.6666667,4.3333333)",
        "[2.6666667,4.3333333)",
        "[4.3333333,6]",
        "[4.3333333,6]",
    ]
    # the -8 record is alone on its key level: unique in the original
    assert float(r.ident["UiO"][0]) == pytest.approx(100 / 7)
