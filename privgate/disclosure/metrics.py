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

import numpy as np
import polars as pl

from ..errors import ParameterError
from ..registry import register_metric
from ..results import MetricResult
from .api import DisclosureResult, MultiDisclosureResult, multi_disclosure

REFERENCE = (
    "Raab, Nowok & Dibben, Practical privacy metrics for synthetic data "
    "(synthpop disclosure vignette); synthpop 1.9-2 disclosure()/multi.disclosure()"
)


def _run(
    ctx, keys: Sequence[str] | None, targets: Sequence[str] | str | None, options: dict[str, Any], metric: str
) -> tuple[MultiDisclosureResult, list[str], list[str]]:
    if not targets and not ctx.sensitive:
        raise ParameterError(
            f"{metric} needs the attacker's key columns and at least one target column: pass "
            f"keys=[...] (the quasi-identifiers an attacker knows, default: every other column) and "
            f"targets=[...] (or sensitive=[...] to evaluate / `sensitive:` in a gate configuration); "
            f"columns are {ctx.schema.columns}"
        )
    key_list, target_list = ctx.key_sensitive(keys, targets)
    # only the keys and targets are read: a Parquet scan streams just these columns
    cols = key_list + target_list
    res = multi_disclosure(ctx.columns("real", cols), ctx.columns("synthetic", cols), key_list, target_list, **options)
    return res, key_list, target_list


def _share_ci(out: MetricResult, res: MultiDisclosureResult, target: str) -> MetricResult:
    """value = a share of the Nd real records (repU, DiSCO in percent / 100): its interval by the
    share rule; with m > 1 synthetic sets the count is the mean over the sets."""
    from ..stats.metric_intervals import set_count_ci

    r = res.per_target[target]
    n = float(r.n_orig)
    note = f"target {target!r}"
    if len(res.per_target) > 1:
        note += ", the worst of several (not adjusted for the choice)"
    if r.m > 1:
        note += f"; the mean count over {r.m} synthetic sets"
    return set_count_ci(out, out.value * n, n, note=note)


def _jackknife_obstacle(ctx, r: DisclosureResult) -> str | None:
    """Why the delete-a-group replicates of :func:`_keep_disclosure_jackknife` would not be the
    measure recomputed without the group (None when they are): with exclusions the tables are
    trimmed by rules that read the deleted records' counts (``denom_lim``) or their levels; with
    grouped numeric columns the breaks are pooled over both data sets; with m > 1 synthetic sets
    the measure is a mean over the sets."""
    o = r.options
    if r.m != 1:
        return f"{r.m} synthetic sets"
    if r.n_orig != ctx.n_real or r.n_syn[0] != ctx.n_synthetic:
        return "the tabulated records are not the context's"
    if (
        o.get("exclude_ov_denom_lim")
        or o.get("not_targetlev")
        or o.get("exclude_keys")
        or not all(o.get("usekeys_na") or [True])
        or not o.get("usetarget_na", True)
    ):
        return "exclusions active"
    if any(o.get("ngroups_keys") or []) or o.get("ngroups_target") or r.groupings:
        return "numeric keys or target grouped (breaks pooled over both data sets)"
    return None


