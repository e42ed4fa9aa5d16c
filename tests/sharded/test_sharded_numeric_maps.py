"""The numeric maps of the label-free view applied on a sharded evaluation (a real Dask
``LocalCluster`` of three worker processes): a copy whose numeric columns were scaled and
shifted, negated or standardised is mapped back on the workers — each affine image snapped to
its nearest reference value over the whole reference column, as
:func:`privgate.numeric_maps._snap` does, from the reference partitions' values folded in one
after another — and a logged copy by its monotone map (the reference's order statistics at the
release's whole-column ranks, selected by buckets); its label-free values, intervals and gate
decision are the local ones (``close()``: 1e-9 relative; the mapped values themselves are equal
exactly)."""

from __future__ import annotations

import itertools
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
    local_cluster,
    records,
    release,
    sharded_context,
    write_folder,
)

import privgate  # noqa: E402
from privgate.baselines import transformed_copy  # noqa: E402
from privgate.context import EvaluationContext  # noqa: E402
from privgate.metrics.label_free import LABEL_FREE_METRICS  # noqa: E402
from privgate.numeric_maps import NumericMap, _snap, apply_numeric_maps  # noqa: E402
from privgate.sharded.label_free_tasks import neighbours, snapped  # noqa: E402


def _snap_from(parts: list[np.ndarray], x: np.ndarray, tol: float) -> np.ndarray:
    """The distributed snap of ``x`` against the reference column split into ``parts`` (any order)."""
    lo, hi = np.full(x.shape, -np.inf), np.full(x.shape, np.inf)
    for p in parts:
        lo_p, hi_p = neighbours(x, np.sort(p))
        lo, hi = np.maximum(lo, lo_p), np.minimum(hi, hi_p)
    tops = [np.sort(p)[-2:] for p in parts]
    top_two = np.sort(np.concatenate(tops))[-2:] if tops else np.empty(0)
    return snapped(x, lo, hi, top_two, tol)


def test_the_snap_from_partitions_is_the_snap_over_the_whole_column():
    ref = np.array([-1.0, 0.0, 1.0, 1.0, 2.0, 4.0])
    x = np.array([0.0, 0.5, 1.5, 3.0, 2.3, -1.2, 4.3, 5.0, 1.0 + 1e-12, np.nan, np.inf, -np.inf])
    # by hand, tol 0.5: an exact hit; 0.5 and 1.5 are ties (0 | 1, 1 | 2): the lower; 3.0 is 1
    # from both 2 and 4: beyond tol, kept; 2.3 → 2; below the smallest and above the largest within
    # tol: snapped; 5.0 beyond; a rounding hair; null and infinities kept
    want = np.array([0.0, 0.0, 1.0, 3.0, 2.0, -1.0, 4.0, 5.0, 1.0, np.nan, np.inf, -np.inf])
    assert np.array_equal(_snap(x, ref, 0.5), want, equal_nan=True)
    # every split of the column into partitions, in every order (the ties' two values in
    # different partitions among them): the same values
    for cuts in itertools.combinations(range(1, ref.size), 2):
        parts = np.split(ref, cuts)
        for order in itertools.permutations(parts):
            assert np.array_equal(_snap_from(list(order), x, 0.5), want, equal_nan=True), (cuts, order)
    # a smaller tolerance: the ties and 2.3 stay unsnapped, as _snap leaves them
    assert np.array_equal(_snap_from(np.split(ref, [2, 4]), x, 0.2), _snap(x, ref, 0.2), equal_nan=True)
    assert np.array_equal(_snap_from([ref[:0]], x, 0.5), _snap(x, ref[:0], 0.5), equal_nan=True)  # no reference value


def test_the_snap_from_partitions_is_the_snap_on_seeded_draws():
    rng = np.random.default_rng(5)
    pool = np.array([-3.0, -1.0, 0.0, 0.5, 1.0, 1.0, 2.0, 2.5, 4.0, 1e-9, -2e-300, -1e-300])
    for _ in range(500):
        ref = np.sort(rng.choice(pool, rng.integers(1, 9)))
        x = np.concatenate(
            [rng.choice([-5.0, -1.0, 0.25, 0.75, 1.5, 2.25, 3.0, 5.0, 1e-20, np.nan], 6), rng.normal(0, 3, 4)]
        )
        tol = float(rng.choice([0.0, 1e-7, 0.3, 0.5, 1.0]))
        parts = [p for p in np.split(ref, np.sort(rng.integers(0, ref.size + 1, 2))) if p.size]
        rng.shuffle(parts)
        assert np.array_equal(_snap_from(parts, x, tol), _snap(x, ref, tol), equal_nan=True)


