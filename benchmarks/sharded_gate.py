"""The sharded gate on a local Dask cluster against the local gate, in one run.

Data (seeded, Texas-like, as benchmarks/bench_million.py): real, holdout and an honest release are
independent bootstraps of /work/shared/data/texas_25k.parquet, each through
privgate.baselines.noisy_copy (so the release is people of the same population, not the training
records); the "copies" release is the honest one with ``--copies`` (1 %) of its records replaced by
exact copies of real records. Each role is written as a folder of Parquet files of
``--rows-per-file`` records (one row group each): the workers read their partitions from there.

The gate is the shipped default gate (every metric of it is sharded: docs/cluster.md, "Sharded
gate"; a metric of it that were not would be left out, ``sharded_config``). Measured:

* ``alone``: the local gate, in a fresh process, on a quarter of the rows (``--rows`` / 4): its
  peak RSS against one worker's memory limit — above it, one such worker could not gate even a
  quarter of the release alone;
* ``local``: the local gate, in a fresh process, on all the rows (no limit): wall time, CPU
  seconds, peak RSS, exit code;
* ``sharded``: ``run_gate(..., executor=cluster, sharded=True)`` on a ``distributed.LocalCluster``
  of ``--workers`` single-thread worker processes of ``--worker-memory`` each, for the honest and
  the copies release: wall time, CPU seconds (the workers' and this process's), each worker's
  peak RSS (VmHWM, reset before each run), exit code, and the ratios to ``local``.

Verdicts: the honest release passes (exit 0), the copies are flagged (exit ≥ 1, memorisation or
common_rows firing), no worker exceeded its limit (none restarted), the local gate of a quarter
needed more than one worker's limit.

    python benchmarks/sharded_gate.py --rows 240000 --worker-memory 1GiB
    python benchmarks/sharded_gate.py --rows 1000000 --worker-memory 4GiB      # hours on 2 cores
    python benchmarks/sharded_gate.py --rows 12000 --rows-per-file 3000 --worker-memory 1GiB --tails 0.08
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _mem import reset_peak  # noqa: E402

TEXAS = REPO.parent / "shared/data/texas_25k.parquet"

LOCAL = """
import json, resource, sys, time
import polars as pl
from privgate.gates import run_gate
folders, cfg, rows = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
frames = {r: pl.read_parquet(f + "/*.parquet").head(rows) for r, f in folders.items()}
out = run_gate(cfg, frames["real"], frames["synthetic"], holdout=frames["holdout"], record=False, threads=1)
r1 = resource.getrusage(resource.RUSAGE_SELF)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over the exec from the process that forked this one
hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(json.dumps({"exit": out.exit_code, "seconds": time.perf_counter() - t0,
                  "cpu": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
                  "peak_mib": hwm / 1024, "errors": sorted(out.report.errors) if out.report else None}))
"""


#: the numeric column a "tails" release draws from a wider domain on ``--tails`` of its records
TAILS_COLUMN = "LENGTH_OF_STAY"


def write_inputs(
    rows: int, per_file: int, copies: float, folder: Path, seed: int = 0, tails: float = 0.0
) -> dict[str, dict[str, str]]:
    """Write the roles as Parquet folders; returns {"honest": folders, "copies": folders} and, with
    ``tails``, "tails": the honest release with that share of its records (every k-th) holding a
    ``TAILS_COLUMN`` value drawn from 1.5 to 10 real ranges above the real maximum — an honest
    generator sampling a published domain wider than the training records' range."""
    import polars as pl
    import pyarrow.parquet as pq

    from privgate.baselines import noisy_copy

    base = pl.read_parquet(TEXAS)
    rng = np.random.default_rng(seed)
    frames = {
        role: noisy_copy(base[rng.integers(0, base.height, rows)], seed=seed + i)
        for i, role in enumerate(("real", "holdout", "synthetic"), start=1)
    }
    k = int(round(copies * rows))
    where = np.sort(rng.choice(rows, k, replace=False))
    copied = frames["synthetic"].with_row_index("__i").filter(~pl.col("__i").is_in(where)).drop("__i")
    frames["copies"] = pl.concat([copied, frames["real"][np.sort(rng.choice(rows, k, replace=False))]])
    if tails:
        col = frames["real"].get_column(TAILS_COLUMN)
        lo, hi = float(col.min()), float(col.max())
        far = np.zeros(rows, dtype=bool)
        far[:: max(1, round(1 / tails))] = True
        wide = np.round(hi + (hi - lo) * np.random.default_rng(seed + 9).uniform(1.5, 10.0, rows))
        frames["tails"] = frames["synthetic"].with_columns(
            pl.when(pl.Series(far)).then(pl.Series(wide)).otherwise(pl.col(TAILS_COLUMN)).alias(TAILS_COLUMN)
        )
    out = {}
    for role, frame in frames.items():
        d = folder / role
        d.mkdir(parents=True, exist_ok=True)
        for i, start in enumerate(range(0, frame.height, per_file)):
            pq.write_table(
                frame[start : start + per_file].to_arrow(), d / f"part-{i:04d}.parquet", row_group_size=per_file
            )
        out[role] = str(d)
    return {
        "honest": {r: out[r] for r in ("real", "synthetic", "holdout")},
        "copies": {"real": out["real"], "synthetic": out["copies"], "holdout": out["holdout"]},
        **({"tails": {"real": out["real"], "synthetic": out["tails"], "holdout": out["holdout"]}} if tails else {}),
    }


