"""The approximate screen (``approximate=True``): a faiss inverted-file index whose error is
measured, not assumed.

The targets are split into ⌈2√m⌉ lists by k-means (faiss, 10 iterations on a seeded sample of 39
targets per list); each query scans the targets of its ``nprobe`` nearest lists only
(:class:`.ivf_lists.Lists`), and within those the search is the exact one (float32 blocks with
the rigorous error bound, the k nearest decided in float64 with the tie rule of
:mod:`privgate.ties`). A row can only be wrong when one of its k nearest lies in a list it did
not probe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..ties import REL_TOL
from .ivf_lists import Lists
from .memo import SearchMemo

if TYPE_CHECKING:
    from .exact import ExactSearch
    from .settings import SearchSettings


class _Truth:
    """The exact answers of the calibration and check samples, and whether a screen found them."""

    def __init__(self, ex: "ExactSearch", calib: np.ndarray, check: np.ndarray) -> None:
        self.calib, self.check = calib, check
        self.done = np.concatenate([calib, check])
        self.d = np.empty((ex.q.shape[0], ex.k))
        self.i = np.empty((ex.q.shape[0], ex.k), dtype=np.int64)
        ex.rows(self.done, self.d, self.i)

    def found(self, sel: np.ndarray, dist: np.ndarray) -> np.ndarray:
        tol = REL_TOL * (1.0 + np.abs(self.d[sel]))
        return (np.abs(dist - self.d[sel]) <= tol).all(axis=1)

    def fill(self, out_d: np.ndarray, out_i: np.ndarray) -> None:
        """Checked rows keep their exact answers."""
        out_d[self.done], out_i[self.done] = self.d[self.done], self.i[self.done]


def knn_ivf(
    ex: "ExactSearch", rows: np.ndarray, seed: int, out_d: np.ndarray, out_i: np.ndarray
) -> tuple[dict, np.ndarray]:
    """Approximate k nearest neighbours of query ``rows`` by the inverted-file screen; returns
    (the search's description, the rows left to search exactly).

    A seeded calibration sample of ``ivf_check_rows`` rows is searched exactly and the number of
    probed lists raised by half (from 1/32 of them) until the screen finds ≥ 99 % of those rows'
    k nearest distances — when that would take more than a quarter of the lists, the screen
    declines (returns ``{"exact": True, "screen": "declined: …"}`` and the rows to search
    exactly; many ties at the k-th distance, common for k > 1 on categorical data, do that).
    Otherwise a second, independent seeded sample of ``ivf_check_rows`` rows is searched exactly
    and the share the screen got right is the reported recall (with its Wilson interval). Checked
    rows keep their exact answers. ``share_rows_possibly_wrong`` = (1 − the interval's lower
    end) × the screened share of all query rows: a bound, at 95 % confidence, on the share of
    records whose neighbour may be wrong — what a metric that is a share or mean of per-record
    terms bounded by 1 can be off by. The calibration rows' screened answers are certified
    (:mod:`.certify`) before any other row is screened: when more than
    ``ivf_max_uncertain_share`` of them cannot be proven right the screen declines too (the
    rows it screens are then searched again, which costs more than searching them exactly);
    otherwise every screened row the certificate cannot prove right is searched again exactly
    (up to ``ivf_resolve_share`` of them), so the widening is 0 unless that share was lowered."""
    settings = ex.settings
    n_check = settings.ivf_check_rows
    m = ex.t.shape[0]
    nlist = _list_count(settings, m, rows.size)
    if m >= settings.ivf_decline_costly_targets and not screen_pays(rows.size, m, nlist, settings):
        # few rows against many targets: building the lists alone costs more than searching the
        # rows exactly (an attack's 2 × 2,000 sampled records against a million)
        note = (
            f"declined: {rows.size} rows against {m} targets are searched exactly for less than "
            f"the {nlist} lists cost to build"
        )
        return {"exact": True, "screen": note, "candidates_held": 0}, rows
    rng = np.random.default_rng(seed)
    train = np.sort(rng.choice(m, min(m, nlist * settings.ivf_train_per_list), replace=False))
    # the lists depend on the target set, nlist, seed and the float32 copies' coordinates only:
    # searches of one target set share them
    lists = SearchMemo.get_or_build(
        ex.problem.memo,
        ex.t,
        ("ivf_lists", nlist, int(seed), ex.reduced),
        lambda: Lists(ex, nlist, train, seed).for_search(None),
    ).for_search(ex)
    lists.candidates_held = 0
    samples = rng.permutation(rows)[: 2 * n_check]
    truth = _Truth(ex, np.sort(samples[:n_check]), np.sort(samples[n_check:]))
    nprobe, recall, accepted = _calibrate(lists, truth, nlist)
    if not accepted:  # the screen would scan more than the share at which it pays: search exactly
        note = (
            f"declined: {recall:.3f} recall at {nprobe} of {nlist} lists; "
            f"{settings.ivf_target_recall} needs more than {settings.ivf_max_probe_share:.0%} of them"
        )
        return _declined(lists, truth, rows, note, out_d, out_i)
    unsure = _uncertain_share(lists, truth.calib, nprobe)
    if unsure > settings.ivf_max_uncertain_share:
        # most screened rows would be searched again exactly (every one the certificate cannot
        # prove right is): the exact search alone costs less
        note = (
            f"declined: the certificate proves only {1.0 - unsure:.0%} of the calibration rows' screened "
            f"answers right at {nprobe} of {nlist} lists (at least "
            f"{1.0 - settings.ivf_max_uncertain_share:.0%} needed); searched exactly"
        )
        return _declined(lists, truth, rows, note, out_d, out_i)
    return _screen(lists, rows, nprobe, truth, out_d=out_d, out_i=out_i), rows[:0]


def _list_count(settings: "SearchSettings", m: int, n_rows: int) -> int:
    """The number of k-means lists for ``m`` targets searched by ``n_rows`` query rows."""
    low = settings.ivf_min_lists
    nlist = int(
        min(
            max(low, np.ceil(settings.ivf_lists_per_root * np.sqrt(m))),
            max(low, m // settings.ivf_train_per_list),
            settings.ivf_max_lists,
        )
    )
    if settings.ivf_lists_per_query_root > 0:
        # few query rows against many targets: assigning every target to a list costs m × nlist,
        # more than the rows' scan at a fixed probed share, so the lists follow the rows
        nlist = int(min(nlist, max(low, np.ceil(settings.ivf_lists_per_query_root * np.sqrt(n_rows)))))
    return nlist


def _declined(
    lists: Lists, truth: _Truth, rows: np.ndarray, note: str, out_d: np.ndarray, out_i: np.ndarray
) -> tuple[dict, np.ndarray]:
    """The screen declined after calibration: the checked rows keep their exact answers; the
    search's description and the rows left to search exactly."""
    truth.fill(out_d, out_i)
    return (
        {"exact": True, "screen": note, "candidates_held": int(lists.candidates_held)},
        np.setdiff1d(rows, truth.done, assume_unique=True),
    )


def _uncertain_share(lists: Lists, calib: np.ndarray, nprobe: int) -> float:
    """The share of the calibration rows whose screened answers at ``nprobe`` lists the per-row
    certificate (:func:`.certify.uncertain_rows`) cannot prove right: what the screen would
    leave to search again exactly (0 without calibration rows)."""
    from .certify import uncertain_rows

    if calib.size == 0:
        return 0.0
    k = lists.exact.k
    cd = np.empty((calib.size, k))
    probed = np.empty((calib.size, min(nprobe, lists.nlist)), dtype=np.int64)
    lists.screen(calib, nprobe, cd, np.empty((calib.size, k), dtype=np.int64), probes_out=probed)
    return float(uncertain_rows(lists, calib, probed, cd[:, k - 1]).mean())


def screen_pays(rows: int, m: int, nlist: int, settings: "SearchSettings") -> bool:
    """Whether the screen of ``rows`` query rows against ``m`` targets in ``nlist`` lists can cost
    less than their exact search (``rows`` × ``m`` pairs), counting in target pairs its least
    cost: every target assigned to its list (m × nlist), the k-means training
    (iterations × training points × nlist), the calibration and check samples searched exactly
    (2 × ``ivf_check_rows`` × m) and each row's probe at the smallest share of the lists
    (nlist centroids + m / ``ivf_first_probe_divisor`` targets). Sizes only, so the same search
    takes the same path whatever ran before it."""
    lists = m * nlist + settings.ivf_kmeans_iterations * settings.ivf_train_per_list * nlist * nlist
    least = lists + 2 * settings.ivf_check_rows * m + rows * (nlist + m / settings.ivf_first_probe_divisor)
    return least < rows * m


def _calibrate(lists: Lists, truth: _Truth, nlist: int) -> tuple[int, float, bool]:
    """Raise the probe count from 1/32 of the lists until the calibration rows reach the target
    recall: (probe count, its recall, whether the target was reached within the share of the
    lists at which the screen pays)."""
    settings = lists.exact.settings
    calib, k = truth.calib, lists.exact.k
    nprobe = max(1, nlist // settings.ivf_first_probe_divisor)
    while True:
        if calib.size:
            cd = np.empty((calib.size, k))
            lists.screen(calib, nprobe, cd, np.empty((calib.size, k), dtype=np.int64))
            ok = truth.found(calib, cd).mean()
        else:
            ok = 1.0
        if ok >= settings.ivf_target_recall:
            return nprobe, ok, True
        grown = min(nlist, max(nprobe + 1, int(np.ceil(settings.ivf_probe_growth * nprobe))))
        if grown > settings.ivf_max_probe_share * nlist:
            return nprobe, ok, False
        nprobe = grown


def _screen(
    lists: Lists, rows: np.ndarray, nprobe: int, truth: _Truth, *, out_d: np.ndarray, out_i: np.ndarray
) -> dict:
    """Screen every row with ``nprobe`` lists, measure the recall on the check sample, keep the
    checked rows' exact answers; the search's description."""
    from ..stats import wilson

    ex, check = lists.exact, truth.check
    rest = np.setdiff1d(rows, truth.done, assume_unique=True)
    screened_d = np.empty((rows.size, ex.k))
    screened_i = np.empty((rows.size, ex.k), dtype=np.int64)
    probed = np.empty((rows.size, min(nprobe, lists.nlist)), dtype=np.int64)
    lists.screen(rows, nprobe, screened_d, screened_i, probes_out=probed)
    out_d[rows], out_i[rows] = screened_d, screened_i
    hits = int(truth.found(check, out_d[check]).sum())
    truth.fill(out_d, out_i)
    lo, _ = wilson(hits, check.size) if check.size else (0.0, 1.0)
    order = np.argsort(rows, kind="stable")
    resolved = _resolve(lists, rest, probed[order[np.searchsorted(rows[order], rest)]], out_d, out_i)
    # the rows left unresolved may be wrong; so may, at 95 % confidence, no more than the share the
    # measured recall allows among all screened rows (re-searching rows only removes wrong ones):
    # the smaller of the two
    n_all = max(ex.q.shape[0], 1)
    share = min(resolved["n_unresolved"] / n_all, (1.0 - lo) * rest.size / n_all)
    return {
        "exact": False,
        "method": f"IVF screen ({lists.nlist} k-means lists, {nprobe} probed, scanned by float32 BLAS blocks "
        "with the error bound) + float64 decision",
        "recall": hits / check.size if check.size else float("nan"),
        "recall_ci": list(wilson(hits, check.size)) if check.size else [0.0, 1.0],
        "n_checked": int(check.size),
        "n_screened": int(rest.size),
        # the most candidate pairs the list scan held at once (its memory: ~48 bytes each)
        "candidates_held": int(lists.candidates_held),
        # rows the certificate could not prove right: searched again exactly within the budget;
        # only the rest may be wrong
        **resolved,
        "share_rows_possibly_wrong": float(share),
    }


def _resolve(lists: Lists, rest: np.ndarray, probed: np.ndarray, out_d: np.ndarray, out_i: np.ndarray) -> dict:
    """Certify the screened rows ``rest`` (:func:`.certify.uncertain_rows`) and search the
    uncertain ones exactly, at most ``ivf_resolve_share`` of ``rest`` (those whose certificate
    failed by the least margin are not preferred: the first by row order, a deterministic
    choice); their exact answers replace the screen's."""
    from .certify import uncertain_rows

    ex = lists.exact
    if rest.size == 0:
        return {"n_uncertain": 0, "n_resolved": 0, "n_unresolved": 0}
    unsure = rest[uncertain_rows(lists, rest, probed, out_d[rest, ex.k - 1])]
    budget = int(np.floor(ex.settings.ivf_resolve_share * rest.size))
    todo = unsure[:budget]
    if todo.size:
        d = np.empty((ex.q.shape[0], ex.k))
        i = np.empty((ex.q.shape[0], ex.k), dtype=np.int64)
        ex.rows(todo, d, i)
        out_d[todo], out_i[todo] = d[todo], i[todo]
    return {"n_uncertain": int(unsure.size), "n_resolved": int(todo.size), "n_unresolved": int(unsure.size - todo.size)}
