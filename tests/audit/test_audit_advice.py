"""The report says what to do for each outcome, names pooled groups as groups, reads costs as
times and ratios, and says why the headline bound can exceed the chart's bars."""

from __future__ import annotations

import pytest
from audit_helpers import make_result

from privgate.audit.advice import evidence_label, group_label, headline_note, next_step, ratio_text, seconds_text
from privgate.render.audit import cost_rows, design_rows, render_audit_html


def test_times_and_ratios_a_person_reads():
    assert [seconds_text(s) for s in (0.0123, 3.44, 125, 3780)] == ["12 ms", "3.4 s", "2 min 5 s", "1 h 3 min"]
    assert ratio_text(607.1, 1.0) == "607×" and ratio_text(2.5, 1) == "2.5×" and ratio_text(1, 25) == "0.04×"
    assert ratio_text(1, 0) == "-" and seconds_text(None) == "-"


def test_a_pooled_group_is_named_as_a_group():
    assert group_label("canary_cell", 32) == "the 32 cell canaries, pooled"
    best = {"target": group_label("outlier", 4), "kind": "outlier", "attack": "cell", "pooled": True, "targets": 4}
    label = evidence_label(best)
    assert label.startswith("the 4 outliers, pooled") and "(outlier)" not in label
    assert (
        evidence_label({"target": "t3", "kind": "outlier", "attack": "distance"})
        == "target t3 (outlier), attack distance"
    )


@pytest.mark.parametrize(
    "eps, provable, kind, words",
    [
        (1.5, 3.0, "canary_level", "do not publish this generator's releases under its claim of ε = 1"),
        (1.5, 3.0, "canary_level", "give it a public domain"),
        (1.5, 3.0, "canary_cell", "check the noise"),
        (0.2, 0.8, "outlier", "this audit is weak"),  # could not have shown a bound above the claim
        (0.9, 3.0, "outlier", "near the claim"),  # run more fits to settle it
        (0.2, 3.0, "outlier", "no evidence against the claim"),
    ],
)
def test_the_next_step_for_each_outcome(eps, provable, kind, words):
    r = make_result(eps=eps)
    r.epsilon_provable = provable
    r.best = {**r.best, "kind": kind}
    assert words in next_step(r)
    assert next_step(make_result(claimed=None)).startswith("Next: give the generator's claim")
    assert next_step(make_result(n_audited=0)).startswith("Next: nothing was audited")


def test_the_headline_above_every_bar_is_explained():
    r = make_result(eps=0.9)
    assert headline_note(r, [0.5, 0.7]) is not None and "tested alone" in headline_note(r, [0.5, 0.7])
    assert headline_note(r, [0.9]) is None and headline_note(r, []) is None


def test_the_cost_counts_the_preflight_fit_once_and_reads_as_a_ratio():
    r = make_result()
    r.cost.update(
        seconds_generate_total=0.02,
        seconds_features_total=10.0,
        seconds_analysis=2.0,
        seconds_prepare=0.14,
        preflight_runs=1,
    )
    rows = dict(cost_rows(r))
    assert rows["generator fits"].startswith("101: 100 runs")
    assert rows["the audit's own work against the generator's"] == "607× the generator's time"
    assert "%" not in " ".join(rows.values())
    html = render_audit_html(r)
    assert "607× the generator" in html and "Next:" in html


def test_a_sequential_design_reads_in_words():
    rows = dict(
        design_rows(
            {
                "sequential": {
                    "looks": [4, 8, 200],
                    "alpha_per_look": [0.0125, 0.0125, 0.025],
                    "stopped_after_runs": 4,
                    "stopped_early": True,
                    "planned_runs": 200,
                }
            }
        )
    )
    assert rows["sequential"] == (
        "looks after 4, 8, 200 runs; α 0.0125 at each early look, 0.025 at the last; "
        "stopped after 4 of 200 runs (the claim was disproved)"
    )
