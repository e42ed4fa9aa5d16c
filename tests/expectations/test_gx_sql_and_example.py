"""GX paths beyond the in-memory pandas batch: a real PostgreSQL table through GX's SQL data
source, the runnable example script, and the interval / p-value fields of the results."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import polars as pl
import pytest

import privgate.gx as pe

REPO = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")


@pytest.fixture
def release_table(adult_small):
    """The release in a uniquely named PostgreSQL table (dropped afterwards): 150 records of
    independent marginals + 50 exact copies of real records."""
    if not PG_URL:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL not set")
    import sqlalchemy as sa

    from privgate.baselines import independent_marginals

    release = pl.concat([independent_marginals(adult_small, seed=3, n=150), adult_small.head(50)])
    table = f"privgate_gx_release_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(PG_URL)
    try:
        release.write_database(table, connection=engine, if_table_exists="fail")
        yield table, release
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP TABLE IF EXISTS "{table}"'))
        engine.dispose()


def test_postgres_table_through_gx_sql_datasource(gx_context, release_table, adult_path):
    """The same expectations on the table (GX SQL engine) and on the frame (pandas engine) give
    the same risks; the exact-copy one fails: 50 of the 600 real records are copied. The table is
    named by a bare ``postgresql://`` URL (mapped to the installed driver)."""
    table, release = release_table
    bare_url = "postgresql://" + PG_URL.split("://", 1)[1]
    checks = [
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.0),
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="hitting_rate", real=adult_path, threshold=0.9),
    ]
    from_sql = pe.validate_table(bare_url, table, checks, context=gx_context)
    in_memory = pe.validate_release(release, checks, context=gx_context)
    sql_rows = {pe.summarise(r)["metric"]: pe.summarise(r) for r in from_sql.results}
    mem_rows = {pe.summarise(r)["metric"]: pe.summarise(r) for r in in_memory.results}
    assert set(sql_rows) == {"common_rows", "hitting_rate"}
    assert sql_rows["common_rows"]["status"] == "failed"
    assert sql_rows["common_rows"]["risk"] == pytest.approx(50 / 600)
    assert sql_rows["hitting_rate"]["status"] == "passed"
    for metric, row in sql_rows.items():
        assert row["risk"] == pytest.approx(mem_rows[metric]["risk"]), metric
        assert not row["errored"]


def test_missing_table_raises_naming_it(gx_context, adult_path):
    if not PG_URL:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL not set")
    table = f"privgate_gx_missing_{uuid.uuid4().hex[:10]}"
    with pytest.raises(Exception, match=table):  # GX refuses a table asset with no table
        pe.validate_table(
            PG_URL,
            table,
            [pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.0)],
            context=gx_context,
        )


def test_results_carry_the_interval_and_p_value_fields(gx_context, adult_small, adult_path):
    """observed value, and the interval / p-value keys (None where the metric has none);
    with an interval, it contains the observed value."""
    r = pe.validate_release(
        adult_small.head(300),
        pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=1.0),
        context=gx_context,
    )
    details = r.result["details"]
    for key in ("interval", "value_ci", "baseline_ci", "excess_ci", "p_value"):
        assert key in details
    if details["interval"] is not None:
        lo, hi = details["interval"]
        assert lo <= r.result["observed_value"] <= hi
    row = pe.summarise(r)
    assert row["interval"] == details["interval"] and row["p_value"] == details["p_value"]


def _text(path: Path) -> str:
    """A Data Docs page as plain text (tags dropped, entities decoded, blanks collapsed)."""
    import html
    import re

    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", path.read_text())))


def test_example_script_runs_as_written(tmp_path):
    """docs/examples/gx_release_check.py: the harmless release passes every expectation with
    the thresholds the docs recommend, the leaky one fails (exit code 0 says both); its
    Checkpoint stores both validation results and the Data Docs site it builds holds the suite
    and both results, the leaky one failed on the exact-copy expectation."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "docs" / "examples" / "gx_release_check.py"), "--out", str(tmp_path / "gx")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "harmless passes: True | leaky passes: False" in proc.stdout
    site = tmp_path / "gx" / "gx" / "uncommitted" / "data_docs" / "local_site"
    assert f"data docs: file://{site / 'index.html'}" in proc.stdout
    index = (site / "index.html").read_text()
    assert "expectations/release_privacy.html" in index
    suite = _text(site / "expectations" / "release_privacy.html")
    assert "Expectation Suite Name release_privacy" in suite
    for sentence in (
        "Exact-copy rate ( common_rows",
        "Attribute-inference risk ( attribute_inference",
        "Privacy risk ( hitting_rate",
    ):
        assert sentence in suite
    pages = {}
    for release in ("harmless", "leaky"):
        (page,) = (site / "validations" / "release_privacy" / f"release-{release}").glob("*/*.html")
        assert str(page.relative_to(site)) in index  # the index links each validation result
        pages[release] = _text(page)
    assert "Status: Succeeded" in pages["harmless"] and "Unsuccessful Expectations 0" in pages["harmless"]
    assert "Status: Failed" in pages["leaky"] and "Unsuccessful Expectations 1" in pages["leaky"]
    assert "risk 0.005 (raw 0.005)" in pages["leaky"]  # the exact-copy rate's observed value


def test_postgres_url_without_a_driver_names_the_extras(gx_context, adult_path, monkeypatch):
    """A bare postgresql:// URL with no PostgreSQL driver installed: an error naming
    privgate[gx,postgres] (not GX's "No module named 'psycopg2'")."""
    from privgate import dburl
    from privgate.errors import InputError

    monkeypatch.setattr(dburl, "_installed", lambda module: False)
    with pytest.raises(InputError, match=r"privgate\[gx,postgres\]"):
        pe.validate_table(
            "postgresql://u@h/db",
            "t",
            [pe.ExpectSyntheticExactCopyRateToBeBelow(real=adult_path, threshold=0.0)],
            context=gx_context,
        )
