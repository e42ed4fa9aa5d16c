"""``audit_generator``: audit a synthetic-data generator itself, in four steps that any executor
can split — :func:`prepare_audit` (targets, preflight, design), the runs
(:func:`privgate.audit.runner.make_run` per run number, here on worker processes), and
:func:`analyse_runs` (attacks and bounds). The Dagster adapter fans the runs out as dynamic steps
and calls the same functions."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from ..errors import AuditError, InputError, ParameterError
from ..io import load_frame
from ..schema import Schema, check_same_columns, infer_schema
from ..stats.dp_audit import epsilon_lower_bound, gdp_epsilon
from ..stats.one_run import largest_provable_epsilon
from ..threads import resolve_threads
from .advice import group_label
from .analysis import analyse_attack, pooled_guesses
from .attacks import ATTACKS, FIXED_ATTACKS
from .attacks import resolve as resolve_attacks
from .cells import published_domain
from .cluster import is_cluster
from .defaults import (
    DEFAULT_BACKGROUND,
    DEFAULT_CONFIDENCE,
    DEFAULT_RUNS,
    auto_looks,
    default_design,
    default_fit_share,
    default_n_targets,
    doubling_schedule,
    spend_alpha,
)
from .features import FeatureSpace, empty_release_features
from .limits import MAX_LOOKS, Clock, check_sizes
from .plan import MIN_RUNS, AuditPlan, look_schedule, make_plan
from .result import AuditResult
from .runner import Runs
from .seeds import seed_int
from .single_run import Generate, Progress, RunOutcome, make_run
from .targets import Targets, canary_targets, select_targets


@dataclass
class PreparedAudit:
    """An audit ready to run: the plan, the targets' feature space, the targets the generator
    refused (index in the selected targets → why) and the preflight runs' outcomes."""

    plan: AuditPlan
    space: FeatureSpace
    not_taken: list[dict[str, Any]] = field(default_factory=list)
    preflight: list[RunOutcome] = field(default_factory=list)
    seconds: float = 0.0


def prepare_audit(
    generate: Generate | None,
    real: Any,
    *,
    population: Any = None,
    targets: Any = "auto",
    n_targets: int | None = None,
    canaries: bool = True,
    runs: int = DEFAULT_RUNS,
    training_rows: int | None = None,
    n_rows: int | None = None,
    design: str | None = None,
    background: str = DEFAULT_BACKGROUND,
    fit_share: float | None = None,
    schema: Mapping[str, str] | None = None,
    seed: int = 0,
    threads: int | None = None,
    runs_via: Runs | None = None,
    interleave: bool = False,
    delta: float = 0.0,
) -> PreparedAudit:
    """Select the targets, check with one preflight run (then one per target where that fails)
    that the generator takes the canaries and user targets, and draw the design. ``generate``
    None skips the preflight. ``runs_via``: the audit's :class:`~privgate.audit.runner.Runs`
    (its worker processes make the preflight runs, its deadline covers the planning); without
    it the preflight runs are made in this process. Every argument left None takes its default
    from :mod:`privgate.audit.defaults` (``design``: by the claim's ``delta``)."""
    start = time.perf_counter()
    if design is None:
        design = default_design(delta)
    check_sizes(runs=runs, n_targets=n_targets, training_rows=training_rows, n_rows=n_rows, design=design)
    step = (lambda what: None) if runs_via is None else runs_via.clock.check
    real_f, pool_f, pool_is_real = _load_frames(real, population)
    sch = infer_schema({"population": pool_f, "real": real_f}, schema)
    many = design == "canaries"
    if n_targets is None:
        n_targets = default_n_targets(design)
    if fit_share is None:
        fit_share = default_fit_share(design)
    # a generator that publishes its public domain has its own cells audited (privgate.audit.cells)
    domain = published_domain(generate, pool_f, sch) if generate is not None else None
    numeric_edges = {c: v for c, v in (domain or {}).items() if isinstance(v, np.ndarray)}
    chosen = _choose_targets(real_f, pool_f, sch, targets, many, n_targets, canaries, pool_is_real, seed, domain)
    check_sizes(runs=runs, n_targets=None, user_targets=len(chosen), design=design)
    step("building the feature space")
    pool_avail = _without_targets(pool_f, chosen, pool_is_real)
    if pool_avail.height == 0:
        raise InputError("population: no rows are left for training sets once the targets are set aside")
    space = FeatureSpace.build(pool_avail, chosen.frame, sch, edges=numeric_edges)
    budget = resolve_threads(threads)
    not_taken: list[dict[str, Any]] = []
    preflight: list[RunOutcome] = []
    if generate is not None:
        probe = make_plan(
            pool_avail,
            chosen,
            sch,
            runs=max(runs, 8),
            training_rows=training_rows,
            n_rows=n_rows,
            design="shared",
            background=background,
            seed=seed,
        )
        step("the preflight runs")
        chosen, space, not_taken = _preflight_targets(
            probe, space, generate, budget, preflight, runs_via, numeric_edges
        )
    step("drawing the design")
    plan = make_plan(
        pool_avail,
        chosen,
        sch,
        design=design,
        background=background,
        runs=runs,
        training_rows=training_rows,
        n_rows=n_rows,
        fit_share=fit_share,
        seed=seed,
        interleave=interleave,
    )
    plan = replace(plan, published_cells=domain is not None)
    return PreparedAudit(plan, space, not_taken, preflight, time.perf_counter() - start)


