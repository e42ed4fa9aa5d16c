"""The exact matches of a sharded evaluation — copies of real records in the release and reused
identifier values — by hash buckets on the workers.

Each partition's rows are split by a 64-bit hash of the compared values into B buckets (B = the
largest partition count of the roles); equal values share a hash, so every match lies inside one
bucket, and bucket b's worker joins only bucket b's rows of every partition exactly
(:mod:`privgate.copies`: a hash collision is never a match). A bucket holds about one
partition's rows; the caller receives the matched real positions or one flag per release record.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import polars as pl

from ..copies import carries_real_identifier, copied_rows
from ..schema import Schema, normalise_frame
from .encode import recoded, with_mapped
from .partitions import Partition, read_partition

__all__ = ["sharded_copies", "sharded_distinct", "sharded_identifier_hits"]


def _value_hash(columns: list[str]) -> pl.Expr:
    """A 64-bit hash of the columns' values (equal values, equal hashes)."""
    return (pl.struct(columns) if len(columns) > 1 else pl.col(columns[0])).hash(seed=7).alias("__h")


def _buckets(
    part: Partition,
    kinds: dict[str, str],
    columns: list[str],
    n: int,
    keep: np.ndarray | None,
    row_index: bool,
    hashes_only: bool = False,
    among: np.ndarray | None = None,
    codes: Any = None,
    mapped: dict | None = None,
) -> list[pl.DataFrame]:
    """On a worker: ``part``'s normalised ``columns`` (its rows ``keep`` — global positions — when
    given; with their global positions as ``__row`` when ``row_index``), split into ``n`` buckets
    by the hash of the columns' values. ``hashes_only``: the hashes (``__h``) in place of the
    values — 8 bytes a row, for a first pass over wide values; ``among``: only the rows whose
    hash is in this array (the candidates a first pass found). Both are for one column whose
    nulls never match nor count, and leave its null rows out. ``codes``: the label-free view's
    recoding — {"codes": ..., "sources": ...} as :class:`privgate.sharded.encode.Inputs` holds
    them; ``mapped``: the partition's mapped columns in the view (a dependency of the task)."""
    frame = normalise_frame(read_partition(part, columns), Schema({c: kinds[c] for c in columns}))
    ids = np.arange(part.start, part.stop, dtype=np.int64)
    if mapped is not None:
        frame = with_mapped(frame, mapped, None)
    frame = recoded(frame, (codes or {}).get("codes"), part.role, ids, (codes or {}).get("sources"))
    if keep is not None:
        ids = keep[(keep >= part.start) & (keep < part.stop)]
        frame = frame[ids - part.start]
    if row_index:
        frame = frame.with_columns(pl.Series("__row", ids, dtype=pl.Int64))
    if hashes_only or among is not None:
        frame = frame.filter(pl.all_horizontal([pl.col(c).is_not_null() for c in columns]))
    frame = frame.with_columns(_value_hash(columns))
    if among is not None:
        frame = frame.filter(pl.col("__h").is_in(pl.Series(among, dtype=pl.UInt64).implode()))
    if hashes_only:
        frame = frame.drop(columns)
    frame = frame.with_columns((pl.col("__h") % n).alias("__b"))
    if not hashes_only:
        frame = frame.drop("__h")
    return [frame.filter(pl.col("__b") == b).drop("__b") for b in range(n)]


def _split(
    client: Any,
    parts: list[Partition],
    kinds: dict[str, str],
    columns: list[str],
    n: int,
    keep: np.ndarray | None,
    row_index: bool,
    hashes_only: bool = False,
    among: np.ndarray | None = None,
    codes: Any = None,
    mapped: Any = None,
) -> list[list[Any]]:
    """Per bucket, the futures of every partition's piece of it (``mapped``: per partition start,
    the future of its mapped columns in a label-free view)."""
    split = [
        client.submit(
            _buckets,
            p,
            kinds,
            columns,
            n,
            keep,
            row_index,
            hashes_only,
            among,
            codes,
            (mapped or {}).get(p.start),
            pure=False,
        )
        for p in parts
    ]
    return [[client.submit(operator.getitem, s, b, pure=False) for s in split] for b in range(n)]


def _shared_hashes(real: list[pl.DataFrame], other: list[pl.DataFrame]) -> np.ndarray:
    """On a worker: the value hashes one bucket's real and other rows share (non-null values)."""
    r = pl.concat(real).get_column("__h").unique()
    o = pl.concat(other).get_column("__h").unique()
    return o.filter(o.is_in(r.implode())).to_numpy()


def _copies_in_bucket(
    real: list[pl.DataFrame], synthetic: list[pl.DataFrame], columns: list[str]
) -> tuple[np.ndarray, int]:
    """On a worker: (global positions of one bucket's real rows copied in its release rows, how
    many distinct records they are)."""
    r = pl.concat(real)
    hits = copied_rows(r.lazy(), pl.concat(synthetic).lazy(), columns)
    if not hits.size:
        return hits, 0
    distinct = r.filter(pl.col("__row").is_in(pl.Series(hits).implode())).select(columns).unique().height
    return hits, int(distinct)