def _record_ids(r: DisclosureResult) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Integer ids of each record's composite key and (key, target level) cell, numbered over the
    keys and cells that real records have (a synthetic record elsewhere gets the id one past the
    last: no real record reads its count): (real key ids, real cell ids, synthetic key ids,
    synthetic cell ids, key id of each cell); real and synthetic records in data order."""
    rec = r.records
    orig = rec.filter(pl.col("source") == "orig").sort("row")
    syn = rec.filter(pl.col("source") == "syn").sort("row")
    both = pl.concat([orig.select("keys", "target"), syn.select("keys", "target")])
    # the dense ranks of the keys and of the (keys, target) pairs, from the few distinct keys and
    # the target levels already in code-point order (no sort of every record's labels)
    keys = both.select("keys").unique().sort("keys").with_row_index("__k")
    levels = pl.DataFrame({"target": pl.Series(r.target_levels, dtype=pl.String)}).with_row_index("__t")
    coded = both.join(keys, on="keys", how="left", maintain_order="left").join(
        levels, on="target", how="left", maintain_order="left"
    )
    k = coded["__k"].to_numpy().astype(np.int64)
    pair = k * len(r.target_levels) + coded["__t"].to_numpy().astype(np.int64)
    ids = {"k": k, "c": np.unique(pair, return_inverse=True)[1].ravel()}
    n = orig.height
    out = []
    for col in ("k", "c"):
        v = ids[col]
        present = np.unique(v[:n])
        pos = np.full(int(v.max()) + 1, present.size, dtype=np.int64)
        pos[present] = np.arange(present.size)
        out += [pos[v[:n]], pos[v[n:]]]
    kr, ks, cr, cs = out
    cell_key = np.empty(int(cr.max()) + 1, dtype=np.int64)
    cell_key[cr] = kr
    return kr, cr, ks, cs, cell_key


def _keep_disclosure_jackknife(ctx, out: MetricResult, r: DisclosureResult, measure: str) -> MetricResult:
    """Store the grouped-jackknife replicates of ``out.value`` (``measure`` "DiSCO" or "repU" of
    the target ``r``, the worst) for the holdout excess (``evaluate.attach_baseline``).

    Per real record the flag is DiSCO: its key is in the synthetic data and every synthetic
    record with that key has its target level (s_q > 0, s_tq = s_q); repU: it is the only real
    record with its key (d_q = 1) and one synthetic record has that key (s_q = 1). The value is
    the mean flag over the Nd real records, i.e. Σ over cells of (real count × cell flag) / Nd.

    * real records deleted by group: DiSCO flags read the synthetic tables only, so the
      replicate is the mean flag of the records left; repU's d_q loses the group's own records
      (a record may become unique): the key counts without the group;
    * synthetic records deleted by group: the group's counts are subtracted from s_q and s_tq
      and every cell's flag recomputed from them ((groups × cells) arrays, no loop).

    Skipped (the value's share interval is kept, and the excess falls back to MOVER) when the
    replicate is not the measure recomputed without the group (:func:`_jackknife_obstacle`)."""
    from ..stats import counts_without_groups, leave_group_out_means
    from ..stats.metric_intervals import jackknife_labels, keep_jackknife

    lab_r = jackknife_labels(ctx, "real", ctx.n_real)
    lab_s = jackknife_labels(ctx, "synthetic", ctx.n_synthetic)
    if lab_r is None or lab_s is None:
        return out
    why = _jackknife_obstacle(ctx, r)
    if why is None:
        kr, cr, ks, cs, cell_key = _record_ids(r)
        n, n_k, n_c = kr.size, int(kr.max()) + 1, cell_key.size
        s_q = np.bincount(ks, minlength=n_k + 1)[:n_k]
        d_q = np.bincount(kr, minlength=n_k)
        sq_g = counts_without_groups(ks, lab_s, n_k)  # (G, keys)
        if measure == "DiSCO":
            s_tq = np.bincount(cs, minlength=n_c + 1)[:n_c]
            d_tq = np.bincount(cr, minlength=n_c).astype(np.float64)
            cell_flag = (s_q[cell_key] > 0) & (s_tq == s_q[cell_key])
            flags = cell_flag[cr]
            reps_r = leave_group_out_means(flags.astype(np.float64), lab_r, int(lab_r.max()) + 1)
            stq_g = counts_without_groups(cs, lab_s, n_c)  # (G, cells)
            reps_s = (((sq_g[:, cell_key] > 0) & (stq_g == sq_g[:, cell_key])) @ d_tq) / n
        else:
            flags = (d_q[kr] == 1) & (s_q[kr] == 1)
            left = n - np.bincount(lab_r)
            reps_r = ((counts_without_groups(kr, lab_r, n_k) == 1) & (s_q == 1)).sum(axis=1) / left
            reps_s = ((sq_g == 1) & (d_q == 1)).sum(axis=1) / n
        if abs(flags.mean() - out.value) > 1e-9:
            why = "the per-record flags do not reproduce the value"
    if why is not None:
        out.details["ci_method"] += f"; no grouped-jackknife replicates for the holdout excess ({why})"
        return out
    out.details["ci_method"] += (
        f"; grouped-jackknife replicates kept for the holdout excess ({reps_r.size} groups "
        f"of the real records, {reps_s.size} of the synthetic records)"
    )
    return keep_jackknife(out, real=reps_r, synthetic=reps_s)


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


@register_metric(
    family="disclosure",
    attack="identity disclosure: single out a real person unique on the keys through a "
    "synthetic record that is unique on the same keys (replicated unique)",
    reference=REFERENCE + ", repU",
    orientation="value = repU/100, the share of real records unique on the keys in both the real "
    "and the synthetic data; 1 = every real record is a replicated unique",
    needs=("keys", "targets"),
    spaces=(),
    memory_cost=0.5,
)
def disclosure_identity(
    ctx, *, keys: Sequence[str] | None = None, targets: Sequence[str] | str | None = None, **options: Any
) -> MetricResult:
    """Replicated uniques, repU (Raab, Nowok & Dibben; synthpop 1.9-2), as a risk in [0, 1]."""
    res, key_list, target_list = _run(ctx, keys, targets, options, "disclosure_identity")
    rep_u = {t: res.per_target[t].mean("repU") for t in target_list}
    worst = max(rep_u.values())
    details = {
        "keys": res.keys,
        "targets": target_list,
        "m": res.per_target[target_list[0]].m,
        "UiO": max(res.per_target[t].mean("UiO") for t in target_list),
        "repU": worst,
        "per_target": _per_target_details(res),
        "note": "percentages; repU depends on the target only through target-specific exclusions",
    }
    params = {"keys": key_list, "targets": target_list, **options}
    out = MetricResult.from_context(
        ctx,
        "disclosure_identity",
        worst / 100.0,
        worst,
        "repU (% of real records that are replicated uniques)",
        params=params,
        details=details,
        per_attribute={t: v / 100.0 for t, v in rep_u.items()},
    )
    worst_target = max(target_list, key=lambda t: rep_u[t])
    return _keep_disclosure_jackknife(ctx, _share_ci(out, res, worst_target), res.per_target[worst_target], "repU")


@register_metric(
    family="disclosure",
    attack="attribute disclosure: look a real person's keys up in the synthetic data; when all "
    "synthetic records with those keys share one target value, take it",
    reference=REFERENCE + ", DiSCO",
    orientation="value = max over targets of DiSCO/100, the share of real records whose keys give a "
    "single target value in the synthetic data that is their true value",
    needs=("keys", "targets"),
    spaces=(),
    memory_cost=0.5,
)
def disclosure_attribute(
    ctx, *, keys: Sequence[str] | None = None, targets: Sequence[str] | str | None = None, **options: Any
) -> MetricResult:
    """DiSCO (Disclosive in Synthetic, Correct Original; Raab, Nowok & Dibben; synthpop 1.9-2),
    the largest over the targets, as a risk in [0, 1]."""
    res, key_list, target_list = _run(ctx, keys, targets, options, "disclosure_attribute")
    disco = {t: res.per_target[t].mean("DiSCO") for t in target_list}
    worst_target = max(target_list, key=lambda t: disco[t])
    worst = disco[worst_target]
    table = res.attrib_table.select("target", "attrib.orig", "attrib.syn", "Npairs")
    details = {
        "keys": res.keys,
        "targets": target_list,
        "m": res.per_target[target_list[0]].m,
        "worst_target": worst_target,
        "DiSCO": worst,
        "Dorig": {t: res.per_target[t].mean("Dorig") for t in target_list},
        "attrib_table": table.to_dicts(),
        "check_1way_flagged": {t: bool(res.per_target[t].check1) for t in target_list},
        "per_target": _per_target_details(res),
    }
    params = {"keys": key_list, "targets": target_list, **options}
    out = MetricResult.from_context(
        ctx,
        "disclosure_attribute",
        worst / 100.0,
        worst,
        "largest DiSCO over the targets (% of real records disclosed correctly)",
        params=params,
        details=details,
        per_attribute={t: v / 100.0 for t, v in disco.items()},
    )
    return _keep_disclosure_jackknife(ctx, _share_ci(out, res, worst_target), res.per_target[worst_target], "DiSCO")
