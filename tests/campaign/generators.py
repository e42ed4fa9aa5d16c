"""Hypothesis strategies for the fail-closed campaign: adversarial frames (mixed dtypes, nulls,
±inf, odd and repeated column names, empty and one-row frames, identifier-like columns), files
(Parquet, CSV, CSV with a repeated header, corrupt), gate configurations with cheap metrics and
misbehaving test-only metrics, and the tokens whose presence in an output would be a leak."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from fault_metrics import FAULTS
from hypothesis import strategies as st

# real string cells are "Zk<digits>Qx..." and real floats 271828.18<digits>: neither can arise in
# an output by chance (outputs print 4 decimals; hashes are hex without "."), so finding one is a leak
TOKEN = "Zk"
FLOAT_BASE = 271828.1828459

ODD_NAMES = [
    "x",
    "age",
    "Flag",
    "a b",
    "ünï",
    "col.1",
    "123",
    "SELECT",
    "y" * 70,
    " ",
    "tab\tname",
    'quote"d',
    "income",
    "dup",
]
KINDS = [
    "int",
    "float",
    "float_nan",
    "float_inf",
    "bool",
    "string",
    "category",
    "date",
    "datetime",
    "all_null",
    "id_like",
    "decimal",
]
CHEAP_METRICS = ["common_rows", "hitting_rate", "dcr", "authenticity", "chi_squared", "nndr"]
RELEASES = [
    "copy",
    "copy_plus_random",
    "random",
    "retyped",
    "bool_as_strings",
    "missing_column",
    "extra_column",
    "empty",
    "one_row",
]
FORMATS = ["parquet", "parquet", "csv", "csv_repeated_header", "corrupt"]


def column(kind: str, n: int, rng: np.random.Generator, j: int) -> pl.Series:
    """One column of ``n`` rows of the given kind (low cardinality so copies and matches occur)."""
    v = rng.integers(0, 4, n)
    if kind == "int":
        return pl.Series(v, dtype=pl.Int64)
    if kind in ("float", "float_nan", "float_inf"):
        x = FLOAT_BASE + v * 1.0001237 + j
        if kind == "float_nan" and n:
            x[rng.random(n) < 0.3] = np.nan
        if kind == "float_inf" and n:
            x[rng.integers(0, n)] = np.inf if rng.random() < 0.5 else -np.inf
        return pl.Series(x)
    if kind == "decimal":
        return pl.Series([int(a) for a in v], dtype=pl.Decimal(12, 2))
    if kind == "bool":
        return pl.Series(v % 2 == 0)
    if kind in ("string", "category"):
        s = pl.Series([f"{TOKEN}{a:02d}Qx{j}" for a in v])
        return s.cast(pl.Categorical) if kind == "category" else s
    if kind == "date":
        return pl.Series([date(2001, 1, 1) + timedelta(days=int(a)) for a in v], dtype=pl.Date)
    if kind == "datetime":
        return pl.Series([datetime(2001, 1, 1) + timedelta(hours=int(a)) for a in v], dtype=pl.Datetime("us"))
    if kind == "all_null":
        return pl.Series([None] * n, dtype=pl.Float64)
    if kind == "id_like":
        return pl.Series([f"{TOKEN}{i:05d}Id{j}" for i in range(n)])
    raise AssertionError(kind)


def frame(names: list[str], kinds: list[str], n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame([column(k, n, rng, j).alias(c) for j, (c, k) in enumerate(zip(names, kinds))])


def release(real: pl.DataFrame, how: str, seed: int, names: list[str], kinds: list[str]) -> pl.DataFrame:
    """A synthetic release made from ``real`` the way ``how`` says."""
    n = real.height
    random = frame(names, kinds, max(n, 1), seed + 101)
    if how == "copy":
        return real
    if how == "copy_plus_random":
        return pl.concat([real.head(n // 2), random.head(max(1, n - n // 2))], how="vertical_relaxed")
    if how == "random":
        return random
    if how == "retyped":  # the first column as text
        return real.with_columns(real.get_column(real.columns[0]).cast(pl.String))
    if how == "bool_as_strings":
        return real.with_columns(
            [pl.col(c).cast(pl.Int8).cast(pl.String) for c, d in real.schema.items() if d == pl.Boolean]
        )
    if how == "missing_column":
        return real.drop(real.columns[-1]) if real.width > 1 else real.rename({real.columns[0]: "other"})
    if how == "extra_column":
        return real.with_columns(pl.lit(1).alias("extra_col"))
    if how == "empty":
        return real.head(0)
    if how == "one_row":
        return real.head(1)
    raise AssertionError(how)


def write(frame_: pl.DataFrame, path: Path, fmt: str) -> Path:
    """Write ``frame_`` as ``fmt``; returns the path written (its suffix follows the format)."""
    if fmt == "parquet":
        path = path.with_suffix(".parquet")
        frame_.write_parquet(path)
    elif fmt in ("csv", "csv_repeated_header"):
        path = path.with_suffix(".csv")
        frame_.write_csv(path)
        if fmt == "csv_repeated_header" and frame_.width:
            text = path.read_text(encoding="utf-8")
            header, _, body = text.partition("\n")
            first = header.split(",")[0]
            path.write_text(
                f"{header},{first}\n" + "".join(f"{line},{line.split(',')[0]}\n" for line in body.splitlines()),
                encoding="utf-8",
            )
    else:  # corrupt: a Parquet magic number and nothing else
        path = path.with_suffix(".parquet")
        path.write_bytes(b"PAR1" + b"\x00" * 16)
    return path


@dataclass
class Case:
    names: list[str]
    kinds: list[str]
    n_real: int
    seed: int
    how: str
    real_format: str
    synthetic_format: str
    holdout: bool
    metrics: list[str]  # registry names, or "fault:<kind>"
    limits: dict[str, float] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    optional: set[str] = field(default_factory=set)
    html: bool = False
    registry_names: dict[str, str] = field(default_factory=dict)


SAFE_NAMES = ["x", "age", "income", "Flag", "a b", "ünï", "col.1"]
SAFE_KINDS = ["int", "float", "float_nan", "bool", "string", "category", "date", "decimal"]


@st.composite
def cases(draw: Any, max_metrics: int = 3) -> Case:
    """Half the cases have ordinary inputs that a gate can decide on (so exits 0/1/2 are
    exercised), half adversarial inputs; independently, a third of the cases gate a misbehaving metric.
    The first option of every choice is the ordinary one, so shrinking leads to an ordinary case."""
    adversarial = draw(st.integers(0, 1)) == 1
    faulty = draw(st.integers(0, 2)) == 2
    ncols = draw(st.integers(1, 4))
    names = draw(
        st.lists(st.sampled_from(ODD_NAMES if adversarial else SAFE_NAMES), min_size=ncols, max_size=ncols, unique=True)
    )
    kinds = [draw(st.sampled_from(KINDS if adversarial else SAFE_KINDS)) for _ in names]
    metrics = draw(
        st.lists(
            st.sampled_from(CHEAP_METRICS + ["fault:ok"]),
            min_size=1,
            max_size=max(1, max_metrics - faulty),
            unique=True,
        )
    )
    if faulty:
        metrics.append(f"fault:{draw(st.sampled_from(FAULTS[1:]))}")
    sizes = [12, 30, 0, 1, 2, 3] if adversarial else [12, 20, 30]
    return Case(
        names=names,
        kinds=kinds,
        n_real=draw(st.sampled_from(sizes)),
        seed=draw(st.integers(0, 2**16)),
        how=draw(st.sampled_from(RELEASES if adversarial else ["random", "copy_plus_random", "copy"])),
        real_format=draw(st.sampled_from(["parquet", "csv", "csv_repeated_header"] if adversarial else ["parquet"])),
        synthetic_format=draw(st.sampled_from(FORMATS if adversarial else ["parquet", "csv"])),
        holdout=draw(st.booleans()),
        metrics=metrics,
        limits={m: draw(st.sampled_from([0.5, 1.0, 0.05, 0.0])) for m in metrics},
        severity={m: draw(st.sampled_from(["block", "warn"])) for m in metrics},
        optional={m for m in metrics if draw(st.integers(0, 5)) == 0},
        html=draw(st.integers(0, 4)) == 0,
    )


def real_tokens(real: pl.DataFrame) -> set[str]:
    """Cell values of the real data that must never appear in an output."""
    out: set[str] = set()
    for s in real.get_columns():
        if s.dtype in (pl.String, pl.Categorical):
            out |= {v for v in s.cast(pl.String).drop_nulls().to_list() if v.startswith(TOKEN)}
        elif s.dtype == pl.Float64:
            out |= {repr(float(v))[:12] for v in s.drop_nulls().to_list() if np.isfinite(v) and abs(v) > 1000}
    return out


SECRET = "Zq"  # every real string cell of secret_real starts with it: none may reach any output


def secret_real(n: int = 60, *, second_text_column: bool = False) -> pl.DataFrame:
    """A small real frame whose text cells all start with SECRET (a numeric, a boolean and one or
    two text columns), for tests that search every output for a real value."""
    rng = np.random.default_rng(3)
    cols = {
        "x": rng.normal(size=n).round(3),
        "flag": rng.random(n) < 0.4,
        "c": [f"{SECRET}{i % 7:03d}" for i in range(n)],
    }
    if second_text_column:
        cols["d"] = [f"{SECRET}d{(i * 5) % 3}" for i in range(n)]
    return pl.DataFrame(cols)
