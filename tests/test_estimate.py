"""`privgate estimate` and the memory guard's estimate from sizes alone: the same figures as the
guard computes on a real context, grouped by the registry's families, read from files lazily
or planned from --rows/--features, bad inputs exit 2 with a message naming what is wrong."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from privgate import baselines
from privgate.catalogue import get_metric, metric_names
from privgate.cli import main
from privgate.commands.estimate import pod_memory_gib, quantity, read_sizes
from privgate.context import EvaluationContext
from privgate.data import example_path, load_example
from privgate.memory_guard import GIB, estimate_run, estimate_sizes, family_estimates
from privgate.metrics.classifier import _n_jobs
from privgate.options import AUTO_SAMPLE_ABOVE, AUTO_SAMPLE_SIZE
from privgate.registry import FAMILIES

SAMPLE = str(example_path())
HOLDOUT = str(example_path("adult_holdout"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The bundled Adult sample as real data, a noisy copy as the release, the bundled holdout;
    the release also as CSV."""
    out = tmp_path_factory.mktemp("estimate")
    release = baselines.noisy_copy(load_example(), seed=3)
    release.write_parquet(out / "release.parquet")
    release.write_csv(out / "release.csv")
    load_example().write_csv(out / "real.csv")
    return {
        "real": SAMPLE,
        "synthetic": str(out / "release.parquet"),
        "holdout": HOLDOUT,
        "real_csv": str(out / "real.csv"),
        "synthetic_csv": str(out / "release.csv"),
    }


def _run(capsys, *argv):
    try:
        code = main(["estimate", *argv])
    except SystemExit as exc:  # a usage error: argparse exits
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("threads, exact, sample", [(1, None, None), (2, True, None), (1, None, 500)])
def test_estimate_sizes_equals_estimate_run_on_a_real_context(files, threads, exact, sample):
    ctx = EvaluationContext(files["real"], files["synthetic"], holdout=files["holdout"], threads=threads)
    names = metric_names()
    run = estimate_run(ctx, names, baseline=True, exact=exact, sample=sample)
    sizes = read_sizes(files["real"], files["synthetic"], files["holdout"])
    assert (sizes["n_real"], sizes["n_synthetic"], sizes["n_holdout"]) == (ctx.n_real, ctx.n_synthetic, ctx.n_holdout)
    assert sizes["features"] == run.features
    pure = estimate_sizes(
        sizes["n_real"],
        sizes["n_synthetic"],
        sizes["n_holdout"],
        sizes["features"],
        names,
        exact=ctx.exact if exact is None else exact,
        sample=sample if sample is not None else ctx.sample_size("real"),
        threads=_n_jobs(None, ctx.threads),
        baseline=True,
    )
    assert pure.per_metric == run.per_metric
    assert (pure.peak, pure.unit, pure.n, pure.inputs) == (run.peak, run.unit, run.n, run.inputs)


def test_family_grouping_covers_every_registered_metric():
    names = metric_names()
    args = (500_000, 400_000, 300_000, 90, names)  # compact: the steps without a space hold less
    single = estimate_sizes(*args, exact=False, sample=None, threads=1, baseline=True)
    steps = family_estimates(*args, exact=False, sample=None, threads=1, baseline=True)
    assert set(steps) == set(FAMILIES)
    seen = [m for est in steps.values() for m in est.per_metric]
    assert sorted(seen) == sorted(names)  # every metric in exactly one step
    for family, est in steps.items():
        assert all(get_metric(m).family == family for m in est.per_metric)
        if est.inputs["held_per_frame"] == single.inputs["held_per_frame"]:  # a family that encodes a space
            assert est.per_metric == {m: single.per_metric[m] for m in est.per_metric}
        else:  # none of its metrics reads a space: the step holds the frames only
            assert family in ("statistical", "disclosure", "gdpr-attack")
            assert all(est.per_metric[m] < single.per_metric[m] for m in est.per_metric)
        assert est.peak == max(est.per_metric.values())
    assert max(est.peak for est in steps.values()) == single.peak


