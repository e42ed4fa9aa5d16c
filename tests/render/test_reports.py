"""HTML and JSON reports, and the no-leak guarantee: no raw real record in any output.

The real data carries distinctive tokens (unique person ids, made-up city names, numbers with
many digits) that cannot arise by chance; every output of a gate run — stdout, stderr, the HTML
and JSON reports, every row of the history database — is scanned for them.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import sqlite3

import numpy as np
import polars as pl
import pytest
from matplotlib import image as mpimg

from privgate import baselines, registry
from privgate.cli import main
from privgate.gates import parse_gate_config, run_gate
from privgate.history import HistoryStore
from privgate.render import render_html, write_html_report, write_json_report

N = 120


def _real(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "person": [f"RealPerson-{i:04d}-Qz" for i in range(N)],
            "city": [f"Secretville-{k:02d}" for k in rng.integers(0, 30, N)],
            "age": rng.integers(18, 90, N),
            "income": 31415.926535 + np.arange(N) * 7.123456789,
            "group": rng.choice(["a", "b", "c"], N),
        }
    )


def tokens(real: pl.DataFrame) -> list[str]:
    """Values only the real rows contain, in the forms a leak would print them."""
    out = list(real["person"]) + sorted(set(real["city"]))
    for x in real["income"].to_list():
        out += [repr(x), f"{x:.4f}", f"{x:.2f}"]
    return out


def assert_no_leak(text: str, toks: list[str], where: str) -> None:
    found = [t for t in toks if t in text]
    assert not found, f"{where} contains real values: {found[:5]}"


CFG = {
    "dataset": "leaktest",
    "metrics": {
        "common_rows": {"threshold": {"warn": 0.0, "block": 0.01}},
        "hitting_rate": {"baseline": {"warn": 0.03, "block": 0.1}, "trend": {"warn": 0.03}},
        "authenticity": {"baseline": {"block": 0.15}, "trend": {"warn": 0.05}},
        "nnaa": {"threshold": {"when": "no_holdout", "block": 0.75}, "trend": {"warn": 0.05}},
        # families whose details carry tables (per column / per key level): scanned too
        "disclosure_attribute": {
            "params": {"keys": ["city", "age"], "targets": ["group"]},
            "threshold": {"max": 1.0, "severity": "warn"},
        },
        "zero_cap": {
            "params": {"keys": ["city", "age"], "sensitive": ["group"]},
            "threshold": {"max": 1.0, "severity": "warn"},
        },
        "kolmogorov_smirnov": {"threshold": {"max": 1.0, "severity": "warn"}},
    },
}


@pytest.fixture(scope="module")
def data():
    real = _real(0)
    holdout = _real(1).with_columns(
        pl.Series("person", [f"HoldoutPerson-{i:04d}-Qh" for i in range(N)]),
        (pl.col("income") + 0.5),
    )
    return real, holdout


def test_html_report_has_plots_and_no_real_record(tmp_path, data):
    real, holdout = data
    store = HistoryStore(tmp_path / "h.sqlite")
    cfg = parse_gate_config(CFG)
    run_gate(cfg, real, baselines.independent_marginals(real, seed=1), holdout=holdout, release_id="v1", history=store)
    out = run_gate(cfg, real, baselines.noisy_copy(real, seed=2), holdout=holdout, release_id="v2", history=store)
    assert out.recorded and out.previous_release_id == "v1"
    path = write_html_report(out, tmp_path / "r.html", history=store)
    html = path.read_text()
    # three plots: values vs limits, per-record distributions, history trend
    pngs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(pngs) == 3
    for b in pngs:
        img = mpimg.imread(io.BytesIO(base64.b64decode(b)), format="png")
        assert img.shape[0] > 100 and img.shape[1] > 100
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r'(src|href)="(https?:)?//', html) and "<script" not in html
    assert "v1" in html and "v2" in html and out.run_id in html
    for c in out.checks:
        assert c.metric in html
    assert_no_leak(html, tokens(real), "HTML report")
    assert_no_leak(html, tokens(holdout), "HTML report (holdout)")


def test_html_without_history_and_escaping(tmp_path, data):
    real, _ = data
    cfg = parse_gate_config({**CFG, "dataset": "<script>alert(1)</script>"})
    out = run_gate(cfg, real, baselines.independent_marginals(real, seed=1), release_id="<b>x</b>")
    html = render_html(out)
    assert "<script>alert" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "No history store" in html
    assert html.count("data:image/png;base64,") == 2  # no history plot


def test_json_report_content(tmp_path, data):
    real, holdout = data
    store = HistoryStore(tmp_path / "h.sqlite")
    out = run_gate(parse_gate_config(CFG), real, baselines.copy(real), holdout=holdout, release_id="c1", history=store)
    assert out.decision == "block" and out.exit_code == 2
    doc = json.loads(write_json_report(out, tmp_path / "r.json", history=store).read_text())
    assert doc["report_format"] == 1 and doc["decision"] == "block" and doc["exit_code"] == 2
    assert doc["results"]["common_rows"]["value"] == 1.0
    assert doc["fingerprint"]["real"]["rows"] == N and "content_sha256" in doc["fingerprint"]["real"]
    assert [r["release_id"] for r in doc["history"]["runs"]] == ["c1"]
    assert {s["metric"] for s in doc["history"]["scores"]} == set(CFG["metrics"])
    assert not any(c["rule"] == "error" for c in doc["checks"])
    assert_no_leak(json.dumps(doc), tokens(real), "JSON report")


def _leaky_metric(ctx, **_):
    # a metric that fails with a message quoting a real record (what a careless library does;
    # the person column is an identifier, set aside before any metric runs, so it quotes the city)
    value = ctx.real["income"][3]
    raise ValueError(f"cannot handle income={value!r} of a person in {ctx.real['city'][3]}")


def test_no_real_record_in_any_output(tmp_path, data, capsys, monkeypatch):
    """End to end through the CLI: a passing-then-blocked release, a metric that fails quoting a
    real record, a corrupt input; scan stdout, stderr, HTML, JSON and every database row."""
    real, holdout = data
    toks = tokens(real) + tokens(holdout)
    paths = {n: tmp_path / f"{n}.parquet" for n in ("real", "holdout", "s1", "s2")}
    real.write_parquet(paths["real"])
    holdout.write_parquet(paths["holdout"])
    baselines.independent_marginals(real, seed=3).write_parquet(paths["s1"])
    baselines.noisy_copy(real, seed=4).write_parquet(paths["s2"])
    cfg_path = tmp_path / "gate.yaml"
    cfg_path.write_text(
        json.dumps({**CFG, "metrics": {**CFG["metrics"], "close_values": {"optional": True, "threshold": 1.0}}})
    )
    db = tmp_path / "h.sqlite"
    common = ["gate", "--config", str(cfg_path), "--real", str(paths["real"]), "--history", str(db), "--quiet"]

    codes = []
    codes.append(
        main(
            common
            + [
                "--synthetic",
                str(paths["s1"]),
                "--holdout",
                str(paths["holdout"]),
                "--release-id",
                "r1",
                "--html",
                str(tmp_path / "r1.html"),
                "--json",
                str(tmp_path / "r1.json"),
            ]
        )
    )
    codes.append(
        main(
            common
            + [
                "--synthetic",
                str(paths["s2"]),
                "--release-id",
                "r2",
                "--html",
                str(tmp_path / "r2.html"),
                "--json",
                str(tmp_path / "r2.json"),
                "--format",
                "json",
            ]
        )
    )
    spec = registry._REGISTRY["authenticity"]
    monkeypatch.setitem(registry._REGISTRY, "authenticity", dataclasses.replace(spec, func=_leaky_metric))
    spec_cv = registry._REGISTRY["close_values"]
    monkeypatch.setitem(registry._REGISTRY, "close_values", dataclasses.replace(spec_cv, func=_leaky_metric))
    codes.append(
        main(
            common
            + [
                "--synthetic",
                str(paths["s1"]),
                "--release-id",
                "r3",
                "--html",
                str(tmp_path / "r3.html"),
                "--json",
                str(tmp_path / "r3.json"),
            ]
        )
    )
    monkeypatch.undo()
    bad = tmp_path / "bad.csv"
    bad.write_text('person,city\n"RealPerson-0001-Qz,"unterminated\n')
    codes.append(main(common + ["--synthetic", str(bad), "--release-id", "r4"]))
    codes.append(main(["history", "--history", str(db), "--dataset", "leaktest"]))
    codes.append(main(["history", "--history", str(db), "--dataset", "leaktest", "--format", "json"]))
    codes.append(main(["history", "--history", str(db), "--dataset", "leaktest", "--format", "csv", "--runs"]))
    assert codes == [0, 2, 3, 3, 0, 0, 0]

    captured = capsys.readouterr()
    assert "metric failed" in captured.out and "ValueError" in captured.out  # the error is reported...
    assert_no_leak(captured.out, toks, "stdout")  # ...without the value
    assert_no_leak(captured.err, toks, "stderr")
    for name in ("r1", "r2", "r3"):
        for ext in ("html", "json"):
            assert_no_leak((tmp_path / f"{name}.{ext}").read_text(), toks, f"{name}.{ext}")
    con = sqlite3.connect(db)
    dump = "\n".join(con.iterdump())
    con.close()
    assert "r4" in dump and "RealPerson" not in dump
    assert_no_leak(dump, toks, "history database")


def test_intervals_and_p_values_in_html_json_and_history(tmp_path, data, capsys):
    """Each metric's interval, the excess interval and the p-value reach every output."""
    cfg = parse_gate_config(
        {
            "dataset": "ci",
            "metrics": {"common_rows": {"threshold": {"block": 0.5}}, "dcr": {"threshold": {"block": 0.99}}},
        }
    )
    db = tmp_path / "h.sqlite"
    with HistoryStore(db) as store:
        real, _ = data
        syn = baselines.uniform_random(real, seed=1)
        outcome = run_gate(cfg, real, syn, release_id="r1", history=store, record=False)
        res = outcome.results["common_rows"]
        res.set_ci((0.004, 0.031), "wilson")
        res.p_value = 0.0123
        outcome.results["dcr"].with_baseline(0.2, (0.15, 0.25), (-0.05, 0.125))
        html = render_html(outcome, store)
        assert '<span class="ci">[0.0040, 0.0310]</span>' in html and "wilson" in html and "0.0123" in html
        assert '<span class="ci">[-0.0500, +0.1250]</span>' in html
        doc = json.loads(write_json_report(outcome, tmp_path / "r.json", history=store).read_text())
        assert doc["results"]["common_rows"]["ci"] == [0.004, 0.031]
        assert doc["results"]["dcr"]["excess_ci"] == [-0.05, 0.125]
        assert all({"interval", "p_value", "on"} <= set(c) for c in doc["checks"])
        assert doc["history"]["scores"][0]["ci_low"] == 0.004  # the pending run, before recording
        store.record(outcome)
    capsys.readouterr()
    assert main(["history", "--dataset", "ci", "--history", str(db)]) == 0
    assert "[0.004, 0.031]" in capsys.readouterr().out  # the compact table: value and interval
    assert main(["history", "--dataset", "ci", "--history", str(db), "--wide"]) == 0
    out = capsys.readouterr().out
    assert "[0.004, 0.031]" in out and "[-0.05, +0.125]" in out and "p_value" in out
    assert main(["history", "--dataset", "ci", "--history", str(db), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["ci_low"] == 0.004 and rows[0]["p_value"] == 0.0123


def test_the_report_says_which_columns_were_left_out_or_compared_as_codes(tmp_path, monkeypatch):
    """A table with an identifier column and a postcode of more levels than the one-hot limit: the
    HTML report's run table names the identifier left out of the metrics and the postcode compared
    as equal or not, with its level count — names and counts, no value of a record."""
    from privgate import spaces

    monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", 20)

    def frame(seed: int) -> pl.DataFrame:
        r = np.random.default_rng(seed)
        return pl.DataFrame(
            {
                "pid": [f"P{seed}-{i:05d}" for i in range(300)],
                "x": r.normal(size=300),
                "zip": [f"7{z:04d}" for z in r.integers(0, 60, 300)],
            }
        )

    real, holdout, release = frame(0), frame(1), frame(2)
    cfg = parse_gate_config({"dataset": "cols", "metrics": {"authenticity": {"baseline": {"block": 0.15}}}})
    out = run_gate(cfg, real, release, holdout=holdout, release_id="c", record=False)
    html = re.sub(r"<[^>]+>", " ", render_html(out))
    assert "identifier columns" in html and "pid — left out of every metric but identifier_reuse" in html
    levels = pl.concat([real, holdout, release])["zip"].n_unique()  # the levels seen in the three frames
    assert f"zip ({levels:,} levels)" in html
    # as whole words: a run id or a digest may hold five digits in a row by chance
    assert not any(re.search(rf"\b{v}\b", html) for v in real["pid"].to_list() + real["zip"].to_list())