def sharded_copies(
    client: Any,
    real_parts: list[Partition],
    release_parts: list[Partition],
    release_keep: np.ndarray | None,
    kinds: dict[str, str],
    columns: list[str],
    rows: np.ndarray | None,
    codes: Any = None,
    mapped: Any = None,
) -> tuple[np.ndarray, int]:
    """(sorted positions of the real records — of ``rows`` only — equal to some release record —
    of ``release_keep`` only (global positions) —, how many distinct records they are), joined
    bucket by bucket on the workers (``codes``: the label-free view's recoding by role; ``mapped``: per
    release partition start, the future of its mapped columns in the view)."""
    n = max(len(real_parts), len(release_parts))
    real = _split(client, real_parts, kinds, columns, n, rows, True, codes=codes)
    syn = _split(client, release_parts, kinds, columns, n, release_keep, False, codes=codes, mapped=mapped)
    found = client.gather([client.submit(_copies_in_bucket, real[b], syn[b], columns, pure=False) for b in range(n)])
    hits = np.sort(np.concatenate([h for h, _ in found])) if found else np.empty(0, dtype=np.int64)
    return hits.astype(np.int64), int(sum(d for _, d in found))


def _hits_in_bucket(real: list[pl.DataFrame], other: list[pl.DataFrame], column: str) -> np.ndarray:
    """On a worker: global positions of one bucket's release rows whose ``column`` value a real
    record holds."""
    o = pl.concat(other)
    hit = carries_real_identifier(pl.concat(real), o, [column])
    return o.get_column("__row").to_numpy()[hit]


def sharded_identifier_hits(
    client: Any, parts: dict[str, list[Partition]], kinds: dict[str, str], identifiers: list[str], role: str
) -> np.ndarray:
    """Per ``role`` record: whether some identifier column holds a value a real record holds.
    Identifiers are wide and distinct, so a first pass buckets their 64-bit hashes only and finds
    the hashes both sides hold; the second compares the values of those rows alone, exactly."""
    size = sum(p.rows for p in parts[role])
    out = np.zeros(size, dtype=bool)
    n = max(len(parts["real"]), len(parts[role]))
    for col in identifiers:
        real_h = _split(client, parts["real"], kinds, [col], n, None, False, hashes_only=True)
        other_h = _split(client, parts[role], kinds, [col], n, None, False, hashes_only=True)
        found = client.gather([client.submit(_shared_hashes, real_h[b], other_h[b], pure=False) for b in range(n)])
        among = np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.uint64)
        del real_h, other_h
        if not among.size:
            continue
        real = _split(client, parts["real"], kinds, [col], n, None, False, among=among)
        other = _split(client, parts[role], kinds, [col], n, None, True, among=among)
        for pos in client.gather(
            [client.submit(_hits_in_bucket, real[b], other[b], col, pure=False) for b in range(n)]
        ):
            out[pos] = True
    return out


def _distinct_in_bucket(pieces: list[pl.DataFrame], column: str) -> int:
    """On a worker: the distinct non-null values of one bucket of ``column``."""
    return int(pl.concat(pieces).get_column(column).drop_nulls().n_unique())


def _distinct_hashes(pieces: list[pl.DataFrame]) -> tuple[int, np.ndarray]:
    """On a worker: (distinct hashes of one bucket's rows, the hashes of more than one row)."""
    h = pl.concat(pieces).get_column("__h")
    counts = h.value_counts()
    return int(counts.height), counts.filter(pl.col("count") > 1).get_column("__h").to_numpy()


def sharded_distinct(client: Any, parts: list[Partition], column: str, kind: str) -> int:
    """The distinct non-null values of ``column`` over ``parts``, counted bucket by bucket (equal
    values share a bucket, so the buckets' counts add up exactly). A first pass counts distinct
    64-bit hashes; the values of the rows whose hash repeats (a repeated value, or a collision)
    are then counted exactly — so wide values are read whole only where they repeat."""
    n = max(1, len(parts))
    kinds = {column: kind}
    first = client.gather(
        [
            client.submit(_distinct_hashes, piece, pure=False)
            for piece in _split(client, parts, kinds, [column], n, None, False, hashes_only=True)
        ]
    )
    repeated = np.unique(np.concatenate([r for _, r in first])) if first else np.empty(0, dtype=np.uint64)
    total = sum(d for d, _ in first)
    if not repeated.size:
        return int(total)
    pieces = _split(client, parts, kinds, [column], n, None, False, among=repeated)
    exact = sum(client.gather([client.submit(_distinct_in_bucket, pieces[b], column, pure=False) for b in range(n)]))
    return int(total - repeated.size + exact)
