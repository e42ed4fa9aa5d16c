"""``disclosure()`` and ``multi_disclosure()``: synthpop 1.9-2's identity and attribute disclosure
measures (Raab, Nowok & Dibben, "Practical privacy metrics for synthetic data"; synthpop's
``disclosure()`` / ``multi.disclosure()``), reproducing synthpop's numbers exactly.

Orientation: every measure is a percentage of records; higher = more disclosure risk. The
recommended measures are ``repU`` (identity) and ``DiSCO`` (attribute).

Where synthpop has a bug (notes marked [BUG]) privgate does what synthpop's documentation
intends instead:

* ``usekeys_na`` applies to the keys in the order the caller gives them (synthpop applies the
  inverse permutation when keys are not in data column order);
* a target with missing values in only one of the data sets works — missing is the level
  "Missing" on both sides (synthpop fails under R >= 4.2);
* ``multi_disclosure`` accepts a list of m synthetic sets (synthpop's data.frame/list method
  fails), passes ``exclude_keys`` / ``exclude_keylevs`` / ``exclude_targetlevs`` on to each
  target (synthpop drops them, or passes the target levels as key levels), reports
  ``ident_syn`` as the mean over the m sets (synthpop: first set only), ``Npairs`` as the number
  of pairs flagged (synthpop: 1 whenever any pair is flagged), and supports ``ident_meas =
  "UiOiS"`` and ``attrib_meas = "DiSDiO"`` (synthpop returns NA for them).

Other synthpop behaviour is kept, even where surprising: identity measures change with the
exclusions, ``ngroups_keys[i]`` applies to the i-th key in the real data's column order,
``denom_lim`` only acts with ``exclude_ov_denom_lim = True``, TCAP can exceed 100.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import polars as pl

from ..errors import ParameterError
from ..io import load_frame
from .checks import check_1way, check_2way
from .measures import compute_measures
from .options import DisclosureOptions, build_options, warn
from .prepare import (
    ORDER_COL,
    SYN_COL,
    TARGET_COL,
    LabelledColumn,
    PreparedKeys,
    check_columns,
    check_cont_na,
    data_order_keys,
    prepare_keys,
    prepare_target,
    target_order,
)
from .tables import build_cells


@dataclass
class DisclosureResult:
    """Result of :func:`disclosure` for one target; frames have one row per synthetic set.

    Attributes:
        target, keys: the target and the keys in the real data's column order (as used).
        m, n_orig, n_syn: number of synthetic sets and row counts.
        ident: UiO, UiS, UiOiS, repU (%).
        attrib: Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO (%), max_denom, mean_denom.
        allcaps: baseCAPd, CAPd, CAPs, DCAP, TCAP (%).
        check_1way / check_2way: per synthetic set a frame of flagged rows, or None.
        check1 / check2: synthpop's messages ("" when nothing is flagged).
        n_exclusions: per synthetic set and table, the counts removed by each exclusion step.
        tcap_denom: TCAP denominator per synthetic set.
        cells: every (set, target level, key) cell with an original or synthetic record, before
            and after exclusions (contains level labels of the real data: for the analyst, not
            for reports).
        records: per record the composite key and target label as tabulated.
        target_levels: all target levels (code-point order).
    """

    target: str
    keys: list[str]
    m: int
    n_orig: int
    n_syn: list[int]
    ident: pl.DataFrame
    attrib: pl.DataFrame
    allcaps: pl.DataFrame
    check_1way: list[pl.DataFrame | None]
    check_2way: list[pl.DataFrame | None]
    check1: str
    check2: str
    n_exclusions: pl.DataFrame
    tcap_denom: list[int]
    cells: pl.DataFrame
    records: pl.DataFrame
    target_levels: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    groupings: dict[str, dict] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Measures and check flags only (no level labels): safe to log or store."""
        return {
            "target": self.target,
            "keys": list(self.keys),
            "m": self.m,
            "n_orig": self.n_orig,
            "n_syn": list(self.n_syn),
            "ident": self.ident.to_dicts(),
            "attrib": self.attrib.to_dicts(),
            "allcaps": self.allcaps.to_dicts(),
            "tcap_denom": list(self.tcap_denom),
            "check_1way_flagged": [c is not None for c in self.check_1way],
            "check_2way_pairs": [0 if c is None else c.height for c in self.check_2way],
        }

    def mean(self, measure: str) -> float:
        """Mean of one measure over the synthetic sets."""
        for frame in (self.ident, self.attrib, self.allcaps):
            if measure in frame.columns:
                return float(frame[measure].mean())
        raise ParameterError(f"unknown measure {measure!r}")


