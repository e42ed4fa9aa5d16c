"""Turn keys and target into the labels synthpop tabulates.

Every key and the target become strings per record, for the original and each synthetic set:

* categorical columns keep their values; a column that is numeric in one frame and text in
  another is compared as text, the numeric side written as R writes numbers (what synthpop's
  ``synorig.compare`` does by making it a factor);
* numeric columns with ``ngroups > 0`` are grouped (:mod:`.grouping`), breaks pooled over the
  original and all m synthetic sets; other numeric columns become one level per distinct value,
  labelled as R's ``as.character`` (15 significant digits);
* null (and NaN) becomes the level ``"Missing"`` — a genuine ``"Missing"`` value is the same
  level, as in synthpop.

Keys are used in the **real data's column order** (synthpop reorders them). Composite keys are
the tuple of key labels; their printed form is the labels joined with ``" | "``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import polars as pl

from ..errors import ParameterError, UnsupportedDtypeError
from ..schema import check_not_empty, dtype_kind
from .grouping import Grouping, grouped_labels, make_grouping
from .labels import MISSING, r_double_labels, r_integer_labels
from .options import warn

SYN_COL = "__synthesis"
TARGET_COL = "__target"
#: the position of a record's target level among every target level in code-point order: the
#: tables group and sort by it instead of the label (one string sort per target, not one per table)
ORDER_COL = "__tord"


def key_col(i: int) -> str:
    return f"__k{i}"


@dataclass
class LabelledColumn:
    """Labels of one variable: original (n) and all synthetic sets stacked (Σ n_j)."""

    name: str
    orig: pl.Series
    syn: pl.Series
    declared_levels: list[str] = field(default_factory=list)
    grouping: Grouping | None = None
    kind: str = "categorical"


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() and not isinstance(dtype, pl.Boolean)


def _to_text(s: pl.Series) -> pl.Series:
    """A non-numeric column as strings (booleans as R prints them)."""
    dtype = s.dtype
    if isinstance(dtype, pl.Boolean):
        return s.replace_strict({True: "TRUE", False: "FALSE"}, return_dtype=pl.String)
    if isinstance(dtype, pl.Null):
        return pl.Series(s.name, [None] * len(s), dtype=pl.String)
    return s.cast(pl.String)


def _numeric_labels(values: pl.Series, integer: bool) -> pl.Series:
    """R labels of numeric values, formatted once per distinct value and joined back."""
    vals = values.cast(pl.Float64).fill_nan(None)
    uniq = vals.drop_nulls().unique().to_numpy()
    labels = r_integer_labels(uniq) if integer else r_double_labels(uniq)
    mapping = pl.DataFrame({"v": uniq, "lab": labels}, schema={"v": pl.Float64, "lab": pl.String})
    frame = pl.DataFrame({"v": vals})
    return frame.join(mapping, on="v", how="left", maintain_order="left")["lab"]


def label_column(
    name: str, orig: pl.Series, syns: list[pl.Series], ngroups: int, cont_na: Sequence[Any], role: str
) -> LabelledColumn:
    """Labels of one key or target column (see module docstring)."""
    dtypes = [orig.dtype] + [s.dtype for s in syns]
    non_null = [d for d in dtypes if not isinstance(d, pl.Null)]
    numeric = bool(non_null) and all(_is_numeric(d) for d in non_null)
    if numeric:
        syn_all = pl.concat([s.cast(pl.Float64).rename(name) for s in syns])
    else:
        syn_all = pl.concat([_as_text_any(s).rename(name) for s in syns])
    declared: list[str] = []
    if numeric:
        if ngroups > 0:
            o = orig.cast(pl.Float64).fill_null(float("nan")).to_numpy()
            s = syn_all.cast(pl.Float64).fill_null(float("nan")).to_numpy()
            numeric_codes = [float(c) for c in cont_na if _is_number(c)]
            try:
                grouping = make_grouping(o, s, ngroups, numeric_codes)
            except ParameterError as exc:
                raise ParameterError(f"{role} {name!r}: {exc}") from None
            ol = pl.Series(name, grouped_labels(o, grouping), dtype=pl.String)
            sl = pl.Series(name, grouped_labels(s, grouping), dtype=pl.String)
            return LabelledColumn(
                name, ol.fill_null(MISSING), sl.fill_null(MISSING), grouping.levels, grouping, "grouped"
            )
        integer = all(d.is_integer() for d in non_null)
        both = pl.concat([orig.cast(pl.Float64), syn_all.cast(pl.Float64)])
        labels = _numeric_labels(both, integer).fill_null(MISSING)
        n = len(orig)
        return LabelledColumn(name, labels[:n].rename(name), labels[n:].rename(name), [], None, "numeric")
    if ngroups > 0:
        warn(f"{role} {name!r} is not numeric; ngroups = {ngroups} ignored (as synthpop does)")
    for s in [orig, *syns]:
        if isinstance(s.dtype, pl.Enum):
            declared.extend(s.dtype.categories.to_list())
    return LabelledColumn(
        name,
        _as_text_any(orig).rename(name).fill_null(MISSING),
        syn_all.fill_null(MISSING),
        sorted(set(declared)),
        None,
        "categorical",
    )


def _as_text_any(s: pl.Series) -> pl.Series:
    """Text labels of a column compared as categorical (numbers written as R writes them)."""
    if _is_numeric(s.dtype):
        return _numeric_labels(s, s.dtype.is_integer())
    return _to_text(s)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def check_columns(real: pl.DataFrame, syns: list[pl.DataFrame], columns: Sequence[str]) -> None:
    """Every key/target must exist in the real data and in every synthetic set, with a dtype
    privgate can tabulate (nested, binary and object columns are refused)."""
    check_not_empty(real, "real")
    for j, s in enumerate(syns, start=1):
        check_not_empty(s, f"synthetic set {j} of {len(syns)}")
    missing_real = [c for c in columns if c not in real.columns]
    if missing_real:
        raise ParameterError(f"column(s) {missing_real} not in the real data ({real.width} columns: {real.columns})")
    for j, s in enumerate(syns, start=1):
        miss = [c for c in columns if c not in s.columns]
        if miss:
            raise ParameterError(f"column(s) {miss} not in synthetic set {j} of {len(syns)} ({s.width} columns)")
    for role, frame in [("real", real), *[(f"synthetic set {j}", s) for j, s in enumerate(syns, start=1)]]:
        bad = {c: str(frame[c].dtype) for c in columns if dtype_kind(frame[c].dtype) is None}
        if bad:
            raise UnsupportedDtypeError(
                f"{role}: column(s) {sorted(bad)} have dtypes the disclosure tables cannot use: {bad}"
            )


def check_cont_na(real: pl.DataFrame, cont_na: dict[str, tuple[Any, ...]], columns: Sequence[str]) -> None:
    """Each special code of a key/target must occur in the real data (synthpop stops when the
    last one does not; we check every code). Fewer than 10 occurrences gives a warning."""
    for col in columns:
        codes = cont_na.get(col)
        if not codes:
            continue
        s = real[col]
        for code in codes:
            if _is_numeric(s.dtype):
                if not _is_number(code):
                    raise ParameterError(
                        f"cont_na for numeric column {col!r} must be numbers, got {type(code).__name__}"
                    )
                count = int((s.cast(pl.Float64) == float(code)).sum())
            else:
                count = int((_to_text(s) == str(code)).sum())
            if count == 0:
                raise ParameterError(
                    f"cont_na code {code!r} of column {col!r} never occurs in the real data ({real.height} rows)"
                )
            if count < 10:
                warn(f"cont_na code {code!r} of column {col!r} occurs only {count} times in the real data")


def data_order_keys(real: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    """Keys in the real data's column order (synthpop: ``names(data)[names(data) %in% keys]``)."""
    return [c for c in real.columns if c in set(keys)]


