"""The fail-closed campaign : generated frames and gate configurations, adversarial
ones included, through ``privgate gate`` in process. For every case:

- exit 0/1/2 only on a computed decision: no error check that counts, every metric value (and
  baseline, excess, interval, p-value) finite and in range, the history row saying the same;
- otherwise exit 3, with exactly one history row for the run, marked blocked (exit code 3,
  not accepted);
- no cell value of the real data in stdout, stderr, the JSON and HTML reports or any history row.

Derandomised in CI like every property test (tests/conftest.py); HYPOTHESIS_PROFILE=explore
searches new cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import sqlite3
import tempfile
from pathlib import Path

import pytest
import yaml
from fault_metrics import FAULTS, fault_metric
from generators import Case, cases, frame, real_tokens, release, write
from hypothesis import HealthCheck, event, given, settings

from privgate.cli import main

CAMPAIGN = settings(
    max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@contextlib.contextmanager
def registered(case: Case):
    """Register the case's fault metrics; yields {case metric → registry name}."""
    with contextlib.ExitStack() as stack:
        names = {}
        for m in case.metrics:
            names[m] = stack.enter_context(fault_metric(m.split(":", 1)[1])) if m.startswith("fault:") else m
        yield names


def gate_config(case: Case, names: dict[str, str]) -> dict:
    metrics = {}
    for m, name in names.items():
        metrics[name] = {"threshold": {case.severity.get(m, "block"): case.limits[m]}}
        if m in case.optional:
            metrics[name]["optional"] = True
    return {"version": 1, "dataset": "campaign", "seed": 0, "metrics": metrics}


def history_text(db: Path) -> tuple[list[dict], str]:
    """Every run row, and every cell of every table as one text (for the leak scan)."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        runs = [dict(r) for r in con.execute("SELECT * FROM privgate_runs ORDER BY seq")]
        text = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            text += [repr(tuple(r)) for r in con.execute(f'SELECT * FROM "{table}"')]
    finally:
        con.close()
    return runs, "\n".join(text)


def finite_in(x, lo, hi) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and lo - 1e-9 <= x <= hi + 1e-9


def assert_computed(doc: dict) -> None:
    """What exit 0/1/2 promises: a decision computed from valid numbers only."""
    for c in doc["checks"]:
        assert c["rule"] != "error" or (c["optional"] and c["skipped"] and c["verdict"] == "pass"), c
    for name, r in doc["results"].items():
        assert finite_in(r["value"], 0, 1), (name, r["value"])
        for key, lo, hi in (("baseline", 0, 1), ("excess", -1, 1), ("p_value", 0, 1)):
            assert r[key] is None or finite_in(r[key], lo, hi), (name, key, r[key])
        for key, lo, hi in (("ci", 0, 1), ("baseline_ci", 0, 1), ("excess_ci", -1, 1)):
            assert r[key] is None or all(finite_in(v, lo, hi) for v in r[key]), (name, key, r[key])


def note_event(text: str) -> None:
    """Hypothesis' statistics (--hypothesis-show-statistics), inside a property test only."""
    try:
        event(text)
    except Exception:  # noqa: BLE001 - outside a property test
        pass


def run_case(case: Case, tmp: Path) -> None:
    real = frame(case.names, case.kinds, case.n_real, case.seed)
    synthetic = release(real, case.how, case.seed, case.names, case.kinds)
    real_p = write(real, tmp / "real", case.real_format)
    syn_p = write(synthetic, tmp / "synthetic", case.synthetic_format)
    db, json_p, html_p = tmp / "h.sqlite", tmp / "report.json", tmp / "report.html"
    with registered(case) as names:
        cfg = tmp / "gate.yaml"
        cfg.write_text(yaml.safe_dump(gate_config(case, names)), encoding="utf-8")
        argv = [
            "gate",
            "--config",
            str(cfg),
            "--real",
            str(real_p),
            "--synthetic",
            str(syn_p),
            "--release-id",
            "r1",
            "--history",
            str(db),
            "--json",
            str(json_p),
            "--quiet",
            "--format",
            "json",
        ]
        if case.holdout:
            argv += [
                "--holdout",
                str(
                    write(frame(case.names, case.kinds, max(case.n_real, 1), case.seed + 7), tmp / "holdout", "parquet")
                ),
            ]
        if case.html:
            argv += ["--html", str(html_p)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    assert code in (0, 1, 2, 3), code
    note_event(f"exit {code}")
    doc = json.loads(out.getvalue())
    assert doc["exit_code"] == code
    runs, stored = history_text(db)
    assert len(runs) == 1, "exactly one history row per run"
    run = runs[0]
    assert (run["exit_code"], run["decision"]) == (code, doc["decision"])
    if code == 3:
        assert run["decision"] == "block" and not run["accepted"]
    else:
        assert doc["decision"] == ["pass", "warn", "block"][code] and bool(run["accepted"]) == (code < 2)
        assert_computed(doc)
        assert json.loads(json_p.read_text())["exit_code"] == code
    outputs = {
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "history": stored,
        "json": json_p.read_text() if json_p.exists() else "",
        "html": html_p.read_text() if html_p.exists() else "",
    }
    for token in real_tokens(real):
        for where, text in outputs.items():
            assert token not in text, f"real cell {token!r} in {where}"


@CAMPAIGN
@given(case=cases())
def test_cli_fails_closed_and_never_leaks(case):
    with tempfile.TemporaryDirectory(prefix="privgate-campaign-") as tmp:
        run_case(case, Path(tmp))


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("holdout", [False, True])
def test_every_metric_fault_fails_closed(fault, holdout, tmp_path):
    """Every misbehaviour of a metric, on inputs a gate can decide on, through the same
    invariant (the generated campaign may not draw each one)."""
    case = Case(
        names=["x", "c", "flag"],
        kinds=["float", "string", "bool"],
        n_real=20,
        seed=5,
        how="copy_plus_random",
        real_format="parquet",
        synthetic_format="parquet",
        holdout=holdout,
        metrics=["common_rows", f"fault:{fault}"],
        limits={"common_rows": 1.0, f"fault:{fault}": 1.0},
        html=fault in ("ok", "ci_nan"),
    )
    run_case(case, tmp_path)