@dataclass
class MultiDisclosureResult:
    """Result of :func:`multi_disclosure`.

    ``attrib_table`` has synthpop's columns (``attrib.orig``, ``attrib.syn``, ``check1``,
    ``Npairs``, ``check2``) plus ``row`` (synthpop's row name) and ``target``, ordered by
    ``attrib.syn`` ascending; ``ident_orig`` / ``ident_syn`` are per target in ``targets`` order.
    """

    keys: list[str]
    targets: list[str]
    per_target: dict[str, DisclosureResult]
    attrib_table: pl.DataFrame
    ident_orig: list[float]
    ident_syn: list[float]
    ident_meas: str
    attrib_meas: str

    def plot(self, path: Any = None):
        """Original vs synthetic attribute measure per target (synthpop's multi.disclosure plot)."""
        from .plot import plot_multi

        return plot_multi(self, path)


def _as_frames(synthetic: Any) -> list[pl.DataFrame]:
    if isinstance(synthetic, (list, tuple)):
        if not synthetic:
            raise ParameterError("synthetic is an empty list; give one frame or a list of frames")
        return [load_frame(s, role=f"synthetic[{j}]") for j, s in enumerate(synthetic, start=1)]
    return [load_frame(synthetic, role="synthetic")]


def _usekeys_data_order(opts: DisclosureOptions, keys_data: list[str]) -> list[bool]:
    # documented intent: usekeys_na[i] belongs to keys[i] as the caller gave them
    by_key = dict(zip(opts.keys, opts.usekeys_na))
    return [by_key[k] for k in keys_data]


def _prepare_keys_for(real: pl.DataFrame, syns: list[pl.DataFrame], opts: DisclosureOptions) -> PreparedKeys:
    keys_data = data_order_keys(real, opts.keys)
    if list(opts.keys) != keys_data and any(opts.ngroups_keys) and len(set(opts.ngroups_keys)) > 1:
        warn(
            "keys are not in the real data's column order: ngroups_keys[i] applies to the i-th "
            f"key in data order {keys_data} (synthpop's rule), not to keys[i]"
        )
    return prepare_keys(real, syns, keys_data, list(opts.ngroups_keys), dict(opts.cont_na))


def _disclosure_prepared(
    real: pl.DataFrame, syns: list[pl.DataFrame], pk: PreparedKeys, opts: DisclosureOptions
) -> DisclosureResult:
    m = len(syns)
    target = prepare_target(real, syns, opts.target, opts.ngroups_target, dict(opts.cont_na))
    usekeys = _usekeys_data_order(opts, pk.keys)
    order = target_order(target)
    tables = build_cells(pk, target, order, opts, usekeys, m)
    cells = tables.cells
    ident, attrib, allcaps, tcap_denom = compute_measures(cells, tables.key_cols, pk.n_orig, pk.n_syn)
    target_levels = order.levels.to_list()
    c1, msg1 = check_1way(cells, opts.target, order.levels, m, opts.thresh_1way)
    c2, msg2 = check_2way(cells, tables.orig_records, pk.keys, tables.key_cols, m, opts.thresh_2way)
    key_str = pl.concat_str([pl.col(c) for c in tables.key_cols], separator=" | ")
    cell_out = _cell_table(cells, tables.key_cols, key_str)
    records = _record_table(tables.orig_records, pk.syn, target.syn, key_str)
    groupings = _groupings(pk, target, opts.target)
    return DisclosureResult(
        target=opts.target,
        keys=list(pk.keys),
        m=m,
        n_orig=pk.n_orig,
        n_syn=list(pk.n_syn),
        ident=ident,
        attrib=attrib,
        allcaps=allcaps,
        check_1way=c1,
        check_2way=c2,
        check1=msg1,
        check2=msg2,
        n_exclusions=tables.exclusions,
        tcap_denom=tcap_denom,
        cells=cell_out,
        records=records,
        target_levels=target_levels,
        options=opts.as_dict(),
        groupings=groupings,
    )


