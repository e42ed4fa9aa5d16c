"""A small Parquet IO manager on Polars/pyarrow.

``dagster-polars`` 0.27 (the newest release) breaks with Polars 2 (``scan_parquet`` lost its
``rechunk`` argument), so privgate stores asset values itself: every output is a Polars
DataFrame (or LazyFrame / pyarrow Table, collected) written as one Parquet file::

    <base_dir>/<asset key parts...>.parquet                  unpartitioned asset
    <base_dir>/<asset key parts...>/<partition key>.parquet   partitioned asset

Writes go to a temporary file in the same folder and are renamed into place, so a reader never
sees half a file and a failed write leaves the previous value intact. The output metadata carries
the path and the shape only -- never values.

With a step-per-pod executor (k8s) ``base_dir`` must be a volume every pod mounts (a
ReadWriteMany PVC) or the steps cannot see each other's outputs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pyarrow as pa

from .partitions import check_release_id


class PolarsParquetIOManager(dg.ConfigurableIOManager):
    """Stores Polars DataFrames as Parquet files under ``base_dir``."""

    base_dir: str
    compression: str = "zstd"

    # --- paths -------------------------------------------------------------------------------
    def _asset_path(self, asset_key: dg.AssetKey, partition_key: str | None) -> Path:
        parts = list(asset_key.path)
        root = Path(self.base_dir)
        if partition_key is None:
            return root.joinpath(*parts[:-1], f"{parts[-1]}.parquet")
        check_release_id(partition_key)
        return root.joinpath(*parts, f"{partition_key}.parquet")

    def path_for(self, asset_key: dg.AssetKey | str, partition_key: str | None = None) -> Path:
        """Where the value of ``asset_key`` (and partition) is stored."""
        key = asset_key if isinstance(asset_key, dg.AssetKey) else dg.AssetKey(asset_key)
        return self._asset_path(key, partition_key)

    # --- write -------------------------------------------------------------------------------
    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:  # MaterializeResult-style assets store nothing
            return
        frame = _as_frame(obj, context.asset_key)
        partition = context.partition_key if context.has_asset_partitions else None
        path = self._asset_path(context.asset_key, partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".parquet.tmp", dir=path.parent)
        os.close(fd)
        try:
            frame.write_parquet(tmp, compression=self.compression)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        context.add_output_metadata(
            {
                "storage_path": dg.MetadataValue.path(str(path)),
                "rows": dg.MetadataValue.int(frame.height),
                "columns": dg.MetadataValue.int(frame.width),
            }
        )

    # --- read --------------------------------------------------------------------------------
    def load_input(self, context: dg.InputContext) -> pl.DataFrame | dict[str, pl.DataFrame]:
        key = context.asset_key
        if context.has_asset_partitions:
            keys = list(context.asset_partition_keys)
            if len(keys) == 1:
                return self._read(key, keys[0])
            return {k: self._read(key, k) for k in keys}
        return self._read(key, None)

    def _read(self, key: dg.AssetKey, partition: str | None) -> pl.DataFrame:
        path = self._asset_path(key, partition)
        if not path.exists():
            where = f" partition {partition!r}" if partition is not None else ""
            raise dg.Failure(
                description=(f"asset {key.to_user_string()}{where} has no stored value at {path}; materialize it first")
            )
        return pl.read_parquet(path)


def _as_frame(obj: Any, key: dg.AssetKey) -> pl.DataFrame:
    if isinstance(obj, pl.DataFrame):
        return obj
    if isinstance(obj, pl.LazyFrame):
        return obj.collect()
    if isinstance(obj, pa.Table):
        out = pl.from_arrow(obj)
        return out if isinstance(out, pl.DataFrame) else out.to_frame()
    raise dg.DagsterInvariantViolationError(
        f"PolarsParquetIOManager stores Polars DataFrames / LazyFrames / pyarrow Tables; asset "
        f"{key.to_user_string()} returned {type(obj).__name__}"
    )
