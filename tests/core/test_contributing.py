"""CONTRIBUTING.md's worked examples run as written: the ``python`` blocks of each "Adding …"
section are executed in order, in one namespace per section, and what they register (a metric, a
rule kind, an audit attack) is forgotten afterwards."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from privgate.audit.attacks import ATTACKS, FIXED_ATTACKS
from privgate.gates.rule_kinds import kind_names, unregister_rule_kind
from privgate.registry import registered_specs, unregister_metric

GUIDE = Path(__file__).resolve().parents[2] / "CONTRIBUTING.md"
SECTIONS = ("Adding a metric", "Adding a gate rule kind", "Adding a generator-audit attack")


def section_blocks(text: str, title: str) -> list[str]:
    """The ``python`` code blocks of the ``## <title>`` section of ``text``, in order."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"CONTRIBUTING.md has no section {title!r}"
    return re.findall(r"^```python\n(.*?)^```", match.group(1), re.S | re.M)


@pytest.fixture
def forget_registrations():
    """Whatever an example registers is forgotten after it."""
    metrics = {s.name for s in registered_specs()}
    kinds, attacks, fixed = kind_names(), dict(ATTACKS), set(FIXED_ATTACKS)
    yield
    for spec in registered_specs():
        if spec.name not in metrics:
            unregister_metric(spec.name)
    for name in set(kind_names()) - set(kinds):
        unregister_rule_kind(name)
    ATTACKS.clear()
    ATTACKS.update(attacks)
    FIXED_ATTACKS.clear()
    FIXED_ATTACKS.update(fixed)


def test_every_section_has_an_example():
    text = GUIDE.read_text()
    assert all(section_blocks(text, title) for title in SECTIONS)


@pytest.mark.parametrize("title", SECTIONS)
def test_the_worked_example_runs(title, forget_registrations):
    namespace: dict = {"__name__": "contributing_example"}
    for block in section_blocks(GUIDE.read_text(), title):
        exec(compile(block, f"CONTRIBUTING.md: {title}", "exec"), namespace)  # noqa: S102 - the docs' own code
