"""multi_disclosure on tiny data (hand-checked), its plot, and the registered gate metrics."""

from __future__ import annotations

import json

import polars as pl
import pytest

from privgate.catalogue import get_metric, metric_names
from privgate.disclosure import disclosure, multi_disclosure
from privgate.errors import ParameterError

# keys A; targets T (as in test_measures: DiSCO 50 %, Dorig 37.5 %) and U
REAL = pl.DataFrame({"A": list("aaabbcdd"), "T": list("xxyxxyxy"), "U": list("ppppqqqq")})
SYN = pl.DataFrame({"A": list("aabbce"), "T": list("xxxxxy"), "U": list("ppqqqq")})


def test_default_targets_and_table():
    res = multi_disclosure(REAL, SYN, ["A"])
    assert res.targets == ["T", "U"]  # every non-key column, in data order
    # U: orig a{p3}, b{p1,q1}, c{q1}, d{q2}; syn a{p2}, b{q2}, c{q1}, e{q1}
    # Dorig U: a 3 + c 1 + d 2 = 6 -> 75 %; DiSCO U: a:p 3 + b:q 1 + c:q 1 = 5 -> 62.5 %
    u = res.per_target["U"]
    assert float(u.attrib["Dorig"][0]) == pytest.approx(75.0)
    assert float(u.attrib["DiSCO"][0]) == pytest.approx(62.5)
    table = res.attrib_table
    # ordered by attrib.syn ascending: T (50) then U (62.5)
    assert table["target"].to_list() == ["T", "U"]
    assert table["row"].to_list() == ["1 T", "2 U"]
    assert table["attrib.orig"].to_list() == pytest.approx([37.5, 75.0])
    assert table["attrib.syn"].to_list() == pytest.approx([50.0, 62.5])
    assert res.ident_orig == pytest.approx([12.5, 12.5])
    assert res.ident_syn == pytest.approx([12.5, 12.5])


def test_flags_in_row_names_and_npairs_count():
    res = multi_disclosure(REAL, SYN, ["A"], ["T"], thresh_1way=(3, 90), thresh_2way=(1, 50))
    row = res.attrib_table.row(0, named=True)
    assert row["row"] == "1 T 1&2way checks"
    assert row["check1"] == "Check  T  level  x"
    assert row["check2"] == "2 pairs need checks"
    assert row["Npairs"] == 2  # [BUG] fixed: synthpop reports length(check2) = 1


def test_per_target_options_forms_agree_with_disclosure():
    by_list = multi_disclosure(
        REAL,
        SYN,
        ["A"],
        ["T", "U"],
        not_targetslev=["y", ""],
        exclude_keys=[[], ["A"]],
        exclude_keylevs=[[], ["b"]],
        exclude_targetlevs=[[], ["q"]],
    )
    by_dict = multi_disclosure(
        REAL,
        SYN,
        ["A"],
        ["T", "U"],
        not_targetslev={"T": "y"},
        exclude_keys={"U": ["A"]},
        exclude_keylevs={"U": ["b"]},
        exclude_targetlevs={"U": ["q"]},
    )
    single_t = disclosure(REAL, SYN, ["A"], "T", not_targetlev="y")
    single_u = disclosure(REAL, SYN, ["A"], "U", exclude_keys=["A"], exclude_keylevs=["b"], exclude_targetlevs=["q"])
    for res in (by_list, by_dict):
        assert res.per_target["T"].attrib.equals(single_t.attrib)
        assert res.per_target["U"].attrib.equals(single_u.attrib)
        # [BUG] fixed: the exclusions reach the target (synthpop's data.frame method drops them)
        assert float(res.per_target["U"].attrib["DiSCO"][0]) == pytest.approx(50.0)


def test_multi_accepts_m_sets_and_means_over_them():
    syn2 = pl.DataFrame({"A": list("aaaaaa"), "T": list("xxxxxx"), "U": list("pppppp")})
    res = multi_disclosure(REAL, [SYN, syn2], ["A"], ["T"])
    # T: DiSCO 50 and 25 -> mean 37.5; repU 12.5 and 0 -> mean 6.25 ([BUG] fixed: not set 1 only)
    assert res.attrib_table["attrib.syn"][0] == pytest.approx(37.5)
    assert res.ident_syn == pytest.approx([6.25])


def test_attrib_meas_dcap_and_ident_meas():
    res = multi_disclosure(REAL, SYN, ["A"], ["T"], attrib_meas="DCAP", ident_meas="UiOiS")
    single = disclosure(REAL, SYN, ["A"], "T")
    assert res.attrib_table["attrib.syn"][0] == pytest.approx(float(single.allcaps["DCAP"][0]))
    assert res.attrib_table["attrib.orig"][0] == pytest.approx(float(single.allcaps["CAPd"][0]))
    assert res.ident_syn == pytest.approx([float(single.ident["UiOiS"][0])])
    res = multi_disclosure(REAL, SYN, ["A"], ["T"], attrib_meas="DiSDiO")
    assert res.attrib_table["attrib.orig"][0] == pytest.approx(37.5)  # Dorig, not NA


