"""The bundled release assets: real data → synthetic release (+ privgate checks) → published release.

- ``real_data``: the reference (training) data the release was synthesised from; unpartitioned.
- ``synthetic_release``: one release, a dynamic partition per release id, read from the watched
  directory. :func:`privgate.dagster.build_privgate_checks` puts the gate on it (the bundled
  Definitions are one use of that factory): one blocking check per ``block`` rule plus
  ``gate_decision``.
- ``published_release``: copies the release to the publish location. Dagster only runs it when no
  blocking check failed with ERROR; it also re-checks in the score history that the latest
  evaluation of this release accepted it and evaluated exactly this content, so materialising it
  on its own cannot publish a blocked, unevaluated or modified release.

Metadata carries scores, counts, column names/types, paths and hashes -- never record values.
"""

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import polars as pl

from privgate.io import load_frame
from privgate.schema import dtype_name

from .data_locations import DataLocations
from .metadata import frame_digest
from .partitions import releases_partitions
from .privgate_resource import PrivgateResource

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig

GROUP = "privgate"


def frame_metadata(frame: pl.DataFrame, source: str | Path | None = None) -> dict[str, object]:
    """Shape, column names/types and a content digest of ``frame`` (no values)."""
    md: dict[str, object] = {
        "rows": dg.MetadataValue.int(frame.height),
        "columns": dg.MetadataValue.int(frame.width),
        "content_sha256": dg.MetadataValue.text(frame_digest(frame)),
        "dagster/column_schema": dg.TableSchema(
            # dtype_name: an Enum is named by its level count (str() lists every real label)
            columns=[dg.TableColumn(name, dtype_name(dtype)) for name, dtype in frame.schema.items()]
        ),
    }
    if source is not None:
        md["source"] = dg.MetadataValue.path(str(source))
    return md


@dg.asset(
    group_name=GROUP,
    kinds={"polars", "parquet"},
    description="The real (reference) data the synthetic releases were generated from.",
)
def real_data(privgate: PrivgateResource) -> dg.Output[pl.DataFrame]:
    frame = load_frame(privgate.real_path, role="real")
    return dg.Output(frame, metadata=frame_metadata(frame, privgate.real_path))


@dg.asset(
    group_name=GROUP,
    partitions_def=releases_partitions,
    kinds={"polars", "parquet"},
    description="One synthetic release (a file named <release id>.<suffix> in the watched directory).",
)
def synthetic_release(context: dg.AssetExecutionContext, locations: DataLocations) -> dg.Output[pl.DataFrame]:
    path = locations.release_file(context.partition_key)
    frame = load_frame(path, role="synthetic")
    return dg.Output(frame, metadata=frame_metadata(frame, path))


def build_published_release(cfg: "GateConfig") -> dg.AssetsDefinition:
    """``published_release`` for releases gated with ``cfg`` (its dataset names the history)."""

    @dg.asset(
        group_name=GROUP,
        partitions_def=releases_partitions,
        kinds={"parquet"},
        description=(
            "The release copied to the publish location; materialises only when every blocking privacy check passed."
        ),
    )
    def published_release(
        context: dg.AssetExecutionContext,
        synthetic_release: pl.DataFrame,
        locations: DataLocations,
        privgate: PrivgateResource,
    ) -> dg.MaterializeResult:
        release_id = context.partition_key
        current = frame_digest(synthetic_release)
        dataset = privgate.load_config(cfg).dataset
        last = _latest_evaluation(privgate, dataset, release_id)
        if last is None:
            raise dg.Failure(
                description=(
                    f"release {release_id!r} has no privgate evaluation in the history of dataset "
                    f"{dataset!r}; run its checks first"
                )
            )
        if not last["accepted"]:
            raise dg.Failure(
                description=(
                    f"release {release_id!r} is not publishable: its latest gate decision is "
                    f"{last['decision']!r}; only pass or warn releases are published"
                )
            )
        evaluated = last["synthetic_sha256"]
        if evaluated != current:
            raise dg.Failure(
                description=(
                    f"release {release_id!r} changed after it was evaluated (content digest "
                    f"{current[:12]}… vs evaluated {str(evaluated)[:12]}…); re-run its checks"
                )
            )
        target = locations.publish_path(release_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".parquet.tmp", dir=target.parent)
        os.close(fd)
        try:
            synthetic_release.write_parquet(tmp, compression="zstd")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return dg.MaterializeResult(
            metadata={
                "published_path": dg.MetadataValue.path(str(target)),
                "rows": dg.MetadataValue.int(synthetic_release.height),
                "columns": dg.MetadataValue.int(synthetic_release.width),
                "verdict": dg.MetadataValue.text(str(last["decision"])),
                "content_sha256": dg.MetadataValue.text(current),
                "privgate_run_id": dg.MetadataValue.text(str(last["run_id"])),
            }
        )

    return published_release


def _latest_evaluation(privgate: PrivgateResource, dataset: str, release_id: str) -> "dict[str, object] | None":
    """The latest recorded gate run of ``release_id``: decision, accepted, run id and the content
    digest of the release it evaluated."""
    store = privgate.open_history()
    try:
        runs = store.runs(dataset).filter(pl.col("release_id") == release_id)
        if runs.is_empty():
            return None
        row = runs.row(-1, named=True)
        record = store.get_run(row["run_id"])
    finally:
        store.close()
    synth = (record.fingerprint.get("synthetic") or {}) if record is not None else {}
    return {
        "run_id": row["run_id"],
        "decision": row["decision"],
        "accepted": bool(row["accepted"]),
        "synthetic_sha256": synth.get("content_sha256"),
    }