def _disguised(real: pl.DataFrame, how: str) -> pl.DataFrame:
    if how == "scaled and shifted":  # ×1000 then +7
        return transformed_copy(transformed_copy(real, "scaled", seed=3), "shifted", seed=3)
    return transformed_copy(real, how, seed=3)


def test_the_mapped_release_on_the_workers_is_the_local_one(client, tmp_path):
    """Half the release copies, half fresh, income ×1000 + 7 on every record: the copies' images
    snap to the reference's values, the fresh records' (beyond the tolerance) stay as they are —
    partition by partition on the workers the values of the local apply_numeric_maps, exactly."""
    from privgate.sharded.label_free import _OnCluster

    real, holdout = records(900, 1), records(900, 3)
    synth = release(real, 900, 2, copies=0.5).with_columns(pl.col("income") * 1000 + 7, -pl.col("age"))
    local = EvaluationContext(real, synth, holdout=holdout)
    reference = pl.concat([local.real, local.holdout])
    maps = {"income": NumericMap("affine", 1e-3, -7e-3), "age": NumericMap("affine", -1.0, 0.0)}
    want = apply_numeric_maps(local.synthetic, reference, maps)
    cl = _OnCluster(
        sharded_context(client, folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout}))
    )
    cl.map_release(maps)
    got = pl.concat(
        [
            pl.DataFrame({c: v for c, v in part.items()}).select(list(maps))
            for part in client.gather([cl.mapped[p.start] for p, _ in cl.parts["release"]])
        ]
    )
    for c in maps:
        w = want.get_column(c).to_numpy()
        assert np.array_equal(got.get_column(c).to_numpy(), w, equal_nan=True), c
        snapped_ = np.isin(w, reference.get_column(c).to_numpy())
        assert 0 < snapped_.sum() < w.size or c == "age", c  # income: copies snapped, fresh records not
    # the release's summaries are the mapped release's: its rows as the local mapped frame's
    rows = np.array([0, 5, 449, 450, 899])
    assert cl.rows("release", rows, ["income", "age"]).equals(want[rows].select("income", "age"))


def test_a_monotone_map_on_the_workers_is_the_local_one(client, tmp_path):
    """Half the release copies: income logged (a null in some records), age negated, both mapped
    by monotone maps (age decreasing) and a constant column by an affine one — the reference's
    order statistics at the whole-release ranks, partition by partition on the workers (small row
    groups: many buckets and release partitions), the values of the local apply_numeric_maps."""
    from privgate.sharded.label_free import _OnCluster

    real, holdout = records(900, 1), records(700, 3)
    synth = release(real, 1000, 2, copies=0.5).with_columns(pl.col("income").log(), -pl.col("age"))
    synth = synth.with_columns(pl.when(pl.col("age") < -80).then(None).otherwise(pl.col("income")).alias("income"))
    local = EvaluationContext(real, synth, holdout=holdout)
    reference = pl.concat([local.real, local.holdout])
    maps = {
        "income": NumericMap("monotone"),
        "age": NumericMap("monotone", decreasing=True),
        "unit": NumericMap("affine", 2.0, -0.1),
    }
    want = apply_numeric_maps(local.synthetic, reference, maps)
    folders = {
        r: str(write_folder(f, tmp_path / r, files=3, row_group=150))
        for r, f in {"real": real, "synthetic": synth, "holdout": holdout}.items()
    }
    cl = _OnCluster(sharded_context(client, folders))
    assert len(cl.parts["release"]) > 3 and len(cl.parts["reference"]) > 6
    cl.map_release(maps)
    got = pl.concat(
        [
            pl.DataFrame(part).select(list(maps))
            for part in client.gather([cl.mapped[p.start] for p, _ in cl.parts["release"]])
        ]
    )
    for c in maps:
        w = want.get_column(c).cast(pl.Float64).fill_null(np.nan).to_numpy()
        assert np.array_equal(got.get_column(c).to_numpy(), w, equal_nan=True), c
    assert np.isnan(got.get_column("income").to_numpy()).sum() > 0  # the nulls stay null
    assert cl.rows("release", np.arange(0, 1000, 97), list(maps)).equals(
        want[np.arange(0, 1000, 97)].select(list(maps))
    )


