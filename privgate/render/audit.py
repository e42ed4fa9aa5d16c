"""The HTML report of a generator audit (:class:`~privgate.audit.AuditResult`, optionally decided
by the audit rules of :mod:`privgate.gates.audit_rules`).

One self-contained file (inline CSS, plots as base64 PNG, the gate report's style): the verdict in
words; the ε lower bound per target against the claimed ε; the ROC curve of each target's best
attack on the test runs, with the false-positive rate on a log scale as the membership-inference
literature plots it (Carlini et al., "Membership Inference Attacks From First Principles", IEEE
S&P 2022); the per-target table (kind, status, AUC with its interval, TPR at FPR 1 % and 0.1 %,
ε lower bound, runs); the cost (seconds per run in the generator against the audit's own work);
and the design. Numbers only: target ids, kinds, row positions and scores — never a value of a
record.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from matplotlib.figure import Figure

from ..audit.advice import evidence_label, headline_note, next_step
from .files import _atomic_write
from .plots import COLOURS, figure_to_data_uri

_LABEL = {0: "PASS", 1: "WARN", 2: "BLOCK", 3: "ERROR"}
MAX_ROC_PANELS = 12
_CLASS = {0: "pass", 1: "warn", 2: "block", 3: "block"}


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("privgate.render", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
    )


def verdict_words(result: Any) -> str:
    """What the audit proved, in a sentence or two."""
    conf = f"{result.confidence:.0%}"
    if result.checked_nothing:
        return "No target could be audited: the audit proves nothing either way."
    eps = f"{result.epsilon_lower:.3f}"
    if result.violation:
        return (
            f"DP violation proven: with {conf} confidence the generator's ε at δ = {result.delta:g} is at "
            f"least {eps}, above the claimed ε = {result.claimed_epsilon:g}."
        )
    if result.violation is False:
        return (
            f"No violation found: the ε lower bound {eps} (δ = {result.delta:g}, {conf} confidence) does not "
            f"exceed the claimed ε = {result.claimed_epsilon:g}. An audit cannot prove privacy: these "
            "attacks on these targets found nothing stronger."
        )
    return (
        f"No DP claim was given to check. With {conf} confidence the generator's ε at δ = {result.delta:g} is "
        f"at least {eps}" + (" (0: the attacks found no evidence of leakage)." if result.epsilon_lower == 0 else ".")
    )


def best_attack(target: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The attack with the largest ε lower bound on a target (ties: the larger AUC)."""
    attacks = target.get("attacks") or {}
    if not attacks:
        return None
    return max(attacks.items(), key=lambda kv: (kv[1].get("epsilon_lower") or 0.0, kv[1].get("auc") or 0.0))


