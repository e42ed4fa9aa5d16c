"""Copies disguised on a minority of the records, found record by record.

The label-free view learns one level correspondence for the whole release, by majority: a release
in which 1 % of the records are copies whose category labels were permuted (and the rest honest)
shows the identity, and its disguised copies stay invisible. They are found among the records
themselves:

1. **Exact anchors in the numeric view.** A release record whose numeric values (on the reference's
   scale, after the view's numeric maps) equal those of exactly one reference record — a numeric
   tuple that is unique in the reference — is anchored to that record. The view is used only when
   the reference's numeric tuples identify records (at least ``IDENTIFYING_SHARE`` of them are
   unique): otherwise an exact match is no evidence of a copy. The reference is the training
   records pooled with the holdout when there is one, so the anchoring is a symmetric function of
   the two sets, as memorisation's null needs.
2. **A correspondence learnt from the anchored pairs only.** Per categorical column, the anchored
   pairs' (release level, reference level) table gives the level classes as the label-free view
   learns them (``privgate.level_classes``), with edges of fewer pairs (``MIN_SUPPORT``,
   ``EDGE_P``): honest records match a unique numeric tuple only by chance and show no
   association beyond the identity, while disguised copies show their permutation, renaming,
   split or merge.
3. **Records the correspondence explains.** An anchored record is a disguised copy of its anchor
   when, in every categorical column, its level is joined to the anchor's level's class or — when
   its level is joined to nothing — equals it, except in at most half of the columns, and no
   column contradicts (a joined level whose class holds not the anchor's level), and at least one
   column differs from the anchor only through a learnt class. The label-free view then holds
   the anchor's record in its place: the metrics compare it as the copy it is.
4. **Not by chance.** The same learning is run on the anchored pairs with their anchors shuffled
   (``SHUFFLES`` seeded draws): pairs that are no copies. Unless every shuffle explains fewer
   records than the real pairs (a permutation test at p ≤ 1/(``SHUFFLES`` + 1) = 0.05), nothing is
   changed — so a correspondence fitted to a handful of chance pairs changes no record.

When the anchored pairs show the identity in every column, nothing is changed. What it cannot see:
disguised copies whose numerics were also perturbed or changed on those records alone, and
tables whose numeric columns do not identify records (all-categorical data, a few coarse
numerics): there the whole-release correspondence is the only one.

Nothing here reports a value or a level: the description carries counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from . import seeds
from .level_classes import KEEP_PREFIX, level_classes
from .schema import Schema

IDENTIFYING_SHARE = 0.5  # share of reference records with a unique numeric tuple the view needs
MIN_ANCHORED = 3  # anchored pairs needed before a correspondence is learnt from them
MIN_SUPPORT = 2  # anchored pairs a level needs before it is joined (few pairs: the shuffles test)
EDGE_P = 0.05  # an edge's binomial p against the level's base share among the pairs
SHUFFLES = 19  # the pairs with shuffled anchors must explain fewer records every time (p ≤ 0.05)


@dataclass(frozen=True)
class DisguisedRecords:
    """Release rows that are disguised copies, and the reference rows they copy (positions)."""

    rows: np.ndarray
    sources: np.ndarray
    anchored: int
    columns_recoded: int

    def describe(self) -> dict:
        return {
            "records": int(self.rows.size),
            "anchored_exactly": self.anchored,
            "columns_with_a_learnt_correspondence": self.columns_recoded,
        }


def _exact_anchors(release: pl.DataFrame, reference: pl.DataFrame, num: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(release rows, reference rows): release records whose numeric tuple equals a tuple that
    only one reference record holds; empty when the reference's tuples do not identify records."""
    ref = reference.select(num).with_row_index("__r").drop_nulls(num)
    unique = ref.group_by(num).agg(pl.len().alias("__n"), pl.col("__r").first()).filter(pl.col("__n") == 1)
    if unique.height < IDENTIFYING_SHARE * max(reference.height, 1):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    rel = release.select(num).with_row_index("__s").drop_nulls(num)
    pairs = rel.join(unique.drop("__n"), on=num, how="inner").sort("__s")
    return pairs["__s"].to_numpy().astype(np.int64), pairs["__r"].to_numpy().astype(np.int64)


