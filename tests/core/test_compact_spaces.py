"""Compact encoded spaces for large inputs (privgate.context_spaces.COMPACT_SPACES_ABOVE): float32
mixed and identifiability matrices searched without a float64 copy, and the FAMD projection fitted
and applied in row blocks (benchmarks/LOG.md "Compact spaces above 200,000 rows")."""

from __future__ import annotations

import numpy as np
import pytest
from onehot_points import one_hot_blocks

import privgate.context_spaces as context_module  # where the rule and the memory guard read it
from privgate.baselines import noisy_copy
from privgate.context import EvaluationContext
from privgate.data import load_example
from privgate.neighbours import SearchSettings, knn
from privgate.spaces import famd_space


def _mixed32(n, rng, levels=(3, 2, 4), n_numeric=2):
    """float32 mixed-space-like points: continuous numerics (rounded to float32) and one-hot
    categoricals of value float32(1/√2), with their one-hot slices."""
    blocks, slices = one_hot_blocks(n, rng, levels, start=n_numeric)
    cols = [rng.normal(size=(n, n_numeric)), *blocks]
    return np.hstack(cols).astype(np.float32), slices


SEARCHES = [  # (knn keyword options, settings): the grouped, flat, blocked, folded and screened paths
    ({"categorical_slices": None, "dedupe": False}, None),
    ({"categorical_slices": "slices", "dedupe": False}, None),
    ({"categorical_slices": None, "dedupe": False, "use_faiss": False}, SearchSettings(block_bytes=4096)),
    ({"categorical_slices": None, "dedupe": True}, SearchSettings(dedup_min_pairs=0)),
    (
        {"categorical_slices": None, "approximate": True, "seed": 3},
        SearchSettings(exact_below_pairs=0, ivf_check_rows=100, ivf_max_probe_share=1.0),
    ),
]


@pytest.mark.parametrize("options,settings", SEARCHES)
@pytest.mark.parametrize("k,exclude_self", [(1, False), (1, True), (3, False), (2, True)])
def test_float32_matrices_are_searched_as_their_float64_values(options, settings, k, exclude_self):
    """A float32 query and target give, to the last bit, the answer of the same coordinates held
    as float64 — no float64 copy is made, and no path computes a distance in float32."""
    rng = np.random.default_rng(7)
    q, slices = _mixed32(700, rng)
    q[::7] = q[1::7][: q[::7].shape[0]]  # exact duplicates
    t = q if exclude_self else _mixed32(600, rng)[0]
    opts = {**options, "categorical_slices": slices if options["categorical_slices"] else None}
    got = knn(q, t, k, exclude_self=exclude_self, settings=settings, **opts)
    want = knn(q.astype(np.float64), t.astype(np.float64), k, exclude_self=exclude_self, settings=settings, **opts)
    np.testing.assert_array_equal(got.idx, want.idx)
    np.testing.assert_array_equal(got.dist, want.dist)
    assert got.dist.dtype == np.float64


def _inputs(n=1200, seed=0):
    base = load_example("adult_sample").head(n)
    return base, noisy_copy(base, seed=seed + 1), noisy_copy(base, seed=seed + 2)


def test_spaces_are_float64_up_to_the_threshold_and_float32_above(monkeypatch):
    real, syn, hold = _inputs(300)
    assert context_module.COMPACT_SPACES_ABOVE >= 200_000  # tests and bundled data stay float64
    ctx = EvaluationContext(real, syn, holdout=hold)
    assert not ctx.compact_spaces()
    assert ctx.mixed().real.dtype == np.float64 and "fit" not in ctx.famd().details
    monkeypatch.setattr(context_module, "COMPACT_SPACES_ABOVE", 299)
    small = EvaluationContext(real, syn, holdout=hold)
    assert small.compact_spaces() and small.holdout_baseline().compact_spaces()
    sp, full = small.mixed(), ctx.mixed()
    for role in ("real", "synthetic", "holdout"):
        assert sp[role].dtype == np.float32
        np.testing.assert_array_equal(sp[role], full[role].astype(np.float32))  # the nearest float32
    assert small.identifiability_space().real.dtype == np.float32
    assert small.holdout_baseline().mixed().real is sp.real  # the baseline reads the same matrices
    assert "blocked QR" in small.famd().details["fit"]


