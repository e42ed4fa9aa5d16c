"""Benchmark of the synthpop disclosure measures.

1. Texas 25k (../shared/data/texas_25k.parquet, 25,000 rows) against a 25,000-row synthetic set
   (privgate.baselines.noisy_copy, seed 0) through ``multi_disclosure`` with keys DISCHARGE,
   SEX_CODE, PAT_AGE, RACE and targets RISK_MORTALITY, LENGTH_OF_STAY (ngroups 10),
   TOTAL_CHARGES (ngroups 20). Budget: <= 3 s.
2. The SD2011 example of ../shared/reference/synthpop/README.md (case i_sd2011_vignette: 5,000
   rows, keys sex, age, region, placesize, five targets, income grouped into 20 with cont_na -8)
   through ``multi_disclosure``. Budget: <= 1 s.

Each is run ``--repeat`` times after one warm-up call (imports, first Polars use); the median
and the minimum are printed, with the per-target ``disclosure`` time of the Texas case.

    python benchmarks/bench_disclosure.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"


def timed(fn, repeat: int) -> tuple[float, float, object]:
    fn()  # warm-up
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import polars as pl

    from privgate.baselines import noisy_copy
    from privgate.disclosure import disclosure, multi_disclosure

    warnings.simplefilter("ignore")
    real = pl.read_parquet(SHARED / "data" / "texas_25k.parquet")
    syn = noisy_copy(real, seed=0)
    keys = ["DISCHARGE", "SEX_CODE", "PAT_AGE", "RACE"]
    targets = ["RISK_MORTALITY", "LENGTH_OF_STAY", "TOTAL_CHARGES"]
    ngroups = [0, 10, 20]
    print(f"texas: real {real.shape}, synthetic {syn.shape} (privgate.baselines.noisy_copy, seed 0)")
    med, best, res = timed(lambda: multi_disclosure(real, syn, keys, targets, ngroups_targets=ngroups), args.repeat)
    status = "OK" if med <= 3.0 else "OVER BUDGET"
    print(f"texas multi_disclosure (3 targets)   median {med:6.3f} s  min {best:6.3f} s  budget 3 s  {status}")
    for t, ng in zip(targets, ngroups):
        m1, b1, _ = timed(lambda: disclosure(real, syn, keys, t, ngroups_target=ng), args.repeat)
        print(f"  disclosure target {t:<15} median {m1:6.3f} s  min {b1:6.3f} s")
    for t in targets:
        r = res.per_target[t]
        print(
            f"  {t:<15} UiO {r.mean('UiO'):6.2f}  repU {r.mean('repU'):6.2f}  "
            f"Dorig {r.mean('Dorig'):6.2f}  DiSCO {r.mean('DiSCO'):6.2f}"
        )

    case = SHARED / "reference" / "synthpop" / "i_sd2011_vignette"
    sd_real = pl.read_csv(case / "real.csv", null_values=[""])
    sd_syn = pl.read_csv(case / "syn.csv", null_values=[""])
    sd_keys = ["sex", "age", "region", "placesize"]
    sd_targets = ["depress", "income", "ls", "marital", "workab"]
    med2, best2, res2 = timed(
        lambda: multi_disclosure(
            sd_real, sd_syn, sd_keys, sd_targets, ngroups_targets=[0, 20, 0, 0, 0], cont_na={"income": -8}
        ),
        args.repeat,
    )
    status2 = "OK" if med2 <= 1.0 else "OVER BUDGET"
    print(f"sd2011 multi_disclosure (5 targets)  median {med2:6.3f} s  min {best2:6.3f} s  budget 1 s  {status2}")
    print(
        f"  UiO {res2.ident_orig[0]:.2f}  repU {res2.ident_syn[0]:.2f}  "
        f"DiSCO(depress) {res2.per_target['depress'].mean('DiSCO'):.2f}"
    )


if __name__ == "__main__":
    main()