def _cell_table(cells: pl.DataFrame, key_cols: list[str], key_str: pl.Expr) -> pl.DataFrame:
    """The per-cell table reported: one row per synthesis, target level and key, in printed order."""
    # the printed key's order, ranked on the few distinct keys (equal strings, equal ranks)
    key_rank = cells.select(key_cols).unique().with_columns(key_str.rank("dense").alias("__krank"))
    return (
        cells.join(key_rank, on=key_cols, how="left")
        .sort([SYN_COL, "__krank", ORDER_COL])
        .select(  # ORDER_COL: the level's position in code-point order
            pl.col(SYN_COL).alias("synthesis"),
            pl.col(TARGET_COL).alias("target_level"),
            key_str.alias("key"),
            "d_pre",
            "s_pre",
            "pd_pre",
            "ps_pre",
            "d",
            "s",
            "did",
            "dis",
            "iS",
            "DiS",
            "DiSCO",
            "DiSDiO",
        )
    )


def _record_table(
    orig_records: pl.DataFrame, syn: pl.DataFrame, syn_target: pl.Series, key_str: pl.Expr
) -> pl.DataFrame:
    """The per-record table reported: the original records, then each synthesis's, with key and target."""
    orig_rec = orig_records.select(
        pl.lit("orig").alias("source"),
        pl.lit(0, dtype=pl.Int32).alias("synthesis"),
        pl.int_range(1, pl.len() + 1).cast(pl.Int64).alias("row"),
        key_str.alias("keys"),
        pl.col(TARGET_COL).alias("target"),
    )
    syn_rec = syn.with_columns(syn_target.alias(TARGET_COL)).select(
        pl.lit("syn").alias("source"),
        pl.col(SYN_COL).alias("synthesis"),
        pl.int_range(1, pl.len() + 1).over(SYN_COL).cast(pl.Int64).alias("row"),
        key_str.alias("keys"),
        pl.col(TARGET_COL).alias("target"),
    )
    return pl.concat([orig_rec, syn_rec])


def _groupings(pk: PreparedKeys, target: LabelledColumn, target_name: str) -> dict[str, Any]:
    """How each grouped key and the target were grouped, by column name."""
    groupings = {c.name: c.grouping.describe() for c in pk.columns if c.grouping is not None}
    if target.grouping is not None:
        groupings[target_name] = target.grouping.describe()
    return groupings


