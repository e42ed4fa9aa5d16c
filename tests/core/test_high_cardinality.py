"""Categorical columns of many levels (postcodes, diagnosis codes) held as one coded coordinate:
the same neighbours, distances, FAMD projection and metric values as their one-hot encoding, by
hand on tiny data and against the one-hot encoding on random data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate import spaces
from privgate.context import EvaluationContext
from privgate.neighbours import coded as coded_module
from privgate.neighbours import grouped as grouped_module
from privgate.neighbours import knn
from privgate.schema import infer_schema
from privgate.spaces import famd_space, mixed_space


def _frame(n: int, seed: int, zip_levels: int = 300, dx_levels: int = 40) -> pl.DataFrame:
    r = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "a": r.normal(size=n),
            "b": r.integers(0, 3, n).astype(float),
            "c": r.choice(["x", "y", "z"], n),
            "zip": [f"z{v}" for v in r.integers(0, zip_levels, n)],
            "dx": [f"d{v}" for v in r.integers(0, dx_levels, n)],
        }
    )


@pytest.fixture
def frames() -> dict[str, pl.DataFrame]:
    return {"real": _frame(400, 1), "synthetic": _frame(300, 2)}


def test_hand_computed_distances_with_a_coded_column(monkeypatch):
    """Real (x, z): (−1, a), (−1, b), (1, c), (1, d) — x has mean 0 and std 1; release (−1, a),
    (3, c). d² = Δx² + [z differs]. Real → release: r0 0, r1 1 (s0: z differs), r2 2 (s1: Δx = 2,
    z equal), r3 √5 (s0 and s1 both at 4 + 1; s0 the lower index). Real → other real: 1 each (equal
    x, z differs). Without z: 0, 0, 2, 2 and 0 each. authenticity = share with d_rs ≤ d_rr: 2/4
    both ways."""
    monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", 2)
    real = pl.DataFrame({"x": [-1.0, -1.0, 1.0, 1.0], "z": ["a", "b", "c", "d"]})
    syn = pl.DataFrame({"x": [-1.0, 3.0], "z": ["a", "c"]})
    ctx = EvaluationContext(real, syn)
    sp = ctx.mixed()
    assert sp.coded_columns == [(1, 1.0)] and sp.dim == 2  # one coordinate, not 5 one-hot columns
    rs = ctx.neighbours("mixed", "real", "synthetic", 1)
    np.testing.assert_allclose(rs.dist[:, 0], [0.0, 1.0, 2.0, np.sqrt(5.0)], rtol=1e-12)
    assert rs.idx[:, 0].tolist() == [0, 0, 1, 0]
    rr = ctx.neighbours("mixed", "real", "real", 1)
    np.testing.assert_allclose(rr.dist[:, 0], [1.0, 1.0, 1.0, 1.0], rtol=1e-12)
    assert rr.idx[:, 0].tolist() == [1, 0, 3, 2]
    without = EvaluationContext(real.drop("z"), syn.drop("z"))
    np.testing.assert_allclose(without.neighbours("mixed", "real", "synthetic", 1).dist[:, 0], [0, 0, 2, 2])
    assert privgate.metrics.authenticity(real, syn).value == 0.5
    assert privgate.metrics.authenticity(real.drop("z"), syn.drop("z")).value == 0.5


def test_a_coded_column_equal_everywhere_changes_no_distance(monkeypatch):
    """A coded column with one value in every record adds nothing: the same distances as without it."""
    monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", 0)
    fr = {"real": _frame(200, 3).drop("zip", "dx"), "synthetic": _frame(150, 4).drop("zip", "dx")}
    with_col = {r: f.with_columns(pl.lit("same").alias("k")) for r, f in fr.items()}
    a = EvaluationContext(fr["real"], fr["synthetic"], schema={"c": "categorical"})
    b = EvaluationContext(with_col["real"], with_col["synthetic"])
    assert b.mixed().coded_columns  # every categorical column coded (c too)
    for q, t in (("real", "synthetic"), ("real", "real"), ("synthetic", "synthetic")):
        na, nb = a.neighbours("mixed", q, t, 3), b.neighbours("mixed", q, t, 3)
        np.testing.assert_allclose(na.dist, nb.dist, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weights", [None, {"a": 0.7, "zip": 1.3, "dx": 0.4}])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_coded_search_equals_the_one_hot_search(frames, weights, exclude_self):
    sch = infer_schema(frames)
    one = mixed_space(frames, sch, weights=weights)
    cod = mixed_space(frames, sch, weights=weights, coded_above=30)
    assert cod.dim == 7 and one.dim > 300
    assert [c for _, c in cod.coded_columns] == pytest.approx([(weights or {}).get(c, 1.0) ** 2 for c in ("zip", "dx")])
    t1 = one.real if exclude_self else one.synthetic
    t2 = cod.real if exclude_self else cod.synthetic
    a = knn(one.real, t1, 5, exclude_self=exclude_self, categorical_slices=one.categorical_slices)
    b = knn(
        cod.real,
        t2,
        5,
        exclude_self=exclude_self,
        categorical_slices=cod.categorical_slices,
        coded_columns=cod.coded_columns,
    )
    np.testing.assert_allclose(a.dist, b.dist, rtol=1e-12, atol=1e-12)
    assert np.array_equal(a.idx[:, 0], b.idx[:, 0])
    assert b.search["coded_columns"]["subsets_searched"] == 3


@pytest.mark.parametrize("engine_above", [10_000, 12])
def test_larger_groups_by_gemm_or_the_engine_give_the_same_answers(frames, monkeypatch, engine_above):
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 4)
    monkeypatch.setattr(coded_module, "PAIRS_PER_BLOCK", 97)
    monkeypatch.setattr(coded_module, "GEMM_ENTRIES", 50)
    monkeypatch.setattr(coded_module, "ENUMERATE_PAIRS_UP_TO", 0)  # every larger group by GEMM
    monkeypatch.setattr(coded_module, "ENGINE_ABOVE", engine_above)
    monkeypatch.setattr(coded_module, "ENGINE_MIN_PAIRS", 0)  # the engine whatever its rows
    sch = infer_schema(frames)
    one = mixed_space(frames, sch)
    cod = mixed_space(frames, sch, coded_above=30)
    for ex in (False, True):
        t1, t2 = (one.real, cod.real) if ex else (one.synthetic, cod.synthetic)
        a = knn(one.real, t1, 4, exclude_self=ex, categorical_slices=one.categorical_slices)
        b = knn(cod.real, t2, 4, exclude_self=ex, coded_columns=cod.coded_columns)
        np.testing.assert_allclose(a.dist, b.dist, rtol=1e-12, atol=1e-12)
        assert np.array_equal(a.idx[:, 0], b.idx[:, 0])


@pytest.mark.parametrize("enumerate_up_to", [4, 1000])
def test_the_bound_drops_no_target_of_the_answer(frames, monkeypatch, enumerate_up_to):
    """Grouped searches keep only the targets within the rest-space neighbours' k-th d²: the same
    neighbours and distances, bit for bit, as without that bound; and it drops pairs."""
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", enumerate_up_to)
    monkeypatch.setattr(coded_module, "GEMM_ENTRIES", 50)
    monkeypatch.setattr(coded_module, "ENUMERATE_PAIRS_UP_TO", 0)  # every larger group by GEMM
    cod = mixed_space(frames, infer_schema(frames), coded_above=30)
    bounded = coded_module._candidate_bound
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        for k in (1, 4):
            with_bound = knn(cod.real, t, k, exclude_self=ex, coded_columns=cod.coded_columns)
            monkeypatch.setattr(
                coded_module, "_candidate_bound", lambda base, qc, tc, cost: np.full(qc.shape[0], np.inf)
            )
            without = knn(cod.real, t, k, exclude_self=ex, coded_columns=cod.coded_columns)
            monkeypatch.setattr(coded_module, "_candidate_bound", bounded)
            assert np.array_equal(with_bound.idx, without.idx) and np.array_equal(with_bound.dist, without.dist)
            pairs = [nb.search["coded_columns"]["pairs_within_groups"] for nb in (with_bound, without)]
            assert pairs[0] < pairs[1]


def test_the_bound_keeps_ties_at_the_kth_distance():
    """Targets tied at the k-th whole distance with the rest-space neighbours stay candidates, and
    the lowest indices win as without the bound."""
    q = np.array([[0.0, 5.0]])
    # rest distances: targets 0-2 at 1 (other code), targets 3-5 at 0 with the query's code
    t = np.array([[1.0, 1.0], [1.0, 2.0], [-1.0, 3.0], [0.0, 5.0], [0.0, 5.0], [0.0, 5.0]])
    nb = knn(q, t, 2, coded_columns=[(1, 1.0)])
    assert nb.idx[0].tolist() == [3, 4] and nb.dist[0].tolist() == [0.0, 0.0]
    t2 = np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 5.0], [-1.0, 5.0]])  # d² = 1 for every target
    nb = knn(q, t2, 3, coded_columns=[(1, 1.0)])
    assert nb.idx[0].tolist() == [0, 1, 2] and np.allclose(nb.dist[0], 1.0)


def test_ties_inside_a_group_go_to_the_lowest_index(monkeypatch):
    """Every rest coordinate equal: within a group all targets tie, and the lowest indices win."""
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 2)
    rng = np.random.default_rng(0)
    q = np.column_stack([np.zeros(30), rng.integers(0, 3, 30).astype(float)])
    t = np.column_stack([np.zeros(60), rng.integers(0, 3, 60).astype(float)])
    nb = knn(q, t, 3, coded_columns=[(1, 1.0)])
    for i in range(30):
        same = np.flatnonzero(t[:, 1] == q[i, 1])
        assert nb.idx[i].tolist() == same[:3].tolist() and np.all(nb.dist[i] == 0.0)


def test_a_wrong_coded_layout_is_refused(frames):
    cod = mixed_space(frames, infer_schema(frames), coded_above=30)
    with pytest.raises(ValueError, match="last 2 coordinates"):
        knn(cod.real, cod.synthetic, 1, coded_columns=[(0, 1.0), (1, 1.0)])


def test_coded_famd_equals_the_written_famd(frames):
    sch = infer_schema(frames)
    dense = famd_space(frames, sch, 2)
    coded = famd_space(frames, sch, 2, coded_above=30)
    assert coded.details["coded_columns"] == {"zip": frames["real"]["zip"].n_unique(), "dx": 40}
    assert coded.details["n_input_features"] == dense.details["n_input_features"]
    np.testing.assert_allclose(
        coded.details["explained_variance_ratio"], dense.details["explained_variance_ratio"], rtol=1e-9
    )
    for role in ("real", "synthetic"):  # unseen release levels: all-zero indicator rows in both
        np.testing.assert_allclose(coded[role], dense[role], atol=1e-9)


def test_metrics_agree_with_the_one_hot_encoding(frames, monkeypatch):
    """Every mixed-space and FAMD metric of the default gate, and the attacks' and proximity's
    searches, give the values of the one-hot encoding when the two columns are coded."""
    holdout = _frame(300, 5)
    names = [
        "authenticity",
        "identifiability",
        "nnaa",
        "median_dcr",
        "dcr",
        "nndr",
        "memorisation",
        "close_values",
        "distant_values",
        "proximity_score",
        "linkability",
        "inference",
        "attribute_inference",
        "singling_out",
        "disclosure_identity",
        "hitting_rate",
        "common_rows",
        "label_free_memorisation",
        "label_free_authenticity",
    ]
    params = {
        "linkability": {"aux_cols": [["a", "zip"], ["b", "dx"]]},
        "inference": {"secret": "c", "aux_cols": ["a", "zip", "dx"]},
        "attribute_inference": {"keys": ["a", "zip", "dx"], "sensitive": "c"},
        "disclosure_identity": {"keys": ["zip", "dx"], "targets": "c"},
    }

    def run(levels: int):
        monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", levels)
        return privgate.evaluate(frames["real"], frames["synthetic"], names, holdout=holdout, params=params, exact=True)

    one, cod = run(1000), run(30)
    assert not one.errors and not cod.errors
    for name in names:
        assert cod.results[name].value == pytest.approx(one.results[name].value, abs=1e-9), name
    assert "coded_columns" in str(cod.results["authenticity"].details["neighbour_search"])


def test_compact_spaces_code_the_same_columns(frames, monkeypatch):
    """Above COMPACT_SPACES_ABOVE the spaces are float32: the codes stay exact integers and the
    metrics agree with the float64 spaces (to float32 rounding of the other coordinates)."""
    from privgate import context_spaces

    monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", 30)
    holdout = _frame(300, 5)
    names = ["authenticity", "identifiability", "nnaa", "dcr", "memorisation", "median_dcr"]
    wide = privgate.evaluate(frames["real"], frames["synthetic"], names, holdout=holdout, exact=True)
    monkeypatch.setattr(context_spaces, "COMPACT_SPACES_ABOVE", 10)
    compact = privgate.evaluate(frames["real"], frames["synthetic"], names, holdout=holdout, exact=True)
    assert not wide.errors and not compact.errors
    for name in names:
        assert compact.results[name].value == pytest.approx(wide.results[name].value, abs=1e-6), name


def _tiled_frame(n: int, seed: int) -> pl.DataFrame:
    """Few levels of each column, so that many records share their codes and categories (and a
    continuous x: no two rest distances tie, see the test below)."""
    r = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "a": r.normal(size=n),
            "c": r.choice(["x", "y"], n),
            "e": r.choice(["u", "v", "w"], n),
            "zip": [f"z{v}" for v in r.integers(0, 40, n)],
            "dx": [f"d{v}" for v in r.integers(0, 5, n)],
        }
    )


def _tiled_search(monkeypatch, seeds: tuple[int, int], engine_above: int, sizes: tuple[int, int] = (300, 200)):
    """(frames, their mixed space with the zip and dx columns coded, knn's coded options) of two
    tiled frames, groups of more than 4 targets searched by GEMM or, above ``engine_above``, by
    the engine."""
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 4)
    monkeypatch.setattr(coded_module, "ENGINE_ABOVE", engine_above)
    monkeypatch.setattr(coded_module, "ENGINE_MIN_PAIRS", 0)  # the engine whatever its rows
    frames = {"real": _tiled_frame(sizes[0], seeds[0]), "synthetic": _tiled_frame(sizes[1], seeds[1])}
    cod = mixed_space(frames, infer_schema(frames), coded_above=4)
    return frames, cod, {"coded_columns": cod.coded_columns, "categorical_slices": cod.categorical_slices}


def _spy(monkeypatch, name: str, record) -> None:
    """Replace ``coded_module.<name>`` by itself calling ``record(args, result)`` after each call."""
    real = getattr(coded_module, name)

    def spied(*args):
        out = real(*args)
        record(args, out)
        return out

    monkeypatch.setattr(coded_module, name, spied)


@pytest.mark.parametrize("engine_above", [10_000, 12])
def test_searching_a_groups_rows_among_their_categories_first_changes_nothing(monkeypatch, engine_above):
    """A large group's rows first searched among the targets of their own categories (whose k-th
    distance may end the search: a target of other categories is at least a mismatch cost away):
    the same neighbours and distances, bit for bit, as the whole group searched for every row —
    by enumeration, GEMM blocks and the engine — and fewer rows searched in their whole group."""
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 4)
    monkeypatch.setattr(coded_module, "GEMM_ENTRIES", 50)
    monkeypatch.setattr(coded_module, "ENUMERATE_PAIRS_UP_TO", 0)  # every larger group by GEMM
    monkeypatch.setattr(coded_module, "ENGINE_ABOVE", engine_above)
    monkeypatch.setattr(coded_module, "ENGINE_MIN_PAIRS", 0)  # the engine whatever its rows
    frames = {"real": _tiled_frame(300, 3), "synthetic": _tiled_frame(200, 4)}
    cod = mixed_space(frames, infer_schema(frames), coded_above=4)
    assert len(cod.coded_columns) == 2 and cod.categorical_slices
    searched, depth = [], [0]
    whole_group, within = coded_module._large_group_pairs, coded_module._within_groups

    def counted(qr, tr, large, *args):
        if depth[0] == 1:  # rows searched in their whole group (not among their categories)
            searched.append(large.size)
        return whole_group(qr, tr, large, *args)

    def nested(*args, **kwargs):
        depth[0] += 1
        try:
            return within(*args, **kwargs)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(coded_module, "_large_group_pairs", counted)
    monkeypatch.setattr(coded_module, "_within_groups", nested)
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        for k in (1, 3):
            opts = {"coded_columns": cod.coded_columns, "categorical_slices": cod.categorical_slices}
            monkeypatch.setattr(coded_module, "TILES_FIRST", False)
            searched.clear()
            whole = knn(cod.real, t, k, exclude_self=ex, **opts)
            rows_whole = sum(searched)
            monkeypatch.setattr(coded_module, "TILES_FIRST", True)
            searched.clear()
            tiled = knn(cod.real, t, k, exclude_self=ex, **opts)
            assert np.array_equal(tiled.idx, whole.idx) and np.array_equal(tiled.dist, whole.dist)
            assert sum(searched) < rows_whole
            one_hot = mixed_space(frames, infer_schema(frames))
            ref = knn(one_hot.real, one_hot.real if ex else one_hot.synthetic, k, exclude_self=ex)
            np.testing.assert_allclose(tiled.dist, ref.dist, rtol=1e-12, atol=1e-12)


def test_a_row_whose_categories_hold_a_near_target_is_not_searched_in_its_whole_group(monkeypatch):
    """Hand-made: one coded column, one category c (one-hot entries √½: a mismatch adds 1) and x.
    The query (c a, x 0, code 7). Its rest-space neighbour is target 0 (c a, x 0.05, code 3):
    R = 0.0025, d² = 1.0025, so its bound in group 7 is 1.0025. Group 7 holds target 1 (c a, x 0.1:
    R = 0.01) and 21 targets of category b at x 0 (R = 1, d² = 1). Searched among its category
    first, the row finds target 1, its bound becomes 0.01 — below a category mismatch — and its
    whole group is never searched; the answer is target 1 at distance 0.1 either way."""
    h = np.sqrt(0.5)
    q = np.array([[h, 0.0, 0.0, 7.0]])  # (c = a, c = b, x, code): the code last
    t = np.array([[h, 0.0, 0.05, 3.0], [h, 0.0, 0.1, 7.0]] + [[0.0, h, 0.0, 7.0]] * 21)
    calls = []
    whole_group = coded_module._large_group_pairs

    def counted(qr, tr, large, *args):
        calls.append(large.size)
        return whole_group(qr, tr, large, *args)

    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 2)
    monkeypatch.setattr(coded_module, "_large_group_pairs", counted)
    for tiles_first, whole_searches in ((False, 1), (True, 0)):
        monkeypatch.setattr(coded_module, "TILES_FIRST", tiles_first)
        calls.clear()
        nb = knn(q, t, 1, coded_columns=[(3, 1.0)], categorical_slices=[(0, 2)])
        assert nb.idx[0].tolist() == [1] and nb.dist[0].tolist() == pytest.approx([0.1], rel=1e-12)
        assert sum(calls) == whole_searches


@pytest.mark.parametrize("self_share", [1, 1_000_000])
def test_the_engine_inside_groups_reads_the_codes_it_is_handed(monkeypatch, self_share):
    """The engine's searches inside groups are handed the gathered rows' category codes (kept in
    the memo): the same answers, bit for bit, as when it computes them from the coordinates, and
    the codes are computed once per matrix instead of once per gathered group — whether a group
    of a set searched against itself is searched whole or for its open rows only."""
    from privgate.neighbours import SearchMemo
    from privgate.neighbours import grouped as grouped_module

    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 4)
    monkeypatch.setattr(coded_module, "ENGINE_ABOVE", 12)
    monkeypatch.setattr(coded_module, "ENGINE_MIN_PAIRS", 0)  # the engine whatever its rows
    monkeypatch.setattr(coded_module, "SELF_SHARE", self_share)
    frames = {"real": _tiled_frame(300, 5), "synthetic": _tiled_frame(200, 6)}
    cod = mixed_space(frames, infer_schema(frames), coded_above=4)
    computed = []
    codes_of = grouped_module.category_codes

    def counted(x, *args):
        computed.append(x.shape[0])
        return codes_of(x, *args)

    monkeypatch.setattr(grouped_module, "category_codes", counted)
    monkeypatch.setattr(coded_module, "category_codes", counted)
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        found = {}
        for prime in (False, True):
            monkeypatch.setattr(coded_module, "PRIME_CODES", prime)
            computed.clear()
            opts = {"coded_columns": cod.coded_columns, "categorical_slices": cod.categorical_slices}
            found[prime] = knn(cod.real, t, 2, exclude_self=ex, memo=SearchMemo(), **opts)
            found[prime, "codes"] = list(computed)
        assert np.array_equal(found[True].idx, found[False].idx)
        assert np.array_equal(found[True].dist, found[False].dist)
        # handed: only the whole matrices' codes (the rest-space query and target) are computed
        assert sorted(found[True, "codes"]) == sorted({300, t.shape[0]} if not ex else [300])
        assert len(found[False, "codes"]) > len(found[True, "codes"])


@pytest.mark.parametrize("most", [256, 2])
def test_rows_affording_one_mismatch_searched_among_targets_differing_on_one_category(monkeypatch, most):
    """A large group's row whose bound affords one mismatching category is searched among the
    group's targets that differ from it on exactly one category (by its combination's number
    less that category's code) instead of the whole group: the same neighbours and distances, bit
    for bit, as the whole group searched; rows with more such targets than ``ONE_MISMATCH_MAX``
    are searched in their whole group as before."""
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 4)
    monkeypatch.setattr(coded_module, "ENGINE_ABOVE", 12)
    monkeypatch.setattr(coded_module, "ENGINE_MIN_PAIRS", 0)  # the engine whatever its rows
    monkeypatch.setattr(coded_module, "ONE_MISMATCH_MAX", most)
    frames = {"real": _tiled_frame(300, 7), "synthetic": _tiled_frame(200, 8)}
    cod = mixed_space(frames, infer_schema(frames), coded_above=4)
    settled = []
    one_mismatch = coded_module._one_mismatch_pairs

    def counted(*args):
        pairs, done = one_mismatch(*args)
        settled.append(done.size)
        return pairs, done

    monkeypatch.setattr(coded_module, "_one_mismatch_pairs", counted)
    one_hot = mixed_space(frames, infer_schema(frames))
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        for k in (1, 3):
            opts = {"coded_columns": cod.coded_columns, "categorical_slices": cod.categorical_slices}
            monkeypatch.setattr(coded_module, "ONE_MISMATCH", False)
            whole = knn(cod.real, t, k, exclude_self=ex, **opts)
            monkeypatch.setattr(coded_module, "ONE_MISMATCH", True)
            settled.clear()
            one = knn(cod.real, t, k, exclude_self=ex, **opts)
            assert np.array_equal(one.idx, whole.idx) and np.array_equal(one.dist, whole.dist)
            if most > 2:  # (with 2, few rows or none)
                assert sum(settled) > 0
            ref = knn(one_hot.real, one_hot.real if ex else one_hot.synthetic, k, exclude_self=ex)
            np.testing.assert_allclose(one.dist, ref.dist, rtol=1e-12, atol=1e-12)


def test_small_groups_pairs_too_far_apart_by_their_categories_are_not_measured(monkeypatch):
    """Pairs of a small group whose mismatching categories alone cost more than the row's bound
    are dropped before their distances are computed: the same answers, bit for bit, and fewer
    distances computed."""
    frames = {"real": _tiled_frame(300, 9), "synthetic": _tiled_frame(200, 10)}
    cod = mixed_space(frames, infer_schema(frames), coded_above=4)
    measured = []
    distances = coded_module.distances_of_pairs

    def counted(q, t, qi, ti, settings):
        measured.append(qi.size)
        return distances(q, t, qi, ti, settings)

    monkeypatch.setattr(coded_module, "distances_of_pairs", counted)
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        found, n = {}, {}
        for prune in (False, True):
            monkeypatch.setattr(coded_module, "CATEGORY_PRUNE", prune)
            measured.clear()
            opts = {"coded_columns": cod.coded_columns, "categorical_slices": cod.categorical_slices}
            found[prune] = knn(cod.real, t, 2, exclude_self=ex, **opts)
            n[prune] = sum(measured)
        assert np.array_equal(found[True].idx, found[False].idx)
        assert np.array_equal(found[True].dist, found[False].dist)
        assert n[True] < n[False]


@pytest.mark.parametrize("k", [1, 3])
def test_a_self_searched_groups_open_rows_alone_give_the_whole_groups_answers(monkeypatch, k):
    """A large group of a set searched against itself by the engine: its open rows searched alone
    (k + 1 nearest in the group, less themselves) give the answers of the whole group searched
    against itself, bit for bit, and of the one-hot search; and the open-rows path is taken."""
    frames, cod, opts = _tiled_search(monkeypatch, (7, 8), engine_above=12, sizes=(400, 50))
    seen = []
    _spy(monkeypatch, "_engine_in_group", lambda args, out: seen.append((args[2].size, args[3].size)))
    answers = {}
    for share in (1_000_000, 2):
        monkeypatch.setattr(coded_module, "SELF_SHARE", share)
        seen.clear()
        answers[share] = knn(cod.real, cod.real, k, exclude_self=True, **opts)
        if share == 2:  # some group had under half its rows open: searched for them alone
            assert any(2 * rows < size for rows, size in seen)
    whole, open_rows = answers[1_000_000], answers[2]
    assert np.array_equal(open_rows.idx, whole.idx) and np.array_equal(open_rows.dist, whole.dist)
    one_hot = mixed_space(frames, infer_schema(frames))
    ref = knn(one_hot.real, one_hot.real, k, exclude_self=True)
    np.testing.assert_allclose(open_rows.dist, ref.dist, rtol=1e-12, atol=1e-12)


def test_a_refit_without_a_minority_of_rows_from_the_cross_products_equals_the_written_svd(frames):
    """The leading axes of every real row but a jackknife group, found from the whole input's
    cross-products less the group's (the Gram path), equal the SVD of the written input of the
    rows kept — singular values and axes (up to sign) — and the Lanczos iteration on the kept
    rows' own operator."""
    sch = infer_schema(frames)
    encoder = spaces.famd_encoder(frames["real"], sch, 30)
    z = encoder.inputs(frames["real"])
    assert z.codes and z._global() is not None
    written = z.matvec(np.eye(z.shape[1]))  # the indicator blocks written out: (rows, width)
    left = np.arange(0, z.shape[0], 9)  # a group of 45 of the 400 rows
    kept = np.setdiff1d(np.arange(z.shape[0]), left)
    _, s_ref, vt_ref = np.linalg.svd(written[kept], full_matrices=False)
    s, axes = z.leading_axes(3, rows=kept, start=z.leading_axes(3)[1])
    np.testing.assert_allclose(s, s_ref[:3], rtol=1e-10)
    np.testing.assert_allclose(np.abs(axes.T @ vt_ref[:3].T), np.eye(3), atol=1e-8)
    assert hasattr(z, "_gram_parts")  # the Gram path ran (the cross-products are kept)
    x = np.random.default_rng(0).normal(size=z.shape[1])
    np.testing.assert_allclose(z._gram()(x), written.T @ (written @ x), rtol=1e-10, atol=1e-10)
    lanczos = z.rows(kept).leading_axes(3)
    np.testing.assert_allclose(s, lanczos[0], rtol=1e-12)


