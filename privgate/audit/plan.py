"""The audit game: which generator runs are made, on which training set, with which targets.

The distinguishing game of DP auditing (Jagielski, Ullman, Oprea, "Auditing Differentially
Private Machine Learning: How Private is Private SGD?", NeurIPS 2020; Nasr, Song, Thakurta,
Papernot, Carlini, "Adversary Instantiation", IEEE S&P 2021): each run trains the generator on a
background set drawn from the population, with or without each target added. DP compares
neighbouring datasets that differ by one record added or removed, so a target is *added* to the
background and the background never depends on which targets are in: the release of a run with
target t is M(B ∪ S ∪ {t}) and of a run without it M(B ∪ S), B the background and S the other
targets drawn in, both independent of t's inclusion. By the convexity of the DP inequality in the
distribution of (B, S), an (ε, δ)-DP generator keeps P[M(B ∪ S ∪ {t}) ∈ E] ≤
e^ε P[M(B ∪ S) ∈ E] + δ for every event E, so the error rates of any test of t's presence obey
the DP bound and the audit's lower bound is sound.

Designs:

- ``shared`` (the default for a claim with δ > 0; :mod:`privgate.audit.defaults`): every run serves every target; each target is in each run independently
  with probability 1/2 from ``INDEPENDENT_FROM`` (200, the default) runs on (below, in exactly half of the fit
  runs and half of the test runs, so that every target has runs of both kinds; the pooled
  evidence is then not computed) (the design of Steinke, Nasr, Jagielski, "Privacy Auditing with One (1)
  Training Run", NeurIPS 2023). It is analysed per target, with a Bonferroni correction over the
  targets (sound whatever the dependence between them), and pooled over targets of one kind with
  Steinke et al.'s bound, which needs exactly these independent fair inclusions. ``runs``
  generator runs in all.
- ``canaries`` (the default, :mod:`privgate.audit.defaults`): the many-canary design of the same paper — many crafted canaries (``n_targets``,
  default 160), each in each run with probability 1/2, a handful of runs (at least 2: one fits
  the guessing rule, the others are guessed), the bound from all guesses together.
- ``separate``: each target has its own ``runs`` runs in which it is the only target, in half of
  them. ``runs × targets`` generator runs.

Background: ``fixed`` (default) — one background set for every run (the adversary of the DP
definition knows everyone but the target: the strongest audit); ``redrawn`` — a fresh background
per run (the adversary knows only the population).

The generator is asked for ``n_rows`` records in every run, whatever the run's training size, so
the audit itself never hands the release size a target's presence. A run's training frame is
shuffled, so a target's position says nothing either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from ..errors import ParameterError
from ..schema import Schema
from .defaults import BACKGROUNDS, DEFAULT_FIT_SHARE, DEFAULT_RUNS, DEFAULT_TRAINING_ROWS, DESIGNS
from .limits import MAX_LOOKS
from .seeds import rng, seed_int
from .targets import Targets

#: fewest runs per target: 4 fit and 4 test runs, half with the target in each
MIN_RUNS = 8
#: from this many runs the shared design includes targets independently (pooled evidence possible)
INDEPENDENT_FROM = 200
#: fewest runs of the many-canary design: one to fit the guessing rule, one to guess
MIN_CANARY_RUNS = 2


@dataclass
class AuditPlan:
    """Everything a worker needs to make any run of the audit: the population rows a background
    is drawn from (targets' own rows removed), the targets, and the design as arrays.

    ``included[t, r]``: target t is in run r's training set; ``assigned[t, r]``: run r counts
    for target t (every run in the shared design; t's own block in the separate design);
    ``fit[r]``: run r is used to choose thresholds and train shadow models (else: to estimate
    the error rates). ``independent``: every target is in every run independently with
    probability 1/2 (what the pooled many-canary bound needs)."""

    pool: pl.DataFrame
    targets: Targets
    schema: Schema
    design: str
    background: str
    training_rows: int
    n_rows: int
    seed: int
    included: np.ndarray
    assigned: np.ndarray
    fit: np.ndarray
    independent: bool = False
    #: the targets' cells are the generator's own (its published domain, privgate.audit.cells)
    published_cells: bool = False

    @property
    def n_runs(self) -> int:
        return int(self.fit.size)

    @property
    def n_targets(self) -> int:
        return len(self.targets)

    def background_rows(self, run: int) -> np.ndarray:
        """The pool rows of run ``run``'s background (sorted)."""
        index = 0 if self.background == "fixed" else run
        return np.sort(rng(self.seed, "background", index).choice(self.pool.height, self.training_rows, replace=False))

    def training_frame(self, run: int, targets_in: np.ndarray | None = None) -> pl.DataFrame:
        """The training set of run ``run``: its background plus the targets it includes (or the
        targets ``targets_in``), rows in a seeded random order."""
        chosen = np.flatnonzero(self.included[:, run]) if targets_in is None else np.asarray(targets_in, dtype=np.int64)
        frame = pl.concat(
            [self.pool[self.background_rows(run).tolist()], self.targets.frame[chosen.tolist()]], how="vertical"
        )
        order = rng(self.seed, "shuffle", run).permutation(frame.height)
        return frame[order.tolist()]

    def generator_seed(self, run: int) -> int:
        return seed_int(self.seed, "generator", run)


def make_plan(
    pool: pl.DataFrame,
    targets: Targets,
    schema: Schema,
    *,
    design: str = "shared",
    background: str = "fixed",
    runs: int = DEFAULT_RUNS,
    training_rows: int | None = None,
    n_rows: int | None = None,
    fit_share: float = DEFAULT_FIT_SHARE,
    seed: int = 0,
    interleave: bool = False,
) -> AuditPlan:
    """Draw the design (see the module docstring); every choice is seeded by ``seed``.
    ``interleave``: fit runs spread evenly among the test runs (every prefix of the runs has its
    share of both, as a sequential audit's looks need) instead of first."""
    runs = _checked_runs(design, background, runs)
    if not (0.0 < float(fit_share) < 1.0):
        raise ParameterError(f"fit_share must be in (0, 1); got {fit_share!r}")
    training_rows, n_rows = _checked_rows(pool, training_rows, n_rows)
    split = _fit_runs(design, runs, fit_share, interleave)
    independent = design == "canaries" or (design == "shared" and runs >= INDEPENDENT_FROM)
    fit, assigned, included = _draw_design(design, split, len(targets), seed, independent)
    return AuditPlan(
        pool=pool,
        targets=targets,
        schema=schema,
        design=design,
        background=background,
        training_rows=training_rows,
        n_rows=n_rows,
        seed=int(seed),
        included=included,
        assigned=assigned,
        fit=fit,
        independent=independent,
    )


def _checked_runs(design: str, background: str, runs: int) -> int:
    """The design and background checked, and ``runs`` as an int checked against the design's least."""
    if design not in DESIGNS:
        raise ParameterError(f"design must be one of {list(DESIGNS)}; got {design!r}")
    if background not in BACKGROUNDS:
        raise ParameterError(f"background must be one of {list(BACKGROUNDS)}; got {background!r}")
    runs = _positive_int(runs, "runs")
    if design == "canaries":
        if runs < MIN_CANARY_RUNS:
            raise ParameterError(
                f"runs must be at least {MIN_CANARY_RUNS} in the canaries design (one fits the "
                f"guessing rule, the others are guessed); got {runs}"
            )
    elif runs < MIN_RUNS:
        raise ParameterError(
            f"runs must be at least {MIN_RUNS} (half to fit, half to test, each half "
            f"with and without every target); got {runs}"
        )
    return runs


def _checked_rows(pool: pl.DataFrame, training_rows: int | None, n_rows: int | None) -> tuple[int, int]:
    """(background rows per run, records asked per run), defaulted and checked against the pool."""
    if training_rows is None:
        training_rows = min(DEFAULT_TRAINING_ROWS, pool.height)
    training_rows = _positive_int(training_rows, "training_rows")
    if training_rows > pool.height:
        raise ParameterError(
            f"training_rows={training_rows} is more than the {pool.height} population rows "
            "available for backgrounds (targets' own rows excluded)"
        )
    n_rows = training_rows if n_rows is None else _positive_int(n_rows, "n_rows")
    return training_rows, n_rows


def _fit_runs(design: str, runs: int, fit_share: float, interleave: bool) -> np.ndarray:
    """Which of ``runs`` runs fit: the first ``fit_share`` of them, or spread evenly when ``interleave``."""
    n_fit = int(round(runs * float(fit_share)))
    least = 1 if design == "canaries" else MIN_RUNS // 2
    n_fit = min(max(n_fit, least), runs - least)
    split = np.zeros(runs, dtype=bool)
    if interleave:  # run r fits when ⌊(r + 1)·n_fit/runs⌋ steps up: evenly spread, run 0 first
        r = np.arange(runs)
        split[((r + 1) * n_fit) // runs > (r * n_fit) // runs] = True
        split = np.roll(split, -int(np.argmax(split))) if split.any() else split
    else:
        split[:n_fit] = True
    return split


def _draw_design(
    design: str, split: np.ndarray, n_targets: int, seed: int, independent: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fit, assigned, included) of every run, each target's inclusions drawn from its own seeded stream."""
    if design in ("shared", "canaries"):
        total = split.size
        fit = split
        assigned = np.ones((n_targets, total), dtype=bool)
        included = np.zeros((n_targets, total), dtype=bool)
        for t in range(n_targets):
            gen = rng(seed, "design", t)
            included[t] = gen.random(total) < 0.5 if independent else _balanced(split, gen)
    else:
        runs = split.size
        total = runs * n_targets
        fit = np.tile(split, n_targets)
        assigned = np.zeros((n_targets, total), dtype=bool)
        included = np.zeros((n_targets, total), dtype=bool)
        for t in range(n_targets):
            block = slice(t * runs, (t + 1) * runs)
            assigned[t, block] = True
            included[t, block] = _balanced(split, rng(seed, "design", t))
    return fit, assigned, included


def look_schedule(runs: int, looks: int, least: int) -> list[int]:
    """The run counts at which a sequential audit looks: ``looks`` evenly spaced prefixes of
    ``runs`` (the last is ``runs``), none below ``least``; duplicates dropped."""
    if isinstance(looks, bool) or not isinstance(looks, (int, np.integer)) or not 1 <= looks <= MAX_LOOKS:
        raise ParameterError(f"looks must be an integer in [1, {MAX_LOOKS}]; got {looks!r}")
    at = sorted({max(int(least), int(math.ceil(runs * (i + 1) / looks))) for i in range(int(looks))})
    return [min(a, runs) for a in at if a <= runs] or [runs]


def _balanced(split: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Inclusion of one target when not independent: exactly half (rounded down) of its fit
    runs and of its test runs, at random."""
    out = np.zeros(split.size, dtype=bool)
    for part in (np.flatnonzero(split), np.flatnonzero(~split)):
        out[gen.choice(part, part.size // 2, replace=False)] = True
    return out


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"{name} must be a positive integer; got {value!r}")
    return int(value)
