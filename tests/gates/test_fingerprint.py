"""Input fingerprints: schema, counts and a content hash that identifies the data without holding it."""

from __future__ import annotations

import json

import polars as pl

from privgate.gates import frame_fingerprint, inputs_fingerprint


def test_fingerprint_identifies_content_not_values():
    a = pl.DataFrame({"name": ["Ada Lovelace", "Alan Turing"], "x": [1815, 1912]})
    fp = frame_fingerprint(a, source="/secret/path/real.parquet")
    assert fp["rows"] == 2 and fp["columns"] == 2 and fp["schema"] == {"name": "String", "x": "Int64"}
    assert len(fp["content_sha256"]) == 64 and fp["source"] == "real.parquet"
    text = json.dumps(fp)
    assert "Ada" not in text and "1815" not in text and "/secret" not in text
    # same content → same hash (column order does not matter); any change → another hash
    assert frame_fingerprint(a.select("x", "name"))["content_sha256"] == fp["content_sha256"]
    changed = a.with_columns(pl.when(pl.col("x") == 1912).then(1913).otherwise(pl.col("x")).alias("x"))
    assert frame_fingerprint(changed)["content_sha256"] != fp["content_sha256"]
    assert frame_fingerprint(a.reverse())["content_sha256"] != fp["content_sha256"]  # row order counts
    assert frame_fingerprint(a.cast({"x": pl.Float64}))["content_sha256"] != fp["content_sha256"]  # dtype counts


def test_inputs_fingerprint_skips_missing_roles():
    a = pl.DataFrame({"x": [1.0]})
    fp = inputs_fingerprint({"real": a, "synthetic": a, "holdout": None}, {})
    assert set(fp) == {"hash_algorithm", "polars_version", "real", "synthetic"}
    assert fp["real"]["content_sha256"] == fp["synthetic"]["content_sha256"]


def test_enum_labels_stay_out_of_the_fingerprint():
    # str(pl.Enum(...)) lists every category label (rare levels of the real data included)
    levels = ["common", "RareLevel-Jane-Doe"]
    a = pl.DataFrame(
        {"c": ["common", "common"], "l": [["common"], ["common"]]},
        schema={"c": pl.Enum(levels), "l": pl.List(pl.Enum(levels))},
    )
    fp = inputs_fingerprint({"real": a}, {})
    assert fp["real"]["schema"] == {"c": "Enum(2 categories)", "l": "List"}
    assert "RareLevel" not in json.dumps(fp)
    # the content hash still tells another category set apart
    b = a.with_columns(
        pl.col("c").cast(pl.Enum(["common", "other"])), pl.col("l").cast(pl.List(pl.Enum(["common", "other"])))
    )
    assert frame_fingerprint(b)["content_sha256"] != fp["real"]["content_sha256"]