@pytest.mark.parametrize("levels", [3, 50, 100_000])
def test_group_numbers_refined_from_a_subsets_and_counted_equal_the_sorted_ones(monkeypatch, levels):
    """A subset's group numbers refined from those of the subset less its last column (and the
    inner search's from the outer groups' numbers by the combination of categories), numbered by
    counting when they span few values: the numbers ``np.unique(columns, axis=0)`` gives; and the
    targets ordered by group (a radix sort of 16-bit numbers when the groups fit) as by a stable
    sort of the int64 numbers."""
    r = np.random.default_rng(levels)
    n, m = 700, 900
    qc, tc = r.integers(0, levels, (n, 3)), r.integers(0, levels, (m, 3))
    tiles_q, tiles_t = r.integers(0, 2**35, n), r.integers(0, 2**35, m)
    both = np.vstack([qc, tc])
    for counted_span in (0, 4):  # 0: always by sorting
        monkeypatch.setattr(grouped_module, "DENSE_NUMBERING_SPAN", counted_span)
        ids = None
        for j in range(3):
            ids = grouped_module.refine_group_ids(ids, both[:, j])
            expected = np.unique(both[:, : j + 1], axis=0, return_inverse=True)[1].ravel()
            assert np.array_equal(ids, expected)
        inner = grouped_module.refine_group_ids(ids, np.concatenate([tiles_q, tiles_t]))
        cols = np.column_stack([both, np.concatenate([tiles_q, tiles_t])])
        assert np.array_equal(inner, np.unique(cols, axis=0, return_inverse=True)[1].ravel())
        for gid in (ids, inner):
            gq, order, start, size = coded_module._group_layout(gid, n)
            assert np.array_equal(gq, gid[:n])
            assert np.array_equal(order, np.argsort(gid[n:], kind="stable"))
            assert np.array_equal(size, np.bincount(gid[n:], minlength=int(gid.max()) + 1))


