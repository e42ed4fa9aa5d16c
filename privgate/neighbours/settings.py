"""Every tunable of the neighbour engine, in one frozen dataclass.

None of them changes an exact search's answer: they choose which path settles a row and how much
memory a step holds. Three decide what a screened (approximate) search measures or when one is
made at all: ``exact_below_pairs``, ``ivf_check_rows`` and ``ivf_target_recall``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchSettings:
    """The neighbour engine's tunables (:data:`DEFAULT_SETTINGS` is the one every search uses
    unless handed another)."""

    #: With ``approximate=True``, a search (after exact duplicates are folded, of the rows the
    #: grouped search leaves open, counting only the targets the category-tile screen would
    #: compare) of at most this many query × target pairs is exact anyway: exact searches up to ~45k × 45k records
    #: (docs/performance.md, "Exact searches and the neighbour search settings"). The evaluation
    #: context asks for a screen above it unless ``exact``.
    exact_below_pairs: int = 2 * 10**9
    #: At most this many bytes of float32 distances the blocked search holds at once (never an n×m
    #: matrix; its blocks are cache-sized, :data:`.flat.TILE_BYTES`, at least 64 rows); also the
    #: IVF list scan's candidate budget and the grouped search's k = 1 rule for skipping a level
    #: (:func:`.grouped.few_open_rows`).
    block_bytes: int = 192 * 2**20
    #: Bytes of coordinate differences held at once when float64 pair distances are recomputed
    #: (and when one-hot category codes are read, in blocks of rows).
    pair_chunk_bytes: int = 64 * 2**20
    #: Candidates beyond the k nearest the flat and k-d tree screens return per query; rows whose
    #: last candidate is not clear of the k-th go on to the next path.
    extra_candidates: int = 16
    #: Extra candidates of faiss' flat screen's second pass, for rows with long runs of ties.
    retry_candidates: int = 256
    #: Spaces of at most this many dimensions (the 2-D FAMD projection) are searched by scipy's
    #: cKDTree instead of the flat screen.
    low_dim: int = 3
    #: Spaces with no categorical columns of at most this many dimensions go to the cKDTree too,
    #: in searches of at least ``kdtree_min_pairs`` query × target pairs: 20,000 × 100,000 rows
    #: of 5–8 Gaussian, uniform, grid or correlated columns took 1/3 to 1/40 of the flat
    #: screen's CPU time (k = 1 and 5, the same answers); at 12 Gaussian dimensions the tree took
    #: 3.5× longer. Mixed spaces keep the grouped search, which settles their runs of equal
    #: categorical distances.
    kdtree_max_dim: int = 8
    #: Below this many pairs the flat screen takes a few tens of milliseconds: no tree is built.
    kdtree_min_pairs: int = 2 * 10**7
    #: The grouped search (equal categorical values) runs when the mixed space has at most this
    #: many numeric dimensions: k-d trees stay efficient up to about this many.
    grouped_max_numeric: int = 12
    #: Extra candidates of the grouped search's short lists (a row cut inside a tie run is
    #: retried with ``extra_candidates``).
    grouped_extra: int = 2
    #: The grouped search's deepest level: level L searches the records equal on all categorical
    #: columns but L of them (one k-d tree per set of L columns) and settles a row whose k-th
    #: distance lies below the L + 1 smallest mismatch costs summed. Level 2 settles more rows
    #: but its trees cost more than the exact search of those rows (measured, 1 thread: Texas-like
    #: 100k real → real k = 3, 11 columns: 11.2 → 14.7 CPU-s; latent-class 50,000 sampled rows
    #: against 300k: 37.8 → 38.9, against 1M: 118.9 → 157.9), so the default stops at level 1.
    grouped_levels: int = 1
    #: A level after level 0 is searched only when the flat screen's categorical tile bounds
    #: (:mod:`.category_tiles`) would compare more than this share of the targets for the rows
    #: left open; below it the screen settles them for less than the level's trees (Texas-like
    #: 100k real → real, k = 2: in identifiability's entropy-weighted space, share 0.03–0.04,
    #: 6.3 CPU-s with level 1, 4.1 without; in the mixed space, share ~0.3, 9.3 with, 11.5 without).
    grouped_deeper_share: float = 0.1
    #: A level is searched only when it needs at most this many trees (C(columns, L)): 66 is
    #: level 2 of 12 categorical columns; wider tables stop at level 1.
    grouped_max_trees: int = 66
    #: Searches of at least this many query × target pairs try exact-duplicate folding first.
    dedup_min_pairs: int = 10**6
    #: A search of chosen query rows (a sample, an attack's records) that is not screened tries
    #: exact-duplicate folding from this many query rows: finding the distinct targets costs
    #: about as much as searching a few hundred rows (100k × 37 targets: 0.27 CPU-s), and tie runs
    #: among duplicate targets make the unfolded search far dearer (an attack's 4,000 records
    #: against 100k release rows on its known columns: 3.3 CPU-s unfolded, 0.07 folded).
    dedup_min_queries: int = 2_000
    #: Duplicate folding is used only when the distinct rows are at most this share of the rows.
    dedup_max_share: float = 0.8
    #: The exact search's target-side preparations of a target matrix of at least this many rows
    #: are kept for the next search of the same matrix object (at 1M targets they cost about half
    #: of a 100k-query search, bench_million.py).
    target_cache_min_rows: int = 200_000
    #: At most this many target preparations are kept (least recently used first out; ~0.4 GiB
    #: each at 1M × 95).
    target_cache_size: int = 1
    #: Queries per search from which faiss' flat search uses BLAS (faiss' historical value; the
    #: faiss-cpu wheels ship 128000, which made small searches 15× slower per row).
    faiss_blas_threshold: int = 20
    #: Rows of the IVF screen searched exactly to calibrate it, and as many again to measure its
    #: recall: 500 rather than 200 because 99 % on 200 calibration rows was met by a screen whose
    #: recall over all rows was 97.4 % (k = 5, Texas 25k).
    ivf_check_rows: int = 500
    #: The IVF probe count is raised until the calibration sample reaches this recall.
    ivf_target_recall: float = 0.99
    #: The screen declines before building its lists (the rows are searched exactly) when its
    #: least cost in target pairs — every target assigned to a list, the k-means training, the
    #: exact calibration and check samples, each row's smallest probe — is not below the rows'
    #: exact search: few rows against many targets (an attack's 4,000 sampled records against a
    #: million). Checked for target sets of at least this many rows: below, the lists cost
    #: little and small screened searches (tests) keep their screen.
    ivf_decline_costly_targets: int = 200_000
    #: Above this share of the lists probed the IVF screen declines and the rows are searched
    #: exactly: the list scan costs about twice the exact flat search per target pair.
    ivf_max_probe_share: float = 0.25
    #: The screened rows the per-row certificate cannot prove right are searched again exactly,
    #: at most this share of the screened rows (the first by row order); the rest stay "possibly
    #: wrong" and widen the intervals that read them. 1.0: every such row (the run's deadline
    #: bounds the work), so an interval is the statistical one whatever the search's size: a
    #: widening by a few percent of rows swallows a 1 % share of copies (measured at 100k rows,
    #: 95 encoded features: the memorisation interval [0, 0.050] with 0.25, [0.0099, 0.0107] exact).
    ivf_resolve_share: float = 1.0
    #: The calibration sample's screened answers are certified too; when the certificate cannot
    #: prove more than this share of them right (in many dimensions its triangle and bisector
    #: bounds prove little), the screen declines and the rows are searched exactly: re-searching
    #: most rows after screening them costs more than the exact search alone.
    ivf_max_uncertain_share: float = 0.5
    #: Training points per k-means list (faiss' minimum).
    ivf_train_per_list: int = 39
    #: k-means iterations of the IVF lists.
    ivf_kmeans_iterations: int = 10
    #: IVF lists per √(target rows), kept between ``ivf_min_lists`` and ``ivf_max_lists`` (and at
    #: most one list per ``ivf_train_per_list`` targets, but never fewer than ``ivf_min_lists``).
    ivf_lists_per_root: float = 2.0
    ivf_min_lists: int = 16
    #: When > 0, also at most this many lists per √(query rows) (0: off; see
    #: benchmarks/bench_ivf_lists.py).
    ivf_lists_per_query_root: float = 0.0
    ivf_max_lists: int = 4096
    #: The calibration starts by probing 1/``ivf_first_probe_divisor`` of the lists (at least one).
    ivf_first_probe_divisor: int = 32
    #: The calibration raises the probe count by this factor each step.
    ivf_probe_growth: float = 1.5
    #: (query, probed list) pairs one part of the IVF list scan handles, at most.
    ivf_screen_pairs: int = 2**22
    #: Memory per candidate pair held by the IVF list scan (its part size rule), in bytes.
    ivf_candidate_bytes: int = 48
    #: The next part of the list scan assumes this many times the candidates per pair just seen.
    ivf_rate_margin: float = 1.5
    #: A part of the list scan has at most this many times the rows of the part before it.
    ivf_part_growth: int = 4
    #: Neighbours a search returns when a jackknife will delete groups of its target records: the
    #: nearest target outside a deleted group is among the first ``jackknife_k`` unless all of
    #: them are in that group (probability about 1/G^(jackknife_k − 1) per row; those rows are
    #: searched again, together). 2 rather than 3: the grouped search settles more rows of a
    #: 2-list, and the ~1/G re-searched rows cost less than the rows it no longer settles (full
    #: suite at 100,000 rows, 1 thread: 64.7 → 62.1 s; identifiability 15.8 → 13.1, authenticity
    #: 8.8 → 6.4, proximity_score 6.9 → 7.9 as its halves read fewer rows from the lists).
    jackknife_k: int = 2
    #: Neighbours of the second, batched search for the rows whose ``jackknife_k`` were all deleted.
    refill_k: int = 16


#: The settings every search uses unless handed others.
DEFAULT_SETTINGS = SearchSettings()


def resolve(settings: SearchSettings | None) -> SearchSettings:
    """``settings``, or the module's :data:`DEFAULT_SETTINGS` (read at call time) when None."""
    return DEFAULT_SETTINGS if settings is None else settings
