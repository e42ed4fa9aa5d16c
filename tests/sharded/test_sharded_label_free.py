"""The label-free metrics on a sharded evaluation (a real Dask ``LocalCluster`` of three worker
processes): the correspondence is learnt from the partitions as the local code learns it — the
identity on an honest release and on a plain copy, whose label-free results then equal the local
ones (values, intervals, baselines, details); a relabelled copy is recoded on the workers, and a
rescaled or logged one mapped back (tests/sharded/test_sharded_numeric_maps.py), with the local
numbers. The numeric maps a disguised copy shows are learnt on the cluster
exactly as locally."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sharded_data import (  # noqa: E402
    assert_same_report,
    close,
    folders_of,
    label_free_gates,
    records,
    release,
    sharded_context,
)

import privgate  # noqa: E402
from privgate.baselines import transformed_copy  # noqa: E402
from privgate.context import EvaluationContext  # noqa: E402
from privgate.label_free import _anchor_rows  # noqa: E402
from privgate.metrics.label_free import LABEL_FREE_METRICS, correspondence, view_status  # noqa: E402
from privgate.numeric_maps import ForeignScaleError, learn_numeric_maps  # noqa: E402
from privgate.sharded.evaluate import evaluate_sharded  # noqa: E402


def _both(client, tmp: Path, frames: dict[str, pl.DataFrame]):
    """(local report, sharded report) of the label-free metrics (with holdout baselines when there
    is a holdout) and the plain metrics they equal on the identity."""
    metrics = [*LABEL_FREE_METRICS, "memorisation", "common_rows", "authenticity"]
    if "holdout" not in frames:
        metrics = [m for m in metrics if "memorisation" not in m]
    holdout = frames.get("holdout")
    local = privgate.evaluate(
        frames["real"], frames["synthetic"], metrics, holdout=holdout, baseline=holdout is not None, on_error="record"
    )
    folders = folders_of(tmp, frames)
    remote = evaluate_sharded(
        folders["real"],
        folders["synthetic"],
        metrics,
        holdout=folders.get("holdout"),
        executor=client,
        baseline=holdout is not None,
    )
    return local, remote


def test_an_honest_release_with_copies_gets_the_identity_and_the_local_numbers(client, tmp_path):
    real, holdout = records(2000, 1), records(2000, 3)
    frames = {"real": real, "synthetic": release(real, 2000, 2, copies=0.02), "holdout": holdout}
    local, remote = _both(client, tmp_path, frames)
    assert_same_report(local, remote)
    view = remote.results["label_free_copies"].details["label_free"]
    assert view["identity"] is True and view["anchored_release_records"] == 2000
    for lf, plain in (("label_free_memorisation", "memorisation"), ("label_free_copies", "common_rows")):
        assert remote.results[lf].value == remote.results[plain].value
    assert remote.results["label_free_copies"].value == pytest.approx(0.02)


def test_a_plain_copy_of_adult_gets_the_identity_and_the_local_numbers(client, tmp_path, adult):
    real, _ = adult
    local, remote = _both(client, tmp_path, {"real": real, "synthetic": real})
    assert_same_report(local, remote)
    assert remote.results["label_free_copies"].value == 1.0
    assert remote.results["label_free_copies"].details["label_free"]["identity"] is True


def test_view_status_on_a_sharded_context_is_the_local_one(client, tmp_path):
    real, holdout = records(1500, 1), records(1500, 3)
    synth = release(real, 2600, 2, copies=0.05)  # above ANCHOR_ROWS: a seeded sample is anchored
    ctx = sharded_context(client, folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout}))
    local = EvaluationContext(real, synth, holdout=holdout)
    assert view_status(ctx) == view_status(local)
    assert correspondence(ctx).describe(ctx.schema) == correspondence(local).describe(local.schema)
    # per column the classes learnt from the anchors (levels, classes, unjoined levels): the same anchors
    assert correspondence(ctx).columns == correspondence(local).columns
    base = correspondence(ctx.holdout_baseline())  # the main view's codes, nothing learnt again
    assert base.identity and base.anchored == 0


@pytest.mark.parametrize("how", ["scaled", "negated", "log"])
def test_numeric_maps_of_a_disguised_copy_are_learnt_as_locally(client, tmp_path, adult, how):
    """The maps are then applied on the workers (tests/sharded/test_sharded_numeric_maps.py)."""
    real, holdout = adult
    synth = transformed_copy(real, how, seed=3)
    ctx = sharded_context(client, folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout}))
    local = EvaluationContext(real, synth, holdout=holdout)
    reference = pl.concat([local.real, local.holdout])
    rows = _anchor_rows(local, local.synthetic)
    want = learn_numeric_maps(local, local.synthetic, reference, rows, name="maps")
    from privgate.sharded.label_free import _numeric_maps, _OnCluster

    cl = _OnCluster(ctx)
    got = _numeric_maps(cl, rows, cl.rows("release", rows, list(ctx.schema.columns)), "maps")
    assert want, how  # the local view maps the disguised columns
    assert set(got) == set(want)
    for c, m in want.items():
        g = got[c]
        assert (g.kind, g.decreasing, g.support, g.anchored) == (m.kind, m.decreasing, m.support, m.anchored), c
        assert close((g.a, g.b), (m.a, m.b)), c
    assert view_status(ctx) == view_status(local)


def test_the_anchors_level_tables_of_a_relabelled_copy_are_the_local_ones(client, tmp_path, adult):
    from privgate.label_free import _anchor_tables
    from privgate.sharded import label_free as sharded_lf

    real, holdout = adult
    synth = transformed_copy(real, None, labels="permuted", seed=3)
    local = EvaluationContext(real, synth, holdout=holdout)
    assert not correspondence(local).identity  # locally: recoded
    folders = folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout})
    # the searches in the label-invariant views find the local anchors
    rows = _anchor_rows(local, local.synthetic)
    reference = pl.concat([local.real, local.holdout])
    want = _anchor_tables(
        local, local.synthetic[rows], reference, local.schema, list(local.schema.categorical), name="t"
    )
    ctx = sharded_context(client, folders)
    cl = sharded_lf._OnCluster(ctx)
    got = sharded_lf._anchor_tables(cl, cl.rows("release", rows, list(local.schema.columns)), local.schema, "t")
    for c, tables in want.items():
        assert [t.sort("s", "r").rows() for t in got[c]] == [t.sort("s", "r").rows() for t in tables], c
    # and the classes learnt from them: the same recoded columns, levels and classes
    assert correspondence(ctx).describe(ctx.schema) == correspondence(local).describe(local.schema)
    assert view_status(ctx) == view_status(local) and view_status(ctx)["labels_recoded"] > 0


@pytest.mark.parametrize("data", ["adult", "partial"])
def test_a_relabelled_copy_is_recoded_on_the_workers_with_the_local_numbers(client, tmp_path, adult, data):
    """Adult copied with every column's labels permuted; or 75 % of a release copies with one
    column's labels permuted (a renaming would not share the real codebook: refused locally too)."""
    if data == "adult":
        real, holdout = adult
        synth = transformed_copy(real, None, labels="permuted", seed=3)
    else:
        real, holdout = records(2000, 1), records(2000, 3)
        perm = {f"r{i}": f"r{(i + 1) % 12}" for i in range(12)}
        synth = pl.concat([real[:1500], release(real, 500, 2, copies=0.0)]).with_columns(pl.col("region").replace(perm))
    local, remote = _both(client, tmp_path, {"real": real, "synthetic": synth, "holdout": holdout})
    assert_same_report(local, remote)
    view = remote.results["label_free_copies"].details["label_free"]
    assert view["identity"] is False and view["recoded_columns"]
    assert remote.results["label_free_copies"].value > 0.5 > remote.results["common_rows"].value