def disclosure(real: Any, synthetic: Any, keys: Sequence[str] | str, target: str, **options: Any) -> DisclosureResult:
    """Identity and attribute disclosure of ``target`` from ``keys`` (synthpop ``disclosure()``).

    Args:
        real: the original data (anything :func:`privgate.io.load_frame` accepts).
        synthetic: one synthetic frame or a list of m frames (m syntheses of the same original).
        keys: quasi-identifiers; used in the real data's column order.
        target: the attribute an intruder wants to learn.
        **options: synthpop's options with its defaults — ``denom_lim=5``,
            ``exclude_ov_denom_lim=False``, ``not_targetlev=None``, ``usekeys_na=True`` (one
            bool or one per key, in ``keys`` order), ``usetarget_na=True``, ``exclude_keys``,
            ``exclude_keylevs``, ``exclude_targetlevs`` (parallel lists), ``ngroups_keys``
            (one per key in the real data's column order; 0 = no grouping),
            ``ngroups_target`` (0/None = no grouping), ``cont_na`` ({column: code or codes}),
            ``thresh_1way=(50, 90)``, ``thresh_2way=(4, 80)``.

    Returns:
        :class:`DisclosureResult` with synthpop's tables, one row per synthetic set.

    Raises:
        ParameterError: a key or target missing from a frame, the target among the keys,
            ngroups of 1, a non-positive denom_lim, a cont_na code absent from the real data,
            unknown exclusion levels, unknown options.
    """
    opts = _build(keys, target, options)
    real_f = load_frame(real, role="real")
    syns = _as_frames(synthetic)
    check_columns(real_f, syns, [*opts.keys, opts.target])
    check_cont_na(real_f, dict(opts.cont_na), [*opts.keys, opts.target])
    pk = _prepare_keys_for(real_f, syns, opts)
    return _disclosure_prepared(real_f, syns, pk, opts)


_DISCLOSURE_OPTIONS = (
    "denom_lim",
    "exclude_ov_denom_lim",
    "not_targetlev",
    "usekeys_na",
    "usetarget_na",
    "exclude_keys",
    "exclude_keylevs",
    "exclude_targetlevs",
    "ngroups_keys",
    "ngroups_target",
    "cont_na",
    "thresh_1way",
    "thresh_2way",
)


# synthpop's own argument names are accepted as aliases
R_ALIASES = {
    "not.targetlev": "not_targetlev",
    "usekeysNA": "usekeys_na",
    "usetargetNA": "usetarget_na",
    "exclude.keys": "exclude_keys",
    "exclude.keylevs": "exclude_keylevs",
    "exclude.targetlevs": "exclude_targetlevs",
    "cont.na": "cont_na",
    "not.targetslev": "not_targetslev",
    "usetargetsNA": "usetargets_na",
    "ident.meas": "ident_meas",
    "attrib.meas": "attrib_meas",
}


def _dealias(options: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in options.items():
        dest = R_ALIASES.get(name, name)
        if dest in out:
            raise ParameterError(f"option {dest!r} given twice (as {name!r})")
        out[dest] = value
    return out


def _build(keys: Any, target: str, options: Mapping[str, Any]) -> DisclosureOptions:
    options = _dealias(options)
    unknown = sorted(set(options) - set(_DISCLOSURE_OPTIONS))
    if unknown:
        raise ParameterError(f"unknown disclosure option(s) {unknown}; known: {list(_DISCLOSURE_OPTIONS)}")
    return build_options(keys, target, **options)


_MULTI_PER_TARGET = {
    "not_targetslev": "not_targetlev",
    "not_targetlev": "not_targetlev",
    "usetargets_na": "usetarget_na",
    "usetarget_na": "usetarget_na",
    "ngroups_targets": "ngroups_target",
    "ngroups_target": "ngroups_target",
    "exclude_keys": "exclude_keys",
    "exclude_keylevs": "exclude_keylevs",
    "exclude_targetlevs": "exclude_targetlevs",
}
_MULTI_SHARED = (
    "denom_lim",
    "exclude_ov_denom_lim",
    "usekeys_na",
    "ngroups_keys",
    "cont_na",
    "thresh_1way",
    "thresh_2way",
)


def _per_target(name: str, value: Any, targets: list[str], scalar_types: tuple) -> list[Any]:
    """Spread a per-target option: a dict by target, one value for all, or one per target."""
    if value is None:
        return [None] * len(targets)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(targets))
        if unknown:
            raise ParameterError(f"{name} names targets that are not targets: {unknown}")
        return [value.get(t) for t in targets]
    if isinstance(value, scalar_types):
        return [value] * len(targets)
    items = list(value)
    if len(items) == 1:
        return items * len(targets)
    if len(items) != len(targets):
        raise ParameterError(f"{name} must have one entry per target ({len(targets)}), got {len(items)}")
    return items