def test_one_mismatch_windows_from_an_unstable_sort_list_the_pairs_of_a_stable_one(monkeypatch):
    """The one-mismatch search's keys sorted by an unstable sort (a window's targets in any
    order): the same candidate pairs, in the same order and with the same distances, as a stable
    sort of the keys gives — each row's k nearest are picked by (distance, index) — and the same
    neighbours."""
    _, cod, opts = _tiled_search(monkeypatch, (7, 8), engine_above=12)
    listed = []
    _spy(monkeypatch, "_one_mismatch_pairs", lambda args, out: listed.append(out))
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        for k in (1, 3):
            found = {}
            for kind in ("stable", "heapsort"):
                monkeypatch.setattr(coded_module, "ONE_MISMATCH_SORT", kind)
                listed.clear()
                found[kind] = (knn(cod.real, t, k, exclude_self=ex, **opts), list(listed))
            (a, pairs_a), (b, pairs_b) = found["stable"], found["heapsort"]
            assert np.array_equal(a.idx, b.idx) and np.array_equal(a.dist, b.dist)
            assert len(pairs_a) == len(pairs_b) and sum(sum(p[0].size for p in q) for q, _ in pairs_a) > 0
            for (qa, done_a), (qb, done_b) in zip(pairs_a, pairs_b):
                assert np.array_equal(done_a, done_b) and len(qa) == len(qb)
                for x, y in zip(qa, qb):
                    assert all(np.array_equal(u, v) for u, v in zip(x, y))