def test_compact_spaces_move_neighbour_distances_by_float32_rounding_only(monkeypatch):
    real, syn, hold = _inputs(800)
    exact = EvaluationContext(real, syn, holdout=hold).neighbours("mixed", "real", "synthetic", 1)
    monkeypatch.setattr(context_module, "COMPACT_SPACES_ABOVE", 100)
    compact = EvaluationContext(real, syn, holdout=hold).neighbours("mixed", "real", "synthetic", 1)
    np.testing.assert_allclose(compact.dist, exact.dist, rtol=1e-6, atol=1e-6)
    assert (compact.idx == exact.idx).mean() > 0.99  # only near-ties may change


@pytest.mark.parametrize("block_rows", [7, 64, 10_000])
def test_blocked_famd_agrees_with_the_whole_matrix_svd(block_rows):
    real, syn, hold = _inputs(500)
    frames = {"real": real, "synthetic": syn, "holdout": hold}
    schema = EvaluationContext(real, syn, holdout=hold).schema
    whole = famd_space(frames, schema, 2)
    blocked = famd_space(frames, schema, 2, block_rows=block_rows)
    for role in frames:
        assert blocked[role].shape == whole[role].shape
        np.testing.assert_allclose(blocked[role], whole[role], rtol=1e-9, atol=1e-9)  # signs fixed alike
    for key in ("n_components", "n_input_features", "degenerate_projection"):
        assert blocked.details[key] == whole.details[key]
    np.testing.assert_allclose(
        blocked.details["explained_variance_ratio"], whole.details["explained_variance_ratio"], rtol=1e-12
    )


def test_blocked_famd_of_an_empty_release_frame_has_no_rows():
    real, _, _ = _inputs(100)
    schema = EvaluationContext(real, real).schema
    sp = famd_space({"real": real, "synthetic": real.head(0)}, schema, 2, block_rows=16)
    assert sp["synthetic"].shape == (0, 2) and sp["real"].shape == (100, 2)


def test_a_cached_float32_target_is_not_kept_alive_by_its_preparation():
    """The target cache keys entries weakly by the matrix; a float32 target's preparation is the
    matrix itself, which the entry must not hold (else the matrix, and every SearchMemo entry of
    it, would outlive the space that dropped it)."""
    import gc
    import weakref

    from privgate.neighbours.memo import clear_target_cache, target_cache_size

    clear_target_cache()
    rng = np.random.default_rng(1)
    t = rng.normal(size=(400, 6)).astype(np.float32)
    settings = SearchSettings(target_cache_min_rows=100)
    first = knn(t[:50], t, 1, settings=settings, dedupe=False)
    again = knn(t[:50], t, 1, settings=settings, dedupe=False)  # from the cache
    np.testing.assert_array_equal(first.idx, again.idx)
    assert target_cache_size() == 1
    alive = weakref.ref(t)
    del t
    gc.collect()
    assert alive() is None and target_cache_size() == 0


