"""Bad inputs give specific privgate errors naming the culprit, before anything is computed."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from privgate.disclosure import disclosure, multi_disclosure
from privgate.errors import EmptyInputError, InputLoadError, ParameterError, UnsupportedDtypeError

REAL = pl.DataFrame({"A": list("aabb"), "B": ["u", "v", "u", "v"], "N": [1.0, 2.0, 3.0, -8.0], "T": list("xyxy")})
SYN = REAL.clone()


def test_key_missing_from_real():
    with pytest.raises(ParameterError, match=r"\['Z'\] not in the real data"):
        disclosure(REAL, SYN, ["A", "Z"], "T")


def test_target_missing_from_a_synthetic_set():
    with pytest.raises(ParameterError, match=r"not in synthetic set 2 of 2"):
        disclosure(REAL, [SYN, SYN.drop("T")], ["A"], "T")


def test_target_among_keys():
    with pytest.raises(ParameterError, match="also one of the keys"):
        disclosure(REAL, SYN, ["A", "T"], "T")


@pytest.mark.parametrize(
    "kw",
    [
        {"ngroups_target": 1},
        {"ngroups_keys": [0, 1]},
        {"ngroups_keys": 1},
        {"ngroups_target": -2},
        {"ngroups_target": 2.5},
    ],
)
def test_ngroups_of_one_or_invalid(kw):
    with pytest.raises(ParameterError, match="ngroups"):
        disclosure(REAL, SYN, ["A", "N"], "T", **kw)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "5"])
def test_denom_lim_must_be_positive_whole(value):
    with pytest.raises(ParameterError, match="denom_lim"):
        disclosure(REAL, SYN, ["A"], "T", denom_lim=value)


def test_cont_na_code_absent_from_real():
    with pytest.raises(ParameterError, match=r"cont_na code -9 of column 'N' never occurs in the real data \(4 rows\)"):
        disclosure(REAL, SYN, ["A"], "N", cont_na={"N": -9}, ngroups_target=2)
    # present but rare: a warning, not an error
    with pytest.warns(UserWarning, match="occurs only 1 times"):
        disclosure(REAL, SYN, ["A"], "N", cont_na={"N": [-8]})


def test_unknown_option():
    with pytest.raises(ParameterError, match="unknown disclosure option"):
        disclosure(REAL, SYN, ["A"], "T", denomlim=3)


def test_exclusion_levels_must_exist():
    with pytest.raises(ParameterError, match="'q' is not a level of key 'A'"):
        disclosure(REAL, SYN, ["A"], "T", exclude_keys=["A"], exclude_keylevs=["q"], exclude_targetlevs=["x"])
    with pytest.raises(ParameterError, match="not a level of target"):
        disclosure(REAL, SYN, ["A"], "T", exclude_keys=["A"], exclude_keylevs=["a"], exclude_targetlevs=["zz"])
    with pytest.raises(ParameterError, match="same length"):
        disclosure(REAL, SYN, ["A"], "T", exclude_keys=["A"], exclude_keylevs=["a"])
    with pytest.raises(ParameterError, match="not keys"):
        disclosure(REAL, SYN, ["A"], "T", exclude_keys=["B"], exclude_keylevs=["u"], exclude_targetlevs=["x"])


def test_usekeys_na_length():
    with pytest.raises(ParameterError, match="usekeys_na"):
        disclosure(REAL, SYN, ["A", "B"], "T", usekeys_na=[True, False, True])


def test_grouping_a_constant_column():
    real = REAL.with_columns(pl.lit(3.0).alias("N"))
    with pytest.raises(ParameterError, match="target 'N'.*single distinct"):
        disclosure(real, real, ["A"], "N", ngroups_target=3)


def test_empty_inputs():
    with pytest.raises(EmptyInputError, match="real: the frame has 0 rows"):
        disclosure(REAL.head(0), SYN, ["A"], "T")
    with pytest.raises(EmptyInputError, match="synthetic set 2 of 2: the frame has 0 rows"):
        disclosure(REAL, [SYN, SYN.head(0)], ["A"], "T")
    with pytest.raises(ParameterError, match="empty list"):
        disclosure(REAL, [], ["A"], "T")
    with pytest.raises(InputLoadError):
        disclosure(REAL, 42, ["A"], "T")


def test_unsupported_dtype_names_the_column_and_frame():
    # a nested column cannot be tabulated: a privgate error naming it, not a Polars cast error
    syn = SYN.with_columns(pl.Series("B", [[1], [2], [1], [2]]))
    with pytest.raises(UnsupportedDtypeError, match=r"synthetic set 1: column\(s\) \['B'\]"):
        disclosure(REAL, syn, ["A", "B"], "T")
    disclosure(REAL, syn, ["A"], "T")  # an unused nested column is fine


def test_error_messages_and_warnings_carry_no_record_values():
    real = pl.DataFrame(
        {
            "A": ["secret-name", "secret-other", "secret-name"],
            "T": ["secret-diagnosis"] * 3,
            "N": [987654.25] * 3,
            "M": [-8.0, 4567.5, 4568.5],
        }
    )
    failing = [
        dict(keys=["A"], target="Q"),  # missing column
        dict(keys=["A"], target="N", ngroups_target=3),  # constant grouped column
        dict(
            keys=["A"], target="T", exclude_keys=["A"], exclude_keylevs=["zz"], exclude_targetlevs=["secret-diagnosis"]
        ),  # unknown key level
        dict(keys=["A"], target="M", cont_na={"M": -9}),  # absent cont_na code
    ]
    for kw in failing:
        with pytest.raises(ParameterError) as exc:
            disclosure(real, real, **kw)
        assert "secret" not in str(exc.value) and "98765" not in str(exc.value), kw
        assert "4567" not in str(exc.value), kw
    # warnings (rare cont_na code, ngroups on a text column) name columns and counts only
    with pytest.warns(UserWarning) as record:
        disclosure(real, real, ["A"], "M", cont_na={"M": -8}, ngroups_target=2)
        disclosure(real, real, ["A"], "T", ngroups_keys=3)
    messages = " ".join(str(w.message) for w in record)
    assert "occurs only 1 times" in messages and "ngroups = 3 ignored" in messages
    assert "secret" not in messages and "98765" not in messages and "4567" not in messages


def test_inputs_through_load_frame(tmp_path):
    path = tmp_path / "real.parquet"
    REAL.write_parquet(path)
    a = disclosure(path, pa.Table.from_pandas(SYN.to_pandas()), ["A"], "T")
    b = disclosure(REAL.to_pandas(), pd.DataFrame(SYN.to_dict(as_series=False)), ["A"], "T")
    assert a.ident.equals(b.ident) and a.attrib.equals(b.attrib)


def test_multi_option_errors():
    with pytest.raises(ParameterError, match="one entry per target"):
        multi_disclosure(REAL, SYN, ["A"], ["T", "B"], ngroups_targets=[0, 0, 0])
    with pytest.raises(ParameterError, match="ident_meas"):
        multi_disclosure(REAL, SYN, ["A"], ["T"], ident_meas="UiS")
    with pytest.raises(ParameterError, match="attrib_meas"):
        multi_disclosure(REAL, SYN, ["A"], ["T"], attrib_meas="Dorig")
    with pytest.raises(ParameterError, match="unknown multi_disclosure option"):
        multi_disclosure(REAL, SYN, ["A"], ["T"], ngroups_target_typo=3)
    with pytest.raises(ParameterError, match="not targets"):
        multi_disclosure(REAL, SYN, ["A"], ["T"], ngroups_targets={"B": 3})


def test_r_style_option_names_are_aliases():
    a = disclosure(REAL, SYN, ["A"], "T", **{"not.targetlev": "y", "usekeysNA": False})
    b = disclosure(REAL, SYN, ["A"], "T", not_targetlev="y", usekeys_na=False)
    assert a.ident.equals(b.ident) and a.n_exclusions.equals(b.n_exclusions)
    with pytest.raises(ParameterError, match="given twice"):
        disclosure(REAL, SYN, ["A"], "T", **{"not.targetlev": "y", "not_targetlev": "y"})
    m = multi_disclosure(REAL, SYN, ["A"], ["T"], **{"attrib.meas": "DCAP"})
    assert m.attrib_meas == "DCAP"
