"""The FAMD projection of a sharded evaluation (dcr's space), fitted from the real partitions
without a whole input matrix on any machine.

The FAMD encoding's statistics are merged on the caller: per numeric column the real mean and
population standard deviation of the encoding's fit (:mod:`privgate.sharded.summary`), per
categorical column the real levels and their counts, summed over the real partitions
(:func:`level_counts_task`). Its axes are the leading right singular vectors of the real input
Z: each real partition returns the R factor of its rows' QR (p × p), and the caller takes the
SVD of the R factor of those stacked (TSQR: the local fit's factorisation of Z by blocks, equal
to it to rounding). A jackknife refit without a group g needs ZᵀZ − Z_gᵀZ_g, the local refit's
matrix: each real partition returns its Gram matrix and one per group (the groups are labels by
global real position, sent with the tasks), summed on the caller, and the caller solves the
eigenproblems as the local refit does. With coded columns (a categorical column of more real
levels than the evaluation codes above) the whole fit and each refit are the local fit's Lanczos
iteration, its products summed over the partitions (:mod:`privgate.sharded.famd_lanczos`).
Records are then projected on their workers with the axes broadcast (:class:`FamdProjection`),
and searched there. Only p × p matrices (width-long vectors with coded columns), axes and the
coordinates of at most ``DCR_REFIT_QUERIES`` chosen real records reach the caller.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..schema import normalise_frame
from ..spaces import NULL_LEVEL, FamdEncoder, famd_axes
from .encode import Inputs, encode_rows, read_rows
from .kernel import engine_knn
from .partitions import Partition, read_partition
from .search import _inside, encode_task

__all__ = [
    "FamdProjection",
    "famd_encoder_of",
    "fit_famd",
    "fit_famd_coded",
    "refit_axes",
    "refit_axes_coded",
    "refit_nearest",
]

#: the largest Gram matrices (a partition's, one per jackknife group and its whole one) a refit
#: task may return, bytes: a wider FAMD input is refused (its axes are not refitted sharded)
MAX_GRAM_BYTES = 256 * 2**20


@dataclass(frozen=True)
class FamdProjection:
    """The FAMD encoder (statistics only) and axes (p × m): ``encode(frame)`` gives the frame's
    FAMD input times the axes — its coordinates, as a task computes them for its partition."""

    encoder: FamdEncoder
    axes: np.ndarray

    def encode(self, frame: pl.DataFrame) -> np.ndarray:
        if self.encoder.coded:  # through the coded columns' codes (no indicator block written)
            return self.encoder.inputs(frame).project(self.axes)
        return self.encoder.encode(frame) @ self.axes


def level_counts_task(inputs: Inputs, part: Partition) -> dict[str, dict[str, int]]:
    """On a worker: per categorical column, the record count of each level (null as
    :data:`privgate.spaces.NULL_LEVEL`) in one real partition."""
    cats = inputs.schema.categorical
    if not cats:
        return {}
    frame = normalise_frame(read_partition(part, cats), inputs.schema.subset(cats))
    out = {}
    for col in cats:
        counted = frame.get_column(col).fill_null(NULL_LEVEL).value_counts()
        out[col] = dict(zip(counted.get_column(col).to_list(), counted.to_series(1).to_list()))
    return out


def famd_encoder_of(search: Any) -> tuple[FamdEncoder, dict[str, int]]:
    """(the FAMD encoder of the real records, {categorical column: level count} of the columns of
    more real levels than ``inputs.coded_above``): what :func:`privgate.spaces.famd_encoder`
    computes from the whole real frame — when some column has more, every categorical column
    coded."""
    client, inputs = search.client, search.inputs
    parts = inputs.parts["real"]
    n = sum(p.rows for p in parts)
    counts = client.gather([client.submit(level_counts_task, search.sent, p, pure=False) for p in parts])
    blocks: list[tuple[str, object]] = []
    coded = {}
    for col in inputs.schema.columns:
        if col not in inputs.schema.categorical:
            mean, std = inputs.fit.stats[col]
            blocks.append((col, (float(mean), float(std))))
            continue
        merged: Counter = Counter()
        for found in counts:
            merged.update(found.get(col, {}))
        levels = sorted(merged)
        if len(levels) > inputs.coded_above:
            coded[col] = len(levels)
        shares = np.array([merged[lv] for lv in levels], dtype=np.int64) / n
        blocks.append((col, (levels, shares)))
    if not coded:
        return FamdEncoder.from_blocks(blocks), coded
    written = [b for b in blocks if isinstance(b[1][0], float)]
    return FamdEncoder.from_blocks(written, [(c, lv, p) for c, (lv, p) in blocks if not isinstance(lv, float)]), coded


def r_factor_task(inputs: Inputs, encoder: FamdEncoder, part: Partition, threads: int) -> np.ndarray:
    """On a worker: the R factor of the QR of one real partition's FAMD input."""
    from ..threads import blas_limited

    frame, _ = read_rows(inputs, part)
    with blas_limited(threads):
        return np.linalg.qr(encoder.encode(frame), mode="r")


