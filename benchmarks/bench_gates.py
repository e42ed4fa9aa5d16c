"""Benchmark of gates, history and reports.

Prints seconds for: one gate run with the default configuration on the bundled Adult sample
(3,000 real rows, 3,000-row noisy copy, 3,000-row holdout; evaluate time vs. the gate's own
overhead: loading, fingerprinting, deciding, recording); the input fingerprint of a 25,000-row
frame; recording N runs into SQLite (and PostgreSQL when PRIVGATE_TEST_POSTGRES_URL is set) from
one process and from 4 concurrent processes; the history queries on that many runs; rendering the
HTML and JSON reports.

    python benchmarks/bench_gates.py [--runs 500]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import polars as pl
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from privgate import baselines  # noqa: E402
from privgate.data import load_example  # noqa: E402
from privgate.gates import default_gate_config, frame_fingerprint, run_gate  # noqa: E402
from privgate.gates import run as gate_run  # noqa: E402
from privgate.history import HistoryStore  # noqa: E402
from privgate.render import write_html_report, write_json_report  # noqa: E402


def _clone(outcome, release):
    import copy

    o = copy.copy(outcome)
    o.run_id = uuid.uuid4().hex
    o.release_id = release
    return o


def _writer(url, template, n, tag):
    store = HistoryStore(url)
    for i in range(n):
        store.record(_clone(template, f"{tag}-{i}"))
    store.close()


def bench_store(url, template, runs, label):
    store = HistoryStore(url)
    t = time.perf_counter()
    for i in range(runs):
        store.record(_clone(template, f"s-{i}"))
    one = time.perf_counter() - t
    ctx = mp.get_context("spawn")
    per = runs // 4
    t = time.perf_counter()
    procs = [ctx.Process(target=_writer, args=(url, template, per, f"p{w}")) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    four = time.perf_counter() - t
    n = store.runs(template.dataset).height
    print(
        f"{label}: record {runs} runs, 1 process: {one:.2f} s ({1000 * one / runs:.1f} ms/run); "
        f"4 processes x {per}: {four:.2f} s incl. process start; rows present {n} "
        f"(expected {runs + 4 * per})"
    )
    for name, fn in [
        ("runs()", lambda: store.runs(template.dataset)),
        ("metric_history()", lambda: store.metric_history(template.dataset)),
        ("metric_history(metric)", lambda: store.metric_history(template.dataset, "nnaa")),
        ("last_accepted()", lambda: store.last_accepted(template.dataset)),
        ("regressions()", lambda: store.regressions(template.dataset)),
    ]:
        t = time.perf_counter()
        out = fn()
        print(
            f"  {name:24s} {time.perf_counter() - t:.3f} s"
            + (f"  ({out.height} rows)" if isinstance(out, pl.DataFrame) else "")
        )
    return store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=500)
    args = ap.parse_args()
    real, hold = load_example(), load_example("adult_holdout")
    syn = baselines.noisy_copy(real, seed=2)
    cfg = default_gate_config("bench")

    calls = {}
    orig = gate_run._evaluate

    def timed(*a, **k):
        t = time.perf_counter()
        r = orig(*a, **k)
        calls["evaluate"] = time.perf_counter() - t
        return r

    gate_run._evaluate = timed
    t = time.perf_counter()
    outcome = run_gate(cfg, real, syn, holdout=hold, release_id="bench")
    total = time.perf_counter() - t
    gate_run._evaluate = orig
    print(
        f"gate (default config, 7 metrics + holdout baselines, 3000/3000/3000 rows): {total:.2f} s; "
        f"evaluate {calls['evaluate']:.2f} s; gate overhead {total - calls['evaluate']:.3f} s; "
        f"decision {outcome.decision}"
    )

    texas = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "texas_25k.parquet"
    big = pl.read_parquet(texas) if texas.exists() else pl.concat([real] * 9)[:25000]
    t = time.perf_counter()
    frame_fingerprint(big)
    print(f"fingerprint of {big.height} x {big.width}: {time.perf_counter() - t:.3f} s")

    with tempfile.TemporaryDirectory() as d:
        store = bench_store(str(Path(d) / "h.sqlite"), outcome, args.runs, "SQLite")
        t = time.perf_counter()
        write_html_report(outcome, Path(d) / "r.html", history=store)
        print(f"HTML report with {store.runs('bench').height}-run history: {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        write_json_report(outcome, Path(d) / "r.json")
        print(f"JSON report: {time.perf_counter() - t:.3f} s")
        store.close()

    pg = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")
    if pg:
        schema = f"privgate_bench_{uuid.uuid4().hex[:8]}"
        eng = sa.create_engine(pg)
        with eng.begin() as c:
            c.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        try:
            sep = "&" if "?" in pg else "?"
            bench_store(f"{pg}{sep}options=-csearch_path%3D{schema}", outcome, args.runs, "PostgreSQL").close()
        finally:
            with eng.begin() as c:
                c.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
            eng.dispose()


if __name__ == "__main__":
    main()
