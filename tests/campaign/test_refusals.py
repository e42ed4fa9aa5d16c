"""Refusals through the command line: a configuration key set twice (merge keys included), a
non-finite or out-of-range number for any numeric option, a CSV without a header row, and an
exception raised by user code (a plugin metric, a native panic). Each case gives exit 3, a
message naming the key, flag or column positions, and no secret cell anywhere in stdout, stderr
or a written file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from privgate.cli import main
from privgate.errors import InputError
from privgate.registry import _REGISTRY, register_metric

SECRET = "Zq7SECRET"
N = 60
GATE = "version: 1\nmetrics:\n  common_rows:\n    threshold: {block: 0.5}\n"


def _people(n: int = N) -> pl.DataFrame:
    first = ["Ann", "Bob", "Cleo", "Dmitri", "Eva", "Farid", "Gus", "Hana"]
    last = ["Smith", "Lopez", "Nakamura", "O'Neil", "Okafor", "Larsen", "Dubois"]
    return pl.DataFrame(
        {
            "name": [f"{first[i % 8]}{SECRET}{i} {last[(i * 3) % 7]}" for i in range(n)],
            "email": [f"{first[i % 8].lower()}.{SECRET.lower()}{i}@mail{i % 4}.org" for i in range(n)],
            # ages with four decimals: a cell the leak checks look for cannot turn up by chance (a
            # whole "20.0" is inside any "120.0" a run prints or stores)
            "age": [20.4721 + (i * 7) % 50 for i in range(n)],
        }
    )


@pytest.fixture()
def data(tmp_path):
    frame = _people()
    real = tmp_path / "real.csv"
    frame.write_csv(real)
    syn = tmp_path / "syn.parquet"
    frame.reverse().write_parquet(syn)
    return {"real": real, "syn": syn, "frame": frame}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _run(argv, capsys, tmp_path):
    """(exit code, stdout + stderr + every file the run wrote)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out = capsys.readouterr()
    written = "".join(p.read_text(errors="replace") for p in tmp_path.iterdir() if p.suffix in (".json", ".html"))
    return code, out.out + out.err, written


def _gate(data, tmp_path, *extra, config=None):
    cfg = config or _write(tmp_path, "gate.yaml", GATE)
    return [
        "gate",
        "--config",
        cfg,
        "--real",
        data["real"],
        "--synthetic",
        data["syn"],
        "--release-id",
        "r1",
        "--no-history",
        "--quiet",
        "--json",
        tmp_path / "r.json",
        "--html",
        tmp_path / "r.html",
        *extra,
    ]


# ---------------------------------------------------------------------------------------------
# configuration keys set twice

DUPLICATES = {
    "yaml-top": ("gate.yaml", "version: 1\nseed: 1\nseed: 2\n" + GATE.split("\n", 1)[1], ["seed", "line 3"]),
    "yaml-rule": (
        "gate.yaml",
        "version: 1\nmetrics:\n  common_rows:\n    threshold: {block: 0.01}\n    threshold: {block: 1.0}\n",
        ["metrics.common_rows.threshold", "line 5"],
    ),
    "yaml-merge-two": (
        "gate.yaml",
        "version: 1\nstrict: &s {block: 0.01}\nlax: &l {block: 1.0}\n"
        "metrics:\n  common_rows:\n    threshold:\n      <<: [*s, *l]\n",
        ["metrics.common_rows.threshold.block", "merge (<<) at line 7"],
    ),
    "yaml-merge-and-own": (
        "gate.yaml",
        "version: 1\nstrict: &s {block: 0.01}\n"
        "metrics:\n  common_rows:\n    threshold:\n      <<: *s\n      block: 1.0\n",
        ["metrics.common_rows.threshold.block", "line 7"],
    ),
    "toml-key": (
        "gate.toml",
        "version = 1\n[metrics.common_rows.threshold]\nblock = 0.01\nblock = 1.0\n",
        ["metrics.common_rows.threshold.block", "line 4"],
    ),
    "toml-table": (
        "gate.toml",
        "[metrics.common_rows.threshold]\nblock = 0.01\n[metrics.common_rows.threshold]\nwarn = 0.0\n",
        ["metrics.common_rows.threshold", "line 3"],
    ),
}


@pytest.mark.parametrize("case", sorted(DUPLICATES))
def test_gate_configuration_key_set_twice(case, data, tmp_path, capsys):
    name, text, named = DUPLICATES[case]
    # the merge-key cases' anchors live under keys privgate does not know: the duplicate must be
    # refused first, before the unknown key
    cfg = _write(tmp_path, name, text)
    code, text_out, _ = _run(_gate(data, tmp_path, config=cfg), capsys, tmp_path)
    assert code == 3
    flat = " ".join(text_out.split())
    assert "duplicate key" in flat
    for word in named:
        assert word in flat, (word, flat)


