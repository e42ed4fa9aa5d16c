"""Where to put the thresholds of the GX example (docs/great_expectations.md, "Choosing
thresholds"): the example expectations' metrics on harmless and on leaky releases of the bundled
Adult sample (3,000 real records, 3,000-record releases).

Harmless: independent marginals (every column sampled on its own) and the holdout itself (3,000
real people who were not in the training data). Leaky: the demo's release with 2 % exact copies,
and a noisy copy of the training data. Five seeds of each random release; prints the range.

    python benchmarks/gx_thresholds.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()

    from privgate import baselines, evaluate
    from privgate.commands.demo import make_releases
    from privgate.data import load_example

    real = load_example("adult_sample")
    holdout = load_example("adult_holdout")
    metrics = ["common_rows", "attribute_inference", "hitting_rate"]
    kinds = {
        "independent marginals": lambda s: baselines.independent_marginals(real, seed=s),
        "holdout (real, unseen)": lambda s: holdout,
        "2 % exact copies": lambda s: make_releases(real, seed=s)["release-2-leaky"],
        "noisy copy": lambda s: baselines.noisy_copy(real, seed=s),
    }
    print(f"{'release':24s} " + " ".join(f"{m:>26s}" for m in metrics) + f" {'hitting_rate excess':>22s}")
    for label, make in kinds.items():
        seeds = [0] if label.startswith("holdout") else range(args.seeds)
        values: dict[str, list[float]] = {m: [] for m in metrics + ["excess"]}
        for seed in seeds:
            rep = evaluate(
                real, make(seed), metrics=metrics, holdout=holdout, sensitive=["income"], seed=seed, baseline=True
            )
            for m in metrics:
                values[m].append(rep.results[m].value)
            values["excess"].append(rep.results["hitting_rate"].excess)
        cells = [f"{min(values[m]):.3f} – {max(values[m]):.3f}".rjust(26) for m in metrics]
        ex = values["excess"]
        print(f"{label:24s} " + " ".join(cells) + f" {min(ex):+.3f} – {max(ex):+.3f}".rjust(23))


if __name__ == "__main__":
    main()
