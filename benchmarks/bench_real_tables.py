"""Real tables as they come, through `privgate gate` (the default gate): postcodes, diagnosis codes,
dates and identifiers.

* ``adult``: the bundled Adult sample split 1,500 real / 1,500 holdout, with a birth date, an
  admission timestamp and a 5-digit postcode (about 3,000 distinct values over the three frames):
  an honest release (each column drawn from the real marginal, so no record is a real one) and a
  copy of the real records; the CPU seconds of each gate run and its exit code.
* ``identifiers``: the same with a patient identifier (distinct per record): the honest release
  with fresh identifiers, and with the real records' identifiers.
* ``texas``: Texas-like records (rows of /work/shared/data/texas_25k.parquet drawn with
  replacement to ``--rows`` and their numbers jittered) with a 20,000-level postcode and a
  5,000-level diagnosis code (Zipf-like frequencies): an honest release (drawn from other rows)
  and the same with 1 % exact copies of real records; the gate's CPU seconds with and without the
  two columns, and their ratio (``--reps``: runs each, with and without alternating; the ratio of
  the medians).

Every gate runs in a child process with one thread (`--threads 1`, OMP/BLAS threads 1); CPU
seconds are the child's user + system time. Run from the repository root with PYTHONPATH set:

    PYTHONPATH=$PWD python3 benchmarks/bench_real_tables.py adult identifiers texas --rows 25000
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
TEXAS = Path("/work/shared/data/texas_25k.parquet")


#: a gate configuration other than the default (``--drop-metrics``), or None
CONFIG: Path | None = None


def gate(real: pl.DataFrame, synthetic: pl.DataFrame, holdout: pl.DataFrame, work: Path, name: str) -> dict:
    """One `privgate gate` run of the default gate (or ``CONFIG``) in a child process: exit code,
    CPU and wall seconds."""
    paths = {}
    for role, frame in (("real", real), ("synthetic", synthetic), ("holdout", holdout)):
        paths[role] = work / f"{name}_{role}.parquet"
        frame.write_parquet(paths[role])
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PRIVGATE_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "privgate.cli",
            "gate",
            "--real",
            str(paths["real"]),
            "--synthetic",
            str(paths["synthetic"]),
            "--holdout",
            str(paths["holdout"]),
            "--release-id",
            name,
            "--no-history",
            "--threads",
            "1",
            "--quiet",
            "--json",
            str(work / f"{name}.json"),
            *(["--config", str(CONFIG)] if CONFIG is not None else []),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row = {"run": name, "exit": out.returncode, "cpu_s": round(cpu, 1), "wall_s": round(wall, 1)}
    print(row, flush=True)
    if out.returncode == 3:
        print(out.stdout[-2000:], out.stderr[-2000:], file=sys.stderr)
    return row


def _marginal_draw(frame: pl.DataFrame, n: int, seed: int) -> pl.DataFrame:
    """Each column drawn independently from ``frame``'s values: no record is a real one."""
    return pl.DataFrame(
        {c: frame[c].sample(n, with_replacement=True, seed=seed + i) for i, c in enumerate(frame.columns)}
    )