def roc_points(scores: Any, labels: Any, direction: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of the guesses "member iff direction·score ≥ τ" over every threshold τ, from
    (0, 0) to (1, 1); tied scores move both rates at once."""
    s = direction * np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    n_in, n_out = int(y.sum()), int((~y).sum())
    if n_in == 0 or n_out == 0:
        return np.array([0.0, 1.0]), np.array([0.0, 1.0])
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # the last index of each distinct score
    tp = np.cumsum(y)[last]
    fp = np.cumsum(~y)[last]
    return np.r_[0.0, fp / n_out], np.r_[0.0, tp / n_in]


def epsilon_bars(result: Any) -> list[tuple[str, float]]:
    """The chart's bars: each audited target's ε lower bound (its best attack) and each pooled
    group's (its best attack), every one corrected for every candidate."""
    from ..audit.advice import group_label

    rows = [(t["target"], t["kind"], best_attack(t)) for t in result.targets]
    bars = [(f"{tid} ({kind}, {b[0]})", float(b[1].get("epsilon_lower") or 0.0)) for tid, kind, b in rows if b]
    best_per_group: dict[str, dict[str, Any]] = {}
    for p in result.pooled or []:
        if p["kind"] not in best_per_group or p["epsilon_lower"] > best_per_group[p["kind"]]["epsilon_lower"]:
            best_per_group[p["kind"]] = p
    bars += [
        (f"{group_label(k, p['targets'])} ({p['attack']})", float(p["epsilon_lower"]))
        for k, p in best_per_group.items()
    ]
    return bars


def plot_epsilon(result: Any) -> str | None:
    """Horizontal bars: each audited target's and pooled group's ε lower bound (corrected for
    every candidate) and the audit's, against the claimed ε (dashed red line)."""
    rows = epsilon_bars(result)
    if not rows:
        return None
    rows.append(("the audit's bound", float(result.epsilon_lower)))
    names = [r[0] for r in rows]
    vals = np.array([r[1] for r in rows])
    claim = result.claimed_epsilon
    fig = Figure(figsize=(7.5, 0.42 * len(rows) + 1.3))
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1]
    over = vals > claim if claim is not None else np.zeros(len(rows), dtype=bool)
    colours = [COLOURS["block"] if o else "#5c6bc0" for o in over]
    colours[-1] = COLOURS["block"] if over[-1] else COLOURS["pass"] if claim is not None else "#37474f"
    ax.barh(y, vals, color=colours, height=0.6, alpha=0.9)
    for yi, v in zip(y, vals):
        ax.text(v, yi, f" {v:.3f}", va="center", fontsize=8)
    right = max(float(vals.max()), claim or 0.0, 0.5) * 1.18
    if claim is not None:
        ax.axvline(claim, color=COLOURS["block"], ls="--", lw=1.5)
        ax.text(claim, len(rows) - 0.45, f" claimed ε = {claim:g}", color=COLOURS["block"], fontsize=8, va="bottom")
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlim(0, right)
    ax.set_ylim(-0.7, len(rows) - 0.1)
    ax.set_xlabel(
        f"empirical ε lower bound (δ = {result.delta:g}, {result.confidence:.0%} confidence for the whole audit)",
        fontsize=8,
    )
    ax.set_title("ε lower bound against the claim (a bar past the dashed line proves a violation)", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return figure_to_data_uri(fig)


def roc_panels(result: Any, max_targets: int = 12) -> list[tuple[dict, str, dict, dict]]:
    """(target, attack name, attack results, test scores and labels) of each audited target's
    best attack — the ``max_targets`` most exposed (largest ε lower bound, then AUC) in target
    order when there are more."""
    panels = []
    for t in result.targets:
        b = best_attack(t)
        if b is None:
            continue
        data = (result.roc.get(t["target"]) or {}).get(b[0])
        if not data or not data.get("scores"):
            continue
        panels.append((t, b[0], b[1], data))
    if len(panels) > max_targets:
        keep = sorted(
            range(len(panels)),
            key=lambda i: (-(panels[i][2].get("epsilon_lower") or 0.0), -(panels[i][2].get("auc") or 0.0), i),
        )[:max_targets]
        panels = [panels[i] for i in sorted(keep)]
    return panels


def plot_roc(result: Any, max_targets: int = 12) -> str | None:
    """One panel per audited target: the ROC curve of its best attack on the test runs, log-scale
    FPR (a false-positive rate of 0 drawn at half the smallest non-zero one); with more than
    ``max_targets`` targets, the most exposed ones (largest ε lower bound, then AUC)."""
    panels = roc_panels(result, max_targets)
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = int(math.ceil(len(panels) / cols))
    fig = Figure(figsize=(3.3 * cols, 3.0 * rows))
    for i, (t, name, a, data) in enumerate(panels, 1):
        ax = fig.add_subplot(rows, cols, i)
        fpr, tpr = roc_points(data["scores"], data["labels"], int(a.get("direction", 1)))
        n_out = int(np.sum(~np.asarray(data["labels"], dtype=bool)))
        floor = 0.5 / max(n_out, 1)
        ax.step(np.maximum(fpr, floor), tpr, where="post", color="#3949ab", lw=1.6)
        grid = np.logspace(math.log10(floor), 0, 50)
        ax.plot(grid, grid, color="#9e9e9e", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlim(floor, 1.0)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{t['target']} ({t['kind']}), {name}: AUC {a['auc']:.2f}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_xlabel(f"FPR (log; {n_out} runs without)", fontsize=7)
        ax.set_ylabel("TPR", fontsize=7)
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("ROC of each target's best attack on the test runs (dotted: guessing)", fontsize=9)
    fig.tight_layout()
    return figure_to_data_uri(fig)


def target_rows(result: Any) -> list[dict[str, str]]:
    """The per-target table as text: kind, status, best attack, AUC with its interval, TPR at
    FPR 1 % and 0.1 %, ε lower bound, runs with / without."""
    out = []
    for t in result.targets:
        b = best_attack(t)
        row = {
            "target": str(t["target"]),
            "kind": str(t["kind"]),
            "status": str(t.get("status", "")),
            "attack": "-",
            "auc": "-",
            "auc_ci": "",
            "tpr1": "-",
            "tpr01": "-",
            "eps": "-",
            "runs": f"{t.get('fit_runs', '-')} fit / {t.get('test_runs', '-')} test",
            "why": str(t.get("why") or ""),
            "row": "-" if t.get("real_row") is None else str(t["real_row"]),
        }
        if b is not None:
            name, a = b
            tprs = a.get("tpr_at_fpr") or []
            row.update(
                attack=name,
                auc=f"{a['auc']:.3f}",
                auc_ci=_ci(a.get("auc_ci")),
                tpr1=_tpr(tprs, 0),
                tpr01=_tpr(tprs, 1),
                eps=f"{a['epsilon_lower']:.3f}",
                runs=f"{a.get('runs_with', '-')} with / {a.get('runs_without', '-')} without (test)",
            )
        out.append(row)
    return _fold_pooled(out)


def _fold_pooled(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Consecutive targets of one kind and status with no attack of their own (the canaries
    design's pooled canaries) as one row, ``t0–t31`` of kind ``canary_cell ×32``: their
    evidence is their group's pooled bound, on the chart."""
    out: list[dict[str, str]] = []
    run: list[dict[str, str]] = []

    def flush() -> None:
        if len(run) > 1:
            first, last = run[0], run[-1]
            out.append(
                {**first, "target": f"{first['target']}–{last['target']}", "kind": f"{first['kind']} ×{len(run)}"}
            )
        else:
            out.extend(run)
        run.clear()

    for row in rows:
        alone = row["attack"] == "-" and row["row"] == "-" and not row["why"]
        if alone and run and (run[-1]["kind"], run[-1]["status"]) == (row["kind"], row["status"]):
            run.append(row)
            continue
        flush()
        if alone:
            run.append(row)
        else:
            out.append(row)
    flush()
    return out


def _tpr(tprs: list[dict[str, Any]], i: int) -> str:
    if len(tprs) <= i:
        return "-"
    return f"{tprs[i]['tpr']:.3f} {_ci(tprs[i].get('tpr_ci'))}".strip()


def _ci(ci: Any) -> str:
    try:
        return f"[{float(ci[0]):.3f}, {float(ci[1]):.3f}]"
    except (TypeError, ValueError, IndexError):
        return ""


def cost_rows(result: Any) -> list[tuple[str, str]]:
    """The cost table: fits, times a person reads, the audit's own work against the generator's
    as a ratio (the preflight fits counted once, in the generator's time)."""
    from ..audit.advice import ratio_text
    from ..audit.advice import seconds_text as t

    c = result.cost or {}

    own = sum(float(c.get(k) or 0.0) for k in ("seconds_features_total", "seconds_analysis", "seconds_prepare"))
    gen = c.get("seconds_generate_total")
    seq = (result.design or {}).get("sequential") or {}
    made = seq.get("stopped_after_runs", c.get("runs", "-"))
    fits = "-" if made == "-" else int(made) + int(c.get("preflight_runs", 0) or 0)
    planned = f" of {seq['planned_runs']} planned" if seq else ""
    return [
        (
            "generator fits",
            f"{fits}: {made} runs{planned} and {c.get('preflight_runs', 0)} preflight "
            f"({c.get('runs_failed', 0)} failed)",
        ),
        (
            "one fit of the generator",
            f"{t(c.get('seconds_generate_mean'))} mean, {t(c.get('seconds_generate_median'))} median",
        ),
        ("the generator, every fit", t(gen)),
        (
            "the audit's own work",
            f"{t(own)} (targets and design {t(c.get('seconds_prepare'))}, features "
            f"{t(c.get('seconds_features_total'))}, attacks and bounds "
            f"{t(c.get('seconds_analysis'))})",
        ),
        ("the audit's own work against the generator's", f"{ratio_text(own, gen)} the generator's time"),
        ("wall-clock", t(c.get("wall_seconds"))),
        ("workers × threads", f"{c.get('workers', '-')} × {c.get('threads', '-')}"),
    ] + ([("note", str(c["note"]))] if c.get("note") else [])


def design_rows(design: dict[str, Any]) -> list[tuple[str, str]]:
    """The design as (key, text) rows; a sequential audit's record in words."""
    rows = []
    for k, v in sorted(design.items()):
        if k == "sequential" and isinstance(v, dict):
            per = v.get("alpha_per_look")
            spent = (
                f"α {per:.4g} each"
                if isinstance(per, float)
                else f"α {per[0]:.4g} at each early look, {per[-1]:.4g} at the last"
                if per
                else ""
            )
            made = (
                f"stopped after {v.get('stopped_after_runs')} of {v.get('planned_runs')} runs (the claim was disproved)"
                if v.get("stopped_early")
                else f"made all {v.get('planned_runs')} runs"
            )
            rows.append((k, f"looks after {', '.join(str(n) for n in v.get('looks', []))} runs; {spent}; {made}"))
        else:
            rows.append((k, f"{v:.4g}" if isinstance(v, float) else str(v)))
    return rows


def render_audit_html(result: Any, outcome: Any = None) -> str:
    """The audit report as a string; ``outcome`` (an
    :class:`~privgate.gates.audit_rules.AuditOutcome`) adds the decision and its checks."""
    code = None if outcome is None else int(outcome.exit_code)
    gen = result.generator or {}
    return (
        _env()
        .get_template("audit.html.j2")
        .render(
            r=result,
            o=outcome,
            code=code,
            badge=_LABEL.get(code, ""),
            badge_class=_CLASS.get(code, ""),
            generator=gen.get("name") or "-",
            version=gen.get("version") or "-",
            verdict=verdict_words(result),
            evidence=evidence_label(result.best),
            rows=target_rows(result),
            cost=cost_rows(result),
            next_step=next_step(result),
            headline_note=headline_note(result, [v for _, v in epsilon_bars(result)]),
            design=design_rows(result.design or {}),
            n_pairs=sum(len(t.get("attacks") or {}) for t in result.targets),
            n_pooled=len(result.pooled or []),
            plot_epsilon=plot_epsilon(result),
            plot_roc=plot_roc(result, MAX_ROC_PANELS),
            max_roc=MAX_ROC_PANELS,
            n_attacked=sum(1 for t in result.targets if t.get("attacks")),
            failed=result.failed_runs or [],
        )
    )


def write_audit_html(result: Any, path: str | os.PathLike[str], outcome: Any = None) -> Path:
    """Write the self-contained audit report to ``path`` (complete or absent); returns the path."""
    return _atomic_write(path, render_audit_html(result, outcome))
