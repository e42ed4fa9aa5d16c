"""The hostile cases as a table: each case builds its inputs (a copy, a relabelled copy, an
honest release; Parquet, CSV or a file without a header row), its gate configuration (YAML text:
duplicate keys, rules that cannot apply, a deadline) and its history (values read back that are
not metric values), runs ``privgate gate`` in process, and states its expected outcome: the exit
code(s) and a fragment of the message. For every case the contract is also checked:

- never exit 0 (nor 1) on a copy or a relabelled copy;
- exit 3 exactly when the gate could not decide, with one history row, blocked;
- no real cell value (nor the first record of a headerless file) in stdout, stderr, the JSON
  report or any history table (the HTML report on the cases that ask for it).
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl
import pytest
from fault_metrics import fault_metric

from privgate.cli import main

N = 60
TOKEN = "Zk"  # every real string cell starts with it
FLOAT_BASE = 271828.0  # every real float is 271828.xxx: its text cannot arise in an output by chance


def real_frame(seed: int = 11) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "age": (FLOAT_BASE + rng.integers(0, 9, N) * 1.13).round(2),
            "score": (FLOAT_BASE + rng.normal(size=N)).round(4),
            "city": [f"{TOKEN}city{i % 5}" for i in range(N)],
            "job": [f"{TOKEN}job{(i * 7) % 4}" for i in range(N)],
            "flag": rng.random(N) < 0.3,
        }
    )


REAL = real_frame()
HOLDOUT = real_frame().with_columns(pl.col("score") + 0.5, pl.col("age") + 2.26)


def _tokens(frame: pl.DataFrame) -> set[str]:
    out = {v for c in ("city", "job") for v in frame[c].to_list()}
    out |= {f"{v:.2f}" for v in frame["age"].to_list()} | {f"{v:.4f}" for v in frame["score"].to_list()}
    return out


TOKENS = _tokens(REAL)


def _strings(frame: pl.DataFrame, fn: Callable[[pl.Expr], pl.Expr], cols=("city", "job")) -> pl.DataFrame:
    return frame.with_columns([fn(pl.col(c)).alias(c) for c in cols])


# releases: name → (builder, is a copy of the real data)
RELEASES: dict[str, tuple[Callable[[], pl.DataFrame], bool]] = {
    "copy": (lambda: REAL, True),
    "copy_shuffled": (lambda: REAL.sample(N, seed=3, shuffle=True), True),
    "copy_upper": (lambda: _strings(REAL, lambda e: e.str.to_uppercase()), True),
    "copy_lower": (lambda: _strings(REAL, lambda e: e.str.to_lowercase()), True),
    "copy_trailing_space": (lambda: _strings(REAL, lambda e: e + " "), True),
    "copy_leading_space": (lambda: _strings(REAL, lambda e: " " + e), True),
    "copy_upper_one_column": (lambda: _strings(REAL, lambda e: e.str.to_uppercase(), ("city",)), True),
    "copy_hash_relabel": (lambda: _strings(REAL, lambda e: pl.lit("h") + e.hash(1).cast(pl.String)), True),
    "copy_prefix_relabel": (lambda: _strings(REAL, lambda e: pl.lit("L_") + e.str.slice(2)), True),
    "copy_reversed_relabel": (lambda: _strings(REAL, lambda e: e.str.reverse()), True),
    "copy_relabelled_sample": (
        lambda: _strings(REAL.sample(45, seed=5), lambda e: pl.lit("h") + e.hash(2).cast(pl.String)),
        True,
    ),
    # other people of the same population (not the real records shifted: a shifted copy is a copy)
    "honest": (lambda: real_frame(12), False),
}

CONFIGS = {
    "default": None,  # the shipped default gate
    "common_rows": "metrics:\n  common_rows:\n    threshold: {warn: 0.001, block: 0.01}\n",
    "hitting_rate": "metrics:\n  hitting_rate:\n    threshold: {block: 0.5}\n",
}


@dataclass
class HostileCase:
    id: str
    release: str = "copy"
    config: str | None = None  # YAML text (None: the default gate)
    holdout: bool = False
    real_format: str = "parquet"  # parquet | csv | headerless
    synthetic_format: str = "parquet"
    history: list = field(default_factory=list)  # (metric, stored value) for a poisoned earlier run
    expect: tuple[int, ...] = (3,)
    message: str = ""
    extra: tuple[str, ...] = ()
    html: bool = False
    hang: bool = False  # add a metric that never ends


def _yaml(metrics: str, **top) -> str:
    head = "".join(f"{k}: {v}\n" for k, v in top.items())
    return f"dataset: hostile\n{head}{metrics}"


def build_cases() -> list[HostileCase]:
    cases: list[HostileCase] = []
    relabelled = [r for r, (_, is_copy) in RELEASES.items() if is_copy and r not in ("copy", "copy_shuffled")]
    # 1. relabelled copies: refused (codebook), whatever the configuration, holdout or format
    for rel in relabelled:
        for cfg, holdout, fmt in (
            ("default", False, "parquet"),
            ("default", True, "parquet"),
            ("common_rows", False, "parquet"),
            ("common_rows", True, "csv"),
        ):
            cases.append(
                HostileCase(
                    f"relabel-{rel}-{cfg}-{'holdout' if holdout else 'no_holdout'}-{fmt}",
                    release=rel,
                    config=CONFIGS[cfg] and _yaml(CONFIGS[cfg]),
                    holdout=holdout,
                    synthetic_format=fmt,
                    expect=(3,),
                    message="codebook",
                )
            )
    # 2. exact copies: blocked by the rules (2), never passed
    for rel in ("copy", "copy_shuffled"):
        for cfg, expect in (("default", (2,)), ("common_rows", (2,)), ("hitting_rate", (2,))):
            for holdout in (False, True):
                cases.append(
                    HostileCase(
                        f"{rel}-{cfg}-{'holdout' if holdout else 'no_holdout'}",
                        release=rel,
                        config=CONFIGS[cfg] and _yaml(CONFIGS[cfg]),
                        holdout=holdout,
                        expect=expect,
                    )
                )
    # 3. duplicate keys: a strict rule then a lax one of the same name
    dups = {
        "metric_twice": "metrics:\n  common_rows:\n    threshold: {block: 0.01}\n  common_rows:\n    threshold: {block: 1.0}\n",
        "limit_twice": "metrics:\n  common_rows:\n    threshold: {block: 0.01, block: 1.0}\n",
        "rule_twice": "metrics:\n  common_rows:\n    threshold: {block: 0.01}\n    threshold: {block: 1.0}\n",
        "top_key_twice": "seed: 1\nseed: 2\nmetrics:\n  common_rows:\n    threshold: {block: 0.01}\n",
        "options_twice": "options: {threads: 1}\noptions: {threads: 1}\nmetrics:\n  common_rows: {threshold: 0.01}\n",
    }
    for name, text in dups.items():
        for rel in ("copy", "copy_upper"):
            cases.append(
                HostileCase(f"dup-{name}-{rel}", release=rel, config=_yaml(text), expect=(3,), message="duplicate key")
            )
    # 4. gates that check nothing, on a copy
    unchecked = {
        "with_holdout_only": "metrics:\n  common_rows:\n    threshold: {when: with_holdout, block: 0.01}\n",
        "trend_only_first": "metrics:\n  common_rows:\n    trend: {block: 0.0}\n",
        "baseline_only": "metrics:\n  common_rows:\n    baseline: {block: 0.01}\n",
        "optional_failing": "metrics:\n  disclosure_identity:\n    optional: true\n    threshold: {block: 0.01}\n",
        "no_holdout_rule_with_holdout": "metrics:\n  common_rows:\n    threshold: {when: no_holdout, block: 1.0}\n",
    }
    for name, text in unchecked.items():
        holdout = name == "no_holdout_rule_with_holdout"
        for rel in ("copy", "copy_shuffled"):
            cases.append(
                HostileCase(
                    f"unchecked-{name}-{rel}",
                    release=rel,
                    config=_yaml(text),
                    holdout=holdout,
                    expect=(3,),
                    message="nothing was checked",
                )
            )
        cases.append(
            HostileCase(
                f"unchecked-allowed-{name}",
                release="honest",
                config=_yaml(text, allow_unchecked="true"),
                holdout=holdout,
                expect=(0,),
                message="passes UNCHECKED",
            )
        )
    # 5. history values that are not metric values: a trend rule (with a lax threshold) on a copy
    trend = "metrics:\n  common_rows:\n    threshold: {block: 1.0}\n    trend: {block: 0.0}\n"
    for stored in (float("inf"), float("-inf"), 1e300, -1e300, 2.0, -0.5, "junk", "1e999", b"\x00"):
        cases.append(
            HostileCase(
                f"history-{stored!r}",
                release="copy",
                config=_yaml(trend),
                history=[("common_rows", stored)],
                expect=(3,),
                message="history's value",
            )
        )
    # 6. files without a header row
    for real_fmt, syn_fmt in (
        ("headerless", "parquet"),
        ("headerless", "headerless"),
        ("parquet", "headerless"),
        ("headerless", "csv"),
    ):
        for rel in ("copy", "honest", "copy_upper"):
            cases.append(
                HostileCase(
                    f"headerless-{real_fmt}-{syn_fmt}-{rel}",
                    release=rel,
                    config=_yaml(CONFIGS["common_rows"]),
                    real_format=real_fmt,
                    synthetic_format=syn_fmt,
                    expect=(3,),
                    message="looks like a record",
                )
            )
    # 7. work-multiplying parameters
    for metric, params in (
        ("singling_out", "{n_attacks: 100000}"),
        ("nnaa", "{repetitions: 1000000}"),
        ("proximity_score", "{repetitions: 1000000}"),
        ("membership_inference", "{repetitions: 1000000}"),
        ("detection_mlp", "{max_iter: 10000000}"),
        ("singling_out", "{n_attacks: 10, max_attempts: 1000000000}"),
    ):
        cases.append(
            HostileCase(
                f"bound-{metric}-{params}",
                release="copy",
                holdout=True,
                config=_yaml(
                    f"metrics:\n  common_rows: {{threshold: 0.01}}\n  {metric}:\n"
                    f"    params: {params}\n    threshold: {{block: 0.5}}\n"
                ),
                expect=(3,),
                message="limit",
            )
        )
    # 8. deadlines (a metric that never ends)
    for where in ("config", "cli"):
        cases.append(
            HostileCase(
                f"deadline-{where}",
                release="honest",
                hang=True,
                config=_yaml(CONFIGS["common_rows"], **({"options": "{deadline: 0.3}"} if where == "config" else {})),
                extra=("--deadline", "0.3") if where == "cli" else (),
                expect=(3,),
                message="deadline",
            )
        )
    # 9. values that broke a metric without naming their cause
    cases.append(
        HostileCase(
            "all_nan_real_column",
            release="honest",
            config=_yaml(CONFIGS["common_rows"]),
            expect=(3,),
            message="only nulls",
        )
    )
    cases.append(
        HostileCase(
            "huge_values",
            release="honest",
            config=_yaml(CONFIGS["common_rows"]),
            expect=(3,),
            message="larger than 1e+100",
        )
    )
    # 10. honest releases still pass (the hardening must not refuse them)
    for cfg in CONFIGS:
        for holdout in (False, True):
            for fmt in ("parquet", "csv"):
                cases.append(
                    HostileCase(
                        f"honest-{cfg}-{'holdout' if holdout else 'no_holdout'}-{fmt}",
                        release="honest",
                        config=CONFIGS[cfg] and _yaml(CONFIGS[cfg]),
                        holdout=holdout,
                        synthetic_format=fmt,
                        expect=(0, 1),
                    )
                )
    for i, c in enumerate(cases):
        c.html = i % 25 == 0
    return cases


CASES = build_cases()


def _write(frame: pl.DataFrame, path: Path, fmt: str) -> Path:
    if fmt == "parquet":
        path = path.with_suffix(".parquet")
        frame.write_parquet(path)
    else:
        path = path.with_suffix(".csv")
        frame.write_csv(path, include_header=fmt != "headerless")
    return path


def _history_text(db: Path) -> tuple[list[dict], str]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        runs = [dict(r) for r in con.execute("SELECT * FROM privgate_runs ORDER BY seq")]
        text = [
            repr(tuple(r))
            for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            for r in con.execute(f'SELECT * FROM "{t}"')
        ]
    finally:
        con.close()
    return runs, "\n".join(text)


def _poison(db: Path, history: list) -> None:
    con = sqlite3.connect(db)
    with con:
        for metric, value in history:
            con.execute("UPDATE privgate_scores SET value = ? WHERE metric = ?", (value, metric))
    con.close()


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_case(case: HostileCase, tmp_path: Path) -> None:
    real = REAL
    build, is_copy = RELEASES[case.release]
    synthetic = build()
    if case.id == "all_nan_real_column":
        real = REAL.with_columns(pl.lit(float("nan")).alias("score"))
    if case.id == "huge_values":
        synthetic = synthetic.with_columns(pl.when(pl.int_range(N) == 2).then(1e300).otherwise("score").alias("score"))
    real_p = _write(real, tmp_path / "real", case.real_format)
    syn_p = _write(synthetic, tmp_path / "synthetic", case.synthetic_format)
    db, json_p, html_p = tmp_path / "h.sqlite", tmp_path / "r.json", tmp_path / "r.html"
    with contextlib.ExitStack() as stack:
        config = case.config
        if case.hang:
            name = stack.enter_context(fault_metric("hang_python"))
            config += f"  {name}:\n    threshold: {{block: 0.5}}\n"
        argv = [
            "gate",
            "--real",
            str(real_p),
            "--synthetic",
            str(syn_p),
            "--release-id",
            "r2",
            "--history",
            str(db),
            "--json",
            str(json_p),
            "--quiet",
            "--format",
            "json",
            "--dataset",
            "hostile",
            *case.extra,
        ]
        if config is not None:
            cfg = tmp_path / "gate.yaml"
            cfg.write_text(config, encoding="utf-8")
            argv += ["--config", str(cfg)]
        if case.holdout:
            argv += ["--holdout", str(_write(HOLDOUT, tmp_path / "holdout", "parquet"))]
        if case.html:
            argv += ["--html", str(html_p)]
        if case.history:  # an earlier accepted run of an honest release, then its stored value altered
            honest = _write(RELEASES["honest"][0](), tmp_path / "earlier", "parquet")
            earlier = [a if a != str(syn_p) else str(honest) for a in argv]
            earlier[earlier.index("r2")] = "r1"
            assert _cli(earlier)[0] == 0
            _poison(db, case.history)
        code, out, err = _cli(argv)
    assert code in case.expect, (code, out[-2000:], err[-500:])
    if is_copy:
        assert code >= 2, "a copy was accepted"
    doc = json.loads(out)
    assert doc["exit_code"] == code
    text = json.dumps(doc)
    if case.message:
        assert case.message in text, text[-3000:]
    runs, stored = _history_text(db)
    run = runs[-1]
    assert (run["exit_code"], run["decision"]) == (code, doc["decision"])
    assert bool(run["accepted"]) == (code < 2)
    outputs = {
        "stdout": out,
        "stderr": err,
        "history": stored,
        "json": json_p.read_text() if json_p.exists() else "",
        "html": html_p.read_text() if html_p.exists() else "",
    }
    for token in TOKENS:
        for where, body in outputs.items():
            assert token not in body, f"real cell {token!r} in {where}"


# ------------------------------------------------------------------------- property-based
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPERTY = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
COPIES = [r for r, (_, is_copy) in RELEASES.items() if is_copy]
PROPERTY_METRICS = ("common_rows", "hitting_rate", "authenticity")
POISON = (float("inf"), float("-inf"), float("nan"), 7.5, -3.0, "text", None)


@st.composite
def hostile_configs(draw) -> tuple[str, bool]:
    """A gate configuration as YAML text, every limit below what a copy scores (so a copy must
    not pass), with rules that may not apply (when:, trend, baseline) and, sometimes, a metric
    or a limit written twice (a lax duplicate after a strict one). Returns (text, duplicated)."""
    metrics = draw(st.lists(st.sampled_from(PROPERTY_METRICS), min_size=1, max_size=3, unique=True))
    lines = ["dataset: hostile", "metrics:"]
    for m in metrics:
        rules = draw(st.lists(st.sampled_from(["threshold", "baseline", "trend"]), min_size=1, max_size=3, unique=True))
        lines.append(f"  {m}:")
        for kind in rules:
            sev = draw(st.sampled_from(["block", "warn"]))
            when = draw(st.sampled_from(["always", "with_holdout", "no_holdout"]))
            limit = draw(st.sampled_from([0.0, 0.01, 0.1, 0.3]))
            lines.append(f"    {kind}: {{{sev}: {limit}, when: {when}}}")
    duplicated = draw(st.integers(0, 3)) == 0
    if duplicated:  # the same metric again, lax: must be refused, not win
        lines.append(f"  {metrics[0]}:\n    threshold: {{block: 1.0}}")
    return "\n".join(lines) + "\n", duplicated


@PROPERTY
@given(
    release=st.sampled_from(COPIES + ["honest"]),
    config=hostile_configs(),
    holdout=st.booleans(),
    real_format=st.sampled_from(["parquet", "csv", "headerless"]),
    synthetic_format=st.sampled_from(["parquet", "csv", "headerless"]),
    earlier=st.sampled_from(["none", "intact"] + [f"poison:{i}" for i in range(len(POISON))]),
)
def test_property_never_passes_a_copy_never_leaks(
    tmp_path_factory, release, config, holdout, real_format, synthetic_format, earlier
):
    text, duplicated = config
    tmp = tmp_path_factory.mktemp("hostile-prop")
    db = tmp / "h.sqlite"
    cfg = tmp / "gate.yaml"
    cfg.write_text(text, encoding="utf-8")
    real_p = _write(REAL, tmp / "real", real_format)
    build, is_copy = RELEASES[release]
    syn_p = _write(build(), tmp / "synthetic", synthetic_format)
    base = [
        "gate",
        "--real",
        str(real_p),
        "--history",
        str(db),
        "--quiet",
        "--format",
        "json",
        "--config",
        str(cfg),
        "--json",
        str(tmp / "r.json"),
    ]
    if holdout:
        base += ["--holdout", str(_write(HOLDOUT, tmp / "holdout", "parquet"))]
    if earlier != "none":  # an earlier accepted run (an honest release, a lax gate), maybe altered
        lax = tmp / "lax.yaml"
        lax.write_text(
            "dataset: hostile\nmetrics:\n"
            + "".join(f"  {m}: {{threshold: {{block: 1.0}}}}\n" for m in PROPERTY_METRICS),
            encoding="utf-8",
        )
        honest = _write(RELEASES["honest"][0](), tmp / "earlier", "parquet")
        _cli(
            [
                "gate",
                "--real",
                str(real_p),
                "--synthetic",
                str(honest),
                "--release-id",
                "r1",
                "--history",
                str(db),
                "--quiet",
                "--format",
                "json",
                "--config",
                str(lax),
            ]
        )
        if earlier.startswith("poison:"):
            _poison(db, [(m, POISON[int(earlier.split(":")[1])]) for m in PROPERTY_METRICS])
    code, out, err = _cli(base + ["--synthetic", str(syn_p), "--release-id", "r2"])
    assert code in (0, 1, 2, 3)
    if is_copy:
        assert code != 0, out[-3000:]
    if duplicated or "headerless" in (real_format, synthetic_format):
        assert code == 3, out[-3000:]
    doc = json.loads(out)
    runs, stored = _history_text(db) if db.exists() else ([], "")
    if runs:
        assert runs[-1]["exit_code"] == code == doc["exit_code"]
    outputs = {
        "stdout": out,
        "stderr": err,
        "history": stored,
        "json": (tmp / "r.json").read_text() if (tmp / "r.json").exists() else "",
    }
    for token in TOKENS:
        for where, body in outputs.items():
            assert token not in body, f"real cell {token!r} in {where}"