def adult_frames(seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The Adult sample (3,000 rows) with birth_date, admitted_at and zip; its first 1,500 rows and
    its last 1,500."""
    data = pl.read_parquet(ROOT / "privgate" / "data" / "adult_sample.parquet")
    rng = np.random.default_rng(seed)
    n = data.height
    born = (
        np.datetime64("2020-01-01")
        - (data["age"].to_numpy() * 365.25).astype("timedelta64[D]")
        - rng.integers(0, 365, n).astype("timedelta64[D]")
    )
    admitted = (
        np.datetime64("2019-01-01T00:00:00") + rng.integers(0, 365 * 24 * 3600, n).astype("timedelta64[s]")
    ).astype("datetime64[us]")
    pool = np.sort(rng.choice(np.arange(10_000, 99_999), 30_000, replace=False))
    zips = rng.choice(pool, n)
    data = data.with_columns(
        pl.Series("birth_date", born).cast(pl.Date),
        pl.Series("admitted_at", admitted).cast(pl.Datetime("us")),
        pl.Series("zip", [f"{z:05d}" for z in zips]),
    )
    return data[:1500], data[1500:]


def run_adult(work: Path) -> list[dict]:
    real, holdout = adult_frames()
    levels = pl.concat([real, holdout])["zip"].n_unique()
    print(
        f"adult: zip has {levels} distinct values over real + holdout "
        f"({real['zip'].n_unique()} in the 1,500 real records)",
        flush=True,
    )
    honest = _honest(real, holdout)
    return [gate(real, honest, holdout, work, "adult_honest"), gate(real, real, holdout, work, "adult_copy")]


def _honest(real: pl.DataFrame, holdout: pl.DataFrame) -> pl.DataFrame:
    """Each column drawn from the real marginal, the postcode from the postcodes of real and
    holdout records (a generator that knows the population's postcodes)."""
    zips = pl.concat([real["zip"], holdout["zip"]]).sample(real.height, with_replacement=True, seed=99)
    return _marginal_draw(real, real.height, 1).with_columns(zips.alias("zip"))


def run_identifiers(work: Path) -> list[dict]:
    real, holdout = adult_frames()

    def ids(frame: pl.DataFrame, start: int) -> pl.DataFrame:
        return frame.with_columns(pl.Series("patient_id", [f"P{start + i:07d}" for i in range(frame.height)]))

    honest = _honest(real, holdout)
    return [
        gate(ids(real, 0), ids(honest, 500_000), ids(holdout, 10_000), work, "ids_fresh"),
        gate(ids(real, 0), ids(honest, 0), ids(holdout, 10_000), work, "ids_reused"),
    ]


def texas_frames(rows: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(real, holdout, honest release) of ``rows`` each: Texas rows drawn with replacement, numbers
    jittered by 5 % of their std (so that draws are distinct records), a 20,000-level postcode and
    a 5,000-level diagnosis code with Zipf-like frequencies (the diagnosis tied to RISK_MORTALITY)."""
    base = pl.read_parquet(TEXAS)
    rng = np.random.default_rng(seed)
    num = [c for c, t in base.schema.items() if t == pl.Float64]

    def draw(n: int) -> pl.DataFrame:
        f = base[rng.integers(0, base.height, n)]
        f = f.with_columns([(pl.col(c) + pl.Series(rng.normal(0, 0.05, n)) * base[c].std()).alias(c) for c in num])
        zip_rank = np.minimum(rng.zipf(1.1, n), 20_000) - 1
        zip_rank = np.where(rng.random(n) < 0.5, rng.integers(0, 20_000, n), zip_rank)
        risk = f["RISK_MORTALITY"].cast(pl.Categorical).to_physical().to_numpy().astype(np.int64)
        dx = (np.minimum(rng.zipf(1.3, n), 1_000) - 1 + 1_000 * (risk % 5)) % 5_000
        dx = np.where(rng.random(n) < 0.3, rng.integers(0, 5_000, n), dx)
        return f.with_columns(
            pl.Series("POSTCODE", [f"7{z:05d}" for z in zip_rank]), pl.Series("DIAGNOSIS", [f"D{d:04d}" for d in dx])
        )

    return draw(rows), draw(rows), draw(rows)


def run_texas(work: Path, rows: int, reps: int = 1) -> list[dict]:
    real, holdout, honest = texas_frames(rows)
    print(
        f"texas: {rows} rows per frame; POSTCODE {pl.concat([real, holdout, honest])['POSTCODE'].n_unique()} and "
        f"DIAGNOSIS {pl.concat([real, holdout, honest])['DIAGNOSIS'].n_unique()} distinct values",
        flush=True,
    )
    rng = np.random.default_rng(7)
    copied = honest.clone()
    pos = rng.choice(rows, rows // 100, replace=False)
    src = rng.choice(rows, rows // 100, replace=False)
    copied = pl.concat([copied.with_row_index("__i").filter(~pl.col("__i").is_in(pos)).drop("__i"), real[src]])
    out = []
    drops = {"without": ["POSTCODE", "DIAGNOSIS"], "with": []}
    for kind, release in (("honest", honest), ("copies_1pct", copied)):
        for rep in range(reps):  # with and without alternate, so that a change of load hits both
            for label in ("without", "with") if rep % 2 == 0 else ("with", "without"):
                drop = drops[label]
                row = gate(real.drop(drop), release.drop(drop), holdout.drop(drop), work, f"texas_{label}_{kind}")
                out.append({**row, "columns": label, "release": kind})
    for kind in ("honest", "copies_1pct"):
        cpu = {
            label: float(np.median([r["cpu_s"] for r in out if r["columns"] == label and r["release"] == kind]))
            for label in drops
        }
        print(
            f"texas {kind}: CPU ratio with / without the two columns = {cpu['with'] / cpu['without']:.2f} "
            f"(medians of {reps}: {cpu['with']} / {cpu['without']} CPU-s)",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+", choices=["adult", "identifiers", "texas"])
    ap.add_argument("--rows", type=int, default=25_000, help="Texas-like rows per frame")
    ap.add_argument("--drop-metrics", default="", help="comma-separated metrics removed from the default gate")
    ap.add_argument("--reps", type=int, default=1, help="texas: gate runs per release and column set, alternating")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.drop_metrics:
            import yaml

            global CONFIG
            cfg = yaml.safe_load((ROOT / "privgate" / "configs" / "default_gate.yaml").read_text())
            for name in args.drop_metrics.split(","):
                cfg["metrics"].pop(name.strip())
            CONFIG = work / "gate.yaml"
            CONFIG.write_text(yaml.safe_dump(cfg))
        for part in args.parts:
            if part == "adult":
                run_adult(work)
            elif part == "identifiers":
                run_identifiers(work)
            else:
                run_texas(work, args.rows, args.reps)


if __name__ == "__main__":
    main()