@pytest.mark.parametrize("k", [1, 3])
def test_larger_groups_with_few_open_pairs_enumerated_give_the_gemms_answers(monkeypatch, k):
    """Larger groups whose rows searched in them have few pairs with its targets, enumerated all
    at once (exact distances) instead of a GEMM per group: the same neighbours and distances, bit
    for bit, fewer GEMM calls, and the one-hot search's distances."""
    frames, cod, opts = _tiled_search(monkeypatch, (5, 6), engine_above=10_000)
    calls = []
    _spy(monkeypatch, "_k_smallest_in_group", lambda args, out: calls.append(1))
    one_hot = mixed_space(frames, infer_schema(frames))
    for ex in (False, True):
        t = cod.real if ex else cod.synthetic
        found, n_calls = {}, {}
        for most in (0, 100_000):
            monkeypatch.setattr(coded_module, "ENUMERATE_PAIRS_UP_TO", most)
            calls.clear()
            found[most] = knn(cod.real, t, k, exclude_self=ex, **opts)
            n_calls[most] = len(calls)
        assert np.array_equal(found[0].idx, found[100_000].idx)
        assert np.array_equal(found[0].dist, found[100_000].dist)
        assert n_calls[0] > 0 and n_calls[100_000] == 0
        ref = knn(one_hot.real, one_hot.real if ex else one_hot.synthetic, k, exclude_self=ex)
        np.testing.assert_allclose(found[0].dist, ref.dist, rtol=1e-12, atol=1e-12)


