"""The gate's input fingerprint of a partitioned input, made from the partitions on the workers:
the digest :mod:`privgate.gates.fingerprint` gives the same records read as one table (schema,
then every row's seed-0 hash in order, then every seed-1 hash), of which only the 16 bytes of row
hashes per record — never a value — reach the caller, one partition at a time."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..schema import dtype_name
from .partitions import Partition, list_partitions, read_partition

__all__ = ["partition_row_hashes", "sharded_fingerprint"]


def partition_row_hashes(part: Partition, columns: list[str]) -> tuple[bytes, bytes]:
    """On a worker: the seed-0 and seed-1 row hashes of one partition, columns in ``columns``' order."""
    frame = read_partition(part, columns).select(columns)
    return (frame.hash_rows(seed=0).to_numpy().tobytes(), frame.hash_rows(seed=1).to_numpy().tobytes())


def sharded_fingerprint(client: Any, source: Any, role: str) -> dict[str, Any]:
    """``role``'s fingerprint (rows, columns, schema, content digest, source name), computed on the
    cluster; equal to the local gate's for the same records in the same order."""
    parts, shape = client.submit(list_partitions, source, role, pure=False).result()
    schema = dict(shape.schema)
    cols = sorted(schema)
    h = hashlib.sha256()
    for c in cols:
        h.update(f"{c}\x1f{schema[c]}\x1e".encode())
    second = []
    if cols:
        futures = [client.submit(partition_row_hashes, p, cols, pure=False) for p in parts]
        for fut in futures:  # in record order, one partition's hashes at a time
            first, other = fut.result()
            h.update(first)
            second.append(other)
            fut.release()
        for block in second:
            h.update(block)
    out: dict[str, Any] = {
        "rows": sum(p.rows for p in parts),
        "columns": len(schema),
        "schema": {c: dtype_name(schema[c]) for c in shape.columns},
        "content_sha256": h.hexdigest(),
        "partitions": len(parts),
    }
    if isinstance(source, (str, Path)):
        out["source"] = Path(source).name
    elif isinstance(source, (list, tuple)):
        out["source"] = f"{len(source)} files"
    return out
