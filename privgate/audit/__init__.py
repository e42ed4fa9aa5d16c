"""Audit a synthetic-data generator itself, not only one release.

One release cannot say whether a generator protects its most vulnerable people or keeps its
differential-privacy promise; only running the generator can. ``audit_generator`` retrains the
user's generator many times with and without target records — the most outlying real records
and canaries that expose known implementation faults — attacks every release as the
membership-inference literature does (threshold attacks and a shadow-model classifier), and
turns the attacks' error rates on runs they were not tuned on into an empirical ε lower bound
that holds with the stated confidence.

An audit can prove a violation (the bound exceeds the claimed ε), never privacy: a bound below
the claim says only that these attacks on these targets found nothing stronger (docs/audit.md).

Rooms: :mod:`.targets` (which records), :mod:`.plan` (the game and its designs), :mod:`.seeds`
(every random stream), :mod:`.features` (what an attack sees of a release), :mod:`.attacks` (one
module per attack), :mod:`.analysis` (thresholds, error counts, bounds — formulas from
:mod:`privgate.stats.dp_audit`), :mod:`.runner` (one run; many on a process pool),
:mod:`.result` (:class:`AuditResult`), :mod:`.mechanisms` (mechanisms of exactly known ε).
"""

from __future__ import annotations

from .._lazy import lazy_attributes

# imported on first use: the CLI reads the audit's limits and defaults to build its arguments
# without loading the audit's engine
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "PreparedAudit": ("api", "PreparedAudit"),
        "analyse_runs": ("api", "analyse_runs"),
        "audit_generator": ("api", "audit_generator"),
        "prepare_audit": ("api", "prepare_audit"),
        "AuditResult": ("result", "AuditResult"),
        "RunOutcome": ("runner", "RunOutcome"),
        "execute": ("runner", "execute"),
        "make_run": ("runner", "make_run"),
    },
)

__all__ = [
    "AuditResult",
    "PreparedAudit",
    "RunOutcome",
    "analyse_runs",
    "audit_generator",
    "execute",
    "make_run",
    "prepare_audit",
]
