"""Check a synthetic release with Great Expectations and privgate (pip install 'privgate[gx]').

    python docs/examples/gx_release_check.py [--out DIR]

Writes the bundled Adult sample (the "real" training data) and two releases to DIR, validates
both with a suite of three privgate expectations, prints one line per expectation and builds
GX Data Docs. The harmless release (every column sampled independently) passes; the leaky one
(2 % of its rows are exact copies of real people) fails the exact-copy expectation. Thresholds:
docs/great_expectations.md, "Choosing thresholds".
"""

import argparse
from pathlib import Path

import great_expectations as gx

import privgate.gx as pe
from privgate import baselines
from privgate.commands.demo import make_releases
from privgate.data import load_example


def suite(real: str, holdout: str) -> gx.ExpectationSuite:
    return gx.ExpectationSuite(name="release_privacy", expectations=[
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=real, threshold=0.0),
        pe.ExpectSyntheticAttributeInferenceRiskToBeBelow(
            real=real, sensitive=["income"], threshold=0.85),
        pe.ExpectSyntheticPrivacyRiskToBeBelow(
            metric="hitting_rate", real=real, holdout=holdout, compare_to="excess",
            threshold=0.02),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="privgate-gx-example")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    real = load_example("adult_sample")
    real.write_parquet(out / "real.parquet")
    load_example("adult_holdout").write_parquet(out / "holdout.parquet")
    releases = {"harmless": baselines.independent_marginals(real, seed=1),
                "leaky": make_releases(real)["release-2-leaky"]}

    ctx = gx.get_context(mode="file", project_root_dir=str(out))
    checks = suite(str(out / "real.parquet"), str(out / "holdout.parquet"))
    outcome = {}
    for name, release in releases.items():
        result = pe.validate_release(release, checks, context=ctx)
        outcome[name] = result.success
        for r in result.results:
            row = pe.summarise(r)
            print(f"{name:9s} {row['metric']:20s} {row['status']:8s} risk {row['risk']:+.4f} "
                  f"(threshold {row['threshold']}, interval {row['interval']})")
    print("data docs:", ctx.build_data_docs())
    print("harmless passes:", outcome["harmless"], "| leaky passes:", outcome["leaky"])
    return 0 if outcome == {"harmless": True, "leaky": False} else 1


if __name__ == "__main__":
    raise SystemExit(main())