def fit_famd(search: Any, encoder: FamdEncoder, n_components: int) -> tuple[np.ndarray, dict]:
    """(the FAMD axes, (p, nc) with the local fit's signs; the fit's details as the local
    :func:`privgate.spaces.famd_space` reports them) from the real partitions' R factors, on the
    cluster of ``search`` (a :class:`~privgate.sharded.search.ShardedSearch`)."""
    client, parts = search.client, search.inputs.parts["real"]
    enc = client.scatter(encoder, broadcast=True, hash=False)
    factors = client.gather(
        [client.submit(r_factor_task, search.sent, enc, p, search.threads, pure=False) for p in parts]
    )
    r = np.linalg.qr(np.vstack(factors), mode="r")
    _, s, vt = np.linalg.svd(r, full_matrices=False)
    axes, details = famd_axes(s, vt, n_components, sum(p.rows for p in parts), encoder.width)
    details["fit"] = f"TSQR over the {len(parts)} real partitions' R factors, then the SVD of R (sharded)"
    return axes, details


def fit_famd_coded(search: Any, encoder: FamdEncoder, n_components: int) -> tuple[np.ndarray, dict, np.ndarray]:
    """(the FAMD axes, the fit's details, the singular vectors as found — where refits start) of a
    real input with coded columns: the local fit's Lanczos iteration with its products summed
    over the real partitions (:mod:`privgate.sharded.famd_lanczos`)."""
    from uuid import uuid4

    from ..spaces import famd_coded_axes, famd_coded_sizes
    from .famd_lanczos import leading_axes, release, sent_encoder, squared_norm

    n = sum(p.rows for p in search.inputs.parts["real"])
    nc, k = famd_coded_sizes(n_components, encoder.full_width, n)
    token = uuid4().hex
    sent = sent_encoder(search, encoder)
    try:
        s, found = leading_axes(search, encoder, token, k, n, sent=sent)
        total = squared_norm(search, sent, token)
    finally:
        search.client.run(release, token)
    axes, details = famd_coded_axes(s, found, nc, total, encoder, search.inputs.coded_above)
    details["fit"] += f" (sharded: each product summed over the {len(search.inputs.parts['real'])} real partitions)"
    return axes, details, found


def refit_axes_coded(
    search: Any, encoder: FamdEncoder, labels: np.ndarray, n_components: int, start: np.ndarray
) -> list[np.ndarray]:
    """Per jackknife group g, the leading ``n_components`` right singular vectors of the real
    FAMD input without g's records, as the local refit finds them (the Lanczos iteration started
    from ``start``, the whole fit's vectors), each product summed over the real partitions."""
    from uuid import uuid4

    from .famd_lanczos import leading_axes, partition_labels, release, sent_encoder

    groups = int(labels.max()) + 1
    token = uuid4().hex
    sent, held = sent_encoder(search, encoder), partition_labels(search, labels)
    try:
        return [
            leading_axes(
                search,
                encoder,
                token,
                n_components,
                int((labels != g).sum()),
                sent=sent,
                labels=held,
                group=g,
                start=start,
            )[1]
            for g in range(groups)
        ]
    finally:
        search.client.run(release, token)


def gram_task(
    inputs: Inputs, encoder: FamdEncoder, part: Partition, labels: np.ndarray, groups: int, threads: int
) -> np.ndarray:
    """On a worker: (groups + 1, p, p): per jackknife group g (``labels`` of the partition's rows)
    the Gram matrix Z_gᵀZ_g of the partition's records of g, and last the partition's ZᵀZ."""
    from ..threads import blas_limited

    frame, _ = read_rows(inputs, part)
    z = encoder.encode(frame)
    out = np.empty((groups + 1, z.shape[1], z.shape[1]))
    with blas_limited(threads):
        for g in range(groups):  # a loop over groups, not records
            zg = z[labels == g]
            out[g] = zg.T @ zg
        out[groups] = z.T @ z
    return out