@pytest.mark.parametrize(
    "text,named",
    [
        (
            "audit:\n  rules:\n    auc_lower: {block: 0.55}\n    auc_lower: {block: 0.99}\n",
            ["audit.rules.auc_lower", "line 4"],
        ),
        (
            "defaults: &d {block: 0.55}\naudit:\n  rules:\n    auc_lower:\n      <<: *d\n      block: 0.99\n",
            ["audit.rules.auc_lower.block", "line 6"],
        ),
    ],
)
def test_audit_configuration_key_set_twice(text, named, data, tmp_path, capsys):
    cfg = _write(tmp_path, "audit.yaml", text)
    code, out, _ = _run(
        ["audit", "--generator", "no_such_module:fn", "--real", data["real"], "--config", cfg], capsys, tmp_path
    )
    assert code == 3
    assert "duplicate key" in out and all(w in out for w in named), out


def test_json_flags_refuse_a_key_set_twice(data, tmp_path, capsys):
    code, out, _ = _run(
        [
            "evaluate",
            "--real",
            data["real"],
            "--synthetic",
            data["syn"],
            "--metrics",
            "common_rows",
            "--quiet",
            "--schema",
            '{"age": "numeric", "age": "categorical"}',
        ],
        capsys,
        tmp_path,
    )
    assert code == 3 and "--schema" in out and "'age' appears twice" in out


# ---------------------------------------------------------------------------------------------
# numbers: inf, nan, huge, negative

FLAGS = [
    ("--memory-limit", "inf"),
    ("--memory-limit", "nan"),
    ("--memory-limit", "1e400"),
    ("--memory-limit", "1e30"),
    ("--threads", "99999999999"),
    ("--sample-real", "1e308"),
    ("--sample-real", "10000000000000"),
    ("--sample", "1e99"),
    ("--deadline", "inf"),
    ("--deadline", "nan"),
    ("--deadline", "1e308"),
]


@pytest.mark.parametrize("flag,value", FLAGS)
def test_gate_numeric_flags_refused_naming_the_flag(flag, value, data, tmp_path, capsys):
    code, out, _ = _run(_gate(data, tmp_path, flag, value), capsys, tmp_path)
    assert code == 3
    assert f"{flag} must be" in out and "Traceback" not in out, out


@pytest.mark.parametrize(
    "flag,value",
    [("--seed", "-1"), ("--seed", "4294967296"), ("--memory-limit", "inf"), ("--threads", "0"), ("--sample", "-5")],
)
def test_evaluate_numeric_flags_refused_naming_the_flag(flag, value, data, tmp_path, capsys):
    code, out, _ = _run(
        [
            "evaluate",
            "--real",
            data["real"],
            "--synthetic",
            data["syn"],
            "--metrics",
            "common_rows",
            "--quiet",
            flag,
            value,
        ],
        capsys,
        tmp_path,
    )
    assert code not in (0, None) and f"{flag} must be" in out and "Traceback" not in out, out


@pytest.mark.parametrize("flag,value", [("--threads", "1e9"), ("--sample-real", "inf")])
def test_estimate_numeric_flags_refused_naming_the_flag(flag, value, data, tmp_path, capsys):
    code, out, _ = _run(["estimate", "--real", data["real"], "--synthetic", data["syn"], flag, value], capsys, tmp_path)
    assert code not in (0, None) and f"{flag} must be" in out, out


CONFIG_NUMBERS = {
    "memory_limit-inf": ("options: {memory_limit: .inf}\n", "options.memory_limit"),
    "memory_limit-nan": ("options: {memory_limit: .nan}\n", "options.memory_limit"),
    "memory_limit-huge": ("options: {memory_limit: 1.0e+300}\n", "options.memory_limit"),
    "threads-huge": ("options: {threads: 100000000}\n", "options.threads"),
    "sample-huge": ("options: {sample: 1.0e+300}\n", "options.sample"),
    "sample_real-inf": ("options: {sample_real: .inf}\n", "options.sample_real"),
    "deadline-inf": ("options: {deadline: .inf}\n", "options.deadline"),
    "seed-negative": ("seed: -1\n", "seed"),
    "seed-huge": ("seed: 4294967296\n", "seed"),
    "limit-nan": (None, "metrics.common_rows.threshold.block"),
    "param-inf": (None, "metrics.common_rows.params.tolerance"),
}


