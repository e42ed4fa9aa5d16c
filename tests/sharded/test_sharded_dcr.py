"""dcr on a real Dask ``LocalCluster`` of three worker processes: the FAMD axes fitted from the real
partitions' R factors, the jackknife's refits from their Gram matrices and the searches made on
the workers give the local metric's value, raw value, interval, holdout baseline and per-record
terms — with every real record refitted (n ≤ 2,000), with a seeded sample of refit queries
(n > 2,000), on a seeded sample of real records (no refit) and with coded columns (the Lanczos
fit) — and a coded FAMD input wider than its records is refused, naming why; and without a cluster, the FAMD fit merged from partitions is
the whole real frame's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

distributed = pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sharded_data import KillAfter, close, local_cluster, records, release, write_folder  # noqa: E402

from privgate.evaluation import evaluate  # noqa: E402
from privgate.options import RunOptions  # noqa: E402
from privgate.sharded.evaluate import evaluate_sharded  # noqa: E402
from privgate.spaces import famd_space  # noqa: E402

#: sharded vs local: the fit's moments are merged from partitions and the axes come from a TSQR of
#: the partitions' R factors and an eigendecomposition of summed Gram matrices — the local fit's
#: factorisations by blocks, equal to rounding (measured: ≤ 4e-13 relative up to 120,000 records)
TOL = 1e-9
FIELDS = ("value", "raw", "ci", "baseline", "baseline_ci", "excess", "excess_ci")


@pytest.fixture(scope="module")
def cluster():
    with local_cluster() as (lc, c):
        yield lc, c


@pytest.fixture(scope="module")
def client(cluster):
    return cluster[1]


def _inputs(tmp: Path, n: int) -> dict:
    real, holdout = records(n, 1), records(n, 3)
    synth = release(real, n, 2, copies=0.02)
    frames = {"real": real, "synthetic": synth, "holdout": holdout}
    folders = {r: str(write_folder(f, tmp / r, files=4)) for r, f in frames.items()}
    return {"frames": frames, "folders": folders}


def _both(data: dict, client, options: RunOptions | None = None):
    f, d = data["frames"], data["folders"]
    local = evaluate(f["real"], f["synthetic"], ["dcr"], holdout=f["holdout"], baseline=True, options=options)
    remote = evaluate_sharded(
        d["real"], d["synthetic"], ["dcr"], holdout=d["holdout"], executor=client, baseline=True, options=options
    )
    return local, remote


def _assert_equal(local, remote, fit: str = "TSQR") -> None:
    assert remote.errors == {}
    mine, theirs = remote.results["dcr"], local.results["dcr"]
    assert {
        f: (getattr(mine, f), getattr(theirs, f)) for f in FIELDS if not close(getattr(mine, f), getattr(theirs, f))
    } == {}
    assert mine.per_record.shape == theirs.per_record.shape
    np.testing.assert_allclose(mine.per_record, theirs.per_record, rtol=TOL, atol=0)
    famd = {k: v for k, v in mine.details["famd"].items() if k != "fit"}
    assert famd.keys() == {k for k in theirs.details["famd"] if k != "fit"}
    assert close(famd["explained_variance_ratio"], theirs.details["famd"]["explained_variance_ratio"])
    assert mine.details["distance"].keys() == theirs.details["distance"].keys()
    assert fit in mine.details["famd"]["fit"] and "sharded" in mine.details["famd"]["fit"]


def test_dcr_every_record_refitted_equals_the_local_metric(tmp_path, client):
    data = _inputs(tmp_path, 1500)  # ≤ DCR_REFIT_QUERIES: every real record searched in each refit
    local, remote = _both(data, client)
    assert local.results["dcr"].ci is not None and "refitted" in local.results["dcr"].details["ci_method"]
    _assert_equal(local, remote)


def test_dcr_with_sampled_refit_queries_and_with_sampled_real_records_equals_the_local_metric(tmp_path, client):
    data = _inputs(tmp_path, 2600)  # > DCR_REFIT_QUERIES: a seeded sample of refit queries
    _assert_equal(*_both(data, client))
    # a sample of real records: the interval is the sample's mean interval, the axes held fixed
    local, remote = _both(data, client, RunOptions(sample_real=900))
    assert local.results["dcr"].details["sampled"]["n"] == 900
    _assert_equal(local, remote)


def test_dcr_of_more_famd_inputs_than_records_equals_the_local_metric(tmp_path, client):
    # p > n: the local refit takes the axes from the records' n × n Gram matrix, the sharded one
    # from the summed p × p Gram matrices — the same axes
    rng = np.random.default_rng(5)

    def frame(n: int) -> pl.DataFrame:
        cols = {f"c{j}": rng.choice([f"l{i}" for i in range(90)], n) for j in range(3)}
        return pl.DataFrame({**cols, "x": rng.normal(size=n)})

    frames = {"real": frame(160), "synthetic": frame(150), "holdout": frame(160)}
    folders = {r: str(write_folder(f, tmp_path / r, files=3)) for r, f in frames.items()}
    local, remote = _both({"frames": frames, "folders": folders}, client)
    assert local.results["dcr"].details["famd"]["n_input_features"] > 160
    _assert_equal(local, remote)


def test_dcr_of_a_coded_famd_input_equals_the_local_lanczos_fit(tmp_path, client, monkeypatch):
    import privgate.spaces

    # region's 12 levels above the threshold: every categorical column coded, the axes and each
    # group's refit found by the Lanczos iteration, locally on the operator, sharded with its
    # products summed over the partitions
    monkeypatch.setattr(privgate.spaces, "HIGH_CARDINALITY_LEVELS", 5)
    local, remote = _both(_inputs(tmp_path, 700), client)
    famd = local.results["dcr"].details["famd"]
    assert famd["coded_columns"] == {"region": 12} and "Lanczos" in famd["fit"]
    _assert_equal(local, remote, fit="Lanczos")
    assert remote.results["dcr"].details["famd"]["coded_columns"] == {"region": 12}
    held = client.run(lambda: len(__import__("privgate.sharded.famd_lanczos").sharded.famd_lanczos._HELD))
    assert set(held.values()) == {0}  # every worker dropped the partitions' inputs it held


def test_a_worker_killed_mid_lanczos_fit_changes_nothing(tmp_path, cluster, monkeypatch):
    from distributed.diagnostics.plugin import SchedulerPlugin

    import privgate.spaces

    lc, client = cluster
    monkeypatch.setattr(privgate.spaces, "HIGH_CARDINALITY_LEVELS", 5)
    data = _inputs(tmp_path, 500)
    killer = type("Killer", (KillAfter, SchedulerPlugin), {})(
        client.run(os.getpid), after=60, prefixes=("product_task",)
    )
    lc.scheduler.add_plugin(killer, name="privgate-test-lanczos-killer")
    try:
        local, remote = _both(data, client)
    finally:
        lc.scheduler.remove_plugin(name="privgate-test-lanczos-killer")
    assert killer.killed is not None and killer.killed not in client.scheduler_info(n_workers=-1)["workers"]
    _assert_equal(local, remote, fit="Lanczos")


def test_a_cancelled_lanczos_round_is_submitted_again(tmp_path, client, monkeypatch):
    """A round of Lanczos products the scheduler cancels (a result it needed lost with a worker)
    is submitted once more, the encoder sent again: the numbers are the local ones."""
    from concurrent.futures import CancelledError

    import privgate.sharded.famd_lanczos as famd_lanczos
    import privgate.spaces

    monkeypatch.setattr(privgate.spaces, "HIGH_CARDINALITY_LEVELS", 5)
    original, calls = famd_lanczos._Rounds._round, {"n": 0, "cancelled": 0}

    def cancelled_once(self, fn, *args):
        calls["n"] += 1
        if calls["n"] == 5:
            calls["cancelled"] += 1
            raise CancelledError("lost dependencies")
        return original(self, fn, *args)

    monkeypatch.setattr(famd_lanczos._Rounds, "_round", cancelled_once)
    local, remote = _both(_inputs(tmp_path, 500), client)
    assert calls["cancelled"] == 1 and calls["n"] > 5
    _assert_equal(local, remote, fit="Lanczos")


def test_a_coded_famd_input_wider_than_its_records_is_refused_naming_why(tmp_path, client, monkeypatch):
    import privgate.spaces

    # a local fit iterates on Z Zᵀ here, whose vectors are over records: not sharded
    monkeypatch.setattr(privgate.spaces, "HIGH_CARDINALITY_LEVELS", 5)
    rng = np.random.default_rng(3)
    frames = {
        r: pl.DataFrame(
            {**{f"c{j}": rng.choice([f"l{i}" for i in range(200)], n) for j in range(3)}, "x": rng.normal(size=n)}
        )
        for r, n in (("real", 150), ("synthetic", 120))
    }
    folders = {r: str(write_folder(f, tmp_path / r, files=2)) for r, f in frames.items()}
    rep = evaluate_sharded(folders["real"], folders["synthetic"], ["dcr"], executor=client)
    assert "dcr" not in rep.results
    assert "features and 150 records is fitted over its records" in rep.errors["dcr"]


def test_a_constant_column_adds_nothing_to_the_famd_projection():
    # a constant 0.1 has a float mean a few ulps off and a float std of ~1e-17: standardised with
    # it, the column would be a constant of order 1 in the FAMD input (its std is 0: fitted_std)
    real = records(500, 1).drop("note")
    other = records(300, 2).drop("note")
    from privgate.schema import infer_schema

    schema = infer_schema({"real": real, "synthetic": other})
    with_unit = famd_space({"real": real, "synthetic": other}, schema)
    without = famd_space(
        {"real": real.drop("unit"), "synthetic": other.drop("unit")},
        schema.subset([c for c in schema.columns if c != "unit"]),
    )
    for role in ("real", "synthetic"):
        np.testing.assert_allclose(np.abs(with_unit[role]), np.abs(without[role]), rtol=1e-12, atol=1e-12)
    assert isinstance(real, pl.DataFrame)


def test_the_famd_fit_merged_from_partitions_is_the_whole_real_frames(tmp_path):
    # without a cluster: the encoder's statistics merged from six real partitions (nulls in a
    # numeric and a categorical column) and the axes from their R factors are the local fit's
    from types import SimpleNamespace

    from test_sharded_parts import Now

    from privgate.schema import infer_schema, normalise_frame
    from privgate.sharded.encode import Inputs
    from privgate.sharded.famd import FamdProjection, famd_encoder_of, fit_famd
    from privgate.sharded.partitions import list_partitions
    from privgate.sharded.summary import merge_fit, partition_levels, summarise_partition
    from privgate.spaces import FamdEncoder

    real = records(700, 1)
    real = real.with_columns(pl.when(pl.col("age") > 80).then(None).otherwise(pl.col("income")).alias("income"))
    parts, shape = list_partitions(str(write_folder(real, tmp_path / "real", files=2, row_group=130)), "real")
    schema = infer_schema({"real": shape}, check_values=False).subset([c for c in real.columns if c != "note"])
    kinds = schema.as_dict()
    fit = merge_fit(
        [summarise_partition(p, kinds) for p in parts],
        [partition_levels(p, kinds, schema.categorical) for p in parts],
        schema,
    )
    inputs = Inputs(parts={"real": parts}, schema=schema, fit=fit, coded_above=1000)
    client = Now()
    client.scatter = lambda value, **_: value
    search = SimpleNamespace(client=client, inputs=inputs, sent=inputs, threads=1)
    merged, coded = famd_encoder_of(search)
    frame = normalise_frame(real.select(schema.columns), schema)
    local = FamdEncoder(frame, schema)
    assert coded == {} and merged.width == local.width == 3 + 2 + 12 + 4  # "unit": a column of zeros
    for (col, got), (_, want) in zip(merged.blocks, local.blocks):
        if isinstance(want[0], float):
            assert got == pytest.approx(want, rel=1e-13), col
        else:
            assert got[0] == want[0] and np.array_equal(got[1], want[1]), col
    assert dict(merged.blocks)["unit"][1] == dict(local.blocks)["unit"][1] == 0.0  # std of a constant: 0
    axes, details = fit_famd(search, merged, 2)
    whole = famd_space({"real": frame}, schema)
    assert details["n_components"] == 2 and details["explained_variance_ratio"] == pytest.approx(
        whole.details["explained_variance_ratio"], rel=1e-12
    )
    got = FamdProjection(merged, axes).encode(frame)
    assert np.allclose(np.abs(got), np.abs(whole.real), rtol=1e-10, atol=1e-12)
