"""hitting_rate beyond chance: hand-computed on tiny data, and the default gate's rule on a release
whose raw share of hits is large only because the data are dense (not blocked) and on a copy (blocked)."""

from importlib import resources

import numpy as np
import polars as pl
import pytest

import privgate.metrics as m
from privgate import baselines
from privgate.gates import run_gate
from privgate.gates.config import load_gate_config
from privgate.neighbours.boxes import any_within_box


def test_box_query_without_own_row_counts_duplicates():
    t = np.array([[0.0], [0.0], [5.0], [9.0]])
    # row 0's duplicate (row 1) hits it; row 2 has nobody else within 1; row 3 is not a target row
    # here (−1): its own point counts
    hit = any_within_box(t[[0, 2, 3]], t, 1.0, self_rows=np.array([0, 2, -1]))
    assert hit.tolist() == [True, False, True]


def test_beyond_chance_by_hand():
    # one numeric column a (range 60 → h = 2) and one categorical b.
    # real: (0,x) (1,x) (30,y) (60,x): other real records hit (0,x) by (1,x) and (1,x) by (0,x) → h0 = 2/4
    # release: hits (0,x) (1,x) (30,y) → h = 3/4; beyond chance = (3/4 − 1/2)/(1 − 1/2) = 1/2
    r = pl.DataFrame({"a": [0.0, 1, 30, 60], "b": ["x", "x", "y", "x"]})
    s = pl.DataFrame({"a": [0.5, 31, 50, 20], "b": ["x", "y", "x", "x"]})
    res = m.hitting_rate(r, s, beyond_chance=True)
    assert res.raw == pytest.approx(0.75)
    assert res.details["chance_share_hit"] == pytest.approx(0.5)
    assert res.value == pytest.approx(0.5)
    assert res.per_record.tolist() == [0, 0, 1, 0]
    assert res.ci[0] <= res.value <= res.ci[1]
    # the published value is unchanged without the option
    assert m.hitting_rate(r, s).value == pytest.approx(0.75)


def test_beyond_chance_compares_at_one_size():
    # a release 4× the real data's size is cut to the real size; the raw share stays the full one
    rng = np.random.default_rng(3)
    r = pl.DataFrame({"a": rng.normal(size=200), "b": rng.choice(["x", "y"], 200)})
    s = pl.DataFrame({"a": rng.normal(size=800), "b": rng.choice(["x", "y"], 800)})
    res = m.hitting_rate(r, s, beyond_chance=True)
    assert res.details["size_compared"] == 200
    assert res.raw == pytest.approx(m.hitting_rate(r, s).value)
    assert res.details["share_hit_at_size"] <= res.raw


def _latent(n: int, seed: int) -> pl.DataFrame:
    """Four categorical columns of a three-class latent model and one numeric: dense data, where an
    honest release hits most real records by chance."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 3, n)
    cols = {}
    for j in range(4):
        p = np.random.default_rng(100 + j).dirichlet(np.full(5, 0.5), 3)
        u = rng.random(n)
        cols[f"c{j}"] = [f"v{x}" for x in (u[:, None] > np.cumsum(p[k], 1)).sum(1)]
    cols["x"] = rng.normal(k * 1.0, 1, n)
    return pl.DataFrame(cols)


def test_default_gate_rule_does_not_block_a_dense_honest_release_and_blocks_a_copy(tmp_path):
    real = _latent(3000, 1)
    honest = baselines.independent_marginals(real, 1)
    cfg_path = tmp_path / "gate.yaml"
    text = (resources.files("privgate") / "configs" / "default_gate.yaml").read_text()
    head, rest = text.split("metrics:\n", 1)
    block = "  hitting_rate:" + rest.split("  hitting_rate:", 1)[1].split("\n\n", 1)[0]
    cfg_path.write_text(head + "metrics:\n" + block + "\n")
    assert load_gate_config(cfg_path).metrics["hitting_rate"].params == {"beyond_chance": True}
    # the published share is far above the old raw limit 0.5 for this honest release
    assert m.hitting_rate(real, honest).value > 0.5
    out = run_gate(cfg_path, real, honest, record=False, threads=1)
    assert out.decision == "pass", out.checks
    out = run_gate(cfg_path, real, real, record=False, threads=1)
    assert out.decision == "block"
