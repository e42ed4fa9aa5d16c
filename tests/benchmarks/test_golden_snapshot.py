"""benchmarks/golden_snapshot.py's comparison: rounding hides float noise below 12 significant
digits, wall times are dropped, and every changed, missing, new or resized entry is one difference."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import golden_snapshot as golden  # noqa: E402


def test_rounding_and_dropped_wall_times():
    a = golden.normalise(
        {
            "value": 0.1 + 0.2,
            "seconds": 1.5,
            "ci": (0.1, np.float32(0.5)),
            "per": np.array([1, 2]),
            "nan": float("nan"),
            "flag": np.bool_(True),
        }
    )
    b = golden.normalise(
        {"value": 0.3, "seconds": 9.0, "ci": [0.1, 0.5], "per": [1, 2], "nan": float("nan"), "flag": True}
    )
    assert "seconds" not in a
    assert a == b
    assert golden.differences(a, b) == []


def test_every_kind_of_difference_is_counted():
    before = {"r": {"value": 0.5, "ci": [0.1, 0.9], "gone": 1, "checks": [1, 2]}}
    after = {"r": {"value": 0.5000001, "ci": [0.1, 0.8], "new": 2, "checks": [1, 2, 3]}}
    diffs = golden.differences(before, after)
    assert len(diffs) == 5
    assert {d.split(":")[0] for d in diffs} == {"/r/value", "/r/ci[1]", "/r/gone", "/r/new", "/r/checks"}


def test_a_type_change_is_a_difference():
    assert golden.differences({"x": 1}, {"x": 1.0}) == ["/x: 1 -> 1.0"]
    assert golden.differences({"x": "pass"}, {"x": "pass"}) == []