def test_targets_of_more_than_65536_groups_ordered_as_by_a_stable_sort():
    """More groups than 16-bit numbers hold: the targets ordered by (group, index) as one number
    by an unstable sort, as a stable sort of the group numbers orders them."""
    r = np.random.default_rng(3)
    n, m = 500, 200_000
    gid = r.integers(0, 70_000, n + m)
    gid[-1] = 69_999  # (the groups' count is the largest number + 1)
    gq, order, start, size = coded_module._group_layout(gid, n)
    assert np.array_equal(order, np.argsort(gid[n:], kind="stable"))
    assert np.array_equal(start, np.concatenate([[0], np.cumsum(size)[:-1]]))


def test_a_group_tie_at_the_kth_keeps_the_lowest_index(monkeypatch):
    """A small group's enumerated pairs keep every target tied (but for rounding) with its k-th,
    so that the decision can take the lowest index as for any tie: query (0.1, −1.5) and two
    targets of its code at squared rest distance 0.17 but for rounding — index 1 at
    0.17000000000000004, index 2 at 0.16999999999999993 — and a target of another code nearer in
    the rest space (index 0, which the rest-space search lists). Its nearest is index 1."""
    monkeypatch.setattr(coded_module, "ENUMERATE_UP_TO", 16)
    q = np.array([[0.1, -1.5, 7.0]])
    t = np.array([[0.1, -1.45, 3.0], [-0.3, -1.4, 7.0], [0.2, -1.1, 7.0]])
    nb = knn(q, t, 1, coded_columns=[(2, 1.0)])
    assert nb.idx[0].tolist() == [1]
    np.testing.assert_allclose(nb.dist[0], [np.sqrt(0.17)], rtol=1e-12)


