"""The exact nearest-neighbour engine every distance metric shares.

``knn`` finds, for every query row, its k nearest target rows by Euclidean distance. Its paths,
one module each:

* :mod:`.duplicates` — exact duplicates folded before any n×m work;
* :mod:`.grouped` — the nearest records inside groups of equal categorical values (mixed space);
* :mod:`.exact` — the general exact search: blocked float32 GEMMs on centred data with a
  rigorous error bound (never an n×m matrix), and scipy's cKDTree for d ≤ 3;
* :mod:`.screened` — the flat float32 screen checked by that bound (:mod:`.flat`), comparing only
  the targets whose categories could hold a row's k nearest (:mod:`.category_tiles`);
* :mod:`.ivf` / :mod:`.ivf_lists` — the approximate IVF screen with measured recall
  (``approximate=True``);
* :mod:`.decide` — the float64 decision all of them end with: distances recomputed from the
  coordinate differences, distances equal within 1e-9·(1 + max) are ties broken by the lowest
  target index (:mod:`privgate.ties`); ``exclude_self`` removes the query's own row *by index*,
  so duplicate records are each other's nearest neighbour at distance 0;
* :mod:`.boxes` — box (Chebyshev) queries; :mod:`.outside_groups` — the jackknife's nearest
  neighbour outside a deleted group;
* :mod:`.memo` — structures kept between searches of one matrix; :mod:`.settings` — every
  tunable, in :class:`SearchSettings`.

Every result says how it was made in ``Neighbours.search``.
"""

from .boxes import any_within_box
from .decide import pair_distances
from .grouped import refine_group_ids
from .memo import SearchMemo, clear_target_cache
from .outside_groups import MatrixSearch, nearest_outside_groups, search_k
from .result import Neighbours
from .search import knn, knn_rows, search_matrices
from .settings import DEFAULT_SETTINGS, SearchSettings

__all__ = [
    "DEFAULT_SETTINGS",
    "MatrixSearch",
    "Neighbours",
    "SearchMemo",
    "SearchSettings",
    "any_within_box",
    "clear_target_cache",
    "knn",
    "knn_rows",
    "nearest_outside_groups",
    "pair_distances",
    "refine_group_ids",
    "search_k",
    "search_matrices",
]
