"""What an audit's reader should do next, and its numbers in words a person reads: the next step
for each outcome, pooled groups named as groups, times and ratios rather than percentages of
percentages. Shared by the terminal summary (:meth:`AuditResult.summary`), the HTML report
(:mod:`privgate.render.audit`) and the command's table."""

from __future__ import annotations

from typing import Any

#: target kinds in the plural, for a pooled group's name
KIND_PLURAL = {
    "outlier": "outliers",
    "canary_cell": "cell canaries",
    "canary_level": "level canaries",
    "canary_range": "range canaries",
    "user": "user targets",
}
#: a bound at least this share of the claim, without exceeding it, is "near the claim"
NEAR_CLAIM = 0.8


def group_label(kind: str, n: int) -> str:
    """A pooled group's name: ``the 32 cell canaries, pooled``."""
    return f"the {n} {KIND_PLURAL.get(kind, kind)}, pooled"


def evidence_label(best: dict[str, Any] | None) -> str:
    """The strongest candidate in words: a pooled group by its name, a target by id and kind."""
    if not best:
        return "none"
    if best.get("pooled"):
        return (
            f"{group_label(best['kind'], int(best.get('targets') or 0))} (every guess together), "
            f"attack {best['attack']}"
        )
    return f"target {best['target']} ({best['kind']}), attack {best['attack']}"


def seconds_text(s: float | None) -> str:
    """Seconds as a person reads them: ``12 ms``, ``3.4 s``, ``2 min 5 s``, ``1 h 3 min``."""
    if s is None:
        return "-"
    s = float(s)
    if s < 1.0:
        return f"{s * 1000:.0f} ms" if s >= 0.001 else f"{s * 1000:.2f} ms"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(round(s % 60))} s"
    return f"{int(s // 3600)} h {int(round((s % 3600) / 60))} min"


def ratio_text(a: float | None, b: float | None) -> str:
    """``a`` against ``b`` as a ratio a person reads: ``607×``, ``2.5×``, ``0.04×``."""
    if a is None or b is None or b <= 0:
        return "-"
    r = float(a) / float(b)
    return f"{r:,.0f}×" if r >= 100 else f"{r:.1f}×" if r >= 1 else f"{r:.2f}×"


def next_step(result: Any) -> str:
    """What to do, for each outcome: a proven violation; no violation from an audit that could not
    have shown one (weak) or whose bound is near the claim; no violation from an audit that could
    have (strong); no claim."""
    if result.checked_nothing:
        return (
            "Next: nothing was audited — give more runs or targets (a pooled kind needs two targets, "
            "a target two runs with it and two without in the fit and in the test runs) and audit again."
        )
    best = result.best or {}
    claim = result.claimed_epsilon
    provable = result.epsilon_provable
    if result.violation:
        kind = best.get("kind", "")
        if kind in ("canary_level", "canary_range"):
            why = (
                "its canaries' levels or values reached the releases only when they were trained on: the "
                "generator reads its domain (levels, bounds, bins) from the private data — give it a public "
                "domain"
            )
        elif kind == "canary_cell":
            why = (
                "the counts of cells the population leaves empty move with one record: check the noise "
                "added to every count (its scale and the ε it is computed from)"
            )
        else:
            why = "find what a single record changes in the release (the noise, clipping, the domain)"
        return (
            "Next: do not publish this generator's releases under its claim of ε = "
            f"{claim:g}. Fix the generator — {why} — and audit the fixed version again."
        )
    if result.violation is False:
        eps = result.epsilon_lower
        if provable is not None and provable <= claim:
            return (
                f"Next: this audit is weak — its runs could show at most ε ≥ {provable:.3f}, not above the "
                f"claim of {claim:g}, so it could not have found a violation. Run more fits (--runs) and "
                "audit again before relying on it."
            )
        if eps >= NEAR_CLAIM * claim:
            return (
                f"Next: the bound {eps:.3f} is near the claim of {claim:g}: run more fits (--runs) to settle "
                "it before publishing; a bound above the claim would prove a violation."
            )
        could = "" if provable is None else f"the audit could have shown up to {provable:.3f} and "
        return (
            f"Next: no evidence against the claim — {could}found {eps:.3f}. The releases may be published under the generator's claim as far as "
            "these attacks and canaries can tell (an audit cannot prove privacy); audit every new version."
        )
    return (
        "Next: give the generator's claim (--claimed-epsilon) to check it; without one the bound is a "
        "measurement: the generator is not ε-DP for any ε below it."
    )


def headline_note(result: Any, bars: list[float]) -> str | None:
    """Why the headline bound exceeds every bar of the chart, when it does: the strongest
    candidate, chosen on the fit runs, is tested alone at α/2, while each bar is corrected for
    every candidate (α/2 shared)."""
    if not bars or result.epsilon_lower <= max(bars) + 1e-12:
        return None
    return (
        "The audit's bound exceeds every bar: the strongest candidate — chosen on the fit runs, before the "
        "test runs were counted — is tested alone with half of the error probability, while each bar is "
        "corrected for every candidate with the other half, so it is smaller."
    )
