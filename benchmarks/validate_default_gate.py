"""How the shipped default gate configuration decides on known releases of three datasets.

For Adult (bundled sample + holdout), Texas (../shared/data/texas_25k.parquet) and SD2011
(../shared/data/sd2011.parquet): real = 3,000 shuffled rows (2,500 for SD2011), holdout = the
next as many rows. Releases: independent marginals (should pass), the holdout itself used as a
release without a holdout given (real non-members: what a perfect generator produces; should
pass), a noisy copy (memorisation; should block), each with and without the holdout. Prints the
decision, the rules that fired, and seconds.

    python benchmarks/validate_default_gate.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from privgate import baselines  # noqa: E402
from privgate.data import load_example  # noqa: E402
from privgate.gates import default_gate_config, run_gate  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def datasets():
    yield "adult", load_example("adult_sample"), load_example("adult_holdout")
    for name in ("texas_25k", "sd2011"):
        path = SHARED / f"{name}.parquet"
        if not path.exists():
            print(f"({path} absent: skipped)")
            continue
        d = pl.read_parquet(path)
        d = d.with_columns([pl.col(c).cast(pl.String) for c, t in d.schema.items() if isinstance(t, pl.Categorical)])
        d = d.sample(fraction=1.0, shuffle=True, seed=1)
        n = min(3000, d.height // 2)
        yield name, d[:n], d[n : 2 * n]


def main() -> None:
    print(f"{'dataset':10s} {'release':24s} {'decision':8s} fired rules")
    for name, real, hold in datasets():
        cfg = default_gate_config(name)
        releases = [
            ("marginals + holdout", baselines.independent_marginals(real, seed=1), hold),
            ("marginals", baselines.independent_marginals(real, seed=1), None),
            ("non-members (control)", hold, None),
            ("noisy copy + holdout", baselines.noisy_copy(real, seed=1), hold),
            ("noisy copy", baselines.noisy_copy(real, seed=1), None),
        ]
        for rel, syn, h in releases:
            t = time.perf_counter()
            o = run_gate(cfg, real, syn, holdout=h, release_id=rel)
            fired = sorted({f"{c.metric}:{c.rule}:{c.verdict}" for c in o.checks if c.verdict != "pass"})
            print(
                f"{name:10s} {rel:24s} {str(o.decision):8s} {', '.join(fired) or '-'}  "
                f"({time.perf_counter() - t:.1f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