@pytest.mark.parametrize("case", sorted(CONFIG_NUMBERS))
def test_gate_configuration_numbers_refused_naming_the_key(case, data, tmp_path, capsys):
    extra, key = CONFIG_NUMBERS[case]
    if case == "limit-nan":
        text = "version: 1\nmetrics:\n  common_rows:\n    threshold: {block: .nan}\n"
    elif case == "param-inf":
        text = "version: 1\nmetrics:\n  common_rows:\n    params: {tolerance: .inf}\n    threshold: {block: 0.5}\n"
    else:
        text = "version: 1\n" + extra + GATE.split("\n", 1)[1]
    code, out, _ = _run(_gate(data, tmp_path, config=_write(tmp_path, "gate.yaml", text)), capsys, tmp_path)
    assert code == 3
    assert f"invalid configuration: {key}:" in " ".join(out.split()), out


def test_audit_configuration_claim_refused_naming_the_key(data, tmp_path, capsys):
    cfg = _write(tmp_path, "audit.yaml", "audit:\n  claimed_epsilon: .inf\n  rules:\n    auc_lower: {block: 0.6}\n")
    code, out, _ = _run(
        ["audit", "--generator", "no_such_module:fn", "--real", data["real"], "--config", cfg], capsys, tmp_path
    )
    assert code == 3 and "audit.claimed_epsilon" in out, out


# ---------------------------------------------------------------------------------------------
# CSV files without a header row


def _cells(frame: pl.DataFrame, row: int = 0) -> list[str]:
    return [str(v) for v in frame.row(row)]


@pytest.mark.parametrize("shape", ["strings", "strings-only", "one-row"])
def test_headerless_csv_refused_without_writing_a_cell(shape, data, tmp_path, capsys):
    frame = data["frame"] if shape == "strings" else data["frame"].select("name", "email")
    if shape == "one-row":
        frame = data["frame"].head(1)
    real = tmp_path / "headerless.csv"
    frame.write_csv(real, include_header=False)
    history = tmp_path / "h.sqlite"
    argv = _gate({"real": real, "syn": data["syn"]}, tmp_path)
    argv[argv.index("--no-history")] = "--history"
    argv.insert(argv.index("--history") + 1, history)
    code, out, written = _run(argv, capsys, tmp_path)
    assert code == 3
    flat = " ".join(out.split())
    assert ("looks like a record, not a header" in flat) if shape != "one-row" else ("single line" in flat)
    stored = history.read_bytes().decode("utf-8", "replace") if history.exists() else ""
    for cell in _cells(frame):
        for text in (out, flat, written, stored):
            assert cell not in text
    assert SECRET not in out + written + stored


def test_the_same_files_with_a_header_row_load(data, tmp_path):
    from privgate.io import load_frame

    assert load_frame(data["real"]).columns == ["name", "email", "age"]
    p = tmp_path / "two.csv"
    data["frame"].select("name", "email").write_csv(p)
    assert load_frame(p).columns == ["name", "email"]


def test_the_header_refusal_names_positions(data, tmp_path):
    from privgate.errors import InputLoadError
    from privgate.io import load_frame

    p = tmp_path / "headerless.csv"
    data["frame"].write_csv(p, include_header=False)
    with pytest.raises(InputLoadError, match=r"the first cell of column\(s\) 1, 2, 3 is like the values"):
        load_frame(p, role="real")


# ---------------------------------------------------------------------------------------------
# user code: its messages are withheld, privgate's own error types included


@pytest.fixture()
def leaky_metric():
    @register_metric(family="statistical", attack="none", reference="test plugin", orientation="risk", spaces=())
    def leaky_plugin_metric(ctx, level: int = 1):
        raise InputError(f"record {SECRET}-ROW is malformed")

    yield "leaky_plugin_metric"
    _REGISTRY.pop("leaky_plugin_metric", None)


def test_plugin_metric_message_withheld_gate(leaky_metric, data, tmp_path, capsys):
    cfg = _write(tmp_path, "gate.yaml", f"version: 1\nmetrics:\n  {leaky_metric}:\n    threshold: {{block: 0.5}}\n")
    code, out, written = _run(_gate(data, tmp_path, config=cfg), capsys, tmp_path)
    assert code == 3
    assert "InputError" in out and SECRET not in out + written


def test_plugin_metric_message_withheld_evaluate(leaky_metric, data, tmp_path, capsys):
    code, out, _ = _run(
        ["evaluate", "--real", data["real"], "--synthetic", data["syn"], "--metrics", leaky_metric, "--quiet"],
        capsys,
        tmp_path,
    )
    assert code == 3 and "InputError" in out and SECRET not in out


def test_plugin_metric_unknown_parameter_named(leaky_metric, tmp_path):
    from privgate.catalogue import get_metric
    from privgate.errors import ParameterError
    from privgate.registry import run_spec

    with pytest.raises(ParameterError, match="does not take the parameter"):
        run_spec(get_metric(leaky_metric), object(), {"bogus": 1})