def test_a_family_steps_threads_count_only_in_that_step():
    """detection_mlp's fold workers (re-identification) follow that step's threads."""
    names = ["detection_mlp", "membership_inference"]
    one = family_estimates(100_000, 100_000, 0, 50, names, exact=False, sample=None, threads=1)
    four = family_estimates(
        100_000, 100_000, 0, 50, names, exact=False, sample=None, threads=1, step_threads={"re_identification": 4}
    )
    assert four["re-identification"].peak > one["re-identification"].peak
    assert four["tracing"].peak == one["tracing"].peak


def test_the_cli_on_bundled_files_gives_the_guards_figure(files, capsys):
    code, out, _ = _run(
        capsys,
        "--real",
        files["real"],
        "--release",
        files["synthetic"],
        "--holdout",
        files["holdout"],
        "--threads",
        "1",
        "--json",
    )
    assert code == 0
    result = json.loads(out)
    ctx = EvaluationContext(files["real"], files["synthetic"], holdout=files["holdout"], threads=1)
    from privgate.gates import default_gate_config
    from privgate.gates.plan import evaluation_plan

    plan = evaluation_plan(default_gate_config(), True)
    guard = estimate_run(ctx, plan["metrics"], baseline=plan["baseline"])
    assert result["sizes"] == {
        "n_real": 3000,
        "n_synthetic": 3000,
        "n_holdout": ctx.n_holdout,
        "features": guard.features,
        "source": "files",
    }
    assert result["single_step"]["peak_bytes"] == math.ceil(guard.peak)
    assert result["single_step"]["metrics"] == plan["metrics"]
    assert set(result["family_steps"]) == {"re_identification", "tracing"}  # the default configuration's


def test_the_table_names_no_column_of_the_data(files, capsys):
    code, out, _ = _run(capsys, "--real", files["real"], "--synthetic", files["synthetic"])
    assert code == 0
    assert (
        json.loads(_run(capsys, "--real", files["real"], "--synthetic", files["synthetic"], "--format", "json")[1])[
            "sizes"
        ]["n_real"]
        == 3000
    )
    assert "(single step)" in out and "re_identification" in out and "3,000 real × 3,000 release" in out
    columns = pl.read_parquet_schema(files["real"])
    assert not [c for c in columns if c in out]


def test_csv_inputs_give_the_parquet_sizes_without_loading_a_frame(files, monkeypatch):
    parquet = read_sizes(files["real"], files["synthetic"])
    read_csv = pl.read_csv

    def refuse(*a, **k):
        raise AssertionError("a whole frame was loaded")

    def head_only(*a, **k):  # the CSV header check reads the first rows only
        return read_csv(*a, **k) if k.get("n_rows") else refuse()

    monkeypatch.setattr(pl, "read_csv", head_only)
    monkeypatch.setattr(pl, "read_parquet", refuse)
    monkeypatch.setattr("privgate.io.load_frame", refuse)
    assert read_sizes(files["real_csv"], files["synthetic_csv"]) == parquet
    assert read_sizes(files["real"], files["synthetic"]) == parquet


