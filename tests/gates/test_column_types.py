"""Every column type Polars reads, through `privgate gate` with the default gate: gated (exit 0, 1
or 2), or refused with an error naming the column and its type (exit 3) — and a high-cardinality
postcode and an identifier column gated, not refused."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import polars as pl
import pytest

from privgate.cli import main

N = 150


def _base(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {"x": rng.normal(size=N), "y": rng.normal(size=N) * 3, "c": rng.choice(["a", "b", "c", "d"], N)}
    )


def _column(kind: str, seed: int) -> pl.Series:
    rng = np.random.default_rng(seed + 100)
    i = rng.integers(0, 50, N)
    if kind == "boolean":
        return pl.Series("v", i % 2 == 0)
    if kind == "date":
        return pl.Series("v", [dt.date(1950, 1, 1) + dt.timedelta(days=int(d) * 300) for d in i])
    if kind == "datetime":
        return pl.Series("v", [dt.datetime(2019, 1, 1) + dt.timedelta(hours=int(d) * 37) for d in i])
    if kind == "datetime_utc":
        return pl.Series(
            "v", [dt.datetime(2019, 1, 1) + dt.timedelta(hours=int(d) * 37) for d in i]
        ).dt.replace_time_zone("UTC")
    if kind == "duration":
        return pl.Series("v", [dt.timedelta(minutes=int(d) * 13) for d in i])
    if kind == "time":
        return pl.Series("v", [dt.time(int(d) % 24, int(d) % 60) for d in i])
    if kind == "decimal":
        return pl.Series("v", [Decimal(f"{d}.25") for d in i], dtype=pl.Decimal(10, 2))
    if kind == "categorical":
        return pl.Series("v", [f"k{d % 7}" for d in i], dtype=pl.Categorical)
    if kind == "enum":
        return pl.Series("v", [f"k{d % 7}" for d in i], dtype=pl.Enum([f"k{j}" for j in range(7)]))
    if kind == "int8":
        return pl.Series("v", i, dtype=pl.Int8)
    if kind == "uint16":
        return pl.Series("v", i, dtype=pl.UInt16)
    if kind == "postcode":  # 1,500 possible codes over 450 rows: coded if more than the limit
        return pl.Series("v", [f"{70000 + int(d):05d}" for d in rng.integers(0, 1_500, N)])
    if kind == "identifier":
        return pl.Series("v", [f"P{seed:02d}{j:05d}" for j in range(N)])
    raise AssertionError(kind)


GATED = [
    "boolean",
    "date",
    "datetime",
    "datetime_utc",
    "duration",
    "time",
    "decimal",
    "categorical",
    "enum",
    "int8",
    "uint16",
    "postcode",
    "identifier",
]


def _run(tmp_path, real: pl.DataFrame, synthetic: pl.DataFrame, holdout: pl.DataFrame) -> int:
    paths = {}
    for role, frame in (("real", real), ("synthetic", synthetic), ("holdout", holdout)):
        paths[role] = tmp_path / f"{role}.parquet"
        frame.write_parquet(paths[role])
    return main(
        [
            "gate",
            "--real",
            str(paths["real"]),
            "--synthetic",
            str(paths["synthetic"]),
            "--holdout",
            str(paths["holdout"]),
            "--release-id",
            "r",
            "--no-history",
            "--quiet",
            "--threads",
            "1",
        ]
    )


@pytest.mark.parametrize("kind", GATED)
def test_each_type_is_gated(kind, tmp_path, monkeypatch, capsys):
    from privgate import spaces

    monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", 100)  # the postcode's ~400 levels: coded
    real = _base(0).with_columns(_column(kind, 0))
    holdout = _base(1).with_columns(_column(kind, 1))
    honest = _base(2).with_columns(_column(kind, 2))
    assert _run(tmp_path, real, honest, holdout) in (0, 1), capsys.readouterr()
    assert _run(tmp_path, real, real, holdout) == 2  # a copy of the real records is blocked


def test_an_all_null_release_column_is_gated(tmp_path):
    real = _base(0).with_columns(_column("int8", 0))
    holdout = _base(1).with_columns(_column("int8", 1))
    release = _base(2).with_columns(pl.Series("v", [None] * N, dtype=pl.Null))
    assert _run(tmp_path, real, release, holdout) in (0, 1, 2)


@pytest.mark.parametrize(
    "series, named",
    [
        (pl.Series("v", [[1, 2]] * N), "List"),
        (pl.Series("v", [{"a": 1}] * N), "Struct"),
        (pl.Series("v", [b"\x00\x01"] * N), "Binary"),
        (pl.Series("v", [None] * N, dtype=pl.Int64), "nulls"),
    ],
)
def test_a_type_privgate_cannot_compare_is_refused_naming_column_and_type(series, named, tmp_path, capsys):
    frames = [_base(s).with_columns(series) for s in range(3)]
    assert _run(tmp_path, *frames) == 3
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "'v'" in text and named.lower() in text.lower()


def test_reused_identifiers_are_blocked_and_fresh_ones_pass(tmp_path):
    real = _base(0).with_columns(_column("identifier", 0))
    holdout = _base(1).with_columns(_column("identifier", 1))
    honest = _base(2).with_columns(_column("identifier", 2))
    assert _run(tmp_path, real, honest, holdout) in (0, 1)
    reused = honest.with_columns(real["v"])
    assert _run(tmp_path, real, reused, holdout) == 2