def test_plot(tmp_path):
    res = multi_disclosure(REAL, SYN, ["A"])
    out = tmp_path / "multi.png"
    fig = res.plot(out)
    assert out.exists() and out.stat().st_size > 1000
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 T", "2 U"]


def test_registered_metrics():
    assert {"disclosure_identity", "disclosure_attribute"} <= set(metric_names("disclosure"))
    assert get_metric("disclosure_attribute").family == "disclosure"
    from privgate.metrics import disclosure_attribute, disclosure_identity

    ident = disclosure_identity(REAL, SYN, keys=["A"], targets=["T", "U"])
    assert ident.value == pytest.approx(0.125) and ident.raw == pytest.approx(12.5)
    attr = disclosure_attribute(REAL, SYN, keys=["A"], sensitive=["T", "U"])
    assert attr.value == pytest.approx(0.625)  # U's DiSCO 62.5 % is the largest
    assert attr.per_attribute == pytest.approx({"T": 0.5, "U": 0.625})
    assert attr.details["worst_target"] == "U"
    text = json.dumps(attr.to_dict())
    for level in ('"x"', '"p"', '"q"', "a | "):  # no level labels of real records
        assert level not in text
    # options reach multi_disclosure
    attr2 = disclosure_attribute(REAL, SYN, keys=["A"], targets=["T"], not_targetslev="y")
    assert attr2.value == pytest.approx(0.5)


def test_metric_results_carry_no_levels_or_break_points():
    # distinctive level labels and break points; both checks fire (their messages name levels)
    # and the numeric target is grouped, so a leak through check1/check2, the attribute table's
    # row labels, the cells/records or the grouping breaks would show up in the JSON
    from privgate.metrics import disclosure_attribute, disclosure_identity

    real = pl.DataFrame(
        {
            "A": ["keyzeta"] * 3 + ["keyomega"] * 3,
            "T": ["diagalpha"] * 3 + ["diagbeta"] * 3,
            "N": [9871.25, 9872.75, 9873.5, 9874.125, 9875.625, 9876.875],
        }
    )
    opts = dict(keys=["A"], targets=["T", "N"], thresh_1way=(0, 0), thresh_2way=(0, 0), ngroups_targets=[0, 3])
    raw = multi_disclosure(
        real, real, ["A"], ["T", "N"], thresh_1way=(0, 0), thresh_2way=(0, 0), ngroups_targets=[0, 3]
    )
    assert raw.per_target["T"].check1 == "Check  T  level  diagalpha"  # the checks do fire
    assert raw.per_target["T"].check2 == "2 pairs need checks"
    for metric in (disclosure_attribute, disclosure_identity):
        res = metric(real, real, **opts)
        doc = res.to_dict()
        doc.pop("seconds")  # wall time: its digits are arbitrary (once "…8787448…" held "987")
        text = json.dumps(doc)
        # (the measures here are multiples of 100/6 and 100/12, so "987" can only be a value)
        for secret in ("keyzeta", "keyomega", "diagalpha", "diagbeta", "987", "Check", "pairs need"):
            assert secret not in text, (metric.__name__, secret)
        assert res.details["per_target"]["T"]["check_1way_flagged"] is True
        assert res.details["per_target"]["T"]["check_2way_pairs"] == [2]


def test_metrics_need_targets():
    from privgate.metrics import disclosure_identity

    with pytest.raises(ParameterError, match="sensitive"):
        disclosure_identity(REAL, SYN, keys=["A"])
    with pytest.raises(ParameterError, match=r"unknown multi_disclosure option\(s\) \['bogus'\]"):
        disclosure_identity(REAL, SYN, keys=["A"], targets=["T"], bogus=1)


def test_a_copy_scores_the_real_data_maximum():
    # orientation: a copy of the real data gives repU = UiO and DiSCO = Dorig
    from privgate.metrics import disclosure_attribute, disclosure_identity

    ident = disclosure_identity(REAL, REAL, keys=["A"], targets=["T"])
    attr = disclosure_attribute(REAL, REAL, keys=["A"], targets=["T"])
    assert ident.raw == pytest.approx(12.5)  # UiO
    assert attr.raw == pytest.approx(37.5)  # Dorig


def test_a_bare_string_exclusion_is_one_level():
    # with one target, exclude_*="b" means the one level "b", not the characters of a string
    bare = multi_disclosure(REAL, SYN, ["A"], ["U"], exclude_keys="A", exclude_keylevs="b", exclude_targetlevs="q")
    listed = multi_disclosure(
        REAL, SYN, ["A"], ["U"], exclude_keys=["A"], exclude_keylevs=["b"], exclude_targetlevs=["q"]
    )
    assert bare.per_target["U"].attrib.equals(listed.per_target["U"].attrib)
    # "pq" is one level that does not exist (an error), not the two levels "p" and "q"
    with pytest.raises(ParameterError, match="pq"):
        multi_disclosure(REAL, SYN, ["A"], ["U"], exclude_keys="A", exclude_keylevs="b", exclude_targetlevs="pq")
