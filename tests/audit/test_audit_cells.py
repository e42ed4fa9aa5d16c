"""A generator's published domain: its cells become the audit's, cell canaries go in distinct cells
of it, and the many-canary analysis shifts each canary's scores by its own "out" level — each
checked on hand-computed values."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate.audit.analysis import center_within, pooled_guesses
from privgate.audit.api import prepare_audit
from privgate.audit.cells import domain_cell_canaries, published_domain
from privgate.audit.features import FeatureSpace, feature_index
from privgate.audit.mechanisms import LaplaceHistogram
from privgate.audit.targets import canary_targets
from privgate.errors import ParameterError
from privgate.schema import infer_schema

DOMAIN = {"age": [0, 10, 20, 30], "sex": ["F", "M"]}


def tiny() -> pl.DataFrame:
    # cells (age bin, sex): (0, F) ×3, (0, M) ×1, (1, F) ×2, (2, M) ×1; (1, M) and (2, F) empty
    return pl.DataFrame({"age": [1, 2, 3, 5, 12, 15, 25], "sex": ["F", "F", "F", "M", "F", "F", "M"]})


def schema_of(frame: pl.DataFrame):
    return infer_schema({"population": frame}, None)


def test_published_domain_is_read_from_the_generator_and_checked():
    pool = tiny()
    sch = schema_of(pool)
    dom = published_domain(LaplaceHistogram(1.0, DOMAIN, release="rounded"), pool, sch)
    np.testing.assert_array_equal(dom["age"], [0.0, 10.0, 20.0, 30.0])
    assert dom["sex"] == ["F", "M"]
    assert published_domain(LaplaceHistogram(1.0, None, domain_from_data=True), pool, sch) is None
    assert published_domain(lambda t, n, s: t, pool, sch) is None  # a plain function states nothing

    class Bad:
        def __init__(self, dom):
            self.dom = dom

        def published_domain(self):
            return self.dom

    with pytest.raises(ParameterError, match="strictly increasing"):
        published_domain(Bad({"age": [0, 30, 20], "sex": ["F"]}), pool, sch)
    with pytest.raises(ParameterError, match="no cells for column 'sex'"):
        published_domain(Bad({"age": [0, 30]}), pool, sch)
    with pytest.raises(ParameterError, match="1 column"):
        published_domain(Bad({"age": [0, 30], "sex": ["F"], "zip": ["1"]}), pool, sch)


def test_cell_canaries_go_in_distinct_cells_of_the_domain_emptiest_first():
    pool = tiny()
    sch = schema_of(pool)
    dom = published_domain(LaplaceHistogram(1.0, DOMAIN), pool, sch)
    got = domain_cell_canaries(pool, sch, dom, 4, seed=0)
    cells = list(zip((np.asarray(got["age"]) // 10).tolist(), got["sex"].to_list()))
    assert len(set(cells)) == 4
    # the two empty cells first (either order), then the two cells holding one record
    assert set(cells[:2]) == {(1, "M"), (2, "F")} and set(cells[2:]) == {(0, "M"), (2, "M")}
    assert set(got["age"].to_list()) <= {5, 15, 25}  # the integer at each bin's midpoint
    assert got.schema == pool.schema


def test_the_canaries_design_counts_the_generators_own_cells():
    pool = tiny()
    sch = schema_of(pool)
    gen = LaplaceHistogram(1.0, DOMAIN, release="rounded")
    targets = canary_targets(pool, sch, 4, seed=0, domain=published_domain(gen, pool, sch))
    assert targets.kinds.count("canary_cell") == 2 and targets.kinds.count("canary_level") == 2
    space = FeatureSpace.build(pool, targets.frame, sch, edges={"age": np.array([0.0, 10.0, 20.0, 30.0])})
    # a release with two records in (1, M), one in (2, F) at an age the population's quantile
    # bins would split differently, and one elsewhere
    release = pl.DataFrame({"age": [10.0, 19.0, 29.0, 1.0], "sex": ["M", "M", "F", "F"]})
    feats = space.features(space.prepare(release))
    cell = feats[:, feature_index("cell_count")]
    ages = targets.frame["age"].to_list()
    sexes = targets.frame["sex"].to_list()
    for t in range(2):  # the cell canaries: (1, M) holds 2 records, (2, F) holds 1
        want = {(1, "M"): 2, (2, "F"): 1}[(ages[t] // 10, sexes[t])]
        assert cell[t] == want


def test_hashed_cell_counts_equal_the_comparison_of_every_target_with_every_record():
    rng = np.random.default_rng(3)
    pool = pl.DataFrame(
        {"x": rng.normal(size=300), "y": rng.integers(0, 50, 300), "c": rng.choice(["a", "b", "c"], 300)}
    )
    sch = schema_of(pool)
    space = FeatureSpace.build(pool, pool[:25], sch)
    release = pool.sample(200, seed=1, with_replacement=True).with_columns(
        pl.when(pl.int_range(pl.len()) % 9 == 0).then(None).otherwise(pl.col("x")).alias("x"),
        pl.when(pl.int_range(pl.len()) % 13 == 0).then(500).otherwise(pl.col("y")).alias("y"),
    )
    codes = space.codes(space.prepare(release))
    np.testing.assert_array_equal(space._cell_counts(codes), space._cell_counts_compared(codes))


def test_centering_shifts_each_target_by_the_lower_median_of_its_own_out_scores():
    fit = np.array([[0.0, 3.0], [1.0, 5.0], [4.0, 4.0], [1.0, 9.0]])
    y = np.array([[False, False], [False, True], [True, False], [False, False]])
    # target 0 out-scores 0, 1, 1 → 1; target 1 out-scores 3, 4, 9 → 4
    np.testing.assert_array_equal(center_within(fit, y, np.array([[2.0, 6.0]])), [[1.0, 2.0]])
    # even count: the lower of the two middle scores (an observed count, not a half)
    np.testing.assert_array_equal(
        center_within(np.array([[0.0], [1.0]]), np.zeros((2, 1), bool), np.array([[2.0]])), [[2.0]]
    )
    # a target never out in the fit runs: every target's out-scores' lower median (3, 4, 9 → 4)
    y2 = y.copy()
    y2[:, 0] = True
    np.testing.assert_array_equal(center_within(fit, y2, np.array([[2.0, 6.0]])), [[-2.0, 2.0]])


def test_pooled_guesses_with_centering_serve_canaries_of_unlike_backgrounds():
    rng = np.random.default_rng(0)
    background = np.array([0.0, 5.0, 20.0, 40.0] * 8)
    inc = rng.random((400, background.size)) < 0.5
    counts = background + inc + np.round(rng.laplace(0.0, 0.25, inc.shape))
    args = (counts[:100], inc[:100], counts[100:], inc[100:])
    raw = pooled_guesses(*args, alpha_fit=0.05, alpha=0.05, rank=False)
    shifted = pooled_guesses(*args, alpha_fit=0.05, alpha=0.05, rank=False, center=True)
    assert shifted["centered"] and not raw["centered"]
    assert shifted["epsilon_lower"] > raw["epsilon_lower"] + 1.0


def test_prepare_audit_records_that_the_cells_are_the_generators():
    pool = pl.DataFrame({"age": np.arange(200) % 30, "sex": ["F", "M"] * 100})
    prep = prepare_audit(LaplaceHistogram(1.0, DOMAIN, release="rounded"), pool, runs=4, seed=0)
    assert prep.plan.published_cells
    np.testing.assert_array_equal(prep.space.edges["age"], [0.0, 10.0, 20.0, 30.0])
    plain = prepare_audit(None, pool, runs=4, seed=0)
    assert not plain.plan.published_cells
