"""Check a synthetic release with Great Expectations and privgate (pip install 'privgate[gx]').

    python docs/examples/gx_release_check.py [--out DIR]

Writes the bundled Adult sample (the "real" training data) and two releases to DIR, saves a suite
of three privgate expectations in a file-backed GX project (DIR/gx), validates both releases with
a Checkpoint that stores each validation result and updates the Data Docs, and prints one line
per expectation and the Data Docs page. The harmless release (every column sampled
independently) passes; the leaky one (0.5 % of its rows are exact copies of real people) fails
the exact-copy expectation. Thresholds: docs/great_expectations.md, "Choosing thresholds".
"""

import argparse
from pathlib import Path

import great_expectations as gx

import privgate.gx as pe
from privgate import baselines
from privgate.commands.demo import make_releases
from privgate.data import load_example


def suite(real: str, holdout: str) -> gx.ExpectationSuite:
    return gx.ExpectationSuite(
        name="release_privacy",
        expectations=[
            pe.ExpectSyntheticExactCopyRateToBeBelow(real=real, threshold=0.0),
            pe.ExpectSyntheticAttributeInferenceRiskToBeBelow(real=real, sensitive=["income"], threshold=0.85),
            pe.ExpectSyntheticPrivacyRiskToBeBelow(
                metric="hitting_rate", real=real, holdout=holdout, compare_to="excess", threshold=0.02
            ),
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="privgate-gx-example")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    real = load_example("adult_sample")
    real.write_parquet(out / "real.parquet")
    load_example("adult_holdout").write_parquet(out / "holdout.parquet")
    releases = {
        "harmless": baselines.independent_marginals(real, seed=1),
        "leaky": make_releases(real)["release-2-leaky"],
    }

    ctx = gx.get_context(mode="file", project_root_dir=str(out))
    checks = ctx.suites.add_or_update(suite(str(out / "real.parquet"), str(out / "holdout.parquet")))
    definition = ctx.validation_definitions.add_or_update(
        gx.ValidationDefinition(name="release_privacy_check", data=pe.batch_definition(ctx), suite=checks)
    )
    checkpoint = ctx.checkpoints.add_or_update(
        gx.Checkpoint(
            name="release_gate",
            validation_definitions=[definition],
            actions=[gx.checkpoint.UpdateDataDocsAction(name="update_data_docs")],
        )
    )
    outcome = {}
    for name, release in releases.items():
        run = checkpoint.run(
            batch_parameters={"dataframe": pe.to_pandas_batch(release)},
            run_id=gx.RunIdentifier(run_name=f"release-{name}"),
        )
        (result,) = run.run_results.values()
        outcome[name] = result.success
        for r in result.results:
            row = pe.summarise(r)
            print(
                f"{name:9s} {row['metric']:20s} {row['status']:8s} risk {row['risk']:+.4f} "
                f"(threshold {row['threshold']}, interval {row['interval']})"
            )
    print("data docs:", ctx.get_docs_sites_urls()[0]["site_url"])
    print("harmless passes:", outcome["harmless"], "| leaky passes:", outcome["leaky"])
    return 0 if outcome == {"harmless": True, "leaky": False} else 1


if __name__ == "__main__":
    raise SystemExit(main())