def multi_disclosure(
    real: Any,
    synthetic: Any,
    keys: Sequence[str] | str,
    targets: Sequence[str] | None = None,
    *,
    ident_meas: str = "repU",
    attrib_meas: str = "DiSCO",
    **options: Any,
) -> MultiDisclosureResult:
    """:func:`disclosure` for several targets with synthpop's summary table
    (``multi.disclosure()``).

    Args:
        real, synthetic, keys: as :func:`disclosure` (``synthetic`` may be a list of m frames).
        targets: default every column of the synthetic data that is not a key, in the real
            data's column order.
        ident_meas: "repU" (default) or "UiOiS" — the synthetic identity measure.
        attrib_meas: "DiSCO" (default), "DiSDiO" or "DCAP" — the synthetic attribute measure;
            the original one is Dorig (CAPd for DCAP).
        **options: the shared options of :func:`disclosure` and per-target ones, each either one
            value for all targets, a list with one entry per target, or a dict by target:
            ``ngroups_targets``, ``not_targetslev``, ``usetargets_na``, ``exclude_keys``,
            ``exclude_keylevs``, ``exclude_targetlevs`` (for the exclude_* options a list of
            lists or a dict of lists).
    """
    options = _dealias(options)
    ident_meas, attrib_meas = _summary_measures(options, ident_meas, attrib_meas)
    unknown = sorted(set(options) - set(_MULTI_PER_TARGET) - set(_MULTI_SHARED))
    if unknown:
        raise ParameterError(f"unknown multi_disclosure option(s) {unknown}")
    real_f = load_frame(real, role="real")
    syns = _as_frames(synthetic)
    key_list = [keys] if isinstance(keys, str) else list(keys)
    targets = _multi_targets(real_f, syns, key_list, targets)
    opts_list = _options_per_target(options, key_list, targets)
    check_columns(real_f, syns, [*opts_list[0].keys, *targets])
    check_cont_na(real_f, dict(opts_list[0].cont_na), [*opts_list[0].keys, *targets])
    pk = _prepare_keys_for(real_f, syns, opts_list[0])  # keys are labelled once for all targets
    results = {t: _disclosure_prepared(real_f, syns, pk, o) for t, o in zip(targets, opts_list)}
    return _summarise(pk.keys, targets, results, ident_meas, attrib_meas)


def _summary_measures(options: dict[str, Any], ident_meas: str, attrib_meas: str) -> tuple[str, str]:
    """The summary's identity and attribute measures (taken out of ``options`` when given there
    too), checked; synthpop's "UiSiO" is "UiOiS"."""
    ident_meas = options.pop("ident_meas", ident_meas)
    attrib_meas = options.pop("attrib_meas", attrib_meas)
    if ident_meas not in ("repU", "UiOiS", "UiSiO"):
        raise ParameterError(f"ident_meas must be 'repU' or 'UiOiS', got {ident_meas!r}")
    if ident_meas == "UiSiO":
        ident_meas = "UiOiS"
    if attrib_meas not in ("DiSCO", "DiSDiO", "DCAP"):
        raise ParameterError(f"attrib_meas must be 'DiSCO', 'DiSDiO' or 'DCAP', got {attrib_meas!r}")
    return ident_meas, attrib_meas