def test_the_memory_guard_counts_compact_spaces_above_the_threshold(monkeypatch):
    from privgate import memory_guard as guard

    real, syn, hold = _inputs(300)
    assert guard.held_per_frame(300) == guard.HELD_PER_FRAME
    assert guard.HELD_PER_FRAME_COMPACT < guard.HELD_PER_FRAME
    before = guard.estimate_run(EvaluationContext(real, syn, holdout=hold), ["authenticity"])
    monkeypatch.setattr(context_module, "COMPACT_SPACES_ABOVE", 299)
    assert guard.held_per_frame(300) == guard.HELD_PER_FRAME_COMPACT
    after = guard.estimate_run(EvaluationContext(real, syn, holdout=hold), ["authenticity"])
    # the held frames drop, and a metric that reads a space needs COMPACT_COST_SHARE of its cost
    drop = before.unit * (
        3 * (guard.HELD_PER_FRAME - guard.HELD_PER_FRAME_COMPACT)
        + guard.metric_cost("authenticity") * (1 - guard.COMPACT_COST_SHARE)
    )
    assert after.peak == pytest.approx(before.peak - drop)
    # a metric that reads no space keeps its whole cost
    plain = guard.estimate_run(EvaluationContext(real, syn, holdout=hold), ["authenticity", "chi_squared"])
    assert plain.per_metric["chi_squared"] == pytest.approx(
        guard.BASE_BYTES + before.unit * (3 * guard.HELD_PER_FRAME_COMPACT + guard.metric_cost("chi_squared"))
    )


@pytest.mark.parametrize("k,exclude_self", [(1, False), (3, True)])
def test_grouped_rows_settled_in_blocks_give_the_same_answer(k, exclude_self, monkeypatch):
    """The grouped search settles rows in blocks of ``block_bytes``; blocks of a few rows give
    the answer of one block, to the last bit (each row is decided on its own candidates)."""
    from privgate.neighbours import grouped

    rng = np.random.default_rng(5)
    q, slices = _mixed32(900, rng, levels=(3, 3, 2, 2))
    q = q.astype(np.float64)
    t = q if exclude_self else _mixed32(700, rng, levels=(3, 3, 2, 2))[0].astype(np.float64)
    whole = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, dedupe=False)
    calls = []
    original = grouped._GroupedSearch.settle_rows
    monkeypatch.setattr(
        grouped._GroupedSearch, "settle_rows", lambda self, *a: calls.append(a[0].size) or original(self, *a)
    )
    tiny = SearchSettings(block_bytes=grouped.SETTLE_BYTES_PER_PAIR * 40)
    blocked = knn(q, t, k, exclude_self=exclude_self, categorical_slices=slices, dedupe=False, settings=tiny)
    assert max(calls) < 40 and len(calls) > 10 and blocked.search["settled_by"]["grouped"] > 0
    np.testing.assert_array_equal(blocked.idx, whole.idx)
    np.testing.assert_array_equal(blocked.dist, whole.dist)


def test_a_holdout_baseline_reads_the_main_frames_instead_of_loading_its_own(tmp_path):
    """A baseline scoring every holdout record reads the main evaluation's real and holdout frames
    (the same objects, not second copies from the files), with the same values as in memory."""
    from privgate import evaluate

    real, syn, hold = _inputs(400)
    paths = {}
    for role, frame in (("real", real), ("synthetic", syn), ("holdout", hold)):
        paths[role] = tmp_path / f"{role}.parquet"
        frame.write_parquet(paths[role])
    ctx = EvaluationContext(paths["real"], paths["synthetic"], holdout=paths["holdout"])
    base = ctx.holdout_baseline()
    assert not base.is_loaded("real")
    assert base.frame("real") is ctx.frame("real")
    assert base.frame("synthetic").equals(ctx.frame("holdout"))
    smaller = EvaluationContext(
        paths["real"], paths["synthetic"].parent / "synthetic.parquet", holdout=paths["holdout"]
    ).with_synthetic(syn.head(100))
    assert smaller._parent_frame("synthetic") is None  # not a baseline
    metrics = ["authenticity", "dcr", "hitting_rate"]
    on_files = evaluate(paths["real"], paths["synthetic"], metrics, holdout=paths["holdout"], baseline=True)
    in_memory = evaluate(real, syn, metrics, holdout=hold, baseline=True)
    for name in metrics:
        a, b = on_files.results[name], in_memory.results[name]
        assert (a.value, a.ci, a.excess) == (b.value, b.ci, b.excess)
