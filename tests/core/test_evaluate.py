"""privgate.evaluate, the Report and its serialisations, the registry, and the CLI."""

from __future__ import annotations

import json

import polars as pl
import pytest

import privgate
from privgate.cli import main
from privgate.errors import ParameterError

R = pl.DataFrame({"a": [0.0, 1, 2, 3, 4, 5], "c": ["x", "y", "x", "y", "x", "z"]})
S = pl.DataFrame({"a": [0.0, 1.5, 2, 7, 4, 5], "c": ["x", "x", "x", "y", "y", "z"]})


def test_report_maps_names_to_results_and_serialises():
    rep = privgate.evaluate(R, S, ["common_rows", "dcr"])
    assert list(rep.results) == ["common_rows", "dcr"]
    assert rep.results["common_rows"].value == pytest.approx(3 / 6)  # rows 0, 2, 5 copied
    d = json.loads(rep.to_json())
    assert d["results"]["dcr"]["raw"] == pytest.approx(rep.results["dcr"].raw)
    assert d["schema"] == {"a": "numeric", "c": "categorical"}
    assert d["results"]["common_rows"]["per_record_summary"]["n_at_risk"] == 3
    frame = rep.to_polars()
    assert frame.columns[:4] == ["metric", "family", "value", "raw"]
    assert frame["metric"].to_list() == ["common_rows", "dcr"]


def test_default_metrics_are_the_applicable_ones():
    rep = privgate.evaluate(R, S, metrics=None, on_error="record")
    assert "hidden_rate" not in rep.results and "hidden_rate" not in rep.errors  # needs a pairing
    assert "zero_cap" not in rep.results  # needs sensitive columns
    assert {"common_rows", "dcr", "nnaa", "hitting_rate"} <= set(rep.results)
    rep = privgate.evaluate(R, S, metrics=None, pairing=True, sensitive=["c"], on_error="record")
    assert "hidden_rate" in rep.results and "zero_cap" in rep.results


def test_on_error_record_keeps_going_and_raise_raises():
    with pytest.raises(privgate.errors.NotApplicableError):
        privgate.evaluate(R, S, ["hidden_rate"])
    rep = privgate.evaluate(R, S, ["hidden_rate", "common_rows"], on_error="record")
    assert "hidden_rate" in rep.errors and "NotApplicableError" in rep.errors["hidden_rate"]
    assert "common_rows" in rep.results
    assert rep.to_polars().filter(pl.col("metric") == "hidden_rate")["error"][0].startswith("NotApplicable")


def test_unexpected_exceptions_are_wrapped_with_the_metric_name(monkeypatch):
    from privgate.catalogue import get_metric

    spec = get_metric("dcr")

    def boom(ctx, **kw):
        raise RuntimeError("kaboom: could not parse 'SECRET-ROW-VALUE'")

    import dataclasses

    from privgate import registry

    monkeypatch.setitem(registry._REGISTRY, "dcr", dataclasses.replace(spec, func=boom))
    rep = privgate.evaluate(R, S, ["dcr"], on_error="record")
    assert rep.errors["dcr"].startswith("MetricComputationError: metric 'dcr' failed: RuntimeError")
    assert "SECRET-ROW-VALUE" not in rep.errors["dcr"]  # library messages may quote data: withheld


def test_params_per_metric_and_validation():
    rep = privgate.evaluate(R, S, ["close_values"], params={"close_values": {"threshold": 0.5}})
    assert rep.results["close_values"].params == {"threshold": 0.5}
    with pytest.raises(ParameterError, match="not evaluated"):
        privgate.evaluate(R, S, ["dcr"], params={"nnaa": {}})
    with pytest.raises(ParameterError, match="needs a holdout"):
        privgate.evaluate(R, S, ["dcr"], baseline=True)


def test_holdout_baseline_and_excess():
    # the holdout equals the synthetic set → baseline = value, excess = 0
    rep = privgate.evaluate(R, S, ["authenticity", "common_rows"], holdout=S, baseline=True)
    for r in rep.results.values():
        assert r.baseline == pytest.approx(r.value) and r.excess == pytest.approx(0.0)
    # a copy release scored against a holdout of other people: positive excess
    rep = privgate.evaluate(R, R, ["common_rows"], holdout=S, baseline=True)
    assert rep.results["common_rows"].excess == pytest.approx(1 - 0.5)


def test_registry_lists_every_metric_with_its_metadata():
    metrics = {m["name"]: m for m in privgate.list_metrics()}
    for name in [
        "common_rows",
        "close_values",
        "distant_values",
        "nsnd",
        "authenticity",
        "identifiability",
        "median_dcr",
        "nnaa",
        "nndr",
        "dcr",
        "hidden_rate",
        "hitting_rate",
    ]:
        m = metrics[name]
        assert m["family"] in ("re-identification", "tracing")
        assert m["attack"] and m["reference"] and m["orientation"]
        assert getattr(privgate.metrics, name).spec.name == name  # name = function = registry entry
    assert metrics["hidden_rate"]["needs"] == ["pairing"]


def test_results_never_carry_record_values():
    secret = "RARE-LEVEL-xyz"
    r = R.with_columns(pl.Series("c", ["x", "y", "x", "y", "x", secret]))
    text = privgate.evaluate(r, S.with_columns(pl.Series("c", ["x"] * 6)), on_error="record").to_json()
    assert secret not in text


def test_cli_evaluate_prints_a_table_and_writes_json(tmp_path, capsys):
    R.write_parquet(tmp_path / "r.parquet")
    S.write_csv(tmp_path / "s.csv")
    out = tmp_path / "rep.json"
    code = main(
        [
            "evaluate",
            "--real",
            str(tmp_path / "r.parquet"),
            "--synthetic",
            str(tmp_path / "s.csv"),
            "--metrics",
            "common_rows,dcr",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert "common_rows" in printed.out and "dcr" in printed.out
    assert "[1/2] common_rows" in printed.err  # progress
    assert json.loads(out.read_text())["results"]["common_rows"]["value"] == pytest.approx(0.5)


def test_cli_reports_errors_with_a_nonzero_exit(tmp_path, capsys):
    R.write_parquet(tmp_path / "r.parquet")
    S.rename({"a": "b"}).write_parquet(tmp_path / "s.parquet")
    code = main(["evaluate", "--real", str(tmp_path / "r.parquet"), "--synthetic", str(tmp_path / "s.parquet")])
    assert code != 0
    assert "SchemaMismatchError" in capsys.readouterr().err


def test_cli_example_runs(capsys):
    assert main(["evaluate", "--quiet", "--metrics", "common_rows,authenticity"]) == 0
    assert "authenticity" in capsys.readouterr().out