def _multi_targets(
    real_f: pl.DataFrame, syns: list[pl.DataFrame], key_list: list[str], targets: Sequence[str] | str | None
) -> list[str]:
    """The targets as a list without repeats; by default every column common to all synthetic
    sets that is not a key, in the real data's column order."""
    if targets is None:
        common = set.intersection(*[set(s.columns) for s in syns])
        targets = [c for c in real_f.columns if c in common and c not in key_list]
        if not targets:
            raise ParameterError("no targets: every common column is a key")
    targets = [targets] if isinstance(targets, str) else list(targets)
    if len(set(targets)) != len(targets):
        raise ParameterError(f"targets name a column more than once: {targets}")
    return targets


def _options_per_target(options: Mapping[str, Any], key_list: list[str], targets: list[str]) -> list[DisclosureOptions]:
    """Each target's :func:`build_options`: the shared options and that target's entry of every
    per-target option."""
    shared = {k: options[k] for k in _MULTI_SHARED if k in options}
    per = _per_target_values(options, targets)
    opts_list = []
    for i, t in enumerate(targets):
        kw = dict(shared)
        for dest, vals in per.items():
            if vals[i] is not None:
                kw[dest] = vals[i]
        opts_list.append(build_options(key_list, t, **kw))
    return opts_list


def _per_target_values(options: Mapping[str, Any], targets: list[str]) -> dict[str, list[Any]]:
    """Option → one value per target, for the per-target options given (one value for all, a
    list, or a dict by target; an exclude_* option's bare list of levels is one target's)."""
    per: dict[str, list[Any]] = {}
    for name, value in options.items():
        if name not in _MULTI_PER_TARGET:
            continue
        dest = _MULTI_PER_TARGET[name]
        if dest in per:
            raise ParameterError(f"option {dest!r} given twice (as {name!r})")
        if dest.startswith("exclude_"):
            if isinstance(value, Mapping):
                per[dest] = _per_target(name, value, targets, ())
            else:
                # a bare string is one level, never a sequence of characters
                items = [value] if isinstance(value, str) else list(value)
                if items and all(isinstance(x, str) for x in items) and len(targets) == 1:
                    items = [items]
                per[dest] = _per_target(name, items, targets, ())
        else:
            per[dest] = _per_target(name, value, targets, (str, bool, int, float))
    return per


def _summarise(
    keys: list[str], targets: list[str], results: dict[str, DisclosureResult], ident_meas: str, attrib_meas: str
) -> MultiDisclosureResult:
    orig_meas = "CAPd" if attrib_meas == "DCAP" else "Dorig"
    rows = []
    for t in targets:
        r = results[t]
        n_pairs = 0
        if r.check2:
            n_pairs = int(r.check2.split(" ")[0])
        rows.append(
            {
                "target": t,
                "attrib.orig": r.mean(orig_meas),
                "attrib.syn": r.mean(attrib_meas),
                "check1": r.check1,
                "Npairs": n_pairs,
                "check2": r.check2,
            }
        )
    table = pl.DataFrame(
        rows,
        schema={
            "target": pl.String,
            "attrib.orig": pl.Float64,
            "attrib.syn": pl.Float64,
            "check1": pl.String,
            "Npairs": pl.Int64,
            "check2": pl.String,
        },
    )
    table = table.sort("attrib.syn", maintain_order=True, nulls_last=True)
    width = len(str(len(targets)))
    labels = []
    for rank, (t, c1, c2) in enumerate(zip(table["target"], table["check1"], table["check2"]), start=1):
        suffix = " 1&2way checks" if (c1 and c2) else " 1way checks" if c1 else " 2way checks" if c2 else ""
        labels.append(f"{str(rank).zfill(width)} {t}{suffix}")
    table = table.with_columns(pl.Series("row", labels)).select("row", *table.columns)
    ident_orig = [results[t].mean("UiO") for t in targets]
    ident_syn = [results[t].mean(ident_meas) for t in targets]
    return MultiDisclosureResult(
        keys=keys,
        targets=targets,
        per_target=results,
        attrib_table=table,
        ident_orig=ident_orig,
        ident_syn=ident_syn,
        ident_meas=ident_meas,
        attrib_meas=attrib_meas,
    )