def _choose_targets(
    real_f: pl.DataFrame,
    pool_f: pl.DataFrame,
    sch: Schema,
    targets: Any,
    many: bool,
    n_targets: int,
    canaries: bool,
    pool_is_real: bool,
    seed: int,
    domain: Mapping[str, Any] | None,
) -> Targets:
    """The audit's targets: crafted canaries for the many-canary design's ``"auto"``, else
    :func:`~privgate.audit.targets.select_targets` (outliers, canaries or the user's records)."""
    if many and isinstance(targets, str) and targets == "auto":
        return canary_targets(pool_f, sch, n_targets, seed=seed, domain=domain)
    return select_targets(
        real_f, pool_f, sch, targets, n_targets=n_targets, canaries=canaries, pool_is_real=pool_is_real, seed=seed
    )


def _load_frames(real: Any, population: Any) -> tuple[pl.DataFrame, pl.DataFrame, bool]:
    """The real and population frames, loaded and checked (neither empty, the same columns; the
    real one in the population's column order), and whether the population is the real data."""
    real_f = load_frame(real, role="real")
    pool_is_real = population is None
    pool_f = real_f if pool_is_real else load_frame(population, role="population")
    for role, f in (("real", real_f), ("population", pool_f)):
        if f.height == 0 or f.width == 0:
            raise InputError(f"{role}: the frame is empty ({f.height} rows, {f.width} columns)")
    if not pool_is_real:
        check_same_columns({"real": real_f, "population": pool_f})
        real_f = real_f.select(pool_f.columns)
    return real_f, pool_f, pool_is_real


def _without_refused(chosen: Targets, refused: Mapping[int, str]) -> tuple[Targets, list[dict[str, Any]]]:
    """The targets the generator took, and a record of each one it refused (index → why); an
    AuditError when it refused them all."""
    not_taken = [{**chosen.describe()[i], "status": "not taken", "why": why} for i, why in refused.items()]
    keep = [i for i in range(len(chosen)) if i not in refused]
    if not keep:
        raise AuditError(
            "the generator refused every target: "
            + "; ".join(f"{d['target']} ({d['kind']}): {d['why']}" for d in not_taken)
        )
    return chosen.subset(keep), not_taken


def _without_targets(pool: pl.DataFrame, chosen: Targets, pool_is_real: bool) -> pl.DataFrame:
    """The population rows a background may use: without the outliers' own rows (when the
    population is the real data) and without rows equal to a user target."""
    drop = [r for r, k in zip(chosen.source_rows, chosen.kinds) if k == "outlier" and r is not None and pool_is_real]
    out = pool
    if drop:
        mask = np.ones(pool.height, dtype=bool)
        mask[drop] = False
        out = pool.filter(pl.Series(mask))
    users = chosen.frame.filter(pl.Series([k == "user" for k in chosen.kinds])) if chosen.kinds else chosen.frame
    if users.height:
        out = out.join(users.unique(), on=pool.columns, how="anti", nulls_equal=True, maintain_order="left")
    return out


def _preflight_targets(
    probe: AuditPlan,
    space: FeatureSpace,
    generate: Generate,
    threads: int,
    log: list[RunOutcome],
    runs_via: Runs | None,
    edges: Mapping[str, np.ndarray],
) -> tuple[Targets, FeatureSpace, list[dict[str, Any]]]:
    """The preflight on the probe plan's non-outlier targets: the targets the generator took, their
    feature space (rebuilt when some were refused) and a record of each one refused."""
    chosen = probe.targets
    suspects = [i for i, k in enumerate(chosen.kinds) if k != "outlier"]
    refused = _preflight(probe, space, generate, suspects, threads, log, runs_via)
    if not refused:
        return chosen, space, []
    chosen, not_taken = _without_refused(chosen, refused)
    return chosen, FeatureSpace.build(probe.pool, chosen.frame, probe.schema, edges=edges), not_taken


def _preflight(
    plan: AuditPlan,
    space: FeatureSpace,
    generate: Generate,
    suspects: list[int],
    threads: int,
    log: list[RunOutcome],
    runs_via: Runs | None = None,
) -> dict[int, str]:
    """Index → why, for the suspects the generator fails on: one run with all of them, then one
    per suspect only when that failed. Preflight runs are numbered after the design's runs and
    made by ``runs_via`` (else in this process)."""
    if not suspects:
        return {}
    base = plan.n_runs

    def make(targets_in: dict[int, list[int]]) -> list[RunOutcome]:
        if runs_via is not None:
            return runs_via.make(plan, space, sorted(targets_in), targets_in=targets_in)
        return [
            make_run(plan, space, generate, r, targets_in=np.asarray(t), threads=threads)
            for r, t in sorted(targets_in.items())
        ]

    together = make({base: list(suspects)})[0]
    log.append(together)
    if together.contract_error:
        raise InputError(f"the generator's release breaks the audit's contract: {together.error}")
    if together.error is None:
        return {}
    refused = {}
    alone = make({base + j: [i] for j, i in enumerate(suspects, start=1)})
    log.extend(alone)
    for i, outcome in zip(suspects, alone):
        if outcome.error is not None:
            refused[i] = outcome.error
    if not refused:  # failing together but not alone: the background or the mix, not a target
        raise AuditError(f"the generator failed on the preflight run ({together.error}) but on no target alone")
    return refused


