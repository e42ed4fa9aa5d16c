"""A numeric column off the real scale only in its tails on a sharded evaluation (a real Dask
``LocalCluster`` of three worker processes): the far records' own maps (``privgate.tail_maps``)
learnt from the partitions and applied on the workers, a column still off left out of the view,
or refused when the rest tells too few real records apart — the local correspondence (the same
far records, maps, left-out columns and mapped values, exactly) and the local label-free values,
intervals and gate decision (``close()``: 1e-9 relative)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sharded_data import assert_same_report, close, folders_of, label_free_gates, records, sharded_context  # noqa: E402

import privgate  # noqa: E402
from privgate.baselines import transformed_copy  # noqa: E402
from privgate.context import EvaluationContext  # noqa: E402
from privgate.metrics.label_free import LABEL_FREE_METRICS, correspondence, reference  # noqa: E402
from privgate.numeric_maps import ForeignScaleError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _wide_domain(real: pl.DataFrame, n: int, seed: int, share: float) -> pl.DataFrame:
    """An honest release: fresh records whose ``age`` is drawn, on ``share`` of them (every k-th),
    from a published domain far wider than the real range (500 to 5,000 years)."""
    fresh = records(n, seed).drop("note")
    far = np.zeros(n, dtype=bool)
    far[:: round(1 / share)] = True
    wide = np.random.default_rng(seed + 1).uniform(500.0, 5000.0, n).round(0)
    return fresh.with_columns(pl.when(pl.Series(far)).then(pl.Series(wide)).otherwise(pl.col("age")).alias("age"))


def _scaled_copies(real: pl.DataFrame, k: int, column: str) -> pl.DataFrame:
    """Other people's records (the bundled Adult holdout sample) with ``k`` of the release copies of
    real records whose ``column`` was ×1000."""
    from privgate.data import load_example

    take = np.sort(np.random.default_rng(7).choice(real.height, k, replace=False))
    copies = real[take].with_columns(pl.col(column) * 1000.0)
    return pl.concat([load_example("adult_holdout").head(real.height - k), copies], how="vertical_relaxed")


def _local_and_sharded(client, tmp_path, real, synth, holdout):
    """(local correspondence, its local context, sharded correspondence, sharded context)."""
    local_ctx = EvaluationContext(real, synth, holdout=holdout)
    local = correspondence(local_ctx)
    ctx = sharded_context(client, folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout}))
    return local, local_ctx, correspondence(ctx, "label_free_copies"), ctx


def _assert_same_view(local, local_ctx, remote, ctx, client) -> None:
    """The same correspondence: description, left-out columns, far records, maps (to 1e-9) and,
    when the release is mapped, the mapped numeric columns of every release record, exactly."""
    assert remote.describe(ctx.schema) == local.describe(local_ctx.schema)
    assert remote.left_out == local.left_out
    assert (remote.tail_maps is None) == (local.tail_maps is None)
    if local.tail_maps is None:
        return
    assert np.array_equal(remote.tail_maps.rows, local.tail_maps.rows)
    assert set(remote.tail_maps.maps) == set(local.tail_maps.maps)
    for c, m in local.tail_maps.maps.items():
        r = remote.tail_maps.maps[c]
        assert (r.kind, r.support, r.anchored) == (m.kind, m.support, m.anchored)
        assert close((r.a, r.b), (m.a, m.b)), c
    want = local.release_view(local_ctx.synthetic, reference(local_ctx))
    futures = ctx.derived["label_free_mapped"]
    got = pl.concat([pl.DataFrame(v) for v in client.gather([futures[s] for s in sorted(futures)])])
    for c in got.columns:
        w = want.get_column(c).cast(pl.Float64).fill_null(np.nan).to_numpy()
        assert np.array_equal(got.get_column(c).to_numpy(), w, equal_nan=True), c


def _evaluations(client, tmp_path, real, synth, holdout):
    from privgate.sharded.evaluate import evaluate_sharded

    metrics = [*LABEL_FREE_METRICS, "common_rows"]
    local = privgate.evaluate(real, synth, metrics, holdout=holdout, baseline=True, on_error="record")
    folders = folders_of(tmp_path / "eval", {"real": real, "synthetic": synth, "holdout": holdout})
    remote = evaluate_sharded(
        folders["real"], folders["synthetic"], metrics, holdout=folders["holdout"], executor=client, baseline=True
    )
    return local, remote


def test_an_honest_wide_domain_column_is_left_out_as_locally(client, tmp_path):
    """8 % of an honest release's ages drawn from 500–5,000 (far beyond the real 18–89): their
    anchors support no map, so age is left out of the view; the cluster leaves age out too and
    scores the rest as the local gate does."""
    real, holdout = records(900, 1).drop("note"), records(900, 3).drop("note")
    synth = _wide_domain(real, 900, 2, 0.08)
    local, local_ctx, remote, ctx = _local_and_sharded(client, tmp_path, real, synth, holdout)
    assert local.left_out == ("age",) and local.tail_maps is None
    _assert_same_view(local, local_ctx, remote, ctx, client)
    view = local.describe(local_ctx.schema)
    assert view["left_out_columns"] == [0] and view["far_records"] is None
    lr, rr = _evaluations(client, tmp_path, real, synth, holdout)
    assert_same_report(lr, rr)
    # an honest release: no copy in the view either, and the gate passes it on a cluster as locally
    assert rr.results["label_free_copies"].value == 0.0
    lg, rg = label_free_gates(client, tmp_path / "gate", real, synth, holdout)
    assert lg.exit_code == 0 and rg.exit_code == lg.exit_code
    assert [(c.metric, c.rule, c.verdict) for c in rg.checks] == [(c.metric, c.rule, c.verdict) for c in lg.checks]


def test_copies_scaled_in_one_column_are_mapped_back_as_locally(client, tmp_path, adult):
    """3 % of the release (24 of 800) copies of real records with age ×1000: their own map brings
    them back (24 far records, an affine map of slope 1/1000), snapped to the real ages on the
    workers — the local mapped values exactly — and the copies are counted as the local gate
    counts them."""
    real, holdout = adult
    synth = _scaled_copies(real, 24, "age")
    local, local_ctx, remote, ctx = _local_and_sharded(client, tmp_path, real, synth, holdout)
    assert local.tail_maps is not None and local.left_out == () and set(local.tail_maps.maps) == {"age"}
    assert local.tail_maps.rows.size == 24 and local.tail_maps.maps["age"].a == pytest.approx(1e-3)
    _assert_same_view(local, local_ctx, remote, ctx, client)
    lr, rr = _evaluations(client, tmp_path, real, synth, holdout)
    assert_same_report(lr, rr)
    assert rr.results["common_rows"].value == 0.0
    assert rr.results["label_free_copies"].value == pytest.approx(24 / 800)


def test_far_records_left_after_a_whole_column_map_are_mapped_as_locally(client, tmp_path, adult):
    """Every numeric column ×1000 and one of them ×1000 again on a tenth of the records: the
    whole-column maps bring the column back but those records stay far beyond the real range;
    their own map (applied on top of the column's, on the workers) brings them back as locally,
    and the gate decides the copy as the local gate does."""
    real, holdout = adult
    col = real.select(pl.selectors.numeric()).columns[0]
    synth = transformed_copy(real, "scaled", seed=3)
    far = np.zeros(synth.height, dtype=bool)
    far[::10] = True
    synth = synth.with_columns(pl.when(pl.Series(far)).then(pl.col(col) * 1000).otherwise(pl.col(col)).alias(col))
    local, local_ctx, remote, ctx = _local_and_sharded(client, tmp_path, real, synth, holdout)
    assert local.tail_maps is not None and col in local.tail_maps.maps and local.numeric_maps
    _assert_same_view(local, local_ctx, remote, ctx, client)
    lg, rg = label_free_gates(client, tmp_path / "gate", real, synth, holdout)
    assert lg.exit_code == 2 and rg.exit_code == lg.exit_code
    assert [(c.metric, c.rule, c.verdict) for c in rg.checks] == [(c.metric, c.rule, c.verdict) for c in lg.checks]
    for m in (m for m in LABEL_FREE_METRICS if m in lg.report.results):
        a, b = lg.report.results[m], rg.report.results[m]
        assert close((b.value, b.ci, b.baseline, b.p_value), (a.value, a.ci, a.baseline, a.p_value)), m


def test_a_left_out_column_that_leaves_no_identifying_records_is_refused_as_locally(client, tmp_path):
    """Records told apart only by income: with income off the scale in its tails (5 % of it far
    beyond the real range), the other columns (an age of 72 values, sex) tell fewer than half the
    real records apart — refused by name with the local message (counts only), on the cluster too."""
    real = records(900, 1).select("age", "income", "sex")
    holdout = records(900, 3).select("age", "income", "sex")
    synth = records(900, 2).select("age", "income", "sex")
    far = np.zeros(900)
    far[::20] = 1e7
    synth = synth.with_columns(pl.col("income") + pl.Series(far))
    with pytest.raises(ForeignScaleError) as local:
        correspondence(EvaluationContext(real, synth, holdout=holdout))
    ctx = sharded_context(client, folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout}))
    with pytest.raises(ForeignScaleError) as remote:
        correspondence(ctx, "label_free_copies")
    assert str(remote.value) == str(local.value) and remote.value.column == local.value.column == "income"
    # by hand: age × sex has at most 72 × 2 = 144 groups, so at most 144 of the 1,800 records are unique
    assert "told apart by the other 2 column(s)" in str(local.value) and "of the 1800 real records" in str(local.value)


def test_a_view_s_partition_is_read_with_the_mapped_columns_given_to_its_task_or_not_at_all(tmp_path):
    """In a label-free view whose release has mapped columns, a task reads a release partition with
    the mapped values it took as a dependency (those values, a NaN a null); without them it fails
    rather than read the values as they are. A reference partition is read as it is."""
    from sharded_data import write_folder

    from privgate.schema import infer_schema
    from privgate.sharded.encode import Inputs, MappedColumns, read_rows
    from privgate.sharded.partitions import list_partitions
    from privgate.spaces import SpaceFit

    frame = records(6, 1).select("age", "income")
    parts, shape = list_partitions(str(write_folder(frame, tmp_path / "synthetic", files=1)), "synthetic")
    schema = infer_schema({"synthetic": shape}, check_values=False)
    inputs = Inputs(
        parts={"synthetic": parts, "real": parts},
        schema=schema,
        fit=SpaceFit(stats={}, levels={}),
        coded_above=1000,
        mapped={"synthetic": MappedColumns({0: "key"})},
    )
    income = np.array([1.0, 2.0, np.nan, 4.0, -0.0, 6.0])
    got, ids = read_rows(inputs, parts[0], mapped={"income": income})
    assert ids.tolist() == list(range(6))
    assert got.get_column("income").to_list() == [1.0, 2.0, None, 4.0, 0.0, 6.0]
    assert got.get_column("age").equals(frame.get_column("age"))
    kept, _ = read_rows(inputs, parts[0], np.array([1, 4]), mapped={"income": income})
    assert kept.get_column("income").to_list() == [2.0, 0.0]
    with pytest.raises(RuntimeError, match="mapped columns of the synthetic partition at record 0 were not given"):
        read_rows(inputs, parts[0])
    real_part = type(parts[0])("real", parts[0].path, 0, 0, 6)
    assert read_rows(inputs, real_part)[0].get_column("income").equals(frame.get_column("income"))