@pytest.mark.parametrize("how", ["scaled and shifted", "negated", "standardised", "log"])
def test_a_rescaled_copy_gets_the_local_label_free_numbers(client, tmp_path, adult, how):
    real, holdout = adult
    synth = _disguised(real, how)
    metrics = [*LABEL_FREE_METRICS, "memorisation", "common_rows", "authenticity"]
    local = privgate.evaluate(real, synth, metrics, holdout=holdout, baseline=True, on_error="record")
    from privgate.sharded.evaluate import evaluate_sharded

    folders = folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout})
    remote = evaluate_sharded(
        folders["real"], folders["synthetic"], metrics, holdout=folders["holdout"], executor=client, baseline=True
    )
    assert_same_report(local, remote)
    view = remote.results["label_free_copies"].details["label_free"]
    assert view["identity"] is False and view["mapped_numeric_columns"]
    assert {m["kind"] for m in view["numeric_maps"].values()} == {"monotone" if how == "log" else "affine"}
    # the copy is seen: most real records memorised in the view, none as the values are
    assert remote.results["label_free_memorisation"].value > 0.8 and remote.results["memorisation"].value == 0.0


@pytest.mark.parametrize("how", ["scaled and shifted", "negated", "standardised"])
def test_a_sharded_gate_decides_a_rescaled_copy_as_locally(client, tmp_path, adult, how):
    real, holdout = adult
    synth = _disguised(real, how)
    local, remote = label_free_gates(client, tmp_path, real, synth, holdout)
    assert local.exit_code == 2  # the label-free view sees the copy and blocks it
    assert remote.exit_code == local.exit_code
    assert [(c.metric, c.rule, c.verdict) for c in remote.checks] == [
        (c.metric, c.rule, c.verdict) for c in local.checks
    ]
    gated = [m for m in LABEL_FREE_METRICS if m in local.report.results]  # those the gate computes with a holdout
    assert gated and [m for m in LABEL_FREE_METRICS if m in remote.report.results] == gated
    for m in gated:
        a, b = local.report.results[m], remote.report.results[m]
        assert close((b.value, b.ci, b.baseline, b.p_value), (a.value, a.ci, a.baseline, a.p_value)), m


def _read_mapped(values):
    """On a worker: one partition's mapped columns, as a task reading the view receives them (its
    dependency)."""
    return values


def test_a_partition_s_mapped_columns_are_read_again_after_their_worker_is_lost(tmp_path):
    """The worker holding a release partition's mapped columns is killed: a task reading that
    partition in the view (from another worker), which takes the partition's future as a
    dependency, gets the same values — computed again by the scheduler from the partitions, since
    the caller holds their future."""
    import os
    import signal

    from privgate.sharded.label_free import _OnCluster

    real, holdout = records(600, 1), records(600, 3)
    synth = release(real, 600, 2, copies=0.5).with_columns(pl.col("income") * 1000 + 7)
    maps = {"income": NumericMap("affine", 1e-3, -7e-3)}
    with local_cluster() as (_, c):
        folders = folders_of(tmp_path, {"real": real, "synthetic": synth, "holdout": holdout})
        cl = _OnCluster(sharded_context(c, folders))
        cl.map_release(maps)
        fut = cl.mapped[cl.parts["release"][0][0].start]
        want = fut.result()["income"]
        holder = next(iter(c.who_has([fut])[fut.key]))
        os.kill(c.run(os.getpid)[holder], signal.SIGKILL)
        got = c.submit(_read_mapped, fut, pure=False).result(timeout=120)
        assert np.array_equal(got["income"], want, equal_nan=True)
