"""Every column type Polars reads, through GX: the default gate's suite
(:func:`privgate.gx.suite_from_gate_config`) validated on one table holding all the gated types at
once (Boolean, Date, Datetime with and without a time zone, Duration, Time, Decimal, Categorical,
Enum, Int8, UInt16, nulls) — no expectation errored, an honest release passes every blocking one
and a copy of the real records fails — and a type privgate cannot compare errors every
expectation with a message naming the column and its type."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

gx = pytest.importorskip("great_expectations")

import privgate  # noqa: E402
import privgate.gx as pe  # noqa: E402

DEFAULT_CONFIG = Path(privgate.__file__).parent / "configs" / "default_gate.yaml"


def _paths(tmp_path: Path, frames: dict[str, pl.DataFrame]) -> dict[str, str]:
    out = {}
    for role in ("real", "holdout"):
        out[role] = str(tmp_path / f"{role}.parquet")
        frames[role].write_parquet(out[role])
    return out


def _rows(gx_context, release: pl.DataFrame, paths: dict[str, str]) -> dict[str, dict]:
    suite = pe.suite_from_gate_config(DEFAULT_CONFIG, real=paths["real"], holdout=paths["holdout"])
    result = pe.validate_release(release, suite, context=gx_context)
    return {pe.summarise(r)["meta"]["check_name"]: pe.summarise(r) for r in result.results}


def test_a_table_of_every_type_is_gated(gx_context, typed_frames, tmp_path):
    paths = _paths(tmp_path, typed_frames)
    honest = _rows(gx_context, typed_frames["release"], paths)
    assert honest
    errored = {n: r["error"] for n, r in honest.items() if r["status"] == "errored"}
    assert not errored, errored
    assert all(r["status"] == "passed" for n, r in honest.items() if r["severity"] == "critical"), honest
    copy = _rows(gx_context, typed_frames["real"], paths)
    assert copy["common_rows__baseline_block"]["status"] == "failed"
    assert not [n for n, r in copy.items() if r["status"] == "errored"]


def test_a_type_privgate_cannot_compare_errors_naming_column_and_type(gx_context, typed_frames, tmp_path):
    frames = {r: f.with_columns(pl.Series("tags", [[1, 2]] * f.height)) for r, f in typed_frames.items()}
    rows = _rows(gx_context, frames["release"], _paths(tmp_path, frames))
    assert rows and all(r["status"] == "errored" for r in rows.values()), rows
    for row in rows.values():
        assert "'tags'" in row["error"] and "List" in row["error"], row["error"]