def _explained(
    release: pl.DataFrame, reference: pl.DataFrame, cat: list[str], s_idx: np.ndarray, r_idx: np.ndarray
) -> tuple[np.ndarray, int]:
    """Which anchored pairs the correspondence learnt from these pairs explains (step 3), and in
    how many columns that correspondence is not the identity."""
    n = s_idx.size
    flags = [np.zeros(n, np.int64) for _ in range(3)]  # agree, through a class, contradict
    recoded = 0
    for c in cat:
        s = release.get_column(c).gather(s_idx)
        r = reference.get_column(c).gather(r_idx)
        rel_codes, ref_codes, identity = pair_classes(pl.DataFrame({"s": s, "r": r}).group_by("s", "r").len())
        recoded += not identity
        for total, f in zip(flags, column_flags(s, r, rel_codes, ref_codes)):
            total += f
    ok = explained_by(*flags, len(cat))
    return (ok if recoded else np.zeros(n, bool)), recoded


def pair_classes(table: pl.DataFrame) -> tuple[dict[str, str], dict[str, str], bool]:
    """One column's level classes learnt from its anchored pairs' (``s``, ``r``, ``len``) count
    table, with this module's ``MIN_SUPPORT`` and ``EDGE_P``: (release codes, reference codes,
    whether they are the identity)."""
    rel_codes, ref_codes, col = level_classes(
        table,
        "s",
        "r",
        table.get_column("s").drop_nulls().unique().to_list(),
        table.get_column("r").drop_nulls().unique().to_list(),
        min_support=MIN_SUPPORT,
        edge_p=EDGE_P,
    )
    return rel_codes, ref_codes, bool(col["identity"])


def column_flags(
    s: pl.Series, r: pl.Series, rel_codes: dict[str, str], ref_codes: dict[str, str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per anchored pair of one column (release level ``s``, anchor's level ``r``): whether the
    levels agree (same label or same class), agree only through a learnt class, and contradict
    (a joined release level whose class holds not the anchor's level)."""
    code_s = s.replace_strict(list(rel_codes), list(rel_codes.values()), default=None, return_dtype=pl.String)
    code_r = r.replace_strict(list(ref_codes), list(ref_codes.values()), default=None, return_dtype=pl.String)
    joined = (code_s.is_not_null() & ~code_s.str.starts_with(KEEP_PREFIX)).fill_null(False).to_numpy()
    same_label = ((s == r).fill_null(False) | (s.is_null() & r.is_null())).to_numpy()
    same_class = (code_s == code_r).fill_null(False).to_numpy() & joined
    return same_label | same_class, same_class & ~same_label, joined & ~same_class


def explained_by(agree: np.ndarray, through_class: np.ndarray, contradict: np.ndarray, n_cat: int) -> np.ndarray:
    """The pairs a correspondence explains (step 3) from their per-column flags summed over the
    ``n_cat`` categorical columns (:func:`column_flags`)."""
    return (contradict == 0) & (through_class >= 1) & (n_cat - agree <= n_cat / 2)


def find_disguised_records(
    release: pl.DataFrame, reference: pl.DataFrame, schema: Schema, *, seed: int = 0
) -> DisguisedRecords | None:
    """The release records that are copies of reference records under a level correspondence
    their exact numeric anchors show (both frames normalised, the release's numerics on the
    reference's scale); None when there is none beyond the identity, or when the anchored pairs
    with their anchors shuffled (``SHUFFLES`` seeded draws) explain as many records."""
    num, cat = list(schema.numeric), list(schema.categorical)
    if not num or not cat:
        return None
    s_idx, r_idx = _exact_anchors(release, reference, num)
    if s_idx.size < MIN_ANCHORED:
        return None
    ok, recoded = _explained(release, reference, cat, s_idx, r_idx)
    found = int(ok.sum())
    if found < MIN_ANCHORED:
        return None
    if not beats_shuffles(release, reference, cat, s_idx, r_idx, found, seed):
        return None
    return DisguisedRecords(s_idx[ok], r_idx[ok], int(s_idx.size), recoded)


def beats_shuffles(
    release: pl.DataFrame,
    reference: pl.DataFrame,
    cat: list[str],
    s_idx: np.ndarray,
    r_idx: np.ndarray,
    found: int,
    seed: int,
) -> bool:
    """Whether the same learning on pairs that are no copies — the anchors shuffled between the
    pairs (``SHUFFLES`` seeded draws) — explains fewer than ``found`` records every time (pairs
    in release order: ``s_idx`` sorted)."""
    rng = seeds.rng(seed, "label_free.records")
    for _ in range(SHUFFLES):
        if int(_explained(release, reference, cat, s_idx, rng.permutation(r_idx))[0].sum()) >= found:
            return False
    return True


def put_sources(release: pl.DataFrame, sources: pl.DataFrame, rows: np.ndarray) -> pl.DataFrame:
    """``release`` with its rows ``rows`` replaced by the rows of ``sources`` (same columns and
    dtypes, one row per position, in order)."""
    if rows.size == 0:
        return release
    return release.with_columns([release.get_column(c).scatter(rows, sources.get_column(c)) for c in release.columns])
