"""The release assets: real data → synthetic release → privacy evaluation (+ gate checks) →
published release.

- ``real_data``: the reference (training) data the release was synthesised from; unpartitioned.
- ``synthetic_release``: one release, a dynamic partition per release id, read from the watched
  directory.
- ``privacy_evaluation``: runs the gate configuration on the release (``privgate.gates.run_gate``),
  writes the run to the score history (the same store the CLI uses) and the HTML/JSON reports,
  and reports every rule as an asset check (see :mod:`dagster_defs.gate_checks`).
- ``published_release``: copies the evaluated release to the publish location. Dagster only runs
  it when no blocking check failed with ERROR; it also re-checks the stored decision and that the
  release content is the one that was evaluated, so materialising it on its own cannot publish a
  blocked, unevaluated or modified release.

Metadata carries scores, counts, column names/types, paths and hashes -- never record values.
"""


import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import dagster as dg
import polars as pl

from privgate.io import load_frame

from .gate_checks import EVALUATION_ASSET, check_results, check_specs
from .metadata import evaluation_metadata, frame_digest, outcome_frame
from .partitions import releases_partitions
from .resources import DataLocations, GateConfigResource, HistoryResource

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
            columns=[dg.TableColumn(name, str(dtype)) for name, dtype in frame.schema.items()]),
    }
    if source is not None:
        md["source"] = dg.MetadataValue.path(str(source))
    return md


@dg.asset(group_name=GROUP, kinds={"polars", "parquet"},
          description="The real (reference) data the synthetic releases were generated from.")
def real_data(locations: DataLocations) -> dg.Output[pl.DataFrame]:
    frame = load_frame(locations.real_path, role="real")
    return dg.Output(frame, metadata=frame_metadata(frame, locations.real_path))


@dg.asset(group_name=GROUP, partitions_def=releases_partitions, kinds={"polars", "parquet"},
          description="One synthetic release (a file named <release id>.<suffix> in the watched directory).")
def synthetic_release(context: dg.AssetExecutionContext,
                      locations: DataLocations) -> dg.Output[pl.DataFrame]:
    path = locations.release_file(context.partition_key)
    frame = load_frame(path, role="synthetic")
    return dg.Output(frame, metadata=frame_metadata(frame, path))


def build_privacy_evaluation(cfg: "GateConfig") -> dg.AssetsDefinition:
    """The evaluation asset with one asset check per rule of ``cfg`` (plus ``gate_decision``).

    The checks are declared from the configuration the code location was loaded with; the run
    uses the ``gate`` resource's configuration (normally the same file). A rule the run's
    configuration does not apply is reported as passed with status ``not_applicable``; the
    ``gate_decision`` check always reflects the run's actual decision.
    """

    @dg.asset(name=EVALUATION_ASSET, group_name=GROUP, partitions_def=releases_partitions,
              check_specs=check_specs(cfg), kinds={"privgate", "parquet"},
              description=("Privacy evaluation of the release by the privgate gate: one row per "
                           "rule, verdicts as asset checks, scores as metadata, history recorded."))
    def privacy_evaluation(
        context: dg.AssetExecutionContext,
        real_data: pl.DataFrame,
        synthetic_release: pl.DataFrame,
        gate: GateConfigResource,
        history: HistoryResource,
        locations: DataLocations,
    ) -> Iterator[dg.Output | dg.AssetCheckResult]:
        from privgate.errors import PrivgateError
        from privgate.gates import run_gate

        release_id = context.partition_key
        try:
            run_cfg = gate.load()
        except PrivgateError as exc:
            # fail closed like the CLI: the gate records a blocked run naming the bad key
            context.log.error(f"gate configuration {gate.path} is invalid: {exc}")
            run_cfg = None
        fingerprint = frame_digest(synthetic_release)
        store = history.open()
        try:
            # the holdout goes in as a path: a missing or corrupt file blocks (recorded), it
            # does not crash the step
            outcome = run_gate(run_cfg if run_cfg is not None else gate.path, real_data,
                               synthetic_release, holdout=locations.holdout_path,
                               release_id=release_id, history=store,
                               dataset=gate.dataset or (run_cfg or cfg).dataset)
            html_path, json_path = _write_reports(context, outcome, store, locations)
        finally:
            store.close()
        context.log.info(
            f"privgate gate on release {release_id!r}: {outcome.decision} "
            f"(exit code {outcome.exit_code}, privgate run {outcome.run_id}, "
            f"recorded in history: {outcome.recorded})"
        )
        yield dg.Output(
            outcome_frame(outcome, fingerprint),
            metadata=evaluation_metadata(run_cfg or cfg, outcome, html_report=html_path,
                                         json_report=json_path, release_fingerprint=fingerprint),
        )
        yield from check_results(cfg, outcome)

    return privacy_evaluation


def _write_reports(context: dg.AssetExecutionContext, outcome, store,
                   locations: DataLocations) -> "tuple[Path | None, Path | None]":
    """Write the HTML and JSON reports of ``outcome``; a report that cannot be written is logged
    (the decision and the history row already stand) and its path left out of the metadata."""
    folder = locations.report_dir(outcome.dataset, outcome.release_id)
    html_path: Path | None = folder / f"{outcome.run_id}.html"
    json_path: Path | None = folder / f"{outcome.run_id}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        from privgate.render import write_html_report, write_json_report
    except Exception as exc:  # noqa: BLE001
        context.log.warning(f"reports not written: {type(exc).__name__}: {exc}")
        return None, None
    try:
        write_json_report(outcome, json_path, history=store)
    except Exception as exc:  # noqa: BLE001
        context.log.warning(f"JSON report not written: {type(exc).__name__}")
        json_path = None
    try:
        write_html_report(outcome, html_path, history=store)
    except Exception as exc:  # noqa: BLE001
        context.log.warning(f"HTML report not written: {type(exc).__name__}")
        html_path = None
    return html_path, json_path


@dg.asset(group_name=GROUP, partitions_def=releases_partitions, kinds={"parquet"},
          description=("The release copied to the publish location; materialises only when every "
                       "blocking privacy check passed."))
def published_release(
    context: dg.AssetExecutionContext,
    synthetic_release: pl.DataFrame,
    privacy_evaluation: pl.DataFrame,
    locations: DataLocations,
) -> dg.MaterializeResult:
    release_id = context.partition_key
    decisions = privacy_evaluation.get_column("decision").unique().to_list()
    if decisions != ["pass"] and decisions != ["warn"]:
        raise dg.Failure(description=(
            f"release {release_id!r} is not publishable: the gate decision is {decisions}; "
            "only pass or warn releases are published"))
    evaluated = privacy_evaluation.get_column("release_fingerprint").unique().to_list()
    current = frame_digest(synthetic_release)
    if evaluated != [current]:
        raise dg.Failure(description=(
            f"release {release_id!r} changed after it was evaluated (content digest "
            f"{current[:12]}… vs evaluated {[str(e)[:12] for e in evaluated]}); re-run the evaluation"))
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
    run_ids = privacy_evaluation.get_column("privgate_run_id").unique().to_list()
    return dg.MaterializeResult(metadata={
        "published_path": dg.MetadataValue.path(str(target)),
        "rows": dg.MetadataValue.int(synthetic_release.height),
        "columns": dg.MetadataValue.int(synthetic_release.width),
        "verdict": dg.MetadataValue.text(decisions[0]),
        "content_sha256": dg.MetadataValue.text(current),
        "privgate_run_id": dg.MetadataValue.text(str(run_ids[0]) if run_ids else ""),
    })
