"""A metric's facts live in its registry declaration (privgate.registry.register_metric): its
memory cost, the sides whose records it samples, the share of records it caps itself at. The
memory guard and the tests read the registry, so declaring a metric's memory cost is a change of
the metric's own file only."""

from __future__ import annotations

import inspect

import polars as pl
import pytest

import privgate.memory_guard as guard
from privgate.catalogue import get_metric, metric_names
from privgate.context import EvaluationContext
from privgate.registry import register_metric, unregister_metric
from privgate.results import MetricResult


def _frames(n: int) -> pl.DataFrame:
    return pl.DataFrame({"x": [float(i % 17) for i in range(n)], "g": [str(i % 3) for i in range(n)]})


def _plugin(name: str, **declaration):
    """A plugin metric declared with ``declaration`` (registered in this test only)."""

    def fn(ctx) -> MetricResult:
        return MetricResult(name=name, value=0.0, raw=0.0)

    fn.__name__ = name
    fn.__module__ = "my_plugin"
    return register_metric(
        family="statistical", attack="none", reference="test", orientation="test", spaces=(), **declaration
    )(fn)


@pytest.fixture
def ctx():
    return EvaluationContext(_frames(1000), _frames(800))


def test_a_metric_s_memory_cost_is_its_declaration(ctx):
    try:
        _plugin("costly_metric", memory_cost=3.5)
        _plugin("undeclared_metric")
        est = guard.estimate_run(ctx, ["costly_metric", "undeclared_metric"])
        held = guard.BASE_BYTES + est.unit * guard.HELD_PER_FRAME * 1.8
        assert est.per_metric["costly_metric"] == pytest.approx(held + est.unit * 3.5)
        # a plugin's metric that declares nothing is estimated at the documented default
        assert est.per_metric["undeclared_metric"] == pytest.approx(held + est.unit * guard.DEFAULT_COST)
    finally:
        unregister_metric("costly_metric")
        unregister_metric("undeclared_metric")


def test_a_sampled_metric_s_cost_follows_the_sample(ctx):
    try:
        _plugin("sampled_metric", memory_cost=4.0, sampled=("real",))
        _plugin("whole_metric", memory_cost=4.0)
        full = guard.estimate_run(ctx, ["sampled_metric", "whole_metric"])
        part = guard.estimate_run(ctx, ["sampled_metric", "whole_metric"], sample=250)
        assert full.per_metric["sampled_metric"] - part.per_metric["sampled_metric"] == pytest.approx(
            full.unit * 4.0 * 0.75
        )
        assert part.per_metric["whole_metric"] == full.per_metric["whole_metric"]
    finally:
        unregister_metric("sampled_metric")
        unregister_metric("whole_metric")


def test_a_declaration_s_facts_are_checked():
    with pytest.raises(ValueError, match="sampled side"):
        register_metric(family="statistical", attack="a", reference="r", orientation="o", sampled=("holdout",))
    with pytest.raises(ValueError, match="memory_cost"):
        register_metric(family="statistical", attack="a", reference="r", orientation="o", memory_cost=-1)


def test_every_builtin_metric_declares_its_memory_cost():
    """privgate's own metrics are calibrated (benchmarks/bench_metric_costs.py): none falls back
    to the plugin default."""
    undeclared = [n for n in metric_names() if get_metric(n).memory_cost is None]
    assert undeclared == []


def test_the_memory_guard_keys_nothing_by_metric_name():
    source = inspect.getsource(guard)
    named = [n for n in metric_names() if f'"{n}"' in source or f"'{n}'" in source]
    assert named == []
