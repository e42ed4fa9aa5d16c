"""How tight can the many-canary bound be on the exact Laplace histogram at 200 runs? The ceiling
with an attacker who knows the generator's cells.

The default audit (64 canaries, 200 runs, a fifth of them fitting the guessing rule) reaches
about 0.7·ε on the rounded Laplace histogram of benchmarks/audit.py. This simulation asks what
any attack on the same design could reach: m canaries, each alone in a cell of the histogram
(count 0 without it; or a cell holding ``--background`` records), each in each run with
probability 1/2, the release round(max(0, count + Laplace(1/ε))) of every canary's cell — the
mechanism exactly — and the ORACLE guessing rule that is exact for it: "in" when the released
count is at least the background's + 2 and "out" when it is at most the background's − 1 (for
those counts the likelihood ratio is exactly e^ε; counts in between and the clipping at 0 are
less certain). Steinke, Nasr & Jagielski's Theorem 3.1 bound (``privgate.stats.one_run``) at
the α the default audit spends on its chosen candidate at the last look (0.0125), over the
160 test runs of 200. No attack on the releases does better than this rule on average: it guesses only
where the likelihood ratio is largest.

    python benchmarks/audit_ceiling.py            # seconds: NumPy only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from privgate.stats.one_run import canary_epsilon_lower_bound  # noqa: E402

#: the α of the default audit's chosen candidate at its last look: half of α = 0.05 on the last
#: look, half of that on the candidate chosen on the fit runs
ALPHA_CHOSEN_LAST_LOOK = 0.0125


def oracle_bound(eps: float, canaries: int, test_runs: int, background: int, seed: int) -> float:
    g = np.random.default_rng(seed)
    inc = g.random((test_runs, canaries)) < 0.5
    released = np.round(np.maximum(0.0, background + inc + g.laplace(0.0, 1.0 / eps, inc.shape)))
    guess_in = released >= background + 2
    guess_out = released <= background - 1
    right = int((guess_in & inc).sum() + (guess_out & ~inc).sum())
    return canary_epsilon_lower_bound(right, int(guess_in.sum() + guess_out.sum()), alpha=ALPHA_CHOSEN_LAST_LOOK)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--test-runs", type=int, default=160)
    a = ap.parse_args()
    print(f"| ε | canaries | background in each canary's cell | median oracle bound / ε over {a.seeds} seeds |")
    print("|---|---|---|---|")
    for eps in (1.0, 2.0):
        for background in (0, 3):
            for m in (32, 64, 128, 200, 400):
                b = [oracle_bound(eps, m, a.test_runs, background, s) for s in range(a.seeds)]
                print(f"| {eps:g} | {m} | {background} | {np.median(b) / eps:.2f} |", flush=True)


if __name__ == "__main__":
    main()