def analyse_runs(
    prepared: PreparedAudit,
    outcomes: Sequence[RunOutcome],
    *,
    attacks: Sequence[str] | None = None,
    claimed_epsilon: float | None = None,
    delta: float = 0.0,
    confidence: float = DEFAULT_CONFIDENCE,
    execution: Mapping[str, Any] | None = None,
    wall_seconds: float | None = None,
    generator: Mapping[str, Any] | None = None,
) -> AuditResult:
    """Attack every target on the runs' features and bound ε (:mod:`privgate.audit.analysis`)."""
    started = time.perf_counter()
    plan = prepared.plan
    names = resolve_attacks(attacks)
    delta, confidence, claimed_epsilon = _check_numbers(delta, confidence, claimed_epsilon)
    feats, ok = _run_features(plan, outcomes)
    alpha = 1.0 - confidence
    many = plan.design == "canaries"
    _check_design_delta(many, delta)
    usable = [not many and _has_enough_runs(plan, t) for t in range(plan.n_targets)]
    # the pooled bound is for pure ε (δ = 0): with a δ > 0 claim only the per-target bounds hold
    groups = _pooled_groups(plan, names) if delta == 0.0 else []
    pooled_targets = {t for _, members, _ in groups for t in members}
    n_audited = len(pooled_targets) if many else int(sum(usable))
    n_tests = int(sum(usable)) * len(names) + len(groups)
    # half of α for the one candidate chosen on the fit runs, half shared by every candidate (analysis.py)
    alpha_each = alpha / 2 / max(n_tests, 1)
    targets_out, roc, scores = _attack_targets(
        plan, feats, usable, names, delta=delta, alpha_each=alpha_each, keep=pooled_targets
    )
    pooled = _pooled(plan, groups, scores, alpha_each)
    best = _most_promising(targets_out, pooled)
    targets_out.extend(prepared.not_taken)
    attacked = [a for t in targets_out for a in (t.get("attacks") or {}).values()]
    eps = max([a["epsilon_lower"] for a in attacked] + [p["epsilon_lower"] for p in pooled], default=0.0)
    if best is not None:
        _bound_best_on_test_runs(best, pooled, alpha_each=alpha_each, alpha=alpha, delta=delta)
        eps = max(eps, best["epsilon_lower"])
    for p in pooled:
        p.pop("_arrays", None)
    mu = max((a["mu_lower"] for a in attacked), default=0.0)
    eps_mu = float(gdp_epsilon(mu, delta)) if mu > 0 and delta > 0 else None
    violation = None if claimed_epsilon is None or n_audited == 0 else bool(eps > claimed_epsilon)
    cost = _cost(prepared, outcomes, ok, execution, wall_seconds, started)
    failed = [{"run": o.run, "error": o.error} for o in outcomes if o.error][:20]
    provable = None if best is None else best.get("epsilon_provable")
    return AuditResult(
        epsilon_lower=float(eps),
        epsilon_provable=provable,
        pooled=pooled,
        delta=delta,
        confidence=confidence,
        claimed_epsilon=claimed_epsilon,
        violation=violation,
        auc_lower=max((a["auc_lower_corrected"] for a in attacked), default=0.0),
        max_auc=max((a["auc"] for a in attacked), default=None),
        mu_lower=float(mu),
        epsilon_from_mu=eps_mu,
        best=best,
        n_audited=n_audited,
        targets=targets_out,
        design=_design_record(plan, names, alpha_each, alpha),
        cost=cost,
        generator=dict(generator or {}),
        roc=roc,
        failed_runs=failed,
    )


def _check_design_delta(many: bool, delta: float) -> None:
    """Refuse a claim with δ > 0 for the canaries design, whose bound is for pure ε."""
    if many and delta > 0:
        raise ParameterError(
            "the canaries design bounds pure ε (δ = 0); its bound does not hold for a claim "
            f"with δ = {delta:g} — use design='shared'"
        )


def _bound_best_on_test_runs(
    best: dict[str, Any], pooled: list[dict[str, Any]], *, alpha_each: float, alpha: float, delta: float
) -> None:
    """Bound the most promising test again, at half of α (the pair chosen on the fit runs), in place."""
    if best.get("pooled"):
        p = next(p for p in pooled if p["kind"] == best["kind"] and p["attack"] == best["attack"])
        again = pooled_guesses(
            *p.pop("_arrays"),
            alpha_fit=alpha_each,
            alpha=alpha / 2,
            rank=p["ranked"],
            center=p.get("centered", False),
        )
        best.update(
            epsilon_lower=again["epsilon_lower"],
            epsilon_provable=again["epsilon_provable"],
            correct=again["correct"],
            guesses=again["guesses"],
            observations=again["observations"],
        )
    else:
        best["epsilon_lower"] = float(
            epsilon_lower_bound(
                best["false_positives"],
                best["runs_without"],
                best["false_negatives"],
                best["runs_with"],
                delta=delta,
                alpha=alpha / 2,
            )
        )
        best["epsilon_provable"] = largest_provable_epsilon(
            best["runs_without"], best["runs_with"], delta=delta, alpha=alpha / 2
        )