def refit_axes(search: Any, encoder: FamdEncoder, labels: np.ndarray, n_components: int) -> list[np.ndarray]:
    """Per jackknife group g, the leading ``n_components`` eigenvectors of ZᵀZ − Z_gᵀZ_g (Z the
    real FAMD input; the sums over the real partitions' Gram matrices), as the local refit takes
    them (``numpy.linalg.eigh``, descending). Raises ValueError when the Gram matrices of a
    partition would exceed :data:`MAX_GRAM_BYTES`."""
    groups = int(labels.max()) + 1
    p = encoder.width
    if (groups + 1) * p * p * 8 > MAX_GRAM_BYTES:
        raise ValueError(
            f"the FAMD input has {p} features: {groups + 1} Gram matrices of {p} × {p} per partition "
            f"exceed {MAX_GRAM_BYTES // 2**20} MiB"
        )
    client = search.client
    enc = client.scatter(encoder, broadcast=True, hash=False)
    futs = [
        client.submit(
            gram_task, search.sent, enc, part, labels[part.start : part.stop], groups, search.threads, pure=False
        )
        for part in search.inputs.parts["real"]
    ]
    grams = None
    for fut in futs:  # summed as they arrive, in partition order
        got = fut.result()
        grams = got if grams is None else grams + got
    out = []
    for g in range(groups):
        _, vecs = np.linalg.eigh(grams[groups] - grams[g])
        out.append(vecs[:, ::-1][:, :n_components])
    return out


def refit_task(
    inputs: Inputs,
    projection: FamdProjection,
    tpart: Partition,
    t_keep: np.ndarray | None,
    queries: np.ndarray,
    q_labels: np.ndarray,
    n_components: int,
    threads: int,
) -> np.ndarray:
    """On a worker: (groups, nq) distances of each query row outside group g (its coordinates on
    g's refitted axes: ``queries``' columns g·nc … (g+1)·nc) to its nearest row of ``tpart``'s rows
    ``t_keep`` on the same axes (inf for the rows of g; the projection's axes hold every group's)."""
    from ..threads import blas_limited

    t, t_ids = encode_rows(inputs, projection, tpart, t_keep)
    groups = t.shape[1] // n_components
    out = np.full((groups, queries.shape[0]), np.inf)
    with blas_limited(threads):
        for g in range(groups):  # a loop over groups, not records
            cols = slice(g * n_components, (g + 1) * n_components)
            left = np.flatnonzero(q_labels != g)
            q = np.ascontiguousarray(queries[left, cols])
            d, _ = engine_knn(q, left, np.ascontiguousarray(t[:, cols]), t_ids, 1)
            out[g, left] = d[:, 0]
    return out


def refit_nearest(
    search: Any, encoder: FamdEncoder, axes: list[np.ndarray], labels: np.ndarray, q: np.ndarray, target: Any
) -> np.ndarray:
    """(groups, q.size): per group g, the distance of each real record ``q`` (sorted global
    positions) outside g to its nearest ``target`` record (a :class:`~privgate.sharded.search.View`)
    on g's refitted ``axes``; NaN for the records of g. The queries' coordinates on every group's
    axes are computed by their partitions' workers and broadcast; one task per target partition
    searches them all, and the partial minima are merged here (a minimum is exact however the
    targets are split)."""
    client, inputs = search.client, search.inputs
    nc = axes[0].shape[1]
    projection = client.scatter(FamdProjection(encoder, np.hstack(axes)), broadcast=True, hash=False)
    pieces = [
        client.submit(encode_task, search.sent, projection, qp, _inside(qp, q), pure=False)
        for qp in inputs.parts["real"]
        if _inside(qp, q).size
    ]
    queries = client.scatter(np.vstack(client.gather(pieces)), broadcast=True, hash=False)
    q_labels = labels[q]
    tasks = []
    for tp in inputs.parts[target.role]:
        tk = _inside(tp, target.keep)
        if tk is not None and tk.size == 0:
            continue
        tasks.append(
            client.submit(
                refit_task, search.sent, projection, tp, tk, queries, q_labels, nc, search.threads, pure=False
            )
        )
    search.tasks += len(tasks)
    near = np.min(np.stack(client.gather(tasks)), axis=0)
    near[q_labels[None, :] == np.arange(near.shape[0])[:, None]] = np.nan
    return near