@dataclass
class PreparedKeys:
    """Key labels for the original and the stacked synthetic sets."""

    keys: list[str]  # data order
    orig: pl.DataFrame  # __k0.. columns
    syn: pl.DataFrame  # __synthesis + __k0.. columns
    columns: list[LabelledColumn]
    n_orig: int
    n_syn: list[int]


def prepare_keys(
    real: pl.DataFrame,
    syns: list[pl.DataFrame],
    keys_data_order: list[str],
    ngroups_data_order: Sequence[int],
    cont_na: dict[str, tuple[Any, ...]],
) -> PreparedKeys:
    """Label every key (``ngroups_data_order[i]`` applies to the i-th key in data order)."""
    cols = []
    for i, k in enumerate(keys_data_order):
        cols.append(
            label_column(k, real[k], [s[k] for s in syns], int(ngroups_data_order[i]), cont_na.get(k, ()), "key")
        )
    n_syn = [s.height for s in syns]
    syn_index = np.repeat(np.arange(1, len(syns) + 1, dtype=np.int32), n_syn)
    orig = pl.DataFrame({key_col(i): c.orig for i, c in enumerate(cols)})
    syn = pl.DataFrame({SYN_COL: syn_index, **{key_col(i): c.syn for i, c in enumerate(cols)}})
    return PreparedKeys(list(keys_data_order), orig, syn, cols, real.height, n_syn)


def prepare_target(
    real: pl.DataFrame, syns: list[pl.DataFrame], target: str, ngroups: int, cont_na: dict[str, tuple[Any, ...]]
) -> LabelledColumn:
    return label_column(target, real[target], [s[target] for s in syns], ngroups, cont_na.get(target, ()), "target")


@dataclass(frozen=True)
class TargetOrder:
    """Every target level (observed in the original or a synthetic set, or declared) in
    code-point order, and the position in it of each original and each synthetic record's level."""

    levels: pl.Series  # String, sorted, distinct
    orig: pl.Series  # UInt32 per original record
    syn: pl.Series  # UInt32 per synthetic record (all sets stacked)


def target_order(target: LabelledColumn) -> TargetOrder:
    """The :class:`TargetOrder` of a labelled target, by one dense rank of the labels (Polars
    compares strings byte by byte, which for UTF-8 is code-point order, Python's order)."""
    n, n_syn = len(target.orig), len(target.syn)
    every = pl.concat(
        [
            target.orig.rename("l"),
            target.syn.rename("l"),
            pl.Series("l", sorted(set(target.declared_levels)), dtype=pl.String),
        ]
    )
    rank = (every.rank("dense") - 1).cast(pl.UInt32)
    levels = pl.DataFrame({"l": every, "r": rank}).unique("r", keep="any").sort("r")["l"]
    return TargetOrder(levels, rank[:n].rename(ORDER_COL), rank[n : n + n_syn].rename(ORDER_COL))
