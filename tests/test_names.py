"""One rule for derived names: the Dagster adapter and the GX bridge must agree, and both must
satisfy Dagster's name rule even for non-ASCII metric or dataset names."""

import re

import pytest

from privgate.gates.config import check_name
from privgate.names import identifier, path_component

DAGSTER_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@pytest.mark.parametrize("raw, expected", [
    ("common_rows", "common_rows"),
    ("my-metric.v2", "my_metric_v2"),
    ("métrique", "m_trique"),        # isalnum() would keep 'é'; Dagster rejects it
    ("名前", "__"),
    ("", "_"),
])
def test_identifier_is_ascii_only(raw, expected):
    assert identifier(raw) == expected
    assert DAGSTER_NAME.match(identifier(raw))


def test_identifier_fallback_only_when_empty():
    assert identifier("", "dataset") == "dataset"
    assert identifier("x", "dataset") == "x"


@pytest.mark.parametrize("raw, expected", [
    ("release-2024.01_a", "release-2024.01_a"),
    ("../etc/passwd", "_etc_passwd"),
    ("..", "_"),
    (".hidden", "hidden"),
    ("a/b\\c", "a_b_c"),
    ("café", "caf_"),
])
def test_path_component_never_escapes(raw, expected):
    out = path_component(raw)
    assert out == expected
    assert "/" not in out and "\\" not in out and not out.startswith(".")


def test_check_name_is_a_valid_dagster_name_for_non_ascii_metrics():
    name = check_name("métrique", "threshold", "block")
    assert name == "m_trique__threshold_block"
    assert DAGSTER_NAME.match(name)


def test_gx_bridge_and_gate_check_names_agree():
    pytest.importorskip("great_expectations")
    from privgate.gx.dagster_bridge import _base_name

    cfg = {"meta": {}, "kwargs": {"metric": "métrique"}, "type": "x"}
    assert _base_name(cfg) == "privacy_" + identifier("métrique")
    assert DAGSTER_NAME.match(_base_name(cfg))
