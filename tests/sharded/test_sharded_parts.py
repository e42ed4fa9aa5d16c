"""The pieces of a sharded search, without a cluster: partial k-nearest lists merged over any
partitioning equal the local engine's lists (ties by lowest index, coded columns, a record
excluded from its own list, a label excluded), the merged moments equal NumPy's, a partition
encoded with the merged fit equals its rows of the whole-frame encoding, and partitions are
listed in record order."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sharded_data import records, write_folder

from privgate.neighbours import knn
from privgate.schema import infer_schema, normalise_frame
from privgate.sharded.encode import Inputs, encode_rows
from privgate.sharded.kernel import block_knn, merge_lists
from privgate.sharded.partitions import list_partitions, read_partition
from privgate.sharded.summary import (
    merge_fit,
    merge_moments,
    partition_levels,
    summarise_partition,
)
from privgate.spaces import mixed_space


class Now:
    """A synchronous stand-in for a Dask client: every task runs here, at once."""

    def submit(self, fn, *args, pure=True, **kw):
        class Done:
            def __init__(self, value):
                self.value = value

            def result(self):
                return self.value

        def value(a):
            return [value(x) for x in a] if isinstance(a, list) else a.result() if hasattr(a, "result") else a

        return Done(fn(*[value(a) for a in args], **kw))

    def gather(self, futures):
        return [f.result() for f in futures]


def _sharded(q, t, k, cuts, q_ids, **kw):
    """The k nearest of ``q`` in ``t`` cut into partitions at ``cuts``, merged."""
    ids = np.arange(t.shape[0])
    bounds = [0, *cuts, t.shape[0]]
    return merge_lists([block_knn(q, q_ids, t[a:b], ids[a:b], k, **kw) for a, b in zip(bounds[:-1], bounds[1:])], k)


@pytest.mark.parametrize("cuts", [[], [1], [37, 38, 300], [5, 100, 101, 102, 700]])
def test_partial_lists_merge_to_the_local_engine_answer(cuts):
    rng = np.random.default_rng(4)
    t = np.round(rng.normal(size=(900, 4)), 1)  # rounded: many exact ties
    t = np.column_stack([t, rng.integers(0, 5, 900)])  # a coded column
    t[100:110] = t[5]  # duplicates across partitions
    q = np.vstack([t[:60], np.column_stack([np.round(rng.normal(size=(40, 4)), 1), rng.integers(0, 5, 40)])])
    coded = [(4, 0.5)]
    for query, k, kw in (
        (q, 3, {"q_ids": np.arange(100) + 10**6}),
        (t, 2, {"q_ids": np.arange(900), "exclude_self": True}),
    ):
        d, i = _sharded(query, t, k, cuts, coded=coded, **kw)
        ref = knn(query, t, k, coded_columns=coded, exclude_self=bool(kw.get("exclude_self")))
        assert np.allclose(d, ref.dist, rtol=1e-12, atol=1e-12)
        # the nearest by lowest index among ties (the local rule); further down a list, records
        # at one distance are ordered by each engine's last bits: each listed record must then be
        # at the listed distance, and the lists differ only there
        assert np.array_equal(i[:, 0], ref.idx[:, 0])
        true = np.sqrt(
            ((query[:, None, :4] - t[i][:, :, :4]) ** 2).sum(-1) + 0.5 * (query[:, None, 4] != t[i][:, :, 4])
        )
        assert np.allclose(true, ref.dist, rtol=1e-12, atol=1e-12)
        assert (i != ref.idx).mean() < 0.01


def test_a_label_excluded_per_query_is_never_listed():
    rng = np.random.default_rng(5)
    t = rng.normal(size=(300, 3))
    labels = rng.integers(0, 4, 300)
    excl = rng.integers(0, 4, 50)
    _, i = block_knn(
        t[:50], np.arange(50), t, np.arange(300), 1, exclude_self=True, query_exclude=excl, target_labels=labels
    )
    full = np.sqrt(((t[:50, None, :] - t[None, :, :]) ** 2).sum(-1))
    full[np.arange(50), np.arange(50)] = np.inf
    full[excl[:, None] == labels[None, :]] = np.inf
    assert np.array_equal(i[:, 0], full.argmin(axis=1)) and np.all(labels[i[:, 0]] != excl)


def test_merged_moments_equal_numpy_and_a_constant_column_has_std_zero():
    rng = np.random.default_rng(6)
    v = rng.lognormal(3, 2, 10_001)
    parts = [v[a:b] for a, b in ((0, 17), (17, 5000), (5000, 5001), (5001, 10_001))]
    mean, std, lo, hi = merge_moments(
        [[p.size, p.mean(), ((p - p.mean()) ** 2).sum(), p.min(), p.max()] for p in parts]
    )
    assert abs(mean - v.mean()) <= 1e-12 * abs(v.mean()) and abs(std - v.std()) <= 1e-12 * v.std()
    assert (lo, hi) == (v.min(), v.max())
    const = pl.DataFrame({"c": np.full(7, 0.1), "x": np.arange(7.0)})
    assert np.full(7, 0.1).std() > 0  # the float quirk: a rounded mean leaves a few ulps
    sp = mixed_space({"real": const}, infer_schema({"real": const}))
    assert sp.details["constant_columns"] == ["c"] and sp.real.shape[1] == 1


def test_a_partition_encoded_with_the_merged_fit_is_its_rows_of_the_whole_encoding(tmp_path):
    real, synth = records(700, 1), records(500, 2)
    real = real.with_columns(pl.when(pl.col("age") > 80).then(None).otherwise(pl.col("income")).alias("income"))
    folders = {
        "real": write_folder(real, tmp_path / "real", files=2, row_group=130),
        "synthetic": write_folder(synth, tmp_path / "synthetic", files=3),
    }
    listed = {r: list_partitions(str(f), r) for r, f in folders.items()}
    parts = {r: p for r, (p, _) in listed.items()}
    assert [p.start for p in parts["real"]] == [0, 130, 260, 350, 480, 610] and parts["real"][-1].stop == 700
    assert pl.concat([read_partition(p) for p in parts["real"]]).equals(real)
    schema = infer_schema({r: shape for r, (_, shape) in listed.items()}, check_values=False).subset(
        [c for c in real.columns if c != "note"]
    )
    kinds = schema.as_dict()
    summaries = [summarise_partition(p, kinds) for p in parts["real"]]
    levels = [partition_levels(p, kinds, schema.categorical) for ps in parts.values() for p in ps]
    inputs = Inputs(parts=parts, schema=schema, fit=merge_fit(summaries, levels, schema), coded_above=1000)
    whole = mixed_space(
        {r: normalise_frame(f.select(schema.columns), schema) for r, f in (("real", real), ("synthetic", synth))},
        schema,
        coded_above=1000,
    )
    for role in ("real", "synthetic"):
        got = np.vstack([encode_rows(inputs, ("mixed", None), p)[0] for p in parts[role]])
        assert got.shape == whole[role].shape and np.allclose(got, whole[role], rtol=1e-12, atol=1e-12)
    keep = np.array([3, 129, 130, 131, 699])
    rows = np.vstack([encode_rows(inputs, ("mixed", None), p, keep)[0] for p in parts["real"]])
    assert np.allclose(rows, whole.real[keep], rtol=1e-12, atol=1e-12)


def test_the_engine_path_lists_what_the_screen_lists():
    """Each task searches its partition with the local engine (grouped, tiled, coded paths) and
    drops the query itself by global index: the same lists as the plain screen."""
    from privgate.sharded.kernel import engine_knn

    rng = np.random.default_rng(8)
    onehot = np.eye(3)[rng.integers(0, 3, 600)] / np.sqrt(2)
    t = np.column_stack([np.round(rng.normal(size=(600, 2)), 1), onehot, rng.integers(0, 4, 600)])
    t[50:53] = t[7]
    ids = np.arange(600) + 1000
    kw = {"coded": [(5, 0.5)]}
    for q_rows, excl in ((np.arange(600), True), (np.arange(0, 600, 7), True), (np.arange(40), False)):
        a = engine_knn(t[q_rows], ids[q_rows], t, ids, 2, categorical_slices=[(2, 5)], exclude_self=excl, **kw)
        b = block_knn(t[q_rows], ids[q_rows], t, ids, 2, exclude_self=excl, **kw)
        assert np.allclose(a[0], b[0], rtol=1e-12, atol=1e-12) and np.array_equal(a[1][:, 0], b[1][:, 0])


def test_a_tie_hidden_by_the_query_itself_is_listed_by_lowest_index():
    """Dropping a record's own entry from its k + 1 nearest must not cut the tie at its nearest
    other record: targets 0 and 2 are both at squared distance 0.17 from record 1 but for rounding
    (0.17000000000000004 and 0.16999999999999993). Snapped at record 1's own distance 0 they are
    apart, so its 2 nearest were itself and target 2; at its nearest other record they tie, and
    the plain screen lists target 0, the lower index."""
    from privgate.sharded.kernel import engine_knn

    t = np.array([[-0.3, -1.4], [0.1, -1.5], [0.2, -1.1]])
    ids = np.array([10, 11, 12])
    assert ((t[0] - t[1]) ** 2).sum() > ((t[2] - t[1]) ** 2).sum()  # apart by rounding only
    a = engine_knn(t, ids, t, ids, 1, exclude_self=True)
    b = block_knn(t, ids, t, ids, 1, exclude_self=True)
    assert a[1][:, 0].tolist() == b[1][:, 0].tolist() == [11, 10, 11]
    assert np.allclose(a[0], b[0], rtol=1e-12, atol=1e-12)


def test_records_without_ties_are_searched_once(monkeypatch):
    """Listing its k + 2 nearest, a record that lists itself shows a tie at its nearest other
    record only when there is one: on continuous values, one search of every record."""
    import privgate.neighbours as neighbours
    from privgate.sharded.kernel import engine_knn

    calls = []
    plain = neighbours.knn

    def counted(q, *args, **kwargs):
        calls.append(q.shape[0])
        return plain(q, *args, **kwargs)

    monkeypatch.setattr(neighbours, "knn", counted)
    t = np.random.default_rng(4).normal(size=(400, 3))
    ids = np.arange(400) + 7
    for k in (1, 3):
        calls.clear()
        a = engine_knn(t, ids, t, ids, k, exclude_self=True)
        b = block_knn(t, ids, t, ids, k, exclude_self=True)
        assert calls == [400] and np.array_equal(a[1], b[1])


def test_a_worker_whose_limit_is_below_the_estimate_is_refused_by_name(tmp_path):
    from privgate.errors import MemoryLimitError
    from privgate.sharded.memory import check_workers, task_bytes

    real = records(2000, 1)
    folder = write_folder(real.drop("note"), tmp_path / "real", files=2)
    parts, shape = list_partitions(str(folder), "real")
    schema = infer_schema({"real": shape}, check_values=False)
    kinds = schema.as_dict()
    levels = [partition_levels(p, kinds, schema.categorical) for p in parts]
    inputs = Inputs(
        parts={"real": parts, "synthetic": parts},
        schema=schema,
        fit=merge_fit([summarise_partition(p, kinds) for p in parts], levels, schema),
        coded_above=1000,
    )
    per_task = task_bytes(inputs)

    class Scheduler:
        def __init__(self, limit):
            self.limit = limit

        def scheduler_info(self, n_workers=-1):
            return {
                "workers": {
                    "tcp://10.0.0.7:4000": {
                        "memory_limit": self.limit,
                        "nthreads": 2,
                        "metrics": {"memory": 100 * 2**20},
                    }
                }
            }

    roomy = check_workers(Scheduler(2**34), inputs, ["authenticity"])
    assert roomy["tcp://10.0.0.7:4000"]["estimate"] == 100 * 2**20 + 2 * per_task
    with pytest.raises(MemoryLimitError, match=r"tcp://10\.0\.0\.7:4000.*part-0[01]\.parquet#row-group-0"):
        check_workers(Scheduler(100 * 2**20 + per_task), inputs, ["authenticity"])
    assert check_workers(Scheduler(2**20), inputs, ["authenticity"], memory_limit=None)  # off: no refusal
    # dcr's refit task holds one partition and 21 Gram matrices of the FAMD input's p × p
    from privgate.metrics.distance import DCR_GROUPS

    p = sum(len(v) for v in inputs.fit.levels.values()) + len(schema.numeric)
    gram = (DCR_GROUPS + 1) * p * p * 8
    assert task_bytes(inputs, ["dcr"]) >= max(per_task, gram)
    wide = dataclasses.replace(inputs, fit=dataclasses.replace(inputs.fit, levels={"x": [str(i) for i in range(900)]}))
    assert task_bytes(wide, ["dcr"]) > task_bytes(wide) and task_bytes(wide, ["dcr"]) >= 21 * 900**2 * 8
    coded = dataclasses.replace(wide, coded_above=500)  # a coded column: dcr's Lanczos fit, no Gram
    assert task_bytes(coded, ["dcr"]) == task_bytes(coded)
    # a label-free metric: the worker also keeps its share of the release's mapped columns — the
    # two release partitions on this one worker, each row's numeric columns as float64
    from privgate.sharded.memory import mapped_bytes

    mapped = 2 * max(p.rows for p in parts) * len(schema.numeric) * 8
    assert mapped_bytes(inputs, ["label_free_copies"], 1) == mapped > 0
    assert mapped_bytes(inputs, ["label_free_copies"], 2) == mapped // 2  # one partition a worker
    assert mapped_bytes(inputs, ["authenticity"], 1) == 0
    with_view = check_workers(Scheduler(2**34), inputs, ["authenticity", "label_free_copies"])
    assert with_view["tcp://10.0.0.7:4000"]["estimate"] == 100 * 2**20 + 2 * per_task + mapped
    with pytest.raises(MemoryLimitError, match="mapped columns"):
        check_workers(Scheduler(100 * 2**20 + 2 * per_task + mapped - 1), inputs, ["label_free_copies"])


def test_bucketed_distinct_counts_and_identifier_hits_are_exact(tmp_path):
    """Hash-first passes on one worker (a synchronous stand-in client): repeated values, nulls
    and values shared between the roles are counted as the local rule counts them."""
    from privgate.copies import carries_real_identifier
    from privgate.sharded.joins import sharded_distinct, sharded_identifier_hits

    ids = [f"id{i % 450}" if i % 7 else None for i in range(500)]
    real = pl.DataFrame({"id": pl.Series(ids, dtype=pl.String), "x": np.arange(500.0)})
    other = pl.DataFrame(
        {
            "id": pl.Series([f"id{i}" if i % 3 else f"new{i}" for i in range(0, 900, 2)] + [None], dtype=pl.String),
            "x": np.arange(451.0),
        }
    )
    parts = {
        "real": list_partitions(str(write_folder(real, tmp_path / "real", files=3)), "real")[0],
        "synthetic": list_partitions(str(write_folder(other, tmp_path / "syn", files=2)), "synthetic")[0],
    }
    assert sharded_distinct(Now(), parts["real"], "id", "categorical") == real["id"].drop_nulls().n_unique()
    hits = sharded_identifier_hits(Now(), parts, {"id": "categorical"}, ["id"], "synthetic")
    assert np.array_equal(hits, carries_real_identifier(real, other, ["id"])) and 0 < hits.sum() < hits.size


@pytest.mark.parametrize(
    ("column", "error", "expected"),
    [
        (pl.lit(None, dtype=pl.Float64), "AllNullColumnError", "column 'extra' of real has only nulls"),
        (
            pl.when(pl.col("age") > 80).then(float("inf")).otherwise(pl.col("income")),
            "NonFiniteValueError",
            r"column 'extra' of real has \d+ infinite value",
        ),
        (
            pl.when(pl.col("age") > 80).then(1e300).otherwise(pl.col("income")),
            "NonFiniteValueError",
            r"column 'extra' of real has \d+ value\(s\) larger than",
        ),
    ],
)
def test_inputs_a_local_gate_refuses_are_refused_with_its_error(tmp_path, column, error, expected):
    """The value checks of a local gate run on the partitions too (an all-null real column would
    otherwise be fitted as a constant and an infinite one as NaN, and gated), naming the column and
    role, never a value; the same inputs loaded are refused with the same message."""
    from privgate import errors
    from privgate.sharded.prepare import prepare_inputs

    real = records(400, 1).drop("note").with_columns(column.alias("extra"))
    synth = records(300, 2).drop("note").with_columns(pl.col("income").alias("extra"))
    folders = {
        "real": str(write_folder(real, tmp_path / "real", files=2)),
        "synthetic": str(write_folder(synth, tmp_path / "synthetic", files=2)),
    }
    with pytest.raises(getattr(errors, error), match=expected) as sharded:
        prepare_inputs(Now(), folders)
    with pytest.raises(getattr(errors, error)) as local:
        infer_schema({"real": real, "synthetic": synth})
    assert str(sharded.value) == str(local.value)