def test_records_disguised_one_by_one_are_found_and_replaced_on_the_workers(client, tmp_path):
    """5 % of the release are copies with two columns' labels permuted, the rest fresh: the
    whole-release correspondence is the identity, the records are found one by one (the shuffle
    test run as locally) and held in the view as their sources — the local numbers."""
    real, holdout = records(2000, 1), records(2000, 3)
    perm = {f"r{i}": f"r{(i + 1) % 12}" for i in range(12)}
    disguised = real[:100].with_columns(pl.col("region").replace(perm), pl.col("plan").replace({"a": "b", "b": "c"}))
    synth = pl.concat([release(real, 1900, 2, copies=0.0), disguised])
    local_corr = correspondence(EvaluationContext(real, synth, holdout=holdout))
    assert local_corr.records is not None and local_corr.remapped == ()  # locally: found record by record
    local, remote = _both(client, tmp_path, {"real": real, "synthetic": synth, "holdout": holdout})
    assert_same_report(local, remote)
    view = remote.results["label_free_copies"].details["label_free"]
    assert view["disguised_records"]["records"] == local_corr.records.rows.size == 100
    assert remote.results["label_free_copies"].value == pytest.approx(0.05)


def test_a_foreign_scale_is_refused_as_locally(client, tmp_path):
    real, holdout = records(1500, 1), records(1500, 3)
    synth = release(real, 1500, 2, copies=0.5).with_columns(pl.col("age") * 1000)
    with pytest.raises(ForeignScaleError) as local:
        correspondence(EvaluationContext(real, synth, holdout=holdout))
    ctx = sharded_context(client, folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout}))
    with pytest.raises(ForeignScaleError) as remote:
        correspondence(ctx)
    assert str(remote.value) == str(local.value) and remote.value.column == "age"
    assert view_status(ctx)["foreign_column_position"] == list(ctx.schema.columns).index("age")


@pytest.mark.parametrize(("numeric", "labels"), [(None, "permuted"), ("log", None)])
def test_a_sharded_gate_decides_a_disguised_copy_as_locally(client, tmp_path, adult, numeric, labels):
    """Relabelled: recoded on the workers; logged: mapped back on the workers (a monotone map) —
    the local decision (rescaled copies: tests/sharded/test_sharded_numeric_maps.py)."""
    real, holdout = adult
    synth = transformed_copy(real, numeric, labels=labels, seed=3)
    local, remote = label_free_gates(client, tmp_path, real, synth, holdout)
    assert local.exit_code == 2  # locally: the label-free view sees the copy and blocks
    assert np.isclose(remote.report.results["common_rows"].value, local.report.results["common_rows"].value)
    assert remote.exit_code == 2
    assert [(c.metric, c.rule, c.verdict) for c in remote.checks] == [
        (c.metric, c.rule, c.verdict) for c in local.checks
    ]
