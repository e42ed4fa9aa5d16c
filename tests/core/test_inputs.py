"""Inputs: every accepted form loads identically; every bad input raises a specific error that
names its culprit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

import privgate
from privgate.context import EvaluationContext
from privgate.errors import (
    AllNullColumnError,
    EmptyInputError,
    IncompatibleDtypeError,
    InputLoadError,
    ParameterError,
    PrivgateError,
    SchemaMismatchError,
    TooFewRowsError,
    UnknownMetricError,
    UnsupportedDtypeError,
)

REAL = pl.DataFrame({"age": [30, 40, 50, 60], "sex": ["F", "M", "F", None], "w": [1.5, 2.5, None, 4.0]})
SYN = pl.DataFrame({"age": [30, 41, 55, 61], "sex": ["F", "M", "M", "F"], "w": [1.5, 2.0, 3.0, 4.0]})


def _forms(tmp_path, frame: pl.DataFrame):
    frame.write_parquet(tmp_path / "x.parquet")
    frame.write_csv(tmp_path / "x.csv")
    frame.write_ipc(tmp_path / "x.arrow")
    frame.write_ipc(tmp_path / "x.feather")
    return {
        "polars": frame,
        "lazy": frame.lazy(),
        "arrow": frame.to_arrow(),
        "pandas": frame.to_pandas(),
        "parquet": tmp_path / "x.parquet",
        "csv": str(tmp_path / "x.csv"),
        "arrow_file": tmp_path / "x.arrow",
        "feather": tmp_path / "x.feather",
    }


def test_every_input_form_gives_the_same_scores(tmp_path):
    expected = privgate.evaluate(REAL, SYN, ["common_rows", "dcr", "hitting_rate"]).values()
    for name, form in _forms(tmp_path, REAL).items():
        got = privgate.evaluate(form, SYN, ["common_rows", "dcr", "hitting_rate"]).values()
        assert got == pytest.approx(expected), name


def test_schema_is_inferred_reported_and_overridable():
    ctx = EvaluationContext(REAL, SYN)
    assert ctx.schema.as_dict() == {"age": "numeric", "sex": "categorical", "w": "numeric"}
    ctx = EvaluationContext(REAL, SYN, schema={"age": "categorical"})
    assert ctx.schema.kind("age") == "categorical" and ctx.schema.inferred["age"] is False
    res = privgate.metrics.common_rows(REAL, SYN, schema={"age": "categorical"})
    assert res.schema["age"] == "categorical"


def test_dates_are_numeric_epoch_seconds_and_int_matches_float():
    import datetime as dt

    r = pl.DataFrame({"d": [dt.date(1970, 1, 2), dt.date(2000, 1, 1)], "x": [1, 2]})
    s = pl.DataFrame({"d": [dt.date(1970, 1, 2), dt.date(2000, 1, 2)], "x": [1.0, 2.0]})
    ctx = EvaluationContext(r, s)
    assert ctx.schema.kind("d") == "numeric"
    assert ctx.real["d"][0] == 86400.0
    # row 0 equal by value (1 == 1.0), row 1 differs by a day
    assert privgate.metrics.common_rows(r, s).value == 0.5


def test_column_sets_differ_names_the_columns():
    with pytest.raises(SchemaMismatchError) as e:
        EvaluationContext(REAL, SYN.rename({"w": "weight"}))
    # a column of the real data alone is given by its position (its name may be a record's
    # value: a CSV without a header row); the release's own column by its name
    pos = REAL.columns.index("w") + 1
    assert "'w'" not in str(e.value) and "'weight'" in str(e.value)
    assert f"only in real: 1 column(s) not in the release, at position(s) {pos}" in str(e.value)


def test_incompatible_dtypes_name_the_column():
    with pytest.raises(IncompatibleDtypeError, match="'age'"):
        EvaluationContext(REAL, SYN.with_columns(pl.col("age").cast(pl.String)))


def test_empty_frames():
    with pytest.raises(EmptyInputError, match="synthetic.*0 rows"):
        EvaluationContext(REAL, SYN.head(0))
    with pytest.raises(EmptyInputError, match="real.*no columns"):
        EvaluationContext(pl.DataFrame(), SYN)


def test_all_null_column_is_named():
    with pytest.raises(AllNullColumnError, match="'w'.*4 rows"):
        EvaluationContext(REAL.with_columns(pl.lit(None, dtype=pl.Float64).alias("w")), SYN)


@pytest.mark.parametrize(
    "col", [pl.Series("bad", [[1], [2], [3], [4]]), pl.Series("bad", [{"a": 1}] * 4), pl.Series("bad", [b"x"] * 4)]
)
def test_unsupported_dtypes_are_named(col):
    with pytest.raises(UnsupportedDtypeError, match="'bad'"):
        EvaluationContext(REAL.with_columns(col), SYN.with_columns(col))


def test_too_few_rows_for_a_metric():
    with pytest.raises(TooFewRowsError, match="at least 2 real rows; got 1"):
        privgate.metrics.authenticity(REAL.head(1), SYN)
    with pytest.raises(TooFewRowsError, match="nndr.*got 1"):
        privgate.metrics.nndr(REAL.head(1), SYN)


def test_bad_paths_and_types(tmp_path):
    with pytest.raises(InputLoadError, match="not found"):
        EvaluationContext(tmp_path / "missing.parquet", SYN)
    (tmp_path / "x.txt").write_text("a")
    with pytest.raises(InputLoadError, match=r"suffix '\.txt'"):
        EvaluationContext(tmp_path / "x.txt", SYN)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputLoadError, match="synthetic: cannot read .*bad.parquet: it is not a readable Parquet file"):
        EvaluationContext(REAL, tmp_path / "bad.parquet")
    with pytest.raises(InputLoadError, match="unsupported input type list"):
        EvaluationContext([1, 2], SYN)


def test_parameter_errors():
    with pytest.raises(ParameterError, match="not in the data: \\['nope'\\]"):
        EvaluationContext(REAL, SYN, sensitive=["nope"])
    with pytest.raises(ParameterError, match="schema names columns not in the data"):
        EvaluationContext(REAL, SYN, schema={"zzz": "numeric"})
    with pytest.raises(UnknownMetricError, match="'nope'"):
        privgate.evaluate(REAL, SYN, ["nope"])
    with pytest.raises(ParameterError, match="close_values threshold"):
        privgate.metrics.close_values(REAL, SYN, threshold=2)
    with pytest.raises(ParameterError, match="unexpected keyword"):
        privgate.metrics.dcr(REAL, SYN, bogus=1)


def test_every_error_is_a_privgate_error():
    for exc in (
        SchemaMismatchError,
        EmptyInputError,
        IncompatibleDtypeError,
        UnsupportedDtypeError,
        AllNullColumnError,
        TooFewRowsError,
        InputLoadError,
        ParameterError,
    ):
        assert issubclass(exc, PrivgateError)


def test_error_messages_carry_no_record_values(tmp_path):
    secret = "SECRET-VALUE-123"
    r = pl.DataFrame({"a": [secret, "x"], "b": [1, 2]})
    s = pl.DataFrame({"a": ["y", "z"], "b": ["text", "more"]})
    with pytest.raises(IncompatibleDtypeError) as e:
        EvaluationContext(r, s)
    assert secret not in str(e.value)
    # Polars' own parse error quotes the offending cell; the loader must not pass it on
    p = tmp_path / "r.csv"
    p.write_text('a,b\nx,1\n"' + secret + " unterminated,2\n")
    with pytest.raises(pl.exceptions.ComputeError, match=secret):
        pl.read_csv(p)
    with pytest.raises(InputLoadError, match="real: cannot read csv file") as e:
        EvaluationContext(p, s)
    assert secret not in str(e.value)


def test_an_identifier_column_is_set_aside_not_refused():
    """A column distinct per real record is an identifier: left out of every distance and copy
    metric (a copy under fresh identifiers is still a copy), and measured by identifier_reuse."""
    n = 2500
    r = pl.DataFrame({"id": [f"p{i}" for i in range(n)], "x": np.arange(n, dtype=float)})
    s = pl.DataFrame({"id": [f"q{i}" for i in range(n)], "x": np.arange(n, dtype=float)})
    assert privgate.metrics.authenticity(r, s).value == 1.0  # the same x values: copies
    assert privgate.metrics.common_rows(r, s).value == 1.0
    assert privgate.metrics.identifier_reuse(r, s).value == 0.0
    assert privgate.metrics.identifier_reuse(r, r).value == 1.0
    assert EvaluationContext(r, s).identifiers == ["id"]


def test_nan_is_missing_and_unseen_categories_are_fine():
    r = pl.DataFrame({"a": [1.0, float("nan"), 3.0], "c": ["x", "y", "x"]})
    s = pl.DataFrame({"a": [1.0, None, 3.0], "c": ["x", "NEW", "x"]})
    ctx = EvaluationContext(r, s)
    assert ctx.real["a"].null_count() == 1
    res = privgate.evaluate(r, s, ["common_rows", "dcr", "hitting_rate", "authenticity"])
    assert res.results["common_rows"].value == pytest.approx(2 / 3)


def test_dtype_errors_never_list_enum_levels_and_conversions_never_quote_cells():
    rare = "RareLevel-Jane"
    enum = pl.Enum(["a", "b", rare])
    r = pl.DataFrame({"x": pl.Series(["a", "b"], dtype=enum)})
    s = pl.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(IncompatibleDtypeError, match=r"Enum\(3 categories\)") as e:
        EvaluationContext(r, s)
    assert rare not in str(e.value)
    with pytest.raises(IncompatibleDtypeError) as e:
        EvaluationContext(r, r, schema={"x": "numeric"})
    assert rare not in str(e.value)
    secret = "Jane Doe 1970-01-01"
    bad = pd.DataFrame({"x": [1.5, secret]}, dtype=object)
    with pytest.raises(InputLoadError, match="real: cannot convert pandas DataFrame") as e:
        EvaluationContext(bad, s)
    assert secret not in str(e.value)


# --- dtype compatibility, column kind × column kind (docs/inputs.md "Which dtypes compare") ----
from datetime import datetime, time, timedelta  # noqa: E402

from privgate.schema import infer_schema, normalise_frame  # noqa: E402

_DT = [datetime(2020, 1, d) for d in (1, 2, 3)]
DTYPE_SAMPLES = {  # the same three values 1, 2, 3 (or their temporal analogue) in every dtype
    "int": pl.Series([1, 2, 3], dtype=pl.Int32),
    "float": pl.Series([1.0, 2.0, 3.0]),
    "decimal": pl.Series([1, 2, 3], dtype=pl.Decimal(10, 2)),
    "boolean": pl.Series([True, False, True]),
    "string": pl.Series(["1", "2", "3"]),
    "categorical": pl.Series(["1", "2", "3"], dtype=pl.Categorical),
    "enum": pl.Series(["1", "2", "3"], dtype=pl.Enum(["1", "2", "3"])),
    "date": pl.Series([d.date() for d in _DT]),
    "datetime": pl.Series(_DT),
    "datetime_utc": pl.Series(_DT).dt.replace_time_zone("UTC"),
    "duration": pl.Series([timedelta(seconds=s) for s in (1, 2, 3)]),
    "time": pl.Series([time(0, 0, s) for s in (1, 2, 3)]),
}
# written out by hand (not derived from privgate.schema): the groups whose members compare
COMPARABLE_GROUPS = [
    {"int", "float", "decimal"},
    {"string", "categorical", "enum"},
    {"date", "datetime"},
    {"datetime_utc"},
    {"boolean"},
    {"duration"},
    {"time"},
]


def _comparable(a: str, b: str) -> bool:
    return any(a in g and b in g for g in COMPARABLE_GROUPS)


@pytest.mark.parametrize("real_kind", list(DTYPE_SAMPLES))
@pytest.mark.parametrize("other_kind", list(DTYPE_SAMPLES))
@pytest.mark.parametrize("role", ["synthetic", "holdout"])
def test_dtype_compatibility_table(real_kind, other_kind, role):
    real = DTYPE_SAMPLES[real_kind].alias("col").to_frame()
    other = DTYPE_SAMPLES[other_kind].alias("col").to_frame()
    frames = {"real": real, "synthetic": real, role: other}
    if not _comparable(real_kind, other_kind):
        with pytest.raises(IncompatibleDtypeError, match=r"column 'col' has incompatible dtypes.*expected"):
            infer_schema(frames)
        return
    schema = infer_schema(frames)
    # comparable columns normalise to the same values: an exact copy is seen as one
    left, right = normalise_frame(real, schema), normalise_frame(other, schema)
    assert left.equals(right), (real_kind, other_kind, left, right)


def test_infinite_numbers_are_refused_naming_column_and_frame():
    from privgate.errors import NonFiniteValueError

    real = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    syn = real.with_columns(pl.Series("a", [1.0, float("-inf"), float("inf")]))
    with pytest.raises(NonFiniteValueError, match=r"column 'a' of synthetic has 2 infinite value"):
        infer_schema({"real": real, "synthetic": syn})
    # declared categorical, an infinite float is a label like any other
    infer_schema({"real": real, "synthetic": syn}, {"a": "categorical"})
