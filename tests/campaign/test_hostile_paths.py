"""Fail-open paths an attacker's campaign looks for, one test each (each fails where the path
is open): a relabelled copy, duplicate configuration keys, non-finite history
values, gates that checked nothing, headerless files, unbounded work, runs without a deadline
and errors that did not name their cause."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from generators import SECRET, secret_real

from privgate.baselines import independent_marginals
from privgate.cli import main
from privgate.context import EvaluationContext
from privgate.errors import CodebookMismatchError
from privgate.history import HistoryStore

N = 60


@pytest.fixture(scope="module")
def real() -> pl.DataFrame:
    return secret_real(N, second_text_column=True)


def _write(frame: pl.DataFrame, path):
    frame.write_csv(path) if path.suffix == ".csv" else frame.write_parquet(path)
    return path


def _gate(tmp_path, real_p, syn_p, cfg=None, *extra, db="h.sqlite"):
    argv = [
        "gate",
        "--real",
        str(real_p),
        "--synthetic",
        str(syn_p),
        "--release-id",
        "r",
        "--history",
        str(tmp_path / db),
        "--quiet",
        *extra,
    ]
    if cfg is not None:
        argv[1:1] = ["--config", str(cfg)]
    return main(argv)


def _last_run(tmp_path, dataset, db="h.sqlite") -> dict:
    with HistoryStore(tmp_path / db) as h:
        return h.runs(dataset).row(-1, named=True)


# relabelled copies ---------------------------------------------------------------------------
RELABELS = {
    "upper": lambda s: s.str.to_uppercase(),
    "trailing_space": lambda s: s + " ",
    "renamed": lambda s: pl.lit("L") + s.hash(7).cast(pl.String),
}


@pytest.mark.parametrize("how", list(RELABELS))
@pytest.mark.parametrize("holdout", [False, True])
def test_relabelled_copy_is_refused_naming_the_column(tmp_path, real, capsys, how, holdout):
    """An exact copy with every string column upper-cased (or otherwise renamed one to one)
    passed the default gate: every metric took the renamed levels for new categories."""
    copy = real.with_columns(RELABELS[how](pl.col("c")).alias("c"), RELABELS[how](pl.col("d")).alias("d"))
    extra = (
        ["--holdout", str(_write(real.sample(N, seed=9, shuffle=True), tmp_path / "hold.parquet"))] if holdout else []
    )
    code = _gate(
        tmp_path,
        _write(real, tmp_path / "real.parquet"),
        _write(copy, tmp_path / "syn.parquet"),
        None,
        "--dataset",
        "relabel",
        *extra,
    )
    out = capsys.readouterr()
    assert code == 3, out.out
    assert "column 'c' of synthetic" in out.out and "codebook" in out.out
    assert SECRET not in out.out + out.err
    assert _last_run(tmp_path, "relabel")["exit_code"] == 3


def test_codebook_check_spares_honest_releases(real):
    """Releases that draw their levels from the real data — a subsample missing levels, a
    few unknown levels, a fresh identifier column — are not refused."""
    EvaluationContext(real, real.sample(10, seed=1))
    few_new = real.with_columns(pl.when(pl.int_range(N) < 3).then(pl.lit("other")).otherwise("c").alias("c"))
    EvaluationContext(real, few_new)
    ids = real.with_columns(pl.format("{}{}", pl.lit(SECRET), pl.int_range(N)).alias("id"))
    EvaluationContext(ids, ids.with_columns(pl.format("fresh{}", pl.int_range(N)).alias("id")))


def test_relabelled_sample_is_found_by_its_frequency_profile(real):
    """A relabelled sample of the real rows misses rare levels and still matches by frequency."""
    sample = real.sample(40, seed=2).with_columns(
        pl.col("d").replace_strict({f"{SECRET}d0": "p", f"{SECRET}d1": "q", f"{SECRET}d2": "r"}, default=None)
    )
    with pytest.raises(CodebookMismatchError, match=r"column 'd' of synthetic: 3 of its categories"):
        EvaluationContext(real, sample)


# duplicate configuration keys ----------------------------------------------------------------
DUPLICATES = {
    "metrics.common_rows": "metrics:\n  common_rows:\n    threshold: {block: 0.01}\n"
    "  common_rows:\n    threshold: {block: 1.0}\n",
    "metrics.common_rows.threshold.block": "metrics:\n  common_rows:\n    threshold: {block: 0.0, block: 1.0}\n",
    "dataset": "dataset: a\nmetrics:\n  common_rows: {threshold: 0.01}\n",
}


@pytest.mark.parametrize("key", list(DUPLICATES))
def test_duplicate_yaml_keys_are_a_config_error_naming_the_key(tmp_path, real, capsys, key):
    """Two `common_rows:` entries, a strict one then a lax one: the last silently won and an
    exact copy passed."""
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("dataset: dups\n" + DUPLICATES[key])
    real_p = _write(real, tmp_path / "real.parquet")
    assert _gate(tmp_path, real_p, real_p, cfg) == 3
    out = capsys.readouterr().out
    assert f"{key}: duplicate key" in out
    from privgate.errors import ConfigError
    from privgate.gates.config import load_gate_config

    with pytest.raises(
        ConfigError, match=rf"^{key}: duplicate key in .*gate.yaml \(line \d: set at line \d and at line \d\)"
    ):
        load_gate_config(cfg)


def test_yaml_merge_keys_still_load(tmp_path):
    """A merge key bringing keys the mapping does not set loads; one whose key the mapping sets
    again is two values for one key (YAML lets the mapping's win silently) and is refused."""
    from privgate.errors import ConfigError
    from privgate.gates.config import load_gate_config

    cfg = tmp_path / "gate.yaml"
    cfg.write_text(
        "metrics:\n  common_rows:\n    threshold: &t {warn: 0.001}\n"
        "  hitting_rate:\n    threshold: {<<: *t, block: 0.5}\n"
    )
    rules = load_gate_config(cfg).metrics["hitting_rate"].rules
    assert sorted((r.severity, r.limit) for r in rules) == [("block", 0.5), ("warn", 0.001)]
    cfg.write_text(
        "metrics:\n  common_rows:\n    threshold: &t {warn: 0.001, block: 0.01}\n"
        "  hitting_rate:\n    threshold: {<<: *t, block: 0.5}\n"
    )
    with pytest.raises(ConfigError, match=r"^metrics.hitting_rate.threshold.block: duplicate key .*line 5"):
        load_gate_config(cfg)


# non-finite history values -------------------------------------------------------------------
def _poison_last_score(db, metric: str, value) -> None:
    import sqlite3

    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE privgate_scores SET value = ? WHERE metric = ?", (value, metric))
    con.close()


@pytest.mark.parametrize("stored", [float("inf"), float("-inf"), 2.5, -0.5, "junk"])
def test_history_value_not_finite_in_range_blocks_the_trend_rule(tmp_path, real, capsys, stored):
    """With the last accepted run's stored value set to +inf, a trend-only gate passed an exact
    copy: it compared 1 − inf."""
    real_p = _write(real, tmp_path / "real.parquet")
    honest = _write(real.with_columns(pl.col("x") + 100.0), tmp_path / "honest.parquet")
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("dataset: trend\nmetrics:\n  common_rows:\n    trend: {block: 0.0}\n    threshold: {block: 1.0}\n")
    assert _gate(tmp_path, real_p, honest, cfg) == 0  # first release: nothing to compare with
    _poison_last_score(tmp_path / "h.sqlite", "common_rows", stored)
    capsys.readouterr()
    code = _gate(tmp_path, real_p, real_p, cfg)
    out = capsys.readouterr().out
    assert code == 3, out
    assert "the history's value of common_rows for the last accepted release is" in out
    assert "correct or delete that run's score row" in out
    assert _last_run(tmp_path, "trend")["exit_code"] == 3


@pytest.mark.parametrize("previous", [float("nan"), float("inf"), 1.5, None, "0.1", True])
def test_decide_refuses_a_previous_value_that_is_not_a_metric_value(previous):
    from privgate.gates import decide, decision_of
    from privgate.gates.config_validate import parse_gate_config
    from privgate.results import MetricResult

    cfg = parse_gate_config({"metrics": {"common_rows": {"trend": {"block": 0.0}}}})
    res = MetricResult(name="common_rows", value=1.0, raw=1.0)
    checks = decide(cfg, {"common_rows": res}, {}, has_holdout=False, previous={"common_rows": previous})
    if previous is None:  # absent (an optional metric that failed then): skipped, not compared
        assert checks[0].skipped
    else:
        assert decision_of(checks)[1] == 3 and "history's value" in checks[0].message


# gates that check nothing -------------------------------------------------------------------
UNCHECKED = {
    "with_holdout_rules_no_holdout": "  common_rows:\n    threshold: {when: with_holdout, block: 0.01}\n",
    "trend_only_first_release": "  common_rows:\n    trend: {block: 0.0}\n",
    "baseline_only_no_holdout": "  common_rows:\n    baseline: {block: 0.01}\n",
    "only_metric_optional_and_failing": "  disclosure_identity:\n    optional: true\n    threshold: {block: 0.01}\n",
}


@pytest.mark.parametrize("case", list(UNCHECKED))
def test_a_gate_that_checked_nothing_does_not_pass(tmp_path, real, capsys, case):
    """Each of these said PASS (exit 0) on an exact copy."""
    real_p = _write(real, tmp_path / "real.parquet")
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("dataset: unchecked\nmetrics:\n" + UNCHECKED[case])
    code = _gate(tmp_path, real_p, real_p, cfg)
    out = capsys.readouterr().out
    assert code == 3, out
    assert "nothing was checked" in out and "allow_unchecked: true" in out
    run = _last_run(tmp_path, "unchecked")
    assert (run["decision"], run["exit_code"], run["accepted"]) == ("block", 3, False)
    # explicitly allowed: passes, and says so in words in the table, the JSON and the HTML
    cfg.write_text("dataset: unchecked\nallow_unchecked: true\nmetrics:\n" + UNCHECKED[case])
    code = _gate(
        tmp_path,
        real_p,
        real_p,
        cfg,
        "--json",
        str(tmp_path / "r.json"),
        "--html",
        str(tmp_path / "r.html"),
        "--format",
        "table",
        db="allowed.sqlite",
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "passes UNCHECKED" in out
    assert "passes UNCHECKED" in (tmp_path / "r.json").read_text()
    assert "passes UNCHECKED" in (tmp_path / "r.html").read_text()


def test_trend_only_gate_whose_previous_value_is_null_does_not_pass(tmp_path, real, capsys):
    real_p = _write(real, tmp_path / "real.parquet")
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("dataset: unchecked\nallow_unchecked: true\nmetrics:\n  common_rows:\n    trend: {block: 0.0}\n")
    assert _gate(tmp_path, real_p, real_p, cfg) == 0
    _poison_last_score(tmp_path / "h.sqlite", "common_rows", None)
    cfg.write_text("dataset: unchecked\nmetrics:\n  common_rows:\n    trend: {block: 0.0}\n")
    assert _gate(tmp_path, real_p, real_p, cfg) == 3
    assert "nothing was checked" in capsys.readouterr().out


def test_allow_unchecked_is_validated_and_hashed_only_when_set():
    from privgate.errors import ConfigError
    from privgate.gates.config_validate import parse_gate_config

    base = {"metrics": {"common_rows": {"threshold": 0.01}}}
    with pytest.raises(ConfigError, match="allow_unchecked: must be true or false"):
        parse_gate_config({**base, "allow_unchecked": "yes"})
    assert parse_gate_config({**base, "allow_unchecked": False}).hash == parse_gate_config(base).hash
    assert parse_gate_config({**base, "allow_unchecked": True}).hash != parse_gate_config(base).hash


# headerless files -----------------------------------------------------------------------------
def _outputs(tmp_path, db="h.sqlite") -> str:
    import sqlite3

    con = sqlite3.connect(tmp_path / db)
    rows = [
        repr(tuple(r))
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
        for r in con.execute(f'SELECT * FROM "{t}"')
    ]
    con.close()
    files = [p.read_text() for p in (tmp_path / "r.json", tmp_path / "r.html") if p.exists()]
    return "\n".join(rows + files)


def _headerless(frame: pl.DataFrame, path):
    frame.write_csv(path, include_header=False)
    return path


@pytest.mark.parametrize("which", ["real", "both", "real_unique_strings"])
def test_headerless_csv_leaks_no_record(tmp_path, real, capsys, which):
    """A real CSV without a header row made its first record the column names: the record then
    reached the error message, stdout, the reports and the history (and, with both files
    headerless, the schema fingerprint)."""
    frame = real
    if which == "real_unique_strings":  # a first line the header check cannot tell from a header
        frame = pl.DataFrame(
            {"d": [f"{SECRET}U{i}" for i in range(N)], "e": [f"{SECRET}V{i}" for i in range(N)], "x": real["x"]}
        )
    frame = frame.with_columns((pl.col("x") + 271828.0).alias("x"))
    first = [str(v) for v in frame.row(0)]
    real_p = _headerless(frame, tmp_path / "real.csv")
    syn_p = _headerless(frame, tmp_path / "syn.csv") if which == "both" else _write(frame, tmp_path / "syn.parquet")
    code = _gate(
        tmp_path,
        real_p,
        syn_p,
        None,
        "--dataset",
        "headerless",
        "--json",
        str(tmp_path / "r.json"),
        "--html",
        str(tmp_path / "r.html"),
    )
    out = capsys.readouterr()
    assert code == 3
    text = out.out + out.err + _outputs(tmp_path)
    joined = " ".join(text.split())  # a value wrapped over two table lines is still a leak
    for cell in first:
        if len(cell) > 3 and cell not in ("true", "false"):
            assert cell not in text and " ".join(cell.split()) not in joined, cell
    if which != "real_unique_strings":
        assert "looks like a record, not a header" in " ".join(out.out.split())  # tables wrap at 100 columns


def test_header_check_spares_ordinary_headers(tmp_path):
    from privgate.errors import InputLoadError
    from privgate.io import load_frame

    p = tmp_path / "ok.csv"
    p.write_text("x,y,c\n1.5,2,a\n2.5,3,c\n3.5,4,b\n")  # one name equal to a value is a coincidence
    assert load_frame(p).columns == ["x", "y", "c"]
    p.write_text("2019,2020,name,city,zone\n1,2,a,k,n\n3,4,b,l,s\n")  # numbers as names in a minority of columns
    assert load_frame(p).height == 2
    p.write_text("2019,2020,name,city\n1,2,a,k\n3,4,b,l\n")  # as many numbers as names: not confirmed
    with pytest.raises(InputLoadError, match=r"looks like a record, not a header"):
        load_frame(p)
    p.write_text("10,20,30\n1,2,3\n4,5,6\n")
    with pytest.raises(InputLoadError, match=r"the first cell of column\(s\) 1, 2, 3 is like the values below it"):
        load_frame(p, role="real")


# work-multiplying parameters -----------------------------------------------------------------
@pytest.mark.parametrize(
    "metric,params,limit",
    [
        ("singling_out", {"n_attacks": 100000}, "max(500, distinct synthetic records) = 500"),
        ("singling_out", {"n_attacks": 10, "max_attempts": 10**9}, "n_attacks, 100,000) = 100,000"),
        ("nnaa", {"repetitions": 10**6}, "limit of 100"),
        ("proximity_score", {"repetitions": 10**6}, "limit of 100"),
        ("membership_inference", {"repetitions": 10**6}, "limit of 100"),
        ("detection_mlp", {"max_iter": 10**7}, "limit of 5000"),
        ("detection_mlp", {"hidden_layer_sizes": [10**6]}, "limit of 10000"),
        ("detection_mlp", {"folds": 10**4}, "limit of 20"),
    ],
)
def test_work_multiplying_parameters_are_bounded(real, metric, params, limit):
    """singling_out with n_attacks 100000 on 400 rows ran for more than 300 s: neither refused
    nor capped (attempts are 100 × n_attacks)."""
    import privgate

    rep = privgate.evaluate(real, real, [metric], holdout=real, params={metric: params}, on_error="record")
    assert metric in rep.errors and limit in rep.errors[metric], rep.errors


# deadlines ----------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["config", "cli", "run_gate"])
def test_a_run_past_its_deadline_is_stopped_blocked_and_recorded(tmp_path, real, capsys, how):
    """A 200-row × 10,000-column copy got no verdict within 420 s; nothing bounded a run."""
    import time

    from fault_metrics import fault_metric

    from privgate.gates import run_gate

    real_p = _write(real, tmp_path / "real.parquet")
    with fault_metric("hang_python") as name:
        cfg = tmp_path / "gate.yaml"
        text = f"dataset: slow\nmetrics:\n  common_rows: {{threshold: 0.5}}\n  {name}: {{threshold: 0.5}}\n"
        cfg.write_text(text + ("options: {deadline: 0.5}\n" if how == "config" else ""))
        start = time.monotonic()
        if how == "run_gate":
            with HistoryStore(tmp_path / "h.sqlite") as h:
                outcome = run_gate(cfg, real_p, real_p, release_id="r", history=h, deadline=0.5)
            code, out = outcome.exit_code, outcome.table()
        else:
            code = _gate(tmp_path, real_p, real_p, cfg, *(["--deadline", "0.5"] if how == "cli" else []))
            out = capsys.readouterr().out
        took = time.monotonic() - start
    assert code == 3, out
    assert "did not finish within its deadline of 0.5 s" in out
    assert took < 60  # stopped, not waited for (the metric never ends)
    run = _last_run(tmp_path, "slow")
    assert (run["decision"], run["exit_code"], run["accepted"]) == ("block", 3, False)
    with HistoryStore(tmp_path / "h.sqlite") as h:
        assert "deadline" in h.checks(run["run_id"])["message"].to_list()[0]


def test_a_run_stuck_in_native_code_ends_the_cli_process(tmp_path, real):
    """The worker cannot be interrupted inside one native call: the CLI records the blocked run
    and ends its process instead of waiting."""
    import subprocess
    import sys
    from pathlib import Path

    real_p = _write(real, tmp_path / "real.parquet")
    here = Path(__file__).parent
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "from fault_metrics import fault_metric\n"
        "from privgate.cli import main\n"
        "import privgate.gates.deadline as deadline; deadline.STOP_GRACE = 0.5\n"
        "with fault_metric('hang_native') as name:\n"
        "    open(%r, 'w').write('dataset: stuck\\nmetrics:\\n  ' + name + ': {threshold: 0.5}\\n')\n"
        "    sys.exit(main(['gate', '--config', %r, '--real', %r, '--synthetic', %r, '--release-id', 'r',"
        " '--history', %r, '--quiet', '--deadline', '0.5']))\n"
    ) % (
        str(here),
        str(tmp_path / "g.yaml"),
        str(tmp_path / "g.yaml"),
        str(real_p),
        str(real_p),
        str(tmp_path / "h.sqlite"),
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=str(Path(__file__).parents[2])
    )
    assert done.returncode == 3, done.stderr
    assert "did not finish within its deadline" in done.stdout
    assert "ending the process" in done.stderr
    run = _last_run(tmp_path, "stuck")
    assert (run["decision"], run["exit_code"]) == ("block", 3)


def test_deadline_option_is_validated():
    from privgate.errors import ConfigError
    from privgate.gates.config_validate import parse_gate_config

    base = {"metrics": {"common_rows": {"threshold": 0.01}}}
    for bad in (0, -1, float("inf"), "soon", True):
        with pytest.raises(ConfigError, match="options.deadline: must be a number of seconds"):
            parse_gate_config({**base, "options": {"deadline": bad}})
    cfg = parse_gate_config({**base, "options": {"deadline": 60}})
    assert cfg.options.deadline == 60.0 and cfg.hash == parse_gate_config(base).hash


def test_dagster_resource_deadline_stops_and_records_the_run(tmp_path, real):
    pytest.importorskip("dagster")
    from fault_metrics import fault_metric

    from privgate.dagster import PrivgateResource
    from privgate.gates import parse_gate_config

    real_p = _write(real, tmp_path / "real.parquet")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    resource = PrivgateResource(real_path=str(real_p), history_url=url, deadline=0.5)
    with fault_metric("hang_python") as name:
        gate = parse_gate_config({"dataset": "slow", "metrics": {name: {"threshold": 0.5}}})
        outcome, _ = resource.evaluate(real, release_id="r1", declared=gate)
    assert outcome.exit_code == 3 and "deadline of 0.5 s" in outcome.checks[0].message
    run = _last_run(tmp_path, "slow")
    assert (run["decision"], run["exit_code"]) == ("block", 3)


# errors that name their cause ----------------------------------------------------------------
def test_all_nan_float_column_of_the_real_data_is_refused_naming_it(tmp_path, real, capsys):
    """An all-NaN float column of the real data was not refused and ended in `ValueError
    (message withheld)`."""
    nan = real.with_columns(pl.lit(float("nan")).alias("x"))
    for fmt in ("parquet", "csv"):
        p = _write(nan, tmp_path / f"real.{fmt}") if fmt == "parquet" else tmp_path / "real.csv"
        if fmt == "csv":
            nan.write_csv(p)
        assert _gate(tmp_path, p, _write(real, tmp_path / "syn.parquet")) == 3
        out = capsys.readouterr().out
        assert "column 'x' of real has only nulls" in out and "NaN" in out, out
        assert "withheld" not in out


@pytest.mark.parametrize("where", ["real", "synthetic"])
def test_huge_numbers_are_refused_naming_the_column(tmp_path, real, capsys, where):
    """Values of 1e308 ended in `ValueError (message withheld)` (distances overflow)."""
    huge = real.with_columns(pl.when(pl.int_range(N) == 4).then(1e308).otherwise(pl.col("x")).alias("x"))
    frames = {"real": real, "synthetic": real.with_columns(pl.col("x") + 5.0)}
    frames[where] = huge
    code = _gate(
        tmp_path,
        _write(frames["real"], tmp_path / "real.parquet"),
        _write(frames["synthetic"], tmp_path / "syn.parquet"),
    )
    out = capsys.readouterr().out
    assert code == 3
    assert f"column 'x' of {where} has 1 value(s) larger than 1e+100 in magnitude" in " ".join(out.split()), out
    assert "withheld" not in out


def test_history_that_lost_its_version_row_is_migrated(tmp_path, real, capsys):
    """A version-1 history whose schema-version row was deleted was stamped version 2 without
    migration, and every later run exited 3 with a message that did not say why."""
    import sqlalchemy as sa

    from privgate.history.schema import SCHEMA_VERSION

    real_p = _write(real, tmp_path / "real.parquet")
    # other people: each column drawn on its own, new numeric values (a shifted copy of the real
    # records would be a copy in disguise, blocked)
    fresh = pl.Series("x", np.random.default_rng(9).normal(size=real.height).round(3) + 0.0005)
    syn_p = _write(independent_marginals(real, seed=4).with_columns(fresh), tmp_path / "syn.parquet")
    db = tmp_path / "h.sqlite"
    assert _gate(tmp_path, real_p, syn_p) == 0
    eng = sa.create_engine(f"sqlite:///{db}")
    with eng.begin() as conn:  # back to version 1: drop the columns version 2 added, lose the row
        for table, cols in (("privgate_scores", ["ci_low", "p_value"]), ("privgate_checks", ["decided_on"])):
            for c in cols:
                conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {c}"))
        conn.execute(sa.text("DELETE FROM privgate_meta WHERE key = 'schema_version'"))
    eng.dispose()
    capsys.readouterr()
    assert _gate(tmp_path, real_p, syn_p) == 0, capsys.readouterr().out
    with HistoryStore(db) as h:
        assert h.schema_version == SCHEMA_VERSION and h.runs(h.datasets()[0]).height == 2
    # a version row that claims columns the tables lack: refused, naming table, columns and fix
    eng = sa.create_engine(f"sqlite:///{db}")
    with eng.begin() as conn:
        conn.execute(sa.text("ALTER TABLE privgate_scores DROP COLUMN ci_high"))
    eng.dispose()
    from privgate.errors import HistoryError

    with pytest.raises(
        HistoryError,
        match=r"table privgate_scores .* lacks column\(s\) ci_high .* delete the "
        r"schema_version row",
    ):
        HistoryStore(db)


# what memorisation estimates ------------------------------------------------------------------
def test_memorisation_says_it_estimates_the_detectable_share_a_lower_bound(adult, adult_holdout):
    """On held-back releases with noisy copies of training records the interval covered the
    nominal memorised share in 1 of 10 releases: part of the noisy copies are no longer nearer
    to their source than to the holdout. The value is the detectably memorised share, a lower
    bound, and says so."""
    from privgate import baselines
    from privgate.gates import run_gate
    from privgate.metrics.memorisation import memorisation
    from privgate.render import render_html

    train, hold = adult.head(1500), adult_holdout.head(1500)
    rng = np.random.default_rng(4)
    k = 75  # 5 % of the release
    src = train[np.sort(rng.choice(train.height, k, replace=False))]
    num = [c for c, d in train.schema.items() if d.is_numeric()]
    noisy = src.with_columns(
        [
            (pl.col(c).cast(pl.Float64) + pl.Series(rng.normal(0, 0.3 * train[c].std(), k)))
            .round(0)
            .cast(train.schema[c])
            for c in num
        ]
    )
    release = pl.concat([baselines.independent_marginals(train, seed=3, n=train.height - k), noisy])
    ctx = EvaluationContext(train, release, holdout=hold, seed=0)
    res = memorisation(ctx)
    d_t = ctx.neighbours("mixed", "synthetic", "real", 1).dist[-k:, 0]
    d_h = ctx.neighbours("mixed", "synthetic", "holdout", 1).dist[-k:, 0]
    detectable = float((d_t < 0.5 * d_h).sum()) / release.height
    planted = k / release.height
    assert detectable < planted  # some noisy copies are no longer detectable
    assert res.ci[0] <= detectable <= res.ci[1]
    assert res.value < planted
    assert "detectably memorised" in res.details["estimates"] and "lower bound" in res.details["estimates"]
    outcome = run_gate(
        {"metrics": {"memorisation": {"threshold": {"on": "lower", "block": 0.01}}}},
        train,
        release,
        holdout=hold,
        record=False,
    )
    assert "estimates the share of the release detectably memorised" in render_html(outcome)


def test_relabelled_copy_through_the_adapters_fails_and_leaks_nothing(real):
    """Dagster checks and GX expectations see the same refusal: not passed, no real value."""
    copy = real.with_columns(pl.col("c").str.to_uppercase(), pl.col("d").str.to_uppercase())
    dg = pytest.importorskip("dagster")
    from privgate.dagster.rule_checks import DECISION_CHECK, check_results
    from privgate.gates import parse_gate_config, run_gate

    cfg = parse_gate_config({"dataset": "adapters", "metrics": {"common_rows": {"threshold": {"block": 0.01}}}})
    outcome = run_gate(cfg, real, copy, record=False)
    results = {r.check_name: r for r in check_results(cfg, outcome)}
    assert outcome.exit_code == 3 and not results[DECISION_CHECK].passed
    assert results[DECISION_CHECK].severity == dg.AssetCheckSeverity.ERROR
    text = repr([(r.description, {k: v.value for k, v in (r.metadata or {}).items()}) for r in results.values()])
    assert "codebook" in text and SECRET not in text

    gx = pytest.importorskip("great_expectations")
    import json

    import privgate.gx as pe
    import privgate.gx.compute  # noqa: F401

    ref = pe.register_real("hostile-relabel", real)
    pe.compute.clear_context_cache()
    r = pe.validate_release(
        copy,
        pe.ExpectSyntheticPrivacyRiskToBeBelow(metric="common_rows", real=ref, threshold=0.5),
        context=gx.get_context(mode="ephemeral"),
    )
    assert r.success is False and pe.is_errored(r)
    assert SECRET not in json.dumps(r.to_json_dict(), default=str)


@pytest.mark.parametrize(
    "text,key",
    [
        ("[metrics.common_rows.threshold]\nblock = 0.01\nblock = 1.0\n", "metrics.common_rows.threshold.block"),
        (
            "[metrics.common_rows.threshold]\nblock = 0.01\n[metrics.common_rows.threshold]\nblock = 1.0\n",
            "metrics.common_rows.threshold",
        ),
    ],
)
def test_duplicate_toml_keys_name_the_key(tmp_path, text, key):
    from privgate.errors import ConfigError
    from privgate.gates.config import load_gate_config

    cfg = tmp_path / "gate.toml"
    cfg.write_text('dataset = "dups"\n' + text)
    with pytest.raises(ConfigError, match=rf"^{key}: duplicate key in .*gate.toml \(line \d\)"):
        load_gate_config(cfg)


def test_with_deadline_stops_a_python_loop_and_returns_a_result_in_time():
    """The helper every run (and each Dagster family step) goes through."""
    import time

    from privgate.gates.deadline import DeadlineExceeded, with_deadline

    assert with_deadline(lambda: 42, 5.0)[0] == 42
    ticks = []

    def spin():
        while True:
            ticks.append(1)
            time.sleep(0.01)

    with pytest.raises(DeadlineExceeded) as err:
        with_deadline(spin, 0.2)
    assert not err.value.worker.is_alive()  # stopped, not left running
    n = len(ticks)
    time.sleep(0.05)
    assert len(ticks) == n
    with pytest.raises(ZeroDivisionError):  # what the work raised is raised
        with_deadline(lambda: 1 / 0, 5.0)
