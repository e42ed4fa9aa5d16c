"""The audit's HTML report: the verdict in words, the plots, and no value of a record."""

from __future__ import annotations

import numpy as np
import pytest
from audit_helpers import MARKER_NUMBER, MARKER_TEXT, copy_gen, make_result, real_frame

from privgate.audit import audit_generator
from privgate.gates.audit_rules import decide_audit
from privgate.render.audit import render_audit_html, roc_points, target_rows, verdict_words, write_audit_html


def test_roc_points_by_hand():
    # scores 3 (in), 2 (out), 2 (in), 1 (out): the tie at 2 moves both rates at once
    fpr, tpr = roc_points([2, 3, 1, 2], [False, True, False, True])
    assert fpr.tolist() == [0.0, 0.0, 0.5, 1.0] and tpr.tolist() == [0.0, 0.5, 1.0, 1.0]
    fpr, tpr = roc_points([2, 3, 1, 2], [False, True, False, True], direction=-1)  # low scores mean member
    assert fpr.tolist() == [0.0, 0.5, 1.0, 1.0] and tpr.tolist() == [0.0, 0.0, 0.5, 1.0]
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


def test_verdict_words():
    assert verdict_words(make_result(1.4, claimed=1.0)).startswith("DP violation proven")
    assert verdict_words(make_result(0.4, claimed=1.0)).startswith("No violation found")
    assert "cannot prove privacy" in verdict_words(make_result(0.4, claimed=1.0))
    assert verdict_words(make_result(0.4, claimed=None)).startswith("No DP claim was given")
    assert verdict_words(make_result(n_audited=0)).startswith("No target could be audited")


def test_target_rows_show_the_best_attack_and_status():
    rows = target_rows(make_result(1.4, 0.6))
    assert [r["status"] for r in rows] == ["audited", "audited", "too few runs"]
    assert rows[0]["eps"] == "1.400" and rows[0]["auc"] == "0.700" and rows[0]["auc_ci"] == "[0.600, 0.750]"
    assert rows[0]["tpr1"] == "0.500 [0.300, 0.700]" and rows[2]["attack"] == "-"


@pytest.fixture(scope="module")
def real_audit():
    return audit_generator(
        copy_gen,
        real_frame(),
        design="shared",
        runs=60,
        n_targets=3,
        training_rows=60,
        claimed_epsilon=0.5,
        workers=1,
        threads=1,
        generator_name="copy",
        generator_version="2.0",
    )


def test_the_report_states_the_verdict_and_holds_no_value_of_a_record(real_audit, tmp_path):
    outcome = decide_audit(real_audit)
    path = write_audit_html(real_audit, tmp_path / "audit.html", outcome)
    html = path.read_text(encoding="utf-8")
    assert verdict_words(real_audit) in html.replace("&#39;", "'")
    assert f"badge {'block' if outcome.exit_code >= 2 else 'pass' if outcome.exit_code == 0 else 'warn'}" in html
    assert html.count("data:image/png;base64,") == 2  # ε against the claim; ROC curves
    assert "ROC curves" in html and "Cost" in html and "Design" in html
    assert MARKER_TEXT not in html and "9137" not in html and str(MARKER_NUMBER) not in html
    assert "<script" not in html and "http://" not in html and "https://" not in html  # self-contained


def test_a_report_without_a_decision_or_audited_targets_still_renders():
    html = render_audit_html(make_result(n_audited=0))
    assert "No target could be audited" in html and "No target was audited" in html
    assert '<span class="badge' not in html


def test_many_targets_show_the_most_exposed_roc_panels():
    from privgate.render.audit import roc_panels

    res = make_result(2.0, n_audited=14)  # t0 carries the largest ε lower bound, the others 0
    res.targets[5]["attacks"]["distance"]["auc"] = 0.9  # t5 the largest AUC among the rest
    assert "The 12 most exposed of\n14 targets" in render_audit_html(res)
    assert [p[0]["target"] for p in roc_panels(res, 2)] == ["t0", "t5"]
    assert [p[0]["target"] for p in roc_panels(res, 3)] == ["t0", "t1", "t5"]  # ties: target order
    assert len(roc_panels(res)) == 12 and len(roc_panels(make_result(n_audited=3))) == 3
