"""The encoded spaces of an evaluation (:class:`SpacesMixin`, a part of
:class:`~privgate.context.EvaluationContext`): which space a metric asks for, built once
(:mod:`privgate.spaces`), compact above ``COMPACT_SPACES_ABOVE`` rows, a holdout baseline's as
views of its main evaluation's, and dropped after their last reader (:meth:`release_spaces`).

The context's constructor sets the state these methods read and write (``_spaces``,
``_spaces_read``, ``_shared``, ``_encoded_by``, ``_heights``, ``frames``, ``schema``, ``real``).
"""

from __future__ import annotations

import gc
from typing import Sequence

import numpy as np

from . import spaces as _spaces
from .spaces import SPACE_KINDS, EncodedSpace, column_entropy, famd_space, mixed_space

# Compact encoded spaces (benchmarks/LOG.md "Compact spaces above 200,000 rows"): when a frame
# has more than COMPACT_SPACES_ABOVE rows, the mixed and identifiability spaces are held as
# float32 matrices (half the bytes, and the exact search reads them without a centred float32
# copy; distances are computed in float64 from the float32 coordinates, ~6e-8 relative from the
# float64 ones) and the FAMD projection is fitted and applied in FAMD_BLOCK_ROWS-row blocks
# (blocked QR, agreeing with the whole-matrix SVD to rounding) instead of on whole input
# matrices. At or below it every value is bit for bit what float64 spaces give.
COMPACT_SPACES_ABOVE = 200_000
FAMD_BLOCK_ROWS = 65_536


