"""Every measure and option of disclosure() on tiny data, computed by hand (derivations inline)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from privgate.disclosure import disclosure

# Base case: one key A, target T.
#   real (Nd = 8): a:x a:x a:y b:x b:x c:y d:x d:y
#   syn  (Ns = 6): a:x a:x b:x b:x c:x e:y
# original cells  d_tq: a{x2,y1} (d_.a=3), b{x2} (2), c{y1} (1), d{x1,y1} (2)
# synthetic cells s_tq: a{x2} (2), b{x2} (2), c{x1} (1), e{y1} (1)
REAL = pl.DataFrame({"A": list("aaabbcdd"), "T": list("xxyxxyxy")})
SYN = pl.DataFrame({"A": list("aabbce"), "T": list("xxxxxy")})


def one(frame: pl.DataFrame, col: str) -> float:
    assert frame.height == 1
    return float(frame[col][0])


def test_identity_measures():
    r = disclosure(REAL, SYN, ["A"], "T")
    # UiO: keys with d_.q = 1 -> {c}: 1 record of 8
    assert one(r.ident, "UiO") == pytest.approx(100 * 1 / 8)
    # UiS: keys with s_.q = 1 -> {c, e}: 2 of Ns = 6 (synthpop divides by Ns)
    assert one(r.ident, "UiS") == pytest.approx(100 * 2 / 6)
    # UiOiS: original uniques whose key is in the synthetic data -> {c}
    assert one(r.ident, "UiOiS") == pytest.approx(12.5)
    # repU: unique in both -> {c}
    assert one(r.ident, "repU") == pytest.approx(12.5)


def test_attribute_measures():
    r = disclosure(REAL, SYN, ["A"], "T")
    # Dorig: cells with pd = 1 -> b:x (2), c:y (1) = 3 of 8
    assert one(r.attrib, "Dorig") == pytest.approx(37.5)
    # Dsyn: synthetic cells with ps = 1 -> a:x 2, b:x 2, c:x 1, e:y 1 = 6 of 6
    assert one(r.attrib, "Dsyn") == pytest.approx(100.0)
    # iS: original records whose key is in the synthetic data -> a 3 + b 2 + c 1 = 6
    assert one(r.attrib, "iS") == pytest.approx(75.0)
    # DiS: keys with a single synthetic target level: a, b, c -> all their original records (6)
    assert one(r.attrib, "DiS") == pytest.approx(75.0)
    # DiSCO: d where ps = 1 -> a:x (2) + b:x (2); c:x has d = 0 (c is y in the original)
    assert one(r.attrib, "DiSCO") == pytest.approx(50.0)
    # DiSDiO: DiSCO cells also with pd = 1 -> b:x (2)
    assert one(r.attrib, "DiSDiO") == pytest.approx(25.0)
    # max / mean of the non-zero DiSCO cells (2, 2)
    assert one(r.attrib, "max_denom") == 2 and one(r.attrib, "mean_denom") == 2


def test_cap_measures():
    r = disclosure(REAL, SYN, ["A"], "T")
    # baseCAPd: target totals x 5, y 3 -> (5/8)^2 + (3/8)^2 = 34/64
    assert one(r.allcaps, "baseCAPd") == pytest.approx(100 * 34 / 64)
    # CAPd: sum pd*d = a (2/3*2 + 1/3*1) + b 2 + c 1 + d (1/2 + 1/2) = 17/3 -> /8
    assert one(r.allcaps, "CAPd") == pytest.approx(100 * 17 / 24)
    # CAPs: sum ps*s = 2 + 2 + 1 + 1 = 6 of 6
    assert one(r.allcaps, "CAPs") == pytest.approx(100.0)
    # DCAP: sum ps*d = a:x 1*2 + b:x 1*2 (c:y has ps 0, d not in syn) = 4 of 8
    assert one(r.allcaps, "DCAP") == pytest.approx(50.0)
    # TCAP: DiSCO 4 / (d_.q of keys in syn: 3 + 2 + 1 = 6)
    assert r.tcap_denom == [6]
    assert one(r.allcaps, "TCAP") == pytest.approx(100 * 4 / 6)


def test_cells_and_records():
    r = disclosure(REAL, SYN, ["A"], "T")
    cells = {(row["target_level"], row["key"]): row for row in r.cells.iter_rows(named=True)}
    assert cells[("x", "a")]["d_pre"] == 2 and cells[("x", "a")]["s_pre"] == 2
    assert cells[("x", "a")]["pd_pre"] == pytest.approx(2 / 3) and cells[("x", "a")]["ps_pre"] == 1
    assert cells[("y", "e")]["d_pre"] == 0 and cells[("y", "e")]["DiSCO"] == 0
    assert r.records.filter(pl.col("source") == "orig")["keys"].to_list() == list("aaabbcdd")
    assert r.target_levels == ["x", "y"]


def test_check_1way():
    # DiSCO by target level: x 4, y 0 -> x has 100 % of the disclosive records
    r = disclosure(REAL, SYN, ["A"], "T")
    assert r.check1 == "" and r.check_1way == [None]  # 4 is not > 50 (default)
    r = disclosure(REAL, SYN, ["A"], "T", thresh_1way=(3, 90))
    assert r.check1 == "Check  T  level  x"
    row = r.check_1way[0].row(0, named=True)
    assert row == {
        "Level": "x",
        "All": 8,
        "PctLevelAll": 62.5,
        "totalDisclosive": 4,
        "nLevelDis": 4,
        "PctLevelDis": 100.0,
    }
    r = disclosure(REAL, SYN, ["A"], "T", thresh_1way=(4, 90))  # strict >
    assert r.check1 == ""


def test_check_2way():
    # DiSCO cells > 1: a:x (2), b:x (2) -> pairs "x|a" (row 1), "x|b" (row 2), npairs 2 each;
    # original records: a 3 (x 2) -> 66.7 %, b 2 (x 2) -> 100 %
    r = disclosure(REAL, SYN, ["A"], "T", thresh_2way=(1, 50))
    got = r.check_2way[0]
    assert got["target_key_levs"].to_list() == ["x|a", "x|b"]
    assert got["row"].to_list() == [1, 2]
    assert got["npairs"].to_list() == [2, 2]
    assert got["key_target_total"].to_list() == [2, 2] and got["key_total"].to_list() == [3, 2]
    assert got["PctTargetKeyLevel"].to_list() == pytest.approx([200 / 3, 100.0])
    assert r.check2 == "2 pairs need checks"
    r = disclosure(REAL, SYN, ["A"], "T", thresh_2way=(1, 80))
    assert r.check_2way[0]["target_key_levs"].to_list() == ["x|b"]
    assert r.check2 == "1 pairs need checks"
    r = disclosure(REAL, SYN, ["A"], "T")  # default (4, 80): no cell > 4
    assert r.check2 == "" and r.check_2way == [None]


def test_check_2way_orders_by_npairs_then_stack_position():
    # two keys; DiSCO cells > 0 of the single-record keys give pairs per key
    real = pl.DataFrame({"K1": ["p", "p", "q"], "K2": ["u", "v", "u"], "T": ["x", "x", "y"]})
    syn = real.clone()
    r = disclosure(real, syn, ["K1", "K2"], "T", thresh_2way=(0, 0))
    got = r.check_2way[0]
    # stacked: K1 pairs x|p (2), y|q (1) -> rows 1, 2; K2 pairs x|u (1), x|v (1), y|u (1) -> 3..5
    assert got["target_key_levs"].to_list() == ["x|p", "y|q", "x|u", "x|v", "y|u"]
    assert got["row"].to_list() == [1, 2, 3, 4, 5]
    assert got["key"].to_list() == ["K1", "K1", "K2", "K2", "K2"]


def test_not_targetlev_changes_identity_as_synthpop_does():
    # zero the y row in every table: d_.q becomes a 2, b 2, c 0, d 1; s_.q a 2, b 2, c 1, e 0
    r = disclosure(REAL, SYN, ["A"], "T", not_targetlev="y")
    assert one(r.ident, "UiO") == pytest.approx(12.5)  # {d}
    assert one(r.ident, "UiS") == pytest.approx(100 / 6)  # {c}
    assert one(r.ident, "UiOiS") == 0  # d is not in the synthetic data
    assert one(r.ident, "repU") == 0
    assert one(r.attrib, "Dorig") == pytest.approx(25.0)  # b:x only (c:y excluded)
    assert one(r.attrib, "DiSCO") == pytest.approx(50.0)
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    assert ex["original"]["excluded target"] == 3 and ex["original"]["remaining"] == 5
    assert ex["synthetic"]["excluded target"] == 1 and ex["synthetic"]["remaining"] == 5
    assert ex["Dorig"]["excluded target"] == 1  # c:y
    # baseCAPd is computed before exclusions
    assert one(r.allcaps, "baseCAPd") == pytest.approx(100 * 34 / 64)


def test_exclude_triples():
    r = disclosure(REAL, SYN, ["A"], "T", exclude_keys=["A"], exclude_keylevs=["b"], exclude_targetlevs=["x"])
    # b:x zeroed in all tables: DiSCO a:x 2 left
    assert one(r.attrib, "DiSCO") == pytest.approx(25.0)
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    assert ex["original"]["set to exclude"] == 2 and ex["synthetic"]["set to exclude"] == 2
    assert ex["DiSCO"]["set to exclude"] == 2 and ex["DiSCO"]["remaining"] == 2
    # TCAP denominator: a 3 + c 1 (b's original column now sums to 0)
    assert r.tcap_denom == [4]


def test_denom_lim():
    # without exclude_ov_denom_lim denom_lim has no effect
    assert disclosure(REAL, SYN, ["A"], "T", denom_lim=1).attrib.equals(disclosure(REAL, SYN, ["A"], "T").attrib)
    r = disclosure(REAL, SYN, ["A"], "T", denom_lim=1, exclude_ov_denom_lim=True)
    # every cell > 1 zeroed, table by table: original a:x, b:x; synthetic a:x, b:x
    # d_.q: a 1 (y), c 1, d 2 -> UiO {a, c} = 2/8; s_.q: c 1, e 1 -> repU {c} = 1/8
    assert one(r.ident, "UiO") == pytest.approx(25.0)
    assert one(r.ident, "repU") == pytest.approx(12.5)
    assert one(r.attrib, "DiSCO") == 0  # both DiSCO cells were 2 > 1
    assert one(r.attrib, "Dorig") == pytest.approx(12.5)  # b:x (2) over the limit, c:y kept
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    assert ex["original"]["over denom_lim"] == 4 and ex["synthetic"]["over denom_lim"] == 4
    assert math.isnan(one(r.attrib, "mean_denom"))
    assert one(r.attrib, "max_denom") == 0


def test_tcap_can_exceed_100_with_denom_lim():
    # key k: original x 1 (single) but synthetic k has s = 2 > denom_lim 1 -> zeroed in tab_kts,
    # so k leaves TCAP's denominator while its DiSCO cell (d = 1) stays in the numerator
    real = pl.DataFrame({"A": ["k", "j"], "T": ["x", "y"]})
    syn = pl.DataFrame({"A": ["k", "k", "j"], "T": ["x", "x", "y"]})
    r = disclosure(real, syn, ["A"], "T", denom_lim=1, exclude_ov_denom_lim=True)
    # numerator: DiSCO k:x 1 + j:y 1 = 2; denominator: d_.q with s_.q > 0 -> j only = 1
    assert r.tcap_denom == [1]
    assert one(r.allcaps, "TCAP") == pytest.approx(200.0)


# NA case: real A: a a NA NA b / T: x NA y y x ; syn A: a NA NA b b / T: x y y x NA
NA_REAL = pl.DataFrame({"A": ["a", "a", None, None, "b"], "T": ["x", None, "y", "y", "x"]})
NA_SYN = pl.DataFrame({"A": ["a", None, None, "b", "b"], "T": ["x", "y", "y", "x", None]})


def test_missing_is_a_level_by_default():
    # cells: orig a{x1, Missing1}, Missing{y2}, b{x1}; syn a{x1}, Missing{y2}, b{x1, Missing1}
    r = disclosure(NA_REAL, NA_SYN, ["A"], "T")
    assert one(r.ident, "UiO") == pytest.approx(20.0)  # b
    assert one(r.ident, "repU") == 0  # b has 2 synthetic records
    assert one(r.attrib, "DiSCO") == pytest.approx(60.0)  # a:x 1 + Missing:y 2
    assert "Missing" in r.target_levels


def test_usekeys_na_false():
    r = disclosure(NA_REAL, NA_SYN, ["A"], "T", usekeys_na=False)
    assert one(r.attrib, "DiSCO") == pytest.approx(20.0)  # Missing:y column zeroed
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    assert ex["original"]["missing in  keys"] == 2 and ex["synthetic"]["missing in  keys"] == 2
    assert ex["DiSCO"]["missing in  keys"] == 2


def test_usetarget_na_false():
    r = disclosure(NA_REAL, NA_SYN, ["A"], "T", usetarget_na=False)
    # Missing row zeroed: d_.a = 1, d_.b = 1; s_.a = 1, s_.b = 1 -> UiO = repU = {a, b} = 40 %
    assert one(r.ident, "UiO") == pytest.approx(40.0)
    assert one(r.ident, "repU") == pytest.approx(40.0)
    assert one(r.attrib, "DiSCO") == pytest.approx(60.0)  # decided before exclusions
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    assert ex["original"]["missing target"] == 1 and ex["synthetic"]["missing target"] == 1


def test_usetarget_na_false_keeps_synthetic_only_missing():
    # [DIFF] kept: the Missing row is only dropped when the original target has a missing value
    real = NA_REAL.with_columns(pl.col("T").fill_null("x"))
    r = disclosure(real, NA_SYN, ["A"], "T", usetarget_na=False)
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    assert ex["synthetic"]["missing target"] == 0


def test_usekeys_na_follows_the_callers_key_order():
    # [BUG] in synthpop: usekeysNA is permuted with the inverse permutation; privgate applies
    # usekeys_na[i] to keys[i] as given. Data order is (K1, K2, K3); keys given (K3, K1, K2).
    real = pl.DataFrame(
        {
            "K1": ["a", None, "b", "b"],
            "K2": ["u", "u", "v", "v"],
            "K3": ["p", "p", None, "q"],
            "T": ["x", "y", "x", "y"],
        }
    )
    syn = real.clone()
    r = disclosure(real, syn, ["K3", "K1", "K2"], "T", usekeys_na=[False, True, True])
    ex = {row["table"]: row for row in r.n_exclusions.iter_rows(named=True)}
    # only K3's missing level is excluded: record 3 (K3 missing) -> 1 original record
    assert ex["original"]["missing in  keys"] == 1
    assert r.keys == ["K1", "K2", "K3"]


def test_multiple_synthetic_sets_give_one_row_each():
    syn2 = pl.DataFrame({"A": list("aaaaaa"), "T": list("xxxxxx")})
    r = disclosure(REAL, [SYN, syn2], ["A"], "T")
    assert r.m == 2 and r.ident.height == 2 and r.attrib.height == 2
    assert r.ident["repU"].to_list() == pytest.approx([12.5, 0.0])
    # set 2: only key a, all x -> DiSCO = a:x 2 of 8
    assert r.attrib["DiSCO"].to_list() == pytest.approx([50.0, 25.0])
    assert r.n_exclusions.height == 16
