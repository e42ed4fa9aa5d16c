"""What splitting one gate evaluation by metric family costs (privgate.dagster.family).

On the bundled example (Adult sample 3,000 rows, its holdout, the demo's leaky release, the
shipped default gate configuration with a holdout) it evaluates the gate's plan once in one
context (the reference: the single check step) and then each family on its own fresh context,
as the family steps do in their own pods, all in this process with the same thread budget.

Printed, as ratios to the reference measured in the same run:

- each family's time / the single evaluation's: with one pod per family the evaluation's wall
  time is about the largest of these (plus pod start-up and the join);
- the sum over families / the single evaluation's: the extra compute the split costs;
- the neighbour searches more than one family reads (from each result's
  ``details["neighbour_search"]``): computed once per family that reads them.

    python benchmarks/bench_family_split.py [--threads 1] [--repeat 2]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2, help="best of this many runs of each")
    args = parser.parse_args()

    from privgate.catalogue import get_metric
    from privgate.commands.demo import make_releases
    from privgate.data import load_example
    from privgate.gates import default_gate_config, evaluate_for_gate, evaluation_plan

    real, holdout = load_example("adult_sample"), load_example("adult_holdout")
    release = make_releases(real, seed=0)["release-2-leaky"]
    cfg = default_gate_config()
    plan = evaluation_plan(cfg, True)["metrics"]
    families: dict[str, list[str]] = {}
    for m in plan:
        families.setdefault(get_metric(m).family, []).append(m)

    def timed(metrics):
        best, report = float("inf"), None
        for _ in range(args.repeat):
            t = time.perf_counter()
            report = evaluate_for_gate(cfg, real, release, holdout, metrics=metrics, threads=args.threads)
            best = min(best, time.perf_counter() - t)
        return best, report

    ref, whole = timed(None)
    print(f"reference: the whole plan in one context ({len(plan)} metrics, threads={args.threads}): {ref:.2f} s")
    reads: dict[str, set[str]] = {}
    total = 0.0
    for family, metrics in families.items():
        seconds, report = timed(metrics)
        total += seconds
        for res in report.results.values():
            for search in (res.details.get("neighbour_search") or {}).get("searches") or {}:
                reads.setdefault(search, set()).add(family)
        assert {n: r.value for n, r in report.results.items()} == {n: whole.results[n].value for n in metrics}, (
            "a family's values differ from the whole's"
        )
        print(f"family {family:<18} {len(metrics)} metrics: {seconds / ref:5.2f} × reference  ({', '.join(metrics)})")
    print(f"sum over families: {total / ref:5.2f} × reference (the extra compute of the split)")
    shared = {s: sorted(f) for s, f in reads.items() if len(f) > 1}
    print("neighbour searches read by more than one family (computed once per such family):")
    for search, fams in sorted(shared.items()):
        print(f"  {search}: {', '.join(fams)}")
    if not shared:
        print("  none")


if __name__ == "__main__":
    main()
