"""The generator audit's defaults, in one place: the command line (``privgate audit``), the API
(:func:`privgate.audit.audit_generator`, :func:`privgate.audit.prepare_audit`) and Dagster's
``build_generator_audit`` take every default from here, so a flag or argument left out means the
same audit wherever it is left out.

**The default design** is the many-canary design (``"canaries"``: 160 crafted canaries — 32
level canaries and 128 cell canaries, in the generator's own cells when it publishes its domain
(:mod:`privgate.audit.cells`) — each in each run independently with probability 1/2, 200 runs, a
fifth of them fitting the guessing rule), the tightest of the designs whose soundness
``benchmarks/audit.py`` measures (docs/audit.md, "Measured"). It bounds pure ε only, so a claim with δ > 0 gets the ``"shared"`` design (10
targets, 200 runs), whose per-target bounds hold at any δ.

**Sequential looks by default.** With a claim, δ = 0, a design whose every run serves every
target and the runs made on this machine, the audit looks at its runs after
:data:`FIRST_LOOK` runs and then at every doubling (4, 8, 16, …, ``runs``) and stops at the first
look whose bound exceeds the claim: a generator that reads its domain from the data is proven in
a handful of fits, one that keeps its claim costs every run. The error budget α = 1 − confidence
is spent unequally: half on the last look (so a generator that keeps its claim is audited almost
as tightly as without looks) and half shared equally by the earlier ones; by the union bound
the reported bound holds at 1 − α whichever look stops the audit.
"""

from __future__ import annotations

from typing import Any

#: the audit's designs (privgate.audit.plan: who is trained on what in each run)
DESIGNS = ("shared", "separate", "canaries")
#: how each run's background rows are drawn
BACKGROUNDS = ("fixed", "redrawn")
#: the design when none is given (δ = 0)
DEFAULT_DESIGN = "canaries"
#: the design when none is given and the claim has δ > 0 (the canaries design bounds pure ε only)
DEFAULT_DESIGN_WITH_DELTA = "shared"
#: generator runs (in all for the shared and canaries designs; per target for the separate design)
DEFAULT_RUNS = 200
#: background rows per run, at most the population's
DEFAULT_TRAINING_ROWS = 1000
#: one background for every run (the strongest audit)
DEFAULT_BACKGROUND = "fixed"
#: the confidence of the reported bound
DEFAULT_CONFIDENCE = 0.95
#: targets ``"auto"`` picks in the shared and separate designs (outliers and canaries)
DEFAULT_TARGETS = 10
#: canaries of the many-canary design: 32 level canaries and up to 128 cell canaries (the
#: many-canary bound on an exact Laplace histogram nears ε only from about a hundred canaries
#: alone in their cells: benchmarks/audit_ceiling.py)
CANARY_TARGETS = 160
#: share of the runs that fit thresholds and shadow models (shared and separate designs)
DEFAULT_FIT_SHARE = 0.4
#: share of the many-canary design's runs that fit its guessing rule (at least one run)
CANARY_FIT_SHARE = 0.2
#: runs before a default sequential audit's first look (with the preflight run: 5 fits)
FIRST_LOOK = 4
#: share of α the last look of a default sequential audit spends (the others share the rest)
LAST_LOOK_ALPHA_SHARE = 0.5


def default_design(delta: float = 0.0) -> str:
    """The design an audit of a claim with this δ gets when none is given."""
    return DEFAULT_DESIGN if not delta else DEFAULT_DESIGN_WITH_DELTA


def default_n_targets(design: str) -> int:
    """Targets ``"auto"`` picks in ``design`` when ``n_targets`` is not given."""
    return CANARY_TARGETS if design == "canaries" else DEFAULT_TARGETS


def default_fit_share(design: str) -> float:
    """The fit share of ``design`` when ``fit_share`` is not given."""
    return CANARY_FIT_SHARE if design == "canaries" else DEFAULT_FIT_SHARE


def auto_looks(runs: int, *, design: str, claimed_epsilon: float | None, delta: float, on_cluster: bool) -> bool:
    """Whether an audit given no ``looks`` is sequential by default: a claim to stop at, δ = 0,
    a design whose every run serves every target, runs made on this machine and room for a look
    before the last (``runs`` > :data:`FIRST_LOOK`)."""
    return (
        claimed_epsilon is not None
        and not delta
        and design in ("shared", "canaries")
        and not on_cluster
        and runs > FIRST_LOOK
    )


def doubling_schedule(runs: int, first: int = FIRST_LOOK) -> list[int]:
    """The run counts a default sequential audit looks at: ``first``, twice that, … and ``runs``."""
    at, n = [], max(int(first), 1)
    while n < runs:
        at.append(n)
        n *= 2
    return at + [int(runs)]


def spend_alpha(alpha: float, looks: int, last_share: float = LAST_LOOK_ALPHA_SHARE) -> list[float]:
    """α per look of a default sequential audit: ``last_share`` of α on the last look, the rest
    shared equally by the others (one look: all of α). The shares add up to α."""
    if looks <= 1:
        return [float(alpha)]
    early = alpha * (1.0 - last_share) / (looks - 1)
    return [early] * (looks - 1) + [alpha * last_share]


def describe() -> dict[str, Any]:
    """The defaults as a record (for the documentation and the tests)."""
    return {
        "design": DEFAULT_DESIGN,
        "design_with_delta": DEFAULT_DESIGN_WITH_DELTA,
        "runs": DEFAULT_RUNS,
        "training_rows": DEFAULT_TRAINING_ROWS,
        "background": DEFAULT_BACKGROUND,
        "confidence": DEFAULT_CONFIDENCE,
        "n_targets": {"canaries": CANARY_TARGETS, "shared": DEFAULT_TARGETS, "separate": DEFAULT_TARGETS},
        "fit_share": {"canaries": CANARY_FIT_SHARE, "shared": DEFAULT_FIT_SHARE, "separate": DEFAULT_FIT_SHARE},
        "looks": {
            "first": FIRST_LOOK,
            "last_alpha_share": LAST_LOOK_ALPHA_SHARE,
            "schedule_at_default_runs": doubling_schedule(DEFAULT_RUNS),
        },
    }