def _run_features(plan: AuditPlan, outcomes: Sequence[RunOutcome]) -> tuple[np.ndarray, np.ndarray]:
    """The features of every planned run (run × target × feature) and which runs succeeded,
    once the outcomes are checked: no broken contract, none missing, not every one failed."""
    bad = [o for o in outcomes if o.contract_error]
    if bad:
        raise InputError(f"the generator's release breaks the audit's contract: {bad[0].error}")
    by_run = {o.run: o for o in outcomes}
    missing = sorted(set(range(plan.n_runs)) - set(by_run))
    if missing:
        raise AuditError(f"{len(missing)} of the plan's {plan.n_runs} runs have no outcome (first: run {missing[0]})")
    ok = np.array([by_run[r].features is not None for r in range(plan.n_runs)])
    if not ok.any():
        first = next(o.error for o in outcomes if o.error)
        raise AuditError(f"every one of the {plan.n_runs} generator runs failed (first error: {first})")
    # a failed run is an output too (a generator that fails when a target is in leaks its
    # presence): it stays in the analysis as the features of an empty release, so dropping it
    # cannot bias the error counts
    feats = np.stack(
        [by_run[r].features if ok[r] else empty_release_features(plan.n_targets) for r in range(plan.n_runs)]
    )
    return feats, ok


def _has_enough_runs(plan: AuditPlan, t: int) -> bool:
    """Whether target ``t`` has at least two runs with it and two without, in the fit runs and
    in the test runs alike."""
    runs = plan.assigned[t]
    y = plan.included[t]
    counts = [
        int((runs & plan.fit & y).sum()),
        int((runs & plan.fit & ~y).sum()),
        int((runs & ~plan.fit & y).sum()),
        int((runs & ~plan.fit & ~y).sum()),
    ]
    return min(counts) >= 2


def _attack_targets(
    plan: AuditPlan,
    feats: np.ndarray,
    usable: list[bool],
    names: Sequence[str],
    *,
    delta: float,
    alpha_each: float,
    keep: set[int] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, dict[str, list]]], dict]:
    """Each target's record (its description, run counts, status and every attack's analysis),
    the test runs' scores and labels per target and attack (the ROC curves), and the fixed
    attacks' (fit, test) scores of the targets in ``keep`` (for the pooled evidence)."""
    targets_out: list[dict[str, Any]] = []
    roc: dict[str, dict[str, dict[str, list]]] = {}
    kept: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    keep = keep or set()
    for t, entry in enumerate(plan.targets.describe()):
        entry = dict(entry)
        runs = plan.assigned[t]
        fit_r, test_r = np.flatnonzero(runs & plan.fit), np.flatnonzero(runs & ~plan.fit)
        y = plan.included[t]
        entry.update(fit_runs=int(fit_r.size), test_runs=int(test_r.size))
        if t in keep:
            for name in names:
                if name in FIXED_ATTACKS:
                    kept[(t, name)] = ATTACKS[name](feats[fit_r, t], y[fit_r], feats[test_r, t], 0)
        if not usable[t]:
            entry.update(status="pooled" if t in keep and plan.design == "canaries" else "too few runs", attacks={})
            targets_out.append(entry)
            continue
        entry["status"] = "audited"
        results = {}
        for name in names:
            fs, ts = ATTACKS[name](feats[fit_r, t], y[fit_r], feats[test_r, t], seed_int(plan.seed, "shadow", t))
            results[name] = analyse_attack(fs, y[fit_r], ts, y[test_r], delta=delta, alpha_each=alpha_each)
            roc.setdefault(entry["target"], {})[name] = {
                "scores": [float(v) for v in ts],
                "labels": [bool(v) for v in y[test_r]],
            }
        entry["attacks"] = results
        targets_out.append(entry)
    return targets_out, roc, kept


#: target kinds whose raw scores are on one scale (crafted alike); others are ranked per target
_LIKE_KINDS = ("canary_cell", "canary_level", "canary_range")


def _pooled_groups(plan: AuditPlan, names: Sequence[str]) -> list[tuple[str, list[int], str]]:
    """(kind, targets, attack) for every kind with at least two targets and every attack that
    learns nothing, when each target is in each run independently with probability 1/2 (the
    shared design from ``INDEPENDENT_FROM`` runs, the canaries design): their guesses are pooled
    (Steinke et al.). None otherwise."""
    if not plan.independent:
        return []
    fixed = [n for n in names if n in FIXED_ATTACKS]
    out = []
    for kind in dict.fromkeys(plan.targets.kinds):
        members = [t for t, k in enumerate(plan.targets.kinds) if k == kind]
        if len(members) >= 2:
            # in the generator's own cells (its published domain) a cell canary's count is the
            # likelihood-ratio statistic of noisy counts: the other attacks only spend α
            kind_attacks = ["cell"] if kind == "canary_cell" and plan.published_cells and "cell" in fixed else fixed
            out.extend((kind, members, name) for name in kind_attacks)
    return out