def sharded_config(path: Path) -> str:
    """The default gate without the metrics a sharded evaluation cannot compute."""
    import yaml

    from privgate.gates import DEFAULT_CONFIG_PATH
    from privgate.sharded.context import NOT_SHARDED

    cfg = yaml.safe_load(Path(DEFAULT_CONFIG_PATH).read_text())
    cfg["metrics"] = {m: v for m, v in cfg["metrics"].items() if m not in NOT_SHARDED}
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)


def local_run(folders: dict[str, str], cfg: str, rows: int) -> dict:
    """The local gate in a fresh process on the first ``rows`` records of each role."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PRIVGATE_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", LOCAL, json.dumps(folders), cfg, str(rows)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    if done.returncode:
        return {"exit": None, "error": done.stderr[-400:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _usage() -> dict:
    """On a worker: its CPU seconds and peak RSS (MiB) since the last reset."""
    import resource

    from _mem import peak_rss_mib

    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu": r.ru_utime + r.ru_stime, "peak_mib": peak_rss_mib()}


def sharded_run(client, folders: dict[str, str], cfg: str) -> dict:
    """The sharded gate on the cluster: wall, CPU (workers + this process), per-worker peaks."""
    import resource

    from privgate.gates import run_gate

    client.run(reset_peak)
    before = client.run(_usage)
    workers = set(before)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = run_gate(
        cfg,
        folders["real"],
        folders["synthetic"],
        holdout=folders["holdout"],
        record=False,
        threads=1,
        executor=client,
        sharded=True,
    )
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    after = client.run(_usage)
    cpu = sum(after[w]["cpu"] - before[w]["cpu"] for w in after if w in before)
    cpu += r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    fired = sorted({c.metric for c in out.checks if c.verdict in ("warn", "block")})
    return {
        "exit": out.exit_code,
        "seconds": seconds,
        "cpu": cpu,
        "peaks_mib": {w: round(after[w]["peak_mib"], 1) for w in after},
        "restarted": sorted(workers - set(after)),
        "fired": fired,
        "errors": sorted(out.report.errors) if out.report else [c.message for c in out.checks],
        "tasks": (out.report.params.get("sharded") or {}).get("search_tasks") if out.report else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=240_000, help="records per role (real, holdout, release)")
    ap.add_argument("--rows-per-file", type=int, default=20_000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--worker-memory", default="4GiB")
    ap.add_argument("--copies", type=float, default=0.01)
    ap.add_argument("--skip-local", action="store_true", help="no local gate of all the rows")
    ap.add_argument(
        "--tails",
        type=float,
        default=0.0,
        help="also gate, locally and sharded, a 'tails' release: the honest one with this share of its "
        f"records' {TAILS_COLUMN} far beyond the real range (0: none)",
    )
    ap.add_argument(
        "--alone",
        default="",
        help="more record counts (comma-separated) at which to measure the local gate's peak: the "
        "largest that fits one worker bounds what one worker could gate alone (the local peak "
        "is not monotone: above 100,000 records the queries are sampled, above 200,000 the "
        "spaces are float32)",
    )
    args = ap.parse_args()
    import dask
    import distributed
    from dask.utils import parse_bytes

    limit_mib = parse_bytes(args.worker_memory) / 2**20
    tmp = Path(tempfile.mkdtemp(prefix="privgate-sharded-bench-"))
    t = time.perf_counter()
    inputs = write_inputs(args.rows, args.rows_per_file, args.copies, tmp, tails=args.tails)
    cfg = sharded_config(tmp / "gate.yaml")
    print(
        f"inputs: {args.rows:,} records per role in files of {args.rows_per_file:,} ({time.perf_counter() - t:.0f} s)"
    )
    alone = local_run(inputs["honest"], cfg, args.rows // 4)
    print(f"alone: local gate of {args.rows // 4:,} records per role: {json.dumps(alone)}")
    curve = {args.rows // 4: alone.get("peak_mib", 0.0)}
    for n in (int(x) for x in args.alone.split(",") if x.strip()):
        curve[n] = local_run(inputs["honest"], cfg, n).get("peak_mib", 0.0)
        print(f"alone: local gate of {n:,} records per role: peak {curve[n]:,.0f} MiB")
    local = {} if args.skip_local else local_run(inputs["honest"], cfg, args.rows)
    print(f"local: local gate of {args.rows:,} records per role: {json.dumps(local)}")
    local_tails = local_run(inputs["tails"], cfg, args.rows) if args.tails else {}
    if local_tails:
        print(f"local tails: local gate of {args.rows:,} records per role: {json.dumps(local_tails)}")
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "POLARS_MAX_THREADS": "1", "PRIVGATE_THREADS": "1"}
    runs = {}
    with dask.config.set(
        {
            "distributed.worker.memory.pause": False,
            "distributed.worker.memory.spill": False,
            "distributed.worker.memory.target": False,
        }
    ):
        with (
            distributed.LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=args.worker_memory,
                dashboard_address=None,
                env=env,
            ) as lc,
            distributed.Client(lc) as client,
        ):
            for kind in ("honest", "copies", *(("tails",) if args.tails else ())):
                runs[kind] = sharded_run(client, inputs[kind], cfg)
                print(f"sharded {kind}: {json.dumps(runs[kind])}")
    print()
    h, c = runs["honest"], runs["copies"]
    print("| run | exit | wall s | CPU s | peak MiB (per worker) |")
    print("| --- | --- | --- | --- | --- |")
    if local:
        print(
            f"| local, {args.rows:,} | {local.get('exit')} | {local.get('seconds', 0):.1f} | {local.get('cpu', 0):.1f} | "
            f"{local.get('peak_mib', 0):,.0f} |"
        )
    print(
        f"| local, {args.rows // 4:,} | {alone.get('exit')} | {alone.get('seconds', 0):.1f} | {alone.get('cpu', 0):.1f} | "
        f"{alone.get('peak_mib', 0):,.0f} |"
    )
    if local_tails:
        print(
            f"| local tails, {args.rows:,} | {local_tails.get('exit')} | {local_tails.get('seconds', 0):.1f} | "
            f"{local_tails.get('cpu', 0):.1f} | {local_tails.get('peak_mib', 0):,.0f} |"
        )
    for kind, r in runs.items():
        print(
            f"| sharded {kind}, {args.workers} × {args.worker_memory} | {r['exit']} | {r['seconds']:.1f} | "
            f"{r['cpu']:.1f} | {', '.join(f'{v:,.0f}' for v in r['peaks_mib'].values())} |"
        )
    if local.get("seconds"):
        print(
            f"ratios sharded honest / local: wall {h['seconds'] / local['seconds']:.2f}×, CPU "
            f"{h['cpu'] / local['cpu']:.2f}×, largest worker peak / local peak "
            f"{max(h['peaks_mib'].values()) / local['peak_mib']:.2f}"
        )
    if local.get("peak_mib"):
        curve[args.rows] = local["peak_mib"]
    fits = [n for n, p in curve.items() if p <= limit_mib]
    print(
        "local peaks (MiB) by records per role: "
        + ", ".join(f"{n:,}: {p:,.0f}" for n, p in sorted(curve.items()))
        + f"; the most that fit one worker among them: {max(fits) if fits else 'none'}"
    )
    verdicts = {
        "one worker could not gate a quarter alone (every measured local peak from a quarter up > worker limit)": all(
            p > limit_mib for n, p in curve.items() if n >= args.rows // 4
        )
        and (not fits or args.rows >= 4 * max(fits)),
        "no worker over its limit (none restarted, every peak below the limit)": not h["restarted"]
        and not c["restarted"]
        and max([*h["peaks_mib"].values(), *c["peaks_mib"].values()]) < limit_mib,
        "honest release passes (exit 0)": h["exit"] == 0,
        "1 % exact copies flagged (exit ≥ 1 by memorisation or common_rows)": c["exit"] in (1, 2)
        and bool({"memorisation", "common_rows"} & set(c["fired"])),
        "local gate of all rows agrees on the honest release": not local or local.get("exit") == h["exit"],
    }
    if args.tails:
        t = runs["tails"]
        verdicts["the tails release decided on the cluster as locally (not blocked for its tails)"] = (
            t["exit"] == local_tails.get("exit") and t["exit"] != 3
        )
        print(
            f"tails release, sharded / local: wall {t['seconds'] / max(local_tails.get('seconds', 0), 1e-9):.2f}×, "
            f"CPU {t['cpu'] / max(local_tails.get('cpu', 0), 1e-9):.2f}×; "
            f"sharded tails / sharded honest wall {t['seconds'] / h['seconds']:.2f}×"
        )
    for what, ok in verdicts.items():
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
