"""Gate-able disclosure metrics built on :func:`privgate.disclosure.multi_disclosure`
(Raab, Nowok & Dibben, "Practical privacy metrics for synthetic data"; synthpop 1.9-2).

* ``disclosure_identity`` — value = repU / 100: the share of real records unique on the keys in
  the real data whose key combination is also unique in the synthetic data (replicated
  uniques). repU does not depend on the target unless target-specific exclusions are used; the
  value is then the largest over the targets.
* ``disclosure_attribute`` — value = the largest DiSCO / 100 over the targets: the share of real
  records whose keys, looked up in the synthetic data, give a single target value that is their
  true value (Disclosive in Synthetic, Correct Original).

Orientation: risk; a copy of the real data scores UiO/100 (identity) and Dorig/100 (attribute),
the highest values the real data allows. With m synthetic sets each measure is the mean over
the sets. Both take ``keys=`` (default: the context's keys, else every non-target column) and
``targets=`` (default: the context's sensitive columns; a ParameterError if there are none) and
every option of ``multi_disclosure`` (``ngroups_targets``, ``ngroups_keys``, ``cont_na``,
``denom_lim``, ...). Details carry measures and flags only, never level labels of real records.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import ParameterError
from ..registry import register_metric
from ..results import MetricResult
from .api import MultiDisclosureResult, multi_disclosure

REFERENCE = ("Raab, Nowok & Dibben, Practical privacy metrics for synthetic data "
             "(synthpop disclosure vignette); synthpop 1.9-2 disclosure()/multi.disclosure()")


def _run(ctx, keys: Sequence[str] | None, targets: Sequence[str] | str | None,
         options: dict[str, Any], metric: str) -> tuple[MultiDisclosureResult, list[str], list[str]]:
    if not targets and not ctx.sensitive:
        raise ParameterError(
            f"{metric} needs the attacker's key columns and at least one target column: pass "
            f"keys=[...] (the quasi-identifiers an attacker knows, default: every other column) and "
            f"targets=[...] (or sensitive=[...] to evaluate / `sensitive:` in a gate configuration); "
            f"columns are {ctx.schema.columns}")
    key_list, target_list = ctx.key_sensitive(keys, targets)
    res = multi_disclosure(ctx.real, ctx.synthetic, key_list, target_list, **options)
    return res, key_list, target_list


def _share_ci(out: MetricResult, res: MultiDisclosureResult, target: str) -> MetricResult:
    """value = a share of the Nd real records (repU, DiSCO in percent / 100): its interval by the
    share rule; with m > 1 synthetic sets the count is the mean over the sets."""
    from ..metrics._common import set_count_ci  # here: privgate.metrics imports this module

    r = res.per_target[target]
    n = float(r.n_orig)
    note = f"target {target!r}"
    if len(res.per_target) > 1:
        note += ", the worst of several (not adjusted for the choice)"
    if r.m > 1:
        note += f"; the mean count over {r.m} synthetic sets"
    return set_count_ci(out, out.value * n, n, note=note)


def _per_target_details(res: MultiDisclosureResult) -> dict[str, Any]:
    out = {}
    for t, r in res.per_target.items():
        out[t] = {
            **{c: r.mean(c) for c in ("UiO", "UiS", "UiOiS", "repU")},
            **{c: r.mean(c) for c in ("Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO")},
            **{c: r.mean(c) for c in ("baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP")},
            "check_1way_flagged": bool(r.check1),
            "check_2way_pairs": [0 if c is None else c.height for c in r.check_2way],
            "groupings": r.groupings,
        }
    return out


@register_metric(family="disclosure",
                 attack="identity disclosure: single out a real person unique on the keys through a "
                        "synthetic record that is unique on the same keys (replicated unique)",
                 reference=REFERENCE + ", repU",
                 orientation="value = repU/100, the share of real records unique on the keys in both the real "
                             "and the synthetic data; 1 = every real record is a replicated unique",
                 needs=("keys", "targets"))
def disclosure_identity(ctx, *, keys: Sequence[str] | None = None,
                        targets: Sequence[str] | str | None = None, **options: Any) -> MetricResult:
    """Replicated uniques, repU (Raab, Nowok & Dibben; synthpop 1.9-2), as a risk in [0, 1]."""
    res, key_list, target_list = _run(ctx, keys, targets, options, "disclosure_identity")
    rep_u = {t: res.per_target[t].mean("repU") for t in target_list}
    worst = max(rep_u.values())
    details = {
        "keys": res.keys, "targets": target_list, "m": res.per_target[target_list[0]].m,
        "UiO": max(res.per_target[t].mean("UiO") for t in target_list),
        "repU": worst, "per_target": _per_target_details(res),
        "note": "percentages; repU depends on the target only through target-specific exclusions",
    }
    params = {"keys": key_list, "targets": target_list, **options}
    out = MetricResult.from_context(ctx, "disclosure_identity", worst / 100.0, worst,
                                    "repU (% of real records that are replicated uniques)",
                                    params=params, details=details,
                                    per_attribute={t: v / 100.0 for t, v in rep_u.items()})
    return _share_ci(out, res, max(target_list, key=lambda t: rep_u[t]))


@register_metric(family="disclosure",
                 attack="attribute disclosure: look a real person's keys up in the synthetic data; when all "
                        "synthetic records with those keys share one target value, take it",
                 reference=REFERENCE + ", DiSCO",
                 orientation="value = max over targets of DiSCO/100, the share of real records whose keys give a "
                             "single target value in the synthetic data that is their true value",
                 needs=("keys", "targets"))
def disclosure_attribute(ctx, *, keys: Sequence[str] | None = None,
                         targets: Sequence[str] | str | None = None, **options: Any) -> MetricResult:
    """DiSCO (Disclosive in Synthetic, Correct Original; Raab, Nowok & Dibben; synthpop 1.9-2),
    the largest over the targets, as a risk in [0, 1]."""
    res, key_list, target_list = _run(ctx, keys, targets, options, "disclosure_attribute")
    disco = {t: res.per_target[t].mean("DiSCO") for t in target_list}
    worst_target = max(target_list, key=lambda t: disco[t])
    worst = disco[worst_target]
    table = res.attrib_table.select("target", "attrib.orig", "attrib.syn", "Npairs")
    details = {
        "keys": res.keys, "targets": target_list, "m": res.per_target[target_list[0]].m,
        "worst_target": worst_target, "DiSCO": worst,
        "Dorig": {t: res.per_target[t].mean("Dorig") for t in target_list},
        "attrib_table": table.to_dicts(),
        "check_1way_flagged": {t: bool(res.per_target[t].check1) for t in target_list},
        "per_target": _per_target_details(res),
    }
    params = {"keys": key_list, "targets": target_list, **options}
    out = MetricResult.from_context(ctx, "disclosure_attribute", worst / 100.0, worst,
                                    "largest DiSCO over the targets (% of real records disclosed correctly)",
                                    params=params, details=details,
                                    per_attribute={t: v / 100.0 for t, v in disco.items()})
    return _share_ci(out, res, worst_target)
