"""The FAMD axes of a real input with coded columns, on a cluster: the local fit's Lanczos
iteration (:meth:`privgate.spaces.FamdInputs.leading_axes`, SciPy's ``svds`` with ARPACK) run on
the caller over ZᵀZ as an operator whose every product Zᵀ(Z x) is summed over the real
partitions, each computed by the worker holding that partition's input.

``svds`` iterates (ARPACK's ``eigsh``) on ZᵀZ x = Zᵀ(Z x) for a tall Z, then rotates the
vectors found by the SVD of Z V; here the same steps are taken with the same start vector and
tolerance, the products summed from partitions and the SVD of Z V taken from the R factor of
its partitions' QR (the same singular values and right vectors). Each product is one round of
one task per real partition, pinned to one worker, which keeps its partition's
:class:`~privgate.spaces.FamdInputs` (codes and numerics: its own records, never a table) for
the rounds of one fit and drops it afterwards (:func:`release`). Only width-long vectors and
k × k factors reach the caller.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..spaces import FamdEncoder, FamdInputs
from .encode import Inputs, read_rows
from .partitions import Partition

__all__ = ["leading_axes", "partition_labels", "release", "sent_encoder", "squared_norm"]

#: on a worker: (fit token, partition start, group) → (the rows' input, its products)
_HELD: dict[tuple, tuple[FamdInputs, Any, Any]] = {}


def _held(
    inputs: Inputs, encoder: FamdEncoder, part: Partition, token: str, labels: np.ndarray | None, group: int | None
):
    """On a worker: the partition's FAMD input (its rows outside ``group`` when given) and its
    products, read and built once per fit and group (the previous group's dropped)."""
    key = (token, part.start, group)
    if key not in _HELD:
        for other in [k for k in _HELD if k[:2] == key[:2] and k[2] is not None]:
            del _HELD[other]
        base = (token, part.start, None)
        if base not in _HELD:
            frame, _ = read_rows(inputs, part)
            z = encoder.inputs(frame)
            _HELD[base] = (z, *z._products())
        if group is not None:
            z = _HELD[base][0].rows(np.flatnonzero(labels != group))
            _HELD[key] = (z, *z._products())
    return _HELD[key]


def product_task(
    inputs: Inputs,
    encoder: FamdEncoder,
    part: Partition,
    token: str,
    labels: np.ndarray | None,
    group: int | None,
    x: np.ndarray,
    threads: int,
) -> np.ndarray:
    """On a worker: Z_pᵀ(Z_p x) for the partition's rows (outside ``group``); with ``x`` a
    matrix (width, k), Z_p x itself's R factor instead (k × k, the rotation step)."""
    from ..threads import blas_limited

    _, matvec, rmatvec = _held(inputs, encoder, part, token, labels, group)
    with blas_limited(threads):
        if x.ndim == 2:
            return np.linalg.qr(matvec(x), mode="r")
        return rmatvec(matvec(x))


def norm_task(
    inputs: Inputs, encoder: FamdEncoder, part: Partition, token: str, labels: np.ndarray | None, group: int | None
) -> float:
    """On a worker: ‖Z_p‖²_F of the partition's FAMD input (its rows outside ``group``)."""
    return _held(inputs, encoder, part, token, labels, group)[0].squared_norm()


def release(token: str) -> int:
    """On a worker: drop the inputs held for the fit ``token``; how many were held."""
    gone = [k for k in _HELD if k[0] == token]
    for k in gone:
        del _HELD[k]
    return len(gone)


class _Rounds:
    """One fit's rounds of tasks: one per real partition, each pinned to one worker."""

    def __init__(self, search: Any, encoder: Any, token: str, labels: Any = None, group: int | None = None) -> None:
        """``labels``: per real partition, its rows' group labels (arrays or futures of them,
        :func:`partition_labels`), with the ``group`` whose rows are left out."""
        self.search, self.token, self.group = search, token, group
        self.parts = search.inputs.parts["real"]
        self.labels = labels if labels is not None else [None] * len(self.parts)
        # the encoder (its levels) travels once, not with every round's tasks
        self._encoder = encoder
        self.encoder = (
            encoder
            if not isinstance(encoder, FamdEncoder)
            else search.client.scatter(encoder, broadcast=True, hash=False)
        )
        workers = sorted(search.client.scheduler_info(n_workers=-1)["workers"])
        self.where = [[workers[i % len(workers)]] if workers else None for i in range(len(self.parts))]
        self.products = 0

    def run(self, fn: Any, *args: Any) -> list:
        """``fn`` on every real partition (one task each, on its worker if it is alive), the
        results in the partitions' order. A round the scheduler cancelled (a result it needed was
        lost with a killed worker) is submitted once more as new tasks, the encoder sent again."""
        from concurrent.futures import CancelledError

        try:
            return self._round(fn, *args)
        except CancelledError:
            if isinstance(self._encoder, FamdEncoder):
                self.encoder = self.search.client.scatter(self._encoder, broadcast=True, hash=False)
            return self._round(fn, *args)

    def _round(self, fn: Any, *args: Any) -> list:
        client = self.search.client
        futs = [
            client.submit(
                fn,
                self.search.sent,
                self.encoder,
                part,
                self.token,
                lab,
                self.group,
                *args,
                workers=w,
                allow_other_workers=True,
                pure=False,
            )
            for part, lab, w in zip(self.parts, self.labels, self.where)
        ]
        return client.gather(futs)

    def gram(self, x: np.ndarray) -> np.ndarray:
        """ZᵀZ x, summed over the partitions in their order."""
        self.products += 1
        total = None
        for got in self.run(product_task, np.ravel(x), self.search.threads):
            total = got if total is None else total + got
        return total

    def r_factor(self, v: np.ndarray) -> np.ndarray:
        """The R factor of Z V (TSQR of the partitions' R factors)."""
        return np.linalg.qr(np.vstack(self.run(product_task, v, self.search.threads)), mode="r")


def leading_axes(
    search: Any,
    encoder: FamdEncoder,
    token: str,
    k: int,
    n_rows: int,
    *,
    sent: Any = None,
    labels: list | None = None,
    group: int | None = None,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(the ``k`` largest singular values, descending; their right singular vectors as columns)
    of the real FAMD input Z (its rows outside ``group`` when given: ``labels`` per real partition,
    :func:`partition_labels`), as :meth:`privgate.spaces.FamdInputs.leading_axes` finds them: the
    same start vector (the sum of ``start``'s columns when given), ARPACK to machine precision.
    ``sent``: the encoder already on the cluster (:func:`sent_encoder`). Raises ValueError where
    the local fit would iterate on Z Zᵀ (more features than rows) or write Z whole
    (k ≥ min(shape)): the vectors would be over records."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    width = encoder.full_width
    if width > n_rows or k >= min(n_rows, width):
        raise ValueError(f"a coded FAMD input of {width} features and {n_rows} records is fitted over its records")
    rounds = _Rounds(search, sent if sent is not None else encoder, token, labels, group)
    v0 = np.full(width, 1.0) + np.linspace(0.0, 1.0, width)
    if start is not None:
        warm = start.sum(axis=1)
        if np.all(np.isfinite(warm)) and np.linalg.norm(warm) > 0:
            v0 = warm
    op = LinearOperator((width, width), dtype=np.float64, matvec=rounds.gram)
    _, vecs = eigsh(op, k=k, tol=0, maxiter=None, ncv=None, which="LM", v0=v0)
    vecs, _ = np.linalg.qr(vecs)  # as svds: ARPACK's vectors made orthonormal
    _, s, vh = np.linalg.svd(rounds.r_factor(vecs), full_matrices=False)
    s, vh = s[::-1], vh[::-1] @ vecs.T
    order = np.argsort(-s, kind="stable")
    return s[order], vh[order].T


def partition_labels(search: Any, labels: np.ndarray) -> list:
    """Per real partition, its rows' group labels, sent to every worker once (futures: a worker
    lost keeps none of them from the others)."""
    parts = search.inputs.parts["real"]
    return search.client.scatter([labels[p.start : p.stop] for p in parts], broadcast=True, hash=False)


def sent_encoder(search: Any, encoder: FamdEncoder) -> Any:
    """The encoder sent to every worker once (a future the rounds of several fits share)."""
    return search.client.scatter(encoder, broadcast=True, hash=False)


def squared_norm(search: Any, encoder: Any, token: str) -> float:
    """‖Z‖²_F of the real FAMD input, summed over the partitions."""
    return float(sum(_Rounds(search, encoder, token).run(norm_task)))
