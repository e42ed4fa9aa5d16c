"""The IVF screen's lists: the targets split by k-means, stored list by list, scanned with BLAS.

faiss trains the centroids and assigns every target to its nearest one; the scan itself is done
here list by list — all queries probing a list against all its targets in one float32 matrix
product (BLAS), as the exact blocked search does — because faiss' own IVF scan computes one
vector pair at a time (measured ~12× slower per pair than its flat BLAS search)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import progress
from .backends import faiss_blas, faiss_module, workers
from .decide import distances_of_pairs, take_sorted

if TYPE_CHECKING:
    from .prepared import PreparedSearch


@dataclass(frozen=True)
class _Probes:
    """One part of a scan: its query rows' probed lists, grouped by list."""

    qm2: np.ndarray  # −2·q (float32) of the part's rows
    cqn: np.ndarray  # c‖q‖² (float64)
    qpos: np.ndarray  # part positions of the (row, probed list) pairs, sorted by list
    bounds: np.ndarray  # where each list's pairs start in qpos
    self_list: np.ndarray | None  # with exclude_self: each row's own list and stored position
    self_col: np.ndarray | None
    block_rows: int


class Lists:
    """The targets split into k-means lists, stored list by list, for the IVF screen."""

    def __init__(self, exact: "PreparedSearch", nlist: int, train_rows: np.ndarray, seed: int) -> None:
        faiss = faiss_module()
        settings = exact.settings
        t32 = exact.t32
        m, d = t32.shape
        train = t32[train_rows]
        cp = faiss.ClusteringParameters()
        cp.niter = settings.ivf_kmeans_iterations
        cp.seed = int(seed) & 0x7FFFFFFF
        cp.max_points_per_centroid = settings.ivf_train_per_list + 1
        clus = faiss.Clustering(d, nlist, cp)
        self.quantizer = faiss.IndexFlatL2(d)
        with faiss_blas(settings.faiss_blas_threshold):
            clus.train(train, self.quantizer)
            _, a = self.quantizer.search(t32, 1)
        assign = a.ravel().astype(np.int64)
        order = np.argsort(assign, kind="stable")
        self.nlist = nlist
        self.members = order  # target index of each stored position
        self.start = np.searchsorted(assign[order], np.arange(nlist + 1))
        self.assign = assign
        self.position = np.empty(m, dtype=np.int64)
        self.position[order] = np.arange(m)  # stored position of each target
        # float32 targets (compact spaces) are read through the list order, one probed list at a
        # time, from the search's own matrix instead of a reordered copy (4·d bytes per target,
        # ~1.16 GiB per million rows of the default gate): the gathered rows are the copy's rows,
        # so every product is the same. Never a reference to the matrix here: the memo keeps the
        # lists weakly keyed by it. Centred float32 copies of float64 targets keep the copy.
        self.in_place = t32 is exact.t
        self.t32 = None if self.in_place else np.ascontiguousarray(t32[order])
        ctn = exact.ctn[order]
        self.tlow = exact.tn[order] - ctn  # ‖t‖² − c‖t‖² (float32)
        self.ctn2 = 2.0 * ctn.astype(np.float64)  # 2c‖t‖²
        self.exact = exact
        self.candidates_held = 0  # the most candidate pairs one part of a scan held (memory check)
        self.certificate: dict = {}  # the lists' geometry for the per-row certificate (.certify), once

    def for_search(self, exact: "PreparedSearch | None") -> "Lists":
        """These lists (made for a search of the same target set) for the search ``exact``: the
        target-side arrays are the same (centred on the target mean, the bound's c depends on the
        width only); the query side and k are the new search's. None: detached from any search
        (as kept in a memo, so that it holds no search's query arrays)."""
        if exact is self.exact:
            return self
        other = copy.copy(self)
        other.exact = exact
        return other

    def screen(
        self, sel: np.ndarray, nprobe: int, out_d: np.ndarray, out_i: np.ndarray, probes_out: np.ndarray | None = None
    ) -> None:
        """The k nearest of query rows ``sel`` among the targets of their ``nprobe`` nearest
        lists, exact within those lists; rows whose lists hold fewer than k targets are searched
        exactly over all targets.

        Rows go in parts whose candidates stay within the block budget: a part's candidates are
        ~48 bytes each while held (row, target, bound; then sorted copies), and their number per
        (row, probed list) is k plus the list's run of near-ties. The first part assumes the
        worst (every target of the largest list a candidate); each next part is sized by the
        candidates per pair just seen (times a margin), growing at most 4× per part and never
        past ``ivf_screen_pairs`` (row, list) pairs. ``probes_out`` (rows × min(nprobe, nlist)):
        receives each row's probed lists (−1: none)."""
        ex = self.exact
        settings = ex.settings
        budget = max(1, ex.block_bytes // settings.ivf_candidate_bytes)
        probes = max(nprobe, 1)
        rate = float(max(ex.k, int(np.diff(self.start).max(initial=1))))
        short = []
        s = 0
        step = sel.size
        while s < sel.size:
            step = int(
                max(
                    1,
                    min(
                        settings.ivf_screen_pairs // probes,
                        budget // (probes * rate),
                        settings.ivf_part_growth * step if s else sel.size,
                    ),
                )
            )
            part = sel[s : s + step]
            missing, held = self._screen_part(
                part,
                nprobe,
                out_d[s : s + step],
                out_i[s : s + step],
                None if probes_out is None else probes_out[s : s + step],
            )
            self.candidates_held = max(self.candidates_held, held)
            rate = max(float(ex.k), held / (part.size * probes)) * settings.ivf_rate_margin
            short.append(s + missing)
            s += part.size
            progress.report(s, sel.size, "query rows of a screened search")
        short = np.concatenate(short) if short else np.zeros(0, dtype=np.int64)
        if short.size:
            full_d = np.empty((ex.q.shape[0], ex.k))
            full_i = np.empty((ex.q.shape[0], ex.k), dtype=np.int64)
            ex.rows(sel[short], full_d, full_i)
            out_d[short], out_i[short] = full_d[sel[short]], full_i[sel[short]]

    def _screen_part(
        self, sel: np.ndarray, nprobe: int, out_d: np.ndarray, out_i: np.ndarray, probes_out: np.ndarray | None = None
    ) -> tuple[np.ndarray, int]:
        """One part of :meth:`screen`: returns the part positions of rows whose probed lists held
        fewer than k candidates, and how many candidate pairs the part held."""
        phases = self._probe(sel, nprobe, probes_out)
        cr, cc, v = self._scan_all(phases)
        if cr is None:
            return np.arange(sel.size), 0
        return self._decide(sel, phases[0], cr, cc, v, out_d=out_d, out_i=out_i), int(cr.size)

    def _probe(self, sel: np.ndarray, nprobe: int, probes_out: np.ndarray | None = None) -> tuple[_Probes, _Probes]:
        """The lists each row of ``sel`` probes (faiss' quantizer), grouped by list, in two
        phases: each row's nearest list (its first probe), then the others."""
        ex = self.exact
        # (−2q)·t is exactly −2·(q·t) in floating point, so the product needs no extra pass
        qm2 = ex.q32[sel] * np.float32(-2.0)
        cqn = float(ex.c) * ex.qn[sel].astype(np.float64)
        with faiss_blas(ex.settings.faiss_blas_threshold):
            _, probe = self.quantizer.search(ex.q32[sel], min(nprobe, self.nlist))
        if probes_out is not None:
            probes_out[:] = probe
        flat = probe.ravel().astype(np.int64)
        qpos = np.repeat(np.arange(sel.size), probe.shape[1])
        first = np.tile(np.arange(probe.shape[1]) == 0, sel.size)
        block_rows = max(1, ex.block_bytes // max(1, 4 * int(np.diff(self.start).max(initial=1))))
        phases = []
        for phase in (first, ~first):
            keep = phase & (flat >= 0)
            lists, rows = flat[keep], qpos[keep]
            order = np.argsort(lists, kind="stable")
            phases.append(
                _Probes(
                    qm2,
                    cqn,
                    rows[order],
                    np.searchsorted(lists[order], np.arange(self.nlist + 1)),
                    self.assign[sel] if ex.exclude_self else None,
                    self.position[sel] if ex.exclude_self else None,
                    block_rows,
                )
            )
        return phases[0], phases[1]

    def _scan_all(
        self, phases: tuple[_Probes, _Probes]
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """Every probed list's candidates, (part position, stored target position, v) — None
        when there are none. First each row's nearest list, whose bounds set the row's tightest
        threshold, then its other lists, whose pairs above that threshold are no candidates
        (:meth:`_scan_block`). Within a phase the lists split between the run's threads (NumPy's
        products and partitions release the GIL), each product single-threaded; a row is in one
        list of the first phase and the second only reads the thresholds, so the candidates are
        the same whatever the threads. They are ordered by (row, bound) and (row, distance,
        index) afterwards."""
        tightest = np.full(phases[0].qm2.shape[0], np.inf)
        parts = []
        for probes, lower in zip(phases, (True, False)):
            lists = np.flatnonzero(np.diff(probes.bounds))
            n_workers = min(max(1, workers()), lists.size)  # the run's thread budget, never more
            if n_workers > 1:
                from concurrent.futures import ThreadPoolExecutor

                from threadpoolctl import threadpool_limits

                with threadpool_limits(limits=1), ThreadPoolExecutor(n_workers) as pool:
                    parts += list(
                        pool.map(
                            lambda mine: self._scan(probes, mine, tightest, lower),
                            [lists[w::n_workers] for w in range(n_workers)],
                        )
                    )
            elif lists.size:
                parts.append(self._scan(probes, lists, tightest, lower))
        cand = [[a for p in parts for a in p[j]] for j in range(3)]
        if not cand[0]:
            return None, None, None
        return np.concatenate(cand[0]), np.concatenate(cand[1]), np.concatenate(cand[2]).astype(np.float64)

    def list_rows(self, ts: int, te: int) -> np.ndarray:
        """The float32 targets at stored positions ts:te (one list), C-contiguous: a slice of the
        reordered copy, or the rows gathered from the float32 target matrix in stored order."""
        if not self.in_place:
            return self.t32[ts:te]
        return self.exact.t32[self.members[ts:te]]

    def _scan(
        self, probes: _Probes, mine_lists: np.ndarray, tightest: np.ndarray, lower: bool
    ) -> tuple[list, list, list]:
        """The candidates of the probed lists ``mine_lists`` (each list's arithmetic is the same
        whichever thread scans it), below each row's ``tightest`` threshold (``lower``: lowered
        to the bounds of these lists)."""
        cand_r, cand_c, cand_v = [], [], []
        for lst in mine_lists:
            ts, te = int(self.start[lst]), int(self.start[lst + 1])
            if te == ts:
                continue
            tb = self.list_rows(ts, te)  # gathered once per list and part
            end = int(probes.bounds[lst + 1])
            for a in range(int(probes.bounds[lst]), end, probes.block_rows):
                pos = probes.qpos[a : min(a + probes.block_rows, end)]
                cr, cc, v = self._scan_block(probes, lst, ts, te, pos, tb, tightest, lower)
                cand_r.append(cr)
                cand_c.append(cc)
                cand_v.append(v)
        return cand_r, cand_c, cand_v

    def _scan_block(
        self,
        probes: _Probes,
        lst: int,
        ts: int,
        te: int,
        pos: np.ndarray,
        tb: np.ndarray,
        tightest: np.ndarray,
        lower: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows ``pos`` of a part against list ``lst`` (stored positions ts:te, float32 rows
        ``tb``): the pairs whose lower bound exceeds neither the row's k-th upper bound within
        the list nor its ``tightest`` threshold (per part row: the k-th upper bound within its
        nearest list; ``lower``: set here). Each such bound is at least the row's k-th upper
        bound over all its probed lists, so the row's k nearest and every candidate
        :meth:`_decide` keeps pass either way: the same decision from fewer pairs (at 100k ×
        100k, k = 3, 18× fewer held)."""
        ex = self.exact
        k = ex.k
        tlow, ctn2 = self.tlow[ts:te], self.ctn2[ts:te]
        # v = float32 d² − ‖q‖² − c‖t‖²: the pair's lower bound is v + ‖q‖² − c‖q‖², its
        # upper bound v + 2c‖t‖² + ‖q‖² + c‖q‖² (the exact search's bound, rearranged)
        v = probes.qm2[pos] @ tb.T
        v += tlow[None, :]
        if ex.exclude_self:  # a row never finds itself
            mine = np.flatnonzero(probes.self_list[pos] == lst)
            v[mine, probes.self_col[pos[mine]] - ts] = np.inf
        in_list = te - ts - (1 if ex.exclude_self else 0)
        cqn = probes.cqn[pos]
        if in_list >= k and k == 1:
            r = np.arange(pos.size)
            part = v.argmin(axis=1)[:, None]
            # lower ≤ the k-th's upper bound ⇔ v ≤ max(v + 2c‖t‖²) over the k + 2c‖q‖²
            thr = (v[r[:, None], part].astype(np.float64) + ctn2[part]).max(axis=1) + 2 * cqn
        elif in_list >= k:
            # the k targets of smallest v have upper bounds ≤ the k-th smallest v + the list's
            # largest 2c‖t‖²: a (slightly looser) threshold from a value partition, ~8× cheaper
            # than argpartition (measured, 158-target lists, k = 3)
            kth = np.partition(v, k - 1, axis=1)[:, k - 1].astype(np.float64)
            thr = kth + float(ctn2.max()) + 2 * cqn
        else:  # a list smaller than k: all its targets are candidates (below the row's threshold)
            thr = np.full(pos.size, np.inf)
        thr = np.minimum(thr, tightest[pos])
        if lower:
            tightest[pos] = thr
        cand = v <= up32(thr)[:, None]
        if ex.exclude_self:
            cand[mine, probes.self_col[pos[mine]] - ts] = False
        cr, cc = nonzero_2d(cand)
        return pos[cr], cc + ts, v[cr, cc]

    def _decide(
        self,
        sel: np.ndarray,
        probes: _Probes,
        cr: np.ndarray,
        cc: np.ndarray,
        v: np.ndarray,
        *,
        out_d: np.ndarray,
        out_i: np.ndarray,
    ) -> np.ndarray:
        """The k nearest of each part row among its candidates, decided in float64; returns the
        part positions of rows with fewer than k candidates (left unset)."""
        k = self.exact.k
        lo = v - probes.cqn[cr]
        hi = v + self.ctn2[cc] + probes.cqn[cr]
        # the upper bound of each row's k-th nearest over all its lists: the k-th smallest upper
        # bound among its candidates; keep the candidates whose lower bound does not exceed it
        # (‖q‖² is common to a row's bounds and left out of both)
        order = np.lexsort((hi, cr))
        cr, cc, lo, hi = cr[order], cc[order], lo[order], hi[order]
        first = np.searchsorted(cr, np.arange(sel.size), side="left")
        count = np.diff(np.append(first, cr.size))
        enough = count >= k
        kth = np.full(sel.size, -np.inf)
        kth[enough] = hi[first[enough] + k - 1]
        keep = lo <= kth[cr]
        cr, cc = cr[keep], self.members[cc[keep]]
        d64 = distances_of_pairs(self.exact.q, self.exact.t, sel[cr], cc, self.exact.settings)
        take_sorted(cr, cc, d64, n_rows=sel.size, k=k, out_d=out_d, out_i=out_i, rows=np.flatnonzero(enough))
        return np.flatnonzero(~enough)


def up32(x: np.ndarray) -> np.ndarray:
    """float64 → the nearest float32 not below it (a comparison threshold never rounded down)."""
    y = x.astype(np.float32)
    low = y.astype(np.float64) < x
    y[low] = np.nextafter(y[low], np.float32(np.inf))
    return y


def nonzero_2d(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a 2-D mask (the same arrays, row-major order) from the flat positions:
    ~10× faster than NumPy's 2-D nonzero on a few true entries among many (measured, 4,000 × 500)."""
    flat = np.flatnonzero(mask)
    return np.divmod(flat, mask.shape[1]) if mask.shape[1] else (flat, flat)
