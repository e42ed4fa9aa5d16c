"""Copies disguised on a minority of the records, found record by record: hand-built tiny cases,
the shuffled-anchor test, and the view the metrics then compare in."""

from __future__ import annotations

import numpy as np
import polars as pl

from privgate.context import EvaluationContext
from privgate.disguised_records import find_disguised_records, put_sources
from privgate.metrics.label_free import correspondence
from privgate.schema import Schema

SCHEMA = Schema({"x": "numeric", "c": "categorical", "d": "categorical"})


def _real(n: int = 120, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "x": rng.permutation(n) * 1.5 + 0.25,
            "c": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]).tolist(),
            "d": rng.choice(["u", "v"], n).tolist(),
        }
    )


def _honest(real: pl.DataFrame, seed: int = 1) -> pl.DataFrame:
    """New people: numerics no real record has, categories drawn as the real ones are."""
    other = _real(real.height, seed)
    return other.with_columns(pl.col("x") + 0.5)


PERM_C = {"a": "b", "b": "c", "c": "a"}
PERM_D = {"u": "v", "v": "u"}


def _with_disguised(real: pl.DataFrame, honest: pl.DataFrame, rows: list[int]) -> pl.DataFrame:
    """``honest`` with its first len(rows) records replaced by real rows ``rows`` whose levels
    were permuted (a→b→c→a, u↔v)."""
    copies = real[rows].with_columns(pl.col("c").replace_strict(PERM_C), pl.col("d").replace_strict(PERM_D))
    return pl.concat([copies, honest[len(rows) :]])


def test_disguised_records_are_found_with_their_sources():
    real = _real()
    rows = list(range(0, 24, 2))  # 12 of 120 records disguised
    release = _with_disguised(real, _honest(real), rows)
    found = find_disguised_records(release, real, SCHEMA, seed=0)
    assert found is not None
    assert found.rows.tolist() == list(range(12))  # the first 12 release rows ...
    assert found.sources.tolist() == rows  # ... copy real rows 0, 2, 4, ...
    assert found.anchored == 12 and found.columns_recoded == 2
    # replaced by their sources, the release holds those real records exactly
    view = put_sources(release, real[found.sources], found.rows)
    assert view.head(12).equals(real[rows])
    assert view.tail(108).equals(release.tail(108))


def test_an_honest_release_has_no_disguised_records():
    real = _real()
    assert find_disguised_records(_honest(real), real, SCHEMA) is None
    # plain copies are anchored but show the identity: nothing to change
    assert find_disguised_records(pl.concat([real.head(20), _honest(real).tail(100)]), real, SCHEMA) is None


def test_a_few_chance_pairs_do_not_make_a_correspondence():
    """Three exact numeric matches whose levels merely differ: the shuffled anchors explain as
    many (or the pairs are too few), so no record changes."""
    real = _real()
    release = _honest(real)
    chance = real[[5, 50, 90]].with_columns(pl.lit("a").alias("c"))
    release = pl.concat([chance, release.tail(117)])
    assert find_disguised_records(release, real, SCHEMA, seed=0) is None


def test_numerics_that_do_not_identify_records_are_no_anchors():
    """A numeric column of three values: an exact match says nothing, the view is not used."""
    real = _real().with_columns((pl.col("x") % 3).alias("x"))
    release = _with_disguised(real, real, list(range(12)))
    assert find_disguised_records(release, real, SCHEMA) is None


def test_the_label_free_view_holds_the_sources_and_says_so():
    real = _real(300)
    holdout = _real(300, seed=7).with_columns(pl.col("x") + 0.1)  # other people: other values
    release = _with_disguised(real, _honest(real), list(range(0, 60, 4)))  # 15 of 300 (5 %)
    ctx = EvaluationContext(real, release, holdout=holdout, _shared={"real_nn": {}, "entropy": {}})
    corr = correspondence(ctx)
    assert corr.records is not None and corr.records.rows.size == 15
    assert not corr.identity and corr.remapped == () and corr.numeric_maps == {}
    described = corr.describe(ctx.schema)["disguised_records"]
    assert described == {"records": 15, "anchored_exactly": 15, "columns_with_a_learnt_correspondence": 2}
    import privgate

    assert privgate.metrics.common_rows(ctx).value == 0.0
    assert privgate.metrics.label_free_copies(ctx).value == 15 / 300