class SpacesMixin:
    """The encoded-space methods of :class:`~privgate.context.EvaluationContext`."""

    def mixed(self, columns: Sequence[str] | None = None) -> EncodedSpace:
        """The mixed space over ``columns`` (default: all), for every frame."""
        return self.space(("mixed", tuple(columns) if columns else None))

    def entropies(self) -> dict[str, float]:
        """Natural-log entropy of every real column (identifiability's weights, Yoon et al. 2020)."""
        ent = self._shared["entropy"]
        if not ent:
            for col in self.schema.columns:
                ent[col] = column_entropy(self.real[col], self.schema.kind(col))
        return dict(ent)

    def identifiability_space(self) -> EncodedSpace:
        """The mixed space with every column's features multiplied by 1/H (H = 0 → weight 0)."""
        return self.space(("identifiability", None))

    def famd(self, n_components: int = 2) -> EncodedSpace:
        """The FAMD projection fitted on the real data (dcr, hidden_rate, nndr; Pagès 2004)."""
        return self.space(("famd", n_components))

    def space(self, key: tuple) -> EncodedSpace:
        """The encoded space ``key`` (("mixed", columns | None), ("identifiability", None),
        ("famd", n_components)), built once and kept until :meth:`release_spaces` drops it."""
        key = _space_key(key)
        if key[0] not in SPACE_KINDS:
            raise ValueError(f"unknown space {key!r}")
        self._spaces_read.add(key[0])
        if key not in self._spaces:
            self._spaces[key] = self._baseline_space(key) if self._encoded_by else self._build_space(key)
        return self._spaces[key]

    def _build_space(self, key: tuple) -> EncodedSpace:
        kind, arg = key
        compact = self.compact_spaces()
        dtype = np.float32 if compact else np.float64
        coded = coded_above()
        if kind == "mixed":
            return mixed_space(
                self.frames,
                self.schema,
                list(arg) if arg else None,
                name=_space_name(key),
                dtype=dtype,
                coded_above=coded,
            )
        if kind == "famd":
            return famd_space(
                self.frames,
                self.schema,
                arg,
                name=_space_name(key),
                block_rows=FAMD_BLOCK_ROWS if compact else None,
                coded_above=coded,
            )
        ent = self.entropies()
        weights = {c: (1.0 / h if h > 0 else 0.0) for c, h in ent.items()}
        return mixed_space(
            self.frames, self.schema, weights=weights, name="identifiability", dtype=dtype, coded_above=coded
        )

    def compact_spaces(self) -> bool:
        """Whether this evaluation's encoded spaces are compact: some frame has more than
        ``COMPACT_SPACES_ABOVE`` rows (a holdout baseline's are its main evaluation's)."""
        if self._encoded_by is not None:
            return self._encoded_by[0].compact_spaces()
        return max(self._heights.values()) > COMPACT_SPACES_ABOVE

    def _baseline_space(self, key: tuple) -> EncodedSpace:
        """A holdout baseline's space: the main evaluation's encoding of the same real records
        (the same matrix object, so its searches' prepared structures are shared too) and of the
        sampled holdout records in place of the release — no second encoding of a million rows.
        The main encoding's one-hot levels are the union over real, release and holdout: levels
        only the release has are all-zero columns here, which add nothing to any distance; the
        numerics are standardised and FAMD fitted on the real records in both."""
        parent, rows = self._encoded_by
        sp = parent.space(key)
        holdout = sp["holdout"] if rows is None else sp["holdout"][rows]
        details = dict(sp.details)
        if "mean_imputed" in details:  # the encoded roles are real and the holdout sample
            details["mean_imputed"] = {
                c: {r: n for r, n in counts.items() if r == "real"} for c, counts in details["mean_imputed"].items()
            }
        return EncodedSpace(
            sp.name,
            {"real": sp["real"], "synthetic": holdout},
            details,
            categorical_slices=sp.categorical_slices,
            coded_columns=sp.coded_columns,
            axes=sp.axes,
        )

    def release_spaces(self, keep: set[str] | frozenset[str] | None) -> list[str]:
        """Drop the encoded spaces whose kind ("mixed", "identifiability", "famd") is not in
        ``keep`` — what the metrics still to run can read (:attr:`MetricSpec.spaces`); None keeps
        all. Their matrices (and the neighbour engine's structures prepared from them) are freed
        once nothing else holds them; a space read again is rebuilt, identical. Searches already
        made stay cached. Returns the names of the spaces dropped."""
        if keep is None:
            return []
        gone = [key for key in self._spaces if key[0] not in keep]
        freed = sum(m.nbytes for key in gone for m in self._spaces[key].matrices.values())
        for key in gone:
            del self._spaces[key]
        if freed >= COLLECT_FROM_BYTES:
            # the search structures of a matrix sit in reference cycles: free them before the next
            # space (a full collection costs 0.05–0.5 s in a process holding many objects: only
            # where it returns memory that matters)
            gc.collect()
        if self.compact_spaces():
            _return_freed_heap()
        return [_space_name(key) for key in gone]

    def spaces_read(self) -> set[str]:
        """The kinds of space read since the last call (and forget them): what a metric read."""
        out, self._spaces_read = self._spaces_read, set()
        return out


def coded_above() -> int:
    """The level count above which an evaluation's spaces code a categorical column instead of
    one-hot encoding it (:data:`privgate.spaces.HIGH_CARDINALITY_LEVELS`, read at each build)."""
    return int(_spaces.HIGH_CARDINALITY_LEVELS)


#: Encoded matrices dropped at once from which release_spaces runs a full garbage collection.
COLLECT_FROM_BYTES = 64 * 2**20


def _return_freed_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing elsewhere).
    The searches of a million rows free many arrays of a few MiB, which glibc keeps in its heap
    (below its mmap threshold) as resident but unused memory: measured at 250k rows, 100–130 MiB
    returned after each metric. Called after each search and each metric of an evaluation with
    compact spaces (a call costs milliseconds; such a search, seconds). Values are untouched."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None


def _space_key(space: tuple | str) -> tuple:
    if isinstance(space, str):
        if space == "famd":
            return ("famd", 2)
        return (space, None)
    kind, arg = space
    if kind == "mixed" and arg is not None:
        arg = tuple(arg)
    return (kind, arg)


def _space_name(key: tuple) -> str:
    kind, arg = key
    return kind if arg is None else f"{kind}{list(arg) if isinstance(arg, tuple) else arg}"
