"""The disguise campaign: copies in disguise against the default gate, with and without a holdout.

Data: the bundled Adult sample, its first N rows as the training (real) data and its last N as
the holdout; the honest release is N records of the bundled holdout file (other people of the
same census). Releases (``privgate.baselines``):

* whole-release disguises of an exact copy of the training data: every numeric column ×1000
  (``scaled``), +7 (``shifted``), standardised on its own mean and sd (``standardised``),
  log(1 + x − min) (``log``), (x − min)^1.5 (``power``), a seeded affine map per column with
  either sign (``affine``); one column negated (``negated-age``); levels permuted in every
  categorical column with ×1000 numerics (``permuted+scaled``);
* a disguised minority in the honest release: 1 %, 5 % or 20 % of its records replaced by copies
  with permuted levels (``perm-…``), by plain copies (``plain-1%``, the reference), by ×1000
  copies (``scaled-…``) or by +7 copies (``shifted-5%``: what the view cannot see).

Printed per release and holdout setting: the exit code (0 pass, 1 warn, 2 block, 3 refused), the
rules that fired, and the CPU seconds of the run.

    python benchmarks/disguise_campaign.py [--n 1500] [--only scaled,perm-1%]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from privgate.baselines import disguised_copy, transformed_copy, with_copies  # noqa: E402
from privgate.data import load_example  # noqa: E402
from privgate.gates import default_gate_config, run_gate  # noqa: E402


def releases(n: int) -> tuple:
    full = load_example()
    real, holdout = full.head(n), full.tail(n)
    honest = load_example("adult_holdout").head(n)
    permuted = disguised_copy(real, "permuted", seed=2)
    out = {
        "honest": honest,
        **{
            how: transformed_copy(real, how, seed=5)
            for how in ("scaled", "shifted", "standardised", "log", "power", "affine")
        },
        "negated-age": transformed_copy(real, "negated", columns=["age"]),
        "permuted+scaled": transformed_copy(real, "scaled", labels="permuted", seed=3),
        **{f"perm-{int(s * 100)}%": with_copies(honest, permuted, s, seed=1) for s in (0.01, 0.05, 0.2)},
        "plain-1%": with_copies(honest, real, 0.01, seed=1),
        **{
            f"scaled-{int(s * 100)}%": with_copies(honest, transformed_copy(real, "scaled"), s, seed=1)
            for s in (0.01, 0.05)
        },
        "shifted-5%": with_copies(honest, transformed_copy(real, "shifted"), 0.05, seed=1),
    }
    return real, holdout, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    real, holdout, rel = releases(args.n)
    only = [x for x in args.only.split(",") if x] or list(rel)
    cfg = default_gate_config()
    print(f"{'release':16s} {'holdout':8s} {'exit':4s}  {'CPU-s':>6s}  fired")
    for name in only:
        for h in (holdout, None):
            t = time.process_time()
            o = run_gate(cfg, real, rel[name], h, release_id="r", threads=1)
            fired = sorted({f"{c.metric} {c.rule} {c.severity}" for c in o.checks if c.verdict != "pass"})
            print(
                f"{name:16s} {'with' if h is not None else 'without':8s} {o.exit_code:4d}  "
                f"{time.process_time() - t:6.1f}  {'; '.join(fired) or '-'}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
