"""The Parquet IO manager: round trips, partition paths, atomic writes, clear errors."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pyarrow as pa
import pytest

from privgate.dagster.io_manager import PolarsParquetIOManager
from privgate.dagster.partitions import releases_partitions


@pytest.fixture
def frame() -> pl.DataFrame:
    return pl.DataFrame({"age": [39.0, 50.0, None], "sex": ["Male", None, "Female"], "n": [1, 2, 3]})


def test_round_trip_unpartitioned(tmp_path, frame):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    key = dg.AssetKey(["privgate", "real_data"])
    out = dg.build_output_context(asset_key=key)
    io.handle_output(out, frame)
    path = tmp_path / "privgate" / "real_data.parquet"
    assert path.exists() and io.path_for(key) == path
    back = io.load_input(dg.build_input_context(asset_key=key))
    assert back.equals(frame) and back.schema == frame.schema
    # metadata: path and shape only
    md = out.get_logged_metadata()
    assert md["rows"] == dg.MetadataValue.int(3) and md["columns"] == dg.MetadataValue.int(3)
    assert set(md) == {"storage_path", "rows", "columns"}
    # no temporary files left behind
    assert [p.name for p in path.parent.iterdir()] == ["real_data.parquet"]


def test_partitioned_paths_and_lazy_and_arrow_inputs(tmp_path, frame):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    key = dg.AssetKey("synthetic_release")
    for pk, value in (("r-1", frame.lazy()), ("r-2", frame.to_arrow())):
        out = dg.build_output_context(asset_key=key, partition_key=pk)
        io.handle_output(out, value)
        assert (tmp_path / "synthetic_release" / f"{pk}.parquet").exists()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("releases", ["r-1", "r-2"])
        got = io.load_input(
            dg.build_input_context(
                asset_key=key, partition_key="r-2", asset_partitions_def=releases_partitions, instance=instance
            )
        )
    assert got.equals(frame)


def test_overwrite_replaces_value(tmp_path, frame):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    key = dg.AssetKey("x")
    io.handle_output(dg.build_output_context(asset_key=key), frame)
    io.handle_output(dg.build_output_context(asset_key=key), frame.head(1))
    assert io.load_input(dg.build_input_context(asset_key=key)).height == 1


def test_rejects_non_frames_and_unsafe_partition_keys(tmp_path, frame):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    with pytest.raises(dg.DagsterInvariantViolationError, match="returned dict"):
        io.handle_output(dg.build_output_context(asset_key=dg.AssetKey("y")), {"a": 1})
    from privgate.errors import InputError

    with pytest.raises(InputError, match="not usable as a partition key"):
        io.handle_output(dg.build_output_context(asset_key=dg.AssetKey("y"), partition_key="../escape"), frame)
    assert not any(tmp_path.rglob("*.parquet"))


def test_missing_value_is_a_clear_failure(tmp_path):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    with pytest.raises(dg.Failure, match="real_data has no stored value"):
        io.load_input(dg.build_input_context(asset_key=dg.AssetKey("real_data")))


def test_none_output_stores_nothing(tmp_path):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    io.handle_output(dg.build_output_context(asset_key=dg.AssetKey("z")), None)
    assert not any(tmp_path.iterdir())


def test_arrow_table_type_is_kept(tmp_path):
    io = PolarsParquetIOManager(base_dir=str(tmp_path))
    table = pa.table({"v": pa.array([1.5, 2.5])})
    io.handle_output(dg.build_output_context(asset_key=dg.AssetKey("t")), table)
    assert (
        io.load_input(dg.build_input_context(asset_key=dg.AssetKey("t")))
        .to_arrow()
        .equals(pl.from_arrow(table).to_arrow())
    )