class PanicException(BaseException):
    """Stands in for pyo3's PanicException (a BaseException subclass)."""


def test_a_panic_inside_the_evaluation_is_one_line(data, tmp_path, capsys, monkeypatch):
    import privgate.gates.run as run

    def panics(*args, **kwargs):
        raise PanicException(f"called `Result::unwrap()` on an `Err` value: PyErr {{ {SECRET} Traceback ... }}")

    monkeypatch.setattr(run, "_evaluate", panics)
    code, out, written = _run(_gate(data, tmp_path), capsys, tmp_path)
    assert code == 3
    assert "PanicException" in out and SECRET not in out + written


PANIC_PLUGIN = f'''
import os, sys
from privgate.registry import register_metric

class PanicException(BaseException):
    pass

@register_metric(family="statistical", attack="none", reference="test", orientation="risk", spaces=())
def panicky_plugin_metric(ctx, **params):
    os.write(2, b"native note: an ordinary line\\n")
    os.write(2, b"thread '<unnamed>' panicked at crates/x/src/lib.rs:1:2:\\n{SECRET} Traceback\\nnote: run\\n")
    raise PanicException("{SECRET}")

from privgate.cli import main
sys.exit(main(sys.argv[1:]))
'''


def test_a_native_panic_message_never_reaches_stderr(data, tmp_path):
    """What a panicking Rust library writes to descriptor 2 is withheld and replaced by one line;
    the command still reports the failure by type and exits 3."""
    script = tmp_path / "run_with_plugin.py"
    script.write_text(PANIC_PLUGIN)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            "evaluate",
            "--real",
            str(data["real"]),
            "--synthetic",
            str(data["syn"]),
            "--metrics",
            "panicky_plugin_metric",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 3, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert "panicked" not in done.stderr.replace("a native library panicked", "")
    assert "a native library panicked; its message is withheld" in done.stderr
    assert "native note: an ordinary line" in done.stderr  # native output before a panic passes
    assert "unexpected PanicException" in done.stderr


def _person(r) -> dict[str, str]:
    first = r.choice("James Mary John Patricia Robert Jennifer Michael Linda Anne-Marie Jean-Luc Zoë José".split())
    last = r.choice("Smith Johnson Williams Brown Garcia Miller Davis O'Neil Wilson Taylor Lee Perez".split())
    sep = r.choice([".", "_", "", "-"])
    number = r.choice(["", str(r.randint(1, 99))])
    email = f"{first.lower()}{sep}{last.lower()}{number}@{r.choice(['gmail.com', 'mail.co.uk', 'proton.me'])}"
    return {
        "full_name": f"{first} {last}",
        "first": first,
        "email": email.replace("'", ""),
        "phone": f"+33 6 {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}",
        "city": r.choice(["Paris", "Lyon", "Nice", "New York"]),
        "age": str(r.randint(18, 90)),
        "id": "".join(r.choices("0123456789abcdef", k=12)),
        "joined": f"20{r.randint(10, 24)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    }


@pytest.mark.parametrize("seed", range(3))
def test_generated_people_tables_header_or_not(seed, tmp_path):
    """Tables of people (names, e-mails, phones, identifiers, dates, small numbers) of 5 to 3,000
    rows: every headerless file is refused, every file with its header row loads."""
    import random

    from privgate.errors import InputLoadError
    from privgate.io import load_frame

    r = random.Random(seed)
    column_sets = [
        ["full_name", "email"],
        ["first", "email", "phone"],
        ["email"],
        ["full_name"],
        ["id", "email", "joined"],
        ["full_name", "email", "age", "city"],
        ["email", "phone"],
        ["full_name", "email", "phone", "city", "age", "id", "joined"],
    ]
    for t, cols in enumerate(column_sets):
        rows = [_person(r) for _ in range(r.choice([5, 40, 400, 3000]))]
        body = "".join(",".join(row[c] for c in cols) + "\n" for row in rows)
        p = tmp_path / f"t{t}.csv"
        p.write_text(",".join(cols) + "\n" + body)
        assert load_frame(p).columns == cols
        p.write_text(body)
        with pytest.raises(InputLoadError, match="looks like a record"):
            load_frame(p)


def test_dagster_version_fn_message_withheld():
    """A user's version function for the audit-required check is user code: type only."""
    pytest.importorskip("dagster")
    from privgate.dagster.audit_check import _version

    def version_fn(context):
        raise ValueError(f"row {SECRET} has no version")

    version, why = _version(None, None, None, version_fn)
    assert version is None and "ValueError" in why and SECRET not in why
