"""Persisted suites and Data Docs: a suite saved by one file context, loaded by a new context
(and from plain JSON) validates to the same results; Data Docs, built into a temporary
directory, show the readable sentences; a suite whose privgate expectations cannot load
fails loudly instead of losing them."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

gx = pytest.importorskip("great_expectations")

import privgate.gx as pe  # noqa: E402
from privgate.errors import ConfigError  # noqa: E402

SUITE = "synthetic_release_privacy"


def _suite_expectations(real_path: str, holdout_path: str):
    return [
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=real_path, threshold=0.0),
        pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(real=real_path, threshold={"$PARAMETER": "max_dcr"}),
        pe.ExpectSyntheticAttributeInferenceRiskToBeBelow(real=real_path, threshold=0.5, sensitive=["occupation"]),
        pe.ExpectSyntheticPrivacyRiskToBeBelow(
            metric="hitting_rate",
            real=real_path,
            holdout=holdout_path,
            compare_to="excess",
            threshold=0.05,
            meta={"check_name": "hitting_rate_excess"},
        ),
        # errors on purpose: the suite must carry it as errored through every round trip
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="no_such_metric", real=real_path, threshold=0.5),
    ]


def _statuses(result) -> dict[str, tuple[str, float | None]]:
    out = {}
    for r in result.results:
        s = pe.summarise(r)
        out[f"{s['expectation_type']}:{s['metric']}"] = (s["status"], s["risk"])
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory, adult_small, adult_path, adult_holdout_path, adult_random):
    """A file context in a temp dir with the suite, a validation definition and a checkpoint
    that updates Data Docs; the checkpoint has been run once on a leaky release."""
    import polars as pl

    root = tmp_path_factory.mktemp("gx_project")
    ctx = gx.get_context(mode="file", project_root_dir=str(root))
    suite = ctx.suites.add(gx.ExpectationSuite(name=SUITE))
    for e in _suite_expectations(adult_path, adult_holdout_path):
        suite.add_expectation(e)
    bd = pe.batch_definition(ctx)
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name="release_vd", data=bd, suite=suite))
    cp = ctx.checkpoints.add(
        gx.Checkpoint(
            name="release_gate",
            validation_definitions=[vd],
            actions=[gx.checkpoint.UpdateDataDocsAction(name="docs")],
            result_format={"result_format": "SUMMARY"},
        )
    )
    # a leaky release: 10 % of the real records copied into uniform noise
    release = pl.concat([adult_small.head(60), adult_random.tail(adult_small.height - 60)])
    run = cp.run(batch_parameters={"dataframe": pe.to_pandas_batch(release)}, expectation_parameters={"max_dcr": 0.99})
    return {"root": root, "ctx": ctx, "release": release, "run": run}


def test_checkpoint_statuses(project):
    run = project["run"]
    assert run.success is False
    rows = [pe.summarise(r) for r in pe.expectation_results(run)]
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["common_rows"]["status"] == "failed"
    assert by_metric["common_rows"]["risk"] == pytest.approx(0.1)
    assert by_metric["no_such_metric"]["status"] == "errored"
    assert by_metric["dcr"]["status"] == "passed"
    assert by_metric["hitting_rate"]["status"] == "failed"  # excess ≈ 0.1 > 0.05


def test_saved_suite_in_new_context_gives_same_result(project):
    first = project["ctx"].suites.get(SUITE)
    batch = pe.get_batch(project["ctx"], project["release"])
    before = _statuses(batch.validate(first, expectation_parameters={"max_dcr": 0.99}))

    ctx2 = gx.get_context(mode="file", project_root_dir=str(project["root"]))
    loaded = pe.get_suite(ctx2, SUITE)
    assert len(loaded.expectations) == 5
    after = _statuses(pe.get_batch(ctx2, project["release"]).validate(loaded, expectation_parameters={"max_dcr": 0.99}))
    assert after == before
    assert after["expect_synthetic_privacy_risk_to_be_below:no_such_metric"][0] == "errored"
    # the stored JSON holds only paths and parameters, no data
    stored = json.loads(next(Path(project["root"]).rglob(f"{SUITE}.json")).read_text())
    assert {e["type"] for e in stored["expectations"]} >= {
        "expect_synthetic_exact_copy_rate_to_be_below",
        "expect_synthetic_privacy_risk_to_be_below",
    }


def test_suite_json_round_trip(project, tmp_path):
    suite = project["ctx"].suites.get(SUITE)
    path = pe.save_suite_json(suite, tmp_path / "suite.json")
    loaded = pe.load_suite_json(path)
    assert [e.expectation_type for e in loaded.expectations] == [e.expectation_type for e in suite.expectations]
    ctx = gx.get_context(mode="ephemeral")
    a = _statuses(pe.get_batch(ctx, project["release"]).validate(loaded, expectation_parameters={"max_dcr": 0.99}))
    b = _statuses(pe.get_batch(ctx, project["release"]).validate(suite, expectation_parameters={"max_dcr": 0.99}))
    assert a == b


def test_unloadable_expectation_fails_loudly(tmp_path, adult_path):
    suite = {
        "name": "broken",
        "expectations": [
            {"type": "expect_synthetic_exact_copy_rate_to_be_below", "kwargs": {"real": adult_path, "threshold": 0.0}},
            {
                "type": "expect_synthetic_privacy_risk_to_be_below",  # no metric: invalid kwargs
                "kwargs": {"real": adult_path, "threshold": 0.1},
            },
            {"type": "expect_something_never_defined", "kwargs": {}},
        ],
    }
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(suite))
    with pytest.raises(ConfigError) as err:
        pe.load_suite_json(path)
    assert "expect_something_never_defined" in str(err.value)
    assert "expect_synthetic_privacy_risk_to_be_below" in str(err.value)
    # GX's own constructor silently skips the unknown type (it raises on the invalid kwargs)
    unknown_only = [suite["expectations"][0], suite["expectations"][2]]
    assert len(gx.ExpectationSuite(name="x", expectations=unknown_only).expectations) == 1


def test_get_suite_detects_silent_drop(tmp_path, adult_path):
    ctx = gx.get_context(mode="file", project_root_dir=str(tmp_path))
    suite = ctx.suites.add(gx.ExpectationSuite(name="drop"))
    suite.add_expectation(pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.0))
    suite.add_expectation(pe.ExpectSyntheticDistanceToClosestRecordRiskToBeBelow(real=adult_path, threshold=0.9))
    stored = next(Path(tmp_path).rglob("drop.json"))
    data = json.loads(stored.read_text())
    data["expectations"][1]["type"] = "expect_synthetic_unknown_thing"  # as if not imported
    stored.write_text(json.dumps(data))
    assert len(ctx.suites.get("drop").expectations) == 1  # GX: silently one short
    with pytest.raises(ConfigError, match="dropped 1 of 2"):
        pe.get_suite(ctx, "drop")


def test_get_suite_fails_closed_when_it_cannot_compare():
    """A context whose raw suite store cannot be read (another GX version, another store type):
    get_suite cannot rule out a silent drop, so it refuses instead of returning the suite."""
    from types import SimpleNamespace

    suite = gx.ExpectationSuite(name="unchecked")
    ctx = SimpleNamespace(suites=SimpleNamespace(get=lambda name: suite))  # no _store
    with pytest.raises(ConfigError, match="'unchecked': cannot check that GX loaded"):
        pe.get_suite(ctx, "unchecked")


def _visible_text(path: Path) -> str:
    """The page's text as a reader sees it (tags dropped, spaces GX puts around parameters
    removed before punctuation)."""
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", path.read_text())))
    return re.sub(r"\s+([).,:])", r"\1", re.sub(r"\(\s+", "(", text))


def test_data_docs_show_readable_sentences(project):
    project["ctx"].build_data_docs()
    pages = list(Path(project["root"]).rglob("validations/**/*.html"))
    assert pages, "no validation page in Data Docs"
    text = " ".join(_visible_text(p) for p in pages)
    assert (
        "Exact-copy rate (common_rows: the share of real records that appear unchanged in "
        "the release) of the synthetic release must be at most 0.0 (0 = no risk, "
        "1 = no privacy), measured against real data at "
    ) in text
    assert "Distance-to-closest-record risk (dcr: 1/(1 + mean distance" in text
    assert (
        "Attribute-inference risk (attribute_inference: how often the closest synthetic "
        "record on the keys reveals the sensitive value)"
    ) in text
    assert "Sensitive: occupation." in text
    assert ("Privacy risk (hitting_rate: attack: synthetic records matching a real record") in text
    assert (
        "must exceed the same risk of an equally large holdout sample (real people not in "
        "the training data) by at most 0.05"
    ) in text
    assert "risk 0.1 (raw 0.1)" in text  # observed value column of common_rows
    assert re.search(r"excess 0\.\d+ \(risk 0\.\d+ − holdout baseline 0\.\d+\)", text)
    assert "no_such_metric" in text and "UnknownMetricError" in text  # errored, shown as such
    suite_pages = list(Path(project["root"]).rglob(f"expectations/{SUITE}.html"))
    assert suite_pages and "Exact-copy rate" in _visible_text(suite_pages[0])