def _screened_inputs(kind: str, exclude_self: bool) -> tuple[np.ndarray, np.ndarray, dict]:
    """(query, target, knn options): 20 numeric coordinates of unequal spread and a coded column
    (``plain``; ``compact``: the same in float32), or a mixed space of numbers, one-hot categories
    and two coded columns."""
    rng = np.random.default_rng(5)
    if kind == "plain":
        rest = rng.normal(size=(3000, 20)) * np.linspace(0.2, 2.0, 20)
        codes = np.concatenate([rng.integers(0, 400, 2000), rng.integers(400, 410, 1000)]).astype(float)
        t = np.column_stack([rest, codes])
        q = t if exclude_self else np.column_stack([rng.normal(size=(500, 20)), rng.integers(0, 410, 500)])
        return q, t, {"coded_columns": [(20, 1.5)]}
    if kind == "compact":  # float32 coordinates, as compact spaces hold them
        q, t, opts = _screened_inputs("plain", exclude_self)
        t32 = t.astype(np.float32)
        return (t32 if exclude_self else q.astype(np.float32)), t32, opts
    frames = {
        "real": _frame(1500, 7, zip_levels=60, dx_levels=8),
        "synthetic": _frame(700, 8, zip_levels=60, dx_levels=8),
    }
    cod = mixed_space(frames, infer_schema(frames), coded_above=4)
    opts = {"coded_columns": cod.coded_columns, "categorical_slices": cod.categorical_slices}
    return cod.real, (cod.real if exclude_self else cod.synthetic), opts


