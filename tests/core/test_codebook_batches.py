"""The codebook check counts levels a batch of columns at a time (one query plan per column held
the whole schema in every plan: memory grew with the square of the width). Batched, it sees
every column: a relabelled column in any batch is refused, an honest table is not."""

import numpy as np
import polars as pl
import pytest

from privgate import schema as schema_mod
from privgate.errors import CodebookMismatchError
from privgate.schema import check_codebooks, infer_schema


def _table(width: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({f"c{j}": rng.choice(["a", "b", "c", "d"], 400, p=[0.4, 0.3, 0.2, 0.1]) for j in range(width)})


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_every_batch_is_checked(monkeypatch, batch):
    monkeypatch.setattr(schema_mod, "LEVEL_COUNT_BATCH", batch)
    real = _table(7, 0)
    schema = infer_schema({"real": real})
    check_codebooks(real.lazy(), _table(7, 1).lazy(), schema)  # honest: same levels
    renamed = real.with_columns(pl.col("c6").replace_strict(["a", "b", "c", "d"], ["w", "x", "y", "z"]))
    with pytest.raises(CodebookMismatchError, match="column 'c6'"):
        check_codebooks(real.lazy(), renamed.lazy(), schema)
    counts = schema_mod._level_counts(real.lazy(), list(schema.categorical))
    assert len(counts) == 7 and all(int(c["n"].sum()) == 400 for c in counts)