def _pooled(
    plan: AuditPlan, groups: list[tuple[str, list[int], str]], scores: dict, alpha_each: float
) -> list[dict[str, Any]]:
    """The pooled evidence of each (kind, attack): every target of the kind guessed at once."""
    out = []
    for kind, members, name in groups:
        fit_s = np.stack([scores[(t, name)][0] for t in members], axis=1)
        test_s = np.stack([scores[(t, name)][1] for t in members], axis=1)
        fit_y = plan.included[np.asarray(members)][:, plan.fit].T
        test_y = plan.included[np.asarray(members)][:, ~plan.fit].T
        arrays = (fit_s, fit_y, test_s, test_y)
        p = pooled_guesses(
            *arrays, alpha_fit=alpha_each, alpha=alpha_each, rank=kind not in _LIKE_KINDS, center=kind in _LIKE_KINDS
        )
        out.append({"kind": kind, "attack": name, "targets": len(members), **p, "_arrays": arrays})
    return out


def _most_promising(targets: list[dict[str, Any]], pooled: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The candidate — a (target, attack) pair or a pooled (kind, attack) — whose fit runs
    promise the largest ε bound (ties: the larger second score, then the first found), with its
    test runs' counts; None when nothing was attacked."""
    best_key, best = (-1.0, -1.0), None
    for entry in targets:
        for name, a in (entry.get("attacks") or {}).items():
            key = (a["fit_score"][0], a["fit_score"][1] / 1e9)
            if key > best_key:
                best_key = key
                best = {
                    "target": entry["target"],
                    "kind": entry["kind"],
                    "attack": name,
                    "runs_with": a["runs_with"],
                    "runs_without": a["runs_without"],
                    "false_positives": a["false_positives"],
                    "false_negatives": a["false_negatives"],
                }
    for p in pooled:
        key = (p["fit_score"][0], p["fit_score"][1] / 1e9)
        if key > best_key:
            best_key = key
            best = {
                "target": group_label(p["kind"], p["targets"]),
                "kind": p["kind"],
                "attack": p["attack"],
                "pooled": True,
                "targets": p["targets"],
            }
    return best


def _cost(
    prepared: PreparedAudit,
    outcomes: Sequence[RunOutcome],
    ok: np.ndarray,
    execution: Mapping[str, Any] | None,
    wall_seconds: float | None,
    started: float,
) -> dict[str, Any]:
    """What the audit cost: runs, the generator's and the audit's own seconds (the analysis
    counted from ``started``), workers and the per-run times. The preflight runs' generator
    seconds count once, in the generator's total: ``seconds_prepare`` is the preparation
    without them."""
    gen = np.array([o.seconds_generate for o in outcomes])
    feat = np.array([o.seconds_features for o in outcomes])
    pre_gen = sum(o.seconds_generate for o in prepared.preflight)
    cost = {
        "runs": prepared.plan.n_runs,
        "runs_failed": int((~ok).sum()),
        "preflight_runs": len(prepared.preflight),
        "seconds_generate_total": float(gen.sum() + pre_gen),
        "seconds_generate_mean": float(gen.mean()),
        "seconds_generate_median": float(np.median(gen)),
        "seconds_features_total": float(feat.sum()),
        "seconds_preflight_generate": float(pre_gen),
        "seconds_prepare": max(prepared.seconds - pre_gen, 0.0),
        "workers": (execution or {}).get("workers", 1),
        "threads": (execution or {}).get("threads"),
        "wall_seconds": wall_seconds,
        "release_rows_mean": float(np.mean([o.release_rows for o in outcomes if o.features is not None])),
        "per_run": [
            {
                "run": o.run,
                "seconds_generate": round(o.seconds_generate, 6),
                "seconds_features": round(o.seconds_features, 6),
                "failed": o.error is not None,
            }
            for o in sorted(outcomes, key=lambda o: o.run)
        ],
    }
    cost["seconds_analysis"] = time.perf_counter() - started
    own = cost["seconds_features_total"] + cost["seconds_analysis"] + cost["seconds_prepare"]
    cost["audit_share_of_generator_time"] = (
        own / cost["seconds_generate_total"] if cost["seconds_generate_total"] > 0 else None
    )
    if execution and execution.get("note"):
        cost["note"] = execution["note"]
    return cost


def _design_record(plan: AuditPlan, names: Sequence[str], alpha_each: float, alpha: float) -> dict[str, Any]:
    """The audit's design as the result reports it: runs, splits, attacks and the α each test spends."""
    runs = int(plan.fit.size if plan.design != "separate" else plan.fit.size // max(plan.n_targets, 1))
    return {
        "design": plan.design,
        "background": plan.background,
        "runs": runs,
        "total_runs": plan.n_runs,
        "fit_runs": int(plan.fit.sum()),
        "test_runs": int((~plan.fit).sum()),
        "training_rows": plan.training_rows,
        "n_rows": plan.n_rows,
        "attacks": list(names),
        "alpha_per_test": alpha_each,
        "alpha_chosen_pair": alpha / 2,
        "seed": plan.seed,
        "inclusion": "independent, probability 1/2" if plan.independent else "half of the fit and of the test runs",
        "cells": (
            "the generator's published domain"
            if plan.published_cells
            else "the population's categories and numeric quantile bins"
        ),
        "neighbouring": "add/remove one record",
    }


def _check_numbers(delta: Any, confidence: Any, claimed: Any) -> tuple[float, float, float | None]:
    def num(x: Any, name: str) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not math.isfinite(x):
            raise ParameterError(f"{name} must be a finite number; got {x!r}")
        return float(x)

    delta = num(delta, "delta")
    if not 0.0 <= delta < 1.0:
        raise ParameterError(f"delta must be in [0, 1); got {delta!r}")
    confidence = num(confidence, "confidence")
    if not 0.5 <= confidence < 1.0:
        raise ParameterError(f"confidence must be in [0.5, 1); got {confidence!r}")
    if claimed is not None:
        claimed = num(claimed, "claimed_epsilon")
        if claimed < 0:
            raise ParameterError(f"claimed_epsilon must be ≥ 0; got {claimed!r}")
    return delta, confidence, claimed


def audit_generator(
    generate: Generate,
    real: Any,
    *,
    population: Any = None,
    claimed_epsilon: float | None = None,
    delta: float = 0.0,
    targets: Any = "auto",
    n_targets: int | None = None,
    canaries: bool = True,
    runs: int = DEFAULT_RUNS,
    training_rows: int | None = None,
    n_rows: int | None = None,
    design: str | None = None,
    background: str = DEFAULT_BACKGROUND,
    fit_share: float | None = None,
    attacks: Sequence[str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    schema: Mapping[str, str] | None = None,
    seed: int = 0,
    workers: int | None = None,
    threads: int | None = None,
    generator_name: str | None = None,
    generator_version: str | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
    generator_digest: str | None = None,
    executor: Any = None,
    looks: int | str | None = "auto",
) -> AuditResult:
    """Audit a synthetic-data generator: run it with and without target records and attack its
    releases, as the membership-inference and DP-auditing literature does (see
    :mod:`privgate.audit`). Returns an :class:`AuditResult` whose ``epsilon_lower`` is an
    empirical ε lower bound at ``delta`` holding with probability ``confidence``.

    Args:
        generate: ``generate(training: polars.DataFrame, n_rows: int, seed: int)`` — your own
            training and sampling, returning ``n_rows`` synthetic records (any frame privgate
            accepts). A module-level function or class instance runs on worker processes.
        real: the sensitive records; targets are chosen among them.
        population: records training sets are drawn from (default: ``real``).
        claimed_epsilon: the generator's DP claim (add/remove-one-record neighbours); with it,
            ``violation`` says whether the audit proved the claim false.
        delta: the claim's δ.
        targets: ``"auto"`` (outliers of ``real`` and canaries) or a frame of target records.
        n_targets: how many targets ``"auto"`` picks (canaries included).
        canaries: whether ``"auto"`` adds the canaries.
        runs: generator runs: in all for the ``"canaries"`` and ``"shared"`` designs (every run
            serves every target, each target in about half of them), per target for ``"separate"``.
        training_rows: background rows per run (default min(1,000, population)).
        n_rows: records asked of the generator per run (default ``training_rows``).
        design / background: see :mod:`privgate.audit.plan`.
        fit_share: share of the runs that choose thresholds and train the shadow model (the
            rest estimate the error rates).
        attacks: names from :data:`privgate.audit.attacks.ATTACKS` (default: all).
        seed: every random step of the audit; run r's generator gets a seed derived from it.
        workers / threads: worker processes and the thread budget (default: the budget's cores).
        generator_name / generator_version: recorded with the result (and in the history).
        generator_digest: the generator's identity recorded with the result (default: computed
            from ``generate``, :func:`privgate.audit.identity.callable_digest`); what a release
            gate's ``require_audit`` matches.
        progress: called with (runs done, runs in all).
        deadline: seconds the whole audit may take — planning, preflight runs, every run
            (default :data:`privgate.audit.limits.DEFAULT_DEADLINE`, 24 hours); then the worker
            processes are killed and an AuditError is raised.
        executor: where the runs are made — None or ``"local"``: processes of this machine
            (``workers``); a Dask scheduler address (``"dask://host:port"``) or a
            ``distributed.Client``: the cluster's workers, ``threads`` threads per run (default
            1; :mod:`privgate.audit.cluster`, extra ``[dask]``). The result is the same. The
            preflight runs are made on this machine's worker processes either way.
        looks: a sequential audit (:func:`_sequential`): the runs are made in ``looks`` batches
            and the audit stops at the first look whose bound exceeds ``claimed_epsilon``, each
            look spending (1 − ``confidence``)/looks. ``"auto"`` (the default): sequential when
            :func:`privgate.audit.defaults.auto_looks` says so (a claim, δ = 0, runs made here),
            looking after 4 runs and at every doubling, half of α on the last look; None: never.

    Every argument left out takes its default from :mod:`privgate.audit.defaults`: ``design``
    the many-canary design (the shared design for a claim with δ > 0), 200 runs, 160 canaries
    (10 targets in the shared and separate designs).

    The generator runs on spawned worker processes (a generator that cannot be pickled — a
    lambda, a nested function — runs in this process, the deadline then checked between runs).
    A generator that raises SystemExit or KeyboardInterrupt, or whose process ends (``os._exit``,
    a crash), stops the audit with an AuditError naming the exception's type only. Sizes are
    bounded (:mod:`privgate.audit.limits`).
    """
    start = time.perf_counter()
    clock = Clock(deadline)
    names = resolve_attacks(attacks)
    design, looks, on_cluster = _checked_options(
        delta,
        confidence,
        claimed_epsilon,
        generator_version,
        generator_digest,
        executor,
        workers,
        design,
        looks,
        runs=runs,
        n_targets=n_targets,
        training_rows=training_rows,
        n_rows=n_rows,
    )
    with Runs(generate, workers=workers, threads=threads, deadline=clock) as runner:
        prepared = prepare_audit(
            generate,
            real,
            population=population,
            targets=targets,
            n_targets=n_targets,
            canaries=canaries,
            runs=runs,
            training_rows=training_rows,
            n_rows=n_rows,
            design=design,
            background=background,
            fit_share=fit_share,
            schema=schema,
            seed=seed,
            threads=threads,
            runs_via=runner,
            interleave=looks is not None,
            delta=delta,
        )
        clock.check("the runs")
        meta = _generator_meta(generate, generator_name, generator_version, generator_digest)
        if looks is not None:
            return _sequential_here(
                prepared, runner, looks, on_cluster, names, claimed_epsilon, delta, confidence, meta, start, progress
            )
        outcomes, how = _make_runs(
            prepared,
            runner,
            generate,
            executor if on_cluster else None,
            threads=threads,
            progress=progress,
            clock=clock,
        )
    return _analysed(prepared, outcomes, how, clock, start, names, claimed_epsilon, delta, confidence, meta)


def _sequential_here(
    prepared: PreparedAudit,
    runner: Runs,
    looks: int | str,
    on_cluster: bool,
    names: Sequence[str],
    claimed_epsilon: float | None,
    delta: float,
    confidence: float,
    meta: Mapping[str, Any],
    start: float,
    progress: Progress | None,
) -> AuditResult:
    """The sequential audit (:func:`_sequential`) on this machine's workers; refused with an executor."""
    if on_cluster:
        raise InputError("looks: a sequential audit runs on this machine's workers; give no executor")
    return _sequential(
        prepared,
        runner,
        looks,
        names=names,
        claimed_epsilon=claimed_epsilon,
        delta=delta,
        confidence=confidence,
        meta=meta,
        start=start,
        progress=progress,
    )


def _analysed(
    prepared: PreparedAudit,
    outcomes: Sequence[RunOutcome],
    how: Mapping[str, Any],
    clock: Clock,
    start: float,
    names: Sequence[str],
    claimed_epsilon: float | None,
    delta: float,
    confidence: float,
    meta: Mapping[str, Any],
) -> AuditResult:
    """The analysis of every run once they are made, its cost counting the audit's whole wall time."""
    clock.check("the analysis")
    result = analyse_runs(
        prepared,
        outcomes,
        attacks=names,
        claimed_epsilon=claimed_epsilon,
        delta=delta,
        confidence=confidence,
        execution=how,
        generator=meta,
    )
    result.cost["wall_seconds"] = time.perf_counter() - start  # preparation, runs and analysis
    return result


def _checked_options(
    delta: Any,
    confidence: Any,
    claimed_epsilon: Any,
    generator_version: Any,
    generator_digest: Any,
    executor: Any,
    workers: int | None,
    design: str | None,
    looks: int | str | None,
    *,
    runs: int,
    n_targets: int | None,
    training_rows: int | None,
    n_rows: int | None,
) -> tuple[str, int | str | None, bool]:
    """audit_generator's options checked before any work is done: (the design, the looks resolved,
    whether the runs are made on a cluster)."""
    _check_numbers(delta, confidence, claimed_epsilon)
    _check_generator_identity(generator_version, generator_digest)
    on_cluster = is_cluster(executor)
    if on_cluster and workers is not None:
        raise InputError("workers: a cluster's workers are its own; give workers only with the local executor")
    if design is None:
        design = default_design(delta)
    check_sizes(runs=runs, n_targets=n_targets, training_rows=training_rows, n_rows=n_rows, design=design)
    looks = _resolved_looks(
        looks, runs, design=design, claimed_epsilon=claimed_epsilon, delta=delta, on_cluster=on_cluster
    )
    return design, looks, on_cluster


def _check_generator_identity(generator_version: Any, generator_digest: Any) -> None:
    """Refuse a generator version that is not a string and a digest that is not one."""
    if generator_version is not None and not isinstance(generator_version, str):
        raise ParameterError(
            f"generator_version must be a string (a number loses digits: 2.10 is 2.1), got "
            f"{type(generator_version).__name__}"
        )
    from .identity import is_digest

    if generator_digest is not None and not is_digest(generator_digest):
        raise ParameterError("generator_digest must be 64 lowercase hex characters (privgate.audit.identity)")


def _resolved_looks(
    looks: int | str | None, runs: int, *, design: str, claimed_epsilon: float | None, delta: float, on_cluster: bool
) -> int | str | None:
    """The looks of the audit: ``"auto"`` when :func:`privgate.audit.defaults.auto_looks` makes it
    sequential, None for an audit without looks (one look included), else the checked count."""
    if isinstance(looks, str):
        if looks != "auto":
            raise ParameterError(f"looks must be 'auto', None or an integer in [1, {MAX_LOOKS}]; got {looks!r}")
        return (
            "auto"
            if auto_looks(runs, design=design, claimed_epsilon=claimed_epsilon, delta=delta, on_cluster=on_cluster)
            else None
        )
    if looks is not None:
        look_schedule(runs, looks, 1)  # checks looks
        if looks == 1:  # one look: the audit as without looks (on a cluster too)
            return None
    return looks


def _generator_meta(generate: Generate, name: str | None, version: str | None, digest: str | None) -> dict[str, Any]:
    """The generator as the result records it: name, version and digest (defaults from ``generate``)."""
    from .identity import callable_digest

    return {"name": name or _name_of(generate), "version": version, "digest": digest or callable_digest(generate)}


def _make_runs(
    prepared: PreparedAudit,
    runner: Runs,
    generate: Generate,
    cluster: Any,
    *,
    threads: int | None,
    progress: Progress | None,
    clock: Clock,
) -> tuple[list[RunOutcome], dict[str, Any]]:
    """Every run of the plan, on the ``cluster`` executor when one is given, else on ``runner``'s
    worker processes: (the outcomes, how they were made)."""
    if cluster is not None:
        from .cluster import execute_on_cluster

        return execute_on_cluster(
            cluster,
            prepared.plan,
            prepared.space,
            generate,
            range(prepared.plan.n_runs),
            threads=threads,
            progress=progress,
            deadline=clock.left(),
        )
    outcomes = runner.make(prepared.plan, prepared.space, range(prepared.plan.n_runs), progress=progress)
    return outcomes, dict(runner.how)


def _sequential(
    prepared: PreparedAudit,
    runner: Runs,
    looks: int | str,
    *,
    names: Sequence[str],
    claimed_epsilon: float | None,
    delta: float,
    confidence: float,
    meta: Mapping[str, Any],
    start: float,
    progress: Progress | None = None,
) -> AuditResult:
    """A sequential audit: the plan's runs are made in batches; after each, the runs so far are
    analysed at confidence 1 − α/L (L looks on a schedule fixed in advance by ``runs`` and
    ``looks``), and the audit stops at the first look whose bound exceeds the claim. By the union
    bound over the L looks, the probability that ANY look's bound exceeds the true ε is ≤ α, so
    the bound reported (the stopping look's, or the last look's) holds at confidence 1 − α
    (Bonferroni α-spending over a fixed schedule of looks). ``looks="auto"``: the default
    schedule (:func:`privgate.audit.defaults.doubling_schedule`) and spending (half of α on the
    last look, :func:`privgate.audit.defaults.spend_alpha`); the union bound holds the same."""
    plan = prepared.plan
    if plan.design == "separate":
        raise ParameterError(
            "looks: a sequential audit needs every run to serve every target "
            "(design 'shared' or 'canaries'), not 'separate'"
        )
    if claimed_epsilon is None:
        raise ParameterError("looks: a sequential audit stops when the bound exceeds the claim; give claimed_epsilon")
    least = 2 if plan.design == "canaries" else MIN_RUNS
    alpha = 1.0 - confidence
    if looks == "auto":
        schedule = [n for n in doubling_schedule(plan.n_runs) if n >= least] or [plan.n_runs]
        alphas = spend_alpha(alpha, len(schedule))
    else:
        schedule = look_schedule(plan.n_runs, looks, least)
        alphas = [alpha / len(schedule)] * len(schedule)
    outcomes: list[RunOutcome] = []
    result = None
    done = 0
    look_alpha = alphas[-1]
    for n, look_alpha in zip(schedule, alphas):
        more = runner.make(
            plan,
            prepared.space,
            range(done, n),
            progress=None if progress is None else (lambda k, _, d=done: progress(d + k, plan.n_runs)),
        )
        outcomes.extend(more)
        done = n
        runner.clock.check(f"the analysis after {n} runs")
        view = PreparedAudit(_prefix(plan, n), prepared.space, prepared.not_taken, prepared.preflight, prepared.seconds)
        result = analyse_runs(
            view,
            outcomes,
            attacks=names,
            claimed_epsilon=claimed_epsilon,
            delta=delta,
            confidence=1.0 - look_alpha,
            execution=dict(runner.how),
            generator=meta,
        )
        if result.violation:
            break
    assert result is not None
    result.confidence = confidence
    equal = len(set(alphas)) == 1
    result.design.update(
        sequential={
            "looks": schedule,
            "alpha_per_look": alphas[0] if equal else alphas,
            "alpha_at_stop": look_alpha,
            "schedule": "even" if looks != "auto" else "doubling",
            "stopped_after_runs": done,
            "stopped_early": done < plan.n_runs,
            "planned_runs": plan.n_runs,
        }
    )
    result.cost["wall_seconds"] = time.perf_counter() - start
    return result


def _prefix(plan: AuditPlan, n: int) -> AuditPlan:
    """The plan's first ``n`` runs (a sequential audit's look)."""
    return replace(plan, included=plan.included[:, :n], assigned=plan.assigned[:, :n], fit=plan.fit[:n])


def _name_of(generate: Any) -> str:
    target = generate if hasattr(generate, "__qualname__") else type(generate)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(generate).__name__)}"