@pytest.mark.parametrize("kind", ["plain", "compact", "mixed"])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_enumerated_pairs_screened_on_a_few_coordinates_give_the_same_answers(monkeypatch, kind, exclude_self):
    """Enumerated pairs whose squared distance over a few coordinates outside the one-hot
    categories (those of largest variance), plus the costs of the categories they differ on, is
    beyond their row's bound are dropped before their exact distances: the same neighbours and
    distances, bit for bit, as without the screen, from fewer exact distances."""
    q, t, opts = _screened_inputs(kind, exclude_self)
    monkeypatch.setattr(coded_module, "SCREEN_COLUMNS", 4)
    width = q.shape[1] - len(opts["coded_columns"])
    exact = []
    pairs = coded_module.distances_of_pairs

    def counted(a, b, r, c, settings):
        exact.append(r.size if a.shape[1] == width else 0)
        return pairs(a, b, r, c, settings)

    monkeypatch.setattr(coded_module, "distances_of_pairs", counted)
    screen = coded_module._screen
    found = {}
    for on in (False, True):
        monkeypatch.setattr(coded_module, "_screen", screen if on else (lambda *args: None))
        exact.clear()
        found[on] = knn(q, t, 3, exclude_self=exclude_self, **opts)
        found[on, "exact"] = sum(exact)
    assert np.array_equal(found[True].idx, found[False].idx)
    assert np.array_equal(found[True].dist, found[False].dist)
    assert 0 < found[True, "exact"] < found[False, "exact"]


