"""Benchmark of the GX expectations (issue: Great Expectations integration).

What the GX layer costs on top of privgate: the import, the batch conversion and the
validation of a suite of the six named expectations, compared with the same six metrics
called directly on one shared EvaluationContext.

real = ../shared/data/adult.parquet (or the bundled 3,000-row sample with --bundled), first
--rows rows; synthetic = privgate.baselines.noisy_copy(real, seed=0) of the same size.

    python benchmarks/bench_expectations.py [--rows N] [--bundled]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEYS = ["age", "sex", "race", "marital_status"]
SENSITIVE = ["occupation"]


def _import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--bundled", action="store_true", help="use privgate/data/adult_sample.parquet")
    args = ap.parse_args()

    print(f"import privgate      {_import_seconds('privgate'):6.2f} s")
    print(f"import privgate.gx   {_import_seconds('privgate.gx'):6.2f} s  (imports GX)")

    import polars as pl

    import privgate

    root = Path(__file__).resolve().parents[1]
    src = root / "privgate/data/adult_sample.parquet" if args.bundled else root.parent / "shared/data/adult.parquet"
    real = pl.read_parquet(src).head(args.rows)
    synthetic = privgate.baselines.noisy_copy(real, seed=0)
    print(f"real {real.shape} from {src.name}, synthetic {synthetic.shape} (noisy_copy, seed 0)")

    metric_params = {
        "common_rows": {},
        "dcr": {},
        "attribute_inference": {},
        "membership_inference": {},
        "disclosure_identity": {},
        "disclosure_attribute": {},
    }
    from privgate.catalogue import get_metric
    from privgate.context import EvaluationContext
    from privgate.registry import run_spec

    t = time.perf_counter()
    ctx = EvaluationContext(real, synthetic, keys=KEYS, sensitive=SENSITIVE, seed=0)
    direct = {}
    for name, p in metric_params.items():
        s = time.perf_counter()
        direct[name] = run_spec(get_metric(name), ctx, p).value
        print(f"  direct {name:<22} {time.perf_counter() - s:6.2f} s  value {direct[name]:.4f}")
    t_direct = time.perf_counter() - t
    print(f"direct: six metrics, one context           {t_direct:6.2f} s")

    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    import privgate.gx as pe

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "real.parquet"
        real.write_parquet(path)
        gctx = gx.get_context(mode="ephemeral")
        gctx.variables.progress_bars = ProgressBarsConfig(globally=False)
        suite = gx.ExpectationSuite(name="bench")
        for name, cls in pe.NAMED.items():
            suite.add_expectation(cls(real=str(path), threshold=0.5, keys=KEYS, sensitive=SENSITIVE))

        t = time.perf_counter()
        pdf = pe.to_pandas_batch(synthetic)
        t_conv = time.perf_counter() - t
        print(f"Polars → Arrow-backed pandas batch          {t_conv:6.2f} s")
        for label in ("cold (file read, new context)", "warm (cached real data + context)"):
            if label.startswith("cold"):
                pe.clear_cache()
                pe.compute.clear_context_cache()
            t = time.perf_counter()
            res = pe.validate_release(pdf, suite, context=gctx)
            t_gx = time.perf_counter() - t
            errored = [pe.summarise(r) for r in res.results if pe.is_errored(r)]
            for row in errored:
                print(f"  ERRORED {row['metric']}: {row['error']}")
            in_metrics = sum(r.result["details"]["seconds"] for r in res.results if not pe.is_errored(r))
            print(
                f"GX suite of six named expectations, {label}: {t_gx:6.2f} s "
                f"(metrics {in_metrics:.2f} s, GX + loading + conversion {t_gx - in_metrics:.2f} s)"
            )
        observed = {pe.summarise(r)["metric"]: pe.summarise(r)["risk"] for r in res.results}
        same = all(observed.get(n) is not None and abs(observed[n] - direct[n]) < 1e-12 for n in direct)
        print(f"observed values equal the direct values: {same}")


if __name__ == "__main__":
    main()