def test_planning_with_rows_and_features(capsys):
    code, out, _ = _run(
        capsys,
        "--rows",
        "1000000",
        "--holdout-rows",
        "1000000",
        "--features",
        "100",
        "--metrics",
        "all",
        "--step-threads",
        '{"re_identification": 4}',
        "--json",
    )
    assert code == 0
    result = json.loads(out)
    names = metric_names()
    assert result["sizes"] == {
        "n_real": 10**6,
        "n_synthetic": 10**6,
        "n_holdout": 10**6,
        "features": 100,
        "source": "planned",
    }
    assert result["options"]["real_records_sampled"] == AUTO_SAMPLE_SIZE  # sample "auto" above AUTO_SAMPLE_ABOVE rows
    assert AUTO_SAMPLE_ABOVE < 10**6
    single = estimate_sizes(
        10**6,
        10**6,
        10**6,
        100,
        names,
        exact=False,
        sample=AUTO_SAMPLE_SIZE,
        threads=1,
        sample_auto=True,
        baseline=True,
    )
    assert result["single_step"]["peak_bytes"] == math.ceil(single.peak)
    assert set(result["family_steps"]) == {f.replace("-", "_") for f in FAMILIES}
    step = result["family_steps"]["re_identification"]
    assert step["threads"] == 4 and step["peak_metric"] == "close_values"
    # with the run's sample off, detection_mlp stacks every record and its four fold workers
    # hold their training copies: it becomes that step's peak
    code, out, _ = _run(
        capsys,
        "--rows",
        "1000000",
        "--holdout-rows",
        "1000000",
        "--features",
        "100",
        "--metrics",
        "all",
        "--step-threads",
        '{"re_identification": 4}',
        "--sample",
        "off",
        "--json",
    )
    off = json.loads(out)["family_steps"]["re_identification"]
    assert off["peak_metric"] == "detection_mlp" and off["peak_bytes"] > step["peak_bytes"] + 8 * GIB
    for figure in [*result["family_steps"].values(), result["single_step"]]:
        assert figure["request_gib"] * GIB >= figure["peak_bytes"]
        assert figure["limit_gib"] * GIB >= 1.5 * figure["peak_bytes"]
        assert figure["limit_gib"] * GIB < 1.5 * figure["peak_bytes"] + 0.5 * GIB
    # without a holdout: no holdout-only metric, no baseline
    code, out, _ = _run(capsys, "--rows", "1000", "--features", "10", "--metrics", "all", "--json")
    result = json.loads(out)
    assert "memorisation" not in result["single_step"]["metrics"] and not result["options"]["baseline"]


def test_pod_memory_rounding():
    assert pod_memory_gib(GIB) == (1.0, 1.5)
    assert pod_memory_gib(8.47 * GIB) == (8.5, 13.0)
    assert pod_memory_gib(8.52 * GIB) == (9.0, 13.0)
    assert (quantity(13.0), quantity(12.5)) == ("13Gi", "12800Mi")


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--real", "/nonexistent/real.parquet", "--synthetic", SAMPLE],
            "real: file not found: /nonexistent/real.parquet",
        ),
        (["--real", SAMPLE, "--synthetic", "/nonexistent/r.csv"], "synthetic: file not found: /nonexistent/r.csv"),
        (["--real", SAMPLE, "--synthetic", SAMPLE + ".txt"], "file not found"),
        (["--rows", "-5", "--features", "10"], "--rows must be a positive integer, got '-5'"),
        (["--rows", "0", "--features", "10"], "--rows must be a positive integer, got '0'"),
        (["--rows", "1000"], "planning needs both --rows and --features"),
        ([], "give --real and --synthetic"),
        (["--real", SAMPLE], "give both --real and --synthetic"),
        (["--real", SAMPLE, "--synthetic", SAMPLE, "--rows", "10"], "not both"),
        (["--rows", "10", "--features", "3", "--metrics", "no_such_metric"], "no_such_metric"),
        (["--rows", "10", "--features", "3", "--baseline"], "--baseline needs a holdout"),
        (["--rows", "10", "--features", "3", "--step-threads", "[4]"], "JSON object of positive integers"),
        (
            ["--config", "/nonexistent/gate.yaml", "--rows", "10", "--features", "3"],
            "config: file not found: /nonexistent/gate.yaml",
        ),
    ],
)
def test_bad_inputs_exit_2_with_a_specific_message(argv, message, capsys):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert message in err
    assert out == ""


def test_an_unsupported_suffix_is_named(tmp_path, capsys):
    path = tmp_path / "real.txt"
    path.write_text("a\n1\n")
    code, _, err = _run(capsys, "--real", str(path), "--synthetic", SAMPLE)
    assert code == 2 and "unsupported file suffix '.txt'" in err
