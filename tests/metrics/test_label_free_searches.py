"""The label-free view's searches read from the plain context: when the view only recodes
categories, a record's distances change only if the codes change which target levels its level
equals, so only those records are searched again in the view — with the same neighbours as a
view that searches everything itself."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.context import EvaluationContext
from privgate.label_free import Correspondence, _changed_levels
from privgate.level_classes import CODE_PREFIX, KEEP_PREFIX
from privgate.metrics.label_free import recoded_context

SCHEMA = {"x": "numeric", "y": "numeric", "c": "categorical", "d": "categorical"}


def test_changed_levels_by_hand():
    # release a, b, z; reference a, b, c. Codes: release a and reference c share a class (a
    # renaming), release b and reference b share one (kept), release z and reference a unlisted
    rel = {"a": CODE_PREFIX + "1", "b": CODE_PREFIX + "2"}
    ref = {"c": CODE_PREFIX + "1", "b": CODE_PREFIX + "2"}
    # a: equal before to reference a only, in the view to reference c only -> changed
    # b: equal to reference b before and after -> unchanged
    # z: equal to nothing before; unlisted keeps its label, no reference z -> unchanged
    assert _changed_levels(["a", "b", "z"], ["a", "b", "c"], rel, ref) == ["a"]
    # reference → reference with the reference codes: a is unlisted (kept), c is in a class alone
    # (equal to itself before and after): nothing changes
    assert _changed_levels(["a", "b", "c"], ["a", "b", "c"], ref, ref) == []
    # two reference levels merged into one class: both change (each now equals the other)
    merged = {"a": CODE_PREFIX + "9", "c": CODE_PREFIX + "9"}
    assert sorted(_changed_levels(["a", "b", "c"], ["a", "b", "c"], merged, merged)) == ["a", "c"]
    # a level kept behind the prefix while its namesake on the other side got a class: changed
    assert _changed_levels(["a"], ["a"], {"a": KEEP_PREFIX + "a"}, {"a": CODE_PREFIX + "3"}) == ["a"]


def _frames(seed: int) -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(seed)

    def draw(n: int) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "x": rng.normal(size=n).round(1),
                "y": rng.normal(size=n).round(1),
                "c": rng.choice(["a", "b", "c", "d"], n),
                "d": pl.Series([None if v == "-" else v for v in rng.choice(["u", "v", "-"], n)], dtype=pl.String),
            }
        )

    return {"real": draw(300), "synthetic": draw(250), "holdout": draw(280)}


def _merge_correspondence() -> Correspondence:
    """Release levels a and b both stand for reference a; reference b joined to nothing."""
    rel = {"c": {"a": CODE_PREFIX + "0", "b": CODE_PREFIX + "0"}}
    ref = {"c": {"a": CODE_PREFIX + "0"}}
    return Correspondence(rel, ref, ("c",), {"c": {}}, 0)


@pytest.mark.parametrize(
    "query,target,k,rows",
    [
        ("synthetic", "real", 1, None),
        ("synthetic", "real", 3, np.array([0, 5, 17, 40, 199])),
        ("real", "real", 2, None),
        ("real", "synthetic", 1, None),
        ("synthetic", "holdout", 1, None),
        ("holdout", "holdout", 1, None),
    ],
)
def test_a_view_that_recodes_categories_reads_the_plain_searches(query, target, k, rows):
    frames = _frames(4)
    plain = EvaluationContext(frames["real"], frames["synthetic"], holdout=frames["holdout"], schema=SCHEMA, seed=1)
    corr = _merge_correspondence()
    view = recoded_context(plain, corr, with_holdout=True)
    assert view._searches_of is not None
    alone = recoded_context(plain, corr, with_holdout=True)
    alone._searches_of = None  # the same view searching every record itself
    got = view.neighbours("mixed", query, target, k, rows=rows)
    want = alone.neighbours("mixed", query, target, k, rows=rows)
    np.testing.assert_array_equal(got.idx, want.idx)
    np.testing.assert_allclose(got.dist, want.dist, rtol=1e-12, atol=0)
    keep = corr.unchanged_rows(frames, query, target)
    asked = np.arange(frames[query].height) if rows is None else rows
    again = int((~keep[asked]).sum())
    if again:
        assert got.search["searched_again_in_view"] == again
    # the records left alone are the plain context's answers, and the others differ somewhere
    plain_nb = plain.neighbours("mixed", query, target, k, rows=rows)
    np.testing.assert_array_equal(got.idx[keep[asked]], plain_nb.idx[keep[asked]])


def test_the_records_searched_again_are_those_of_changed_levels():
    frames = _frames(5)
    corr = _merge_correspondence()
    keep = corr.unchanged_rows(frames, "synthetic", "real")
    # release a equals reference a before and after; release b equalled reference b and now equals
    # reference a: only b's records change
    assert np.array_equal(keep, ~frames["synthetic"]["c"].is_in(["b"]).to_numpy())
    # seen from the reference: reference a now also equals release b, reference b no release level
    keep_rs = corr.unchanged_rows(frames, "real", "synthetic")
    assert np.array_equal(keep_rs, ~frames["real"]["c"].is_in(["a", "b"]).to_numpy())
    keep_rr = corr.unchanged_rows(frames, "real", "real")
    # reference a is in a class alone (equal to itself) and b, c, d keep their labels: unchanged
    assert keep_rr.all()


def test_a_view_that_maps_numbers_or_replaces_records_has_no_unchanged_rows():
    from dataclasses import replace

    frames = _frames(6)
    corr = _merge_correspondence()
    assert replace(corr, numeric_maps={"x": object()}).unchanged_rows(frames, "synthetic", "real") is None
    assert replace(corr, records=object()).unchanged_rows(frames, "synthetic", "real") is None


def test_a_chance_majority_of_a_rare_level_is_no_edge_once_the_column_is_tested():
    """Hand-built anchors: release level x has 3 anchored records, 2 of them at reference y (whose
    base share is 17/1000): P(Bin(3, 0.017) ≥ 2) = 8.57e-4 passes a per-level test at 1e-3 and
    joins x to y; tested per column (5 levels tested: × 5 = 4.3e-3) it does not. A renaming of a
    rare level (q's 3 anchors all at w, base 3/1000: 2.7e-8) joins either way."""
    from privgate.level_classes import level_classes

    cells = [("a", "a", 960), ("y", "y", 15), ("x", "y", 2), ("x", "x", 1), ("z", "z", 19), ("q", "w", 3)]
    table = pl.DataFrame(
        {"s": [c[0] for c in cells], "r": [c[1] for c in cells], "len": [c[2] for c in cells]},
        schema={"s": pl.String, "r": pl.String, "len": pl.UInt32},
    )
    rel, ref = ["a", "q", "x", "y", "z"], ["a", "w", "x", "y", "z"]
    per_level = level_classes(table, "s", "r", rel, ref)
    per_column = level_classes(table, "s", "r", rel, ref, per_column=True)
    assert per_level[0]["x"] == per_level[1]["y"]  # the chance edge x → y
    assert per_column[0]["x"] != per_column[1]["y"] and per_column[0]["y"] == per_column[1]["y"]
    for codes in (per_level, per_column):
        assert codes[0]["q"] == codes[1]["w"]  # the renaming
        assert not codes[2]["identity"]
