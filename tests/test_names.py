"""Derived names (privgate.names): what every adapter may rely on, for any input — Dagster's name
rule and safe file names even for non-ASCII, hostile or empty user-given names."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.gates.config_model import check_name
from privgate.names import identifier, path_component

DAGSTER_NAME = re.compile(r"^[A-Za-z0-9_]+$")
SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$")
VALID_IDENTIFIERS = st.from_regex(DAGSTER_NAME, fullmatch=True)
VALID_COMPONENTS = st.from_regex(SAFE_COMPONENT, fullmatch=True)
FALLBACKS = st.sampled_from(["_", "dataset", "version", "audit"])
ANY_NAME = st.one_of(st.text(), st.text(alphabet="./\\-_ aé名\x00\n"), st.integers())


@given(ANY_NAME, FALLBACKS)
def test_identifier_is_always_a_dagster_name(name, fallback):
    out = identifier(name, fallback)
    assert DAGSTER_NAME.match(out) and out.isascii()


@given(ANY_NAME, FALLBACKS)
def test_path_component_is_always_one_safe_component(name, fallback):
    out = path_component(name, fallback)
    assert SAFE_COMPONENT.match(out), out
    assert out not in (".", "..") and "/" not in out and "\\" not in out and out.isascii()


@given(ANY_NAME)
def test_derived_names_are_stable_and_idempotent(name):
    for derive in (identifier, path_component):
        once = derive(name)
        assert derive(name) == once  # the same name every time (checks, pools, folders)
        assert derive(once) == once  # a derived name is its own derivation


@given(VALID_IDENTIFIERS)
def test_a_valid_identifier_is_kept_as_is(name):
    assert identifier(name) == name


@given(VALID_COMPONENTS)
def test_a_valid_component_is_kept_as_is(name):
    assert path_component(name) == name


@given(st.lists(VALID_IDENTIFIERS, min_size=2, max_size=5, unique=True))
def test_distinct_valid_names_stay_distinct(names):
    assert len({identifier(n) for n in names}) == len(names)
    assert len({path_component(n) for n in names}) == len(names)


@given(ANY_NAME, FALLBACKS)
def test_derived_names_are_no_longer_than_the_name(name, fallback):
    """One character out per character in (no expansion: a name that fits a length limit still
    does), the fallback only for a name that leaves nothing."""
    text = str(name)
    assert len(identifier(name, fallback)) == (len(text) if text else len(fallback))
    out = path_component(name, fallback)
    assert len(out) <= len(text) or out == fallback


@pytest.mark.parametrize("name", ["", ".", "..", "..."])
def test_nothing_usable_left_gives_the_fallback(name):
    assert path_component(name, "dataset") == "dataset"
    assert identifier("", "dataset") == "dataset"


@given(st.text(min_size=1))
def test_check_names_are_dagster_names_for_any_metric(metric):
    name = check_name(metric, "threshold", "block")
    assert DAGSTER_NAME.match(name) and name.endswith("__threshold_block")
    assert name.startswith(identifier(metric))


@settings(deadline=None)  # the first example imports GX
@given(st.text(min_size=1))
def test_gx_bridge_and_gate_check_names_agree(metric):
    pytest.importorskip("great_expectations")
    from privgate.gx.dagster_bridge import _base_name

    cfg = {"meta": {}, "kwargs": {"metric": metric}, "type": "x"}
    assert _base_name(cfg) == "privacy_" + identifier(metric)
    assert DAGSTER_NAME.match(_base_name(cfg))