def test_the_category_floor_stays_below_the_float64_sum_of_costs():
    """The pruning floor of a pair's mismatching categories (float32 sums less a relative 1e-5)
    never exceeds their costs summed in float64, and is within 2e-5 of it."""
    rng = np.random.default_rng(3)
    costs = rng.uniform(0.01, 3.0, 30)
    mismatch = rng.random((20000, 30)) < 0.4
    exact = mismatch.astype(np.float64) @ costs
    floor = coded_module._category_floor(mismatch, costs)
    assert np.all(floor <= exact)
    np.testing.assert_allclose(floor, exact, rtol=2e-5)


def test_a_tie_of_whole_distances_is_kept_when_coded_costs_dwarf_the_rest():
    """Two targets of the query's first code, both differing on the second (cost 100): rest
    distances 0 (index 1) and 9e-5 (index 0), whole distances 10 and 10 + 4e-10 — a tie within the
    decision's tolerance, so the lowest index, 0, is the nearest. The group's enumeration must keep
    index 0 although its rest distance is far beyond the k-th's relative 1e-6."""
    q = np.array([[0.0, 0.0, 7.0, 1.0]])
    t = np.array([[9e-5, 0.0, 7.0, 2.0], [0.0, 0.0, 7.0, 3.0]])
    nb = knn(q, t, 1, coded_columns=[(2, 1.0), (3, 100.0)])
    assert nb.idx[0].tolist() == [0]
    np.testing.assert_allclose(nb.dist[0], [10.0], rtol=1e-9)
