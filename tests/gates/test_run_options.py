"""Run options (threads, exact, sample_real): the configuration's `options:` block, the CLI flags
and the Dagster resource fields reach the evaluation, and the run records what it used."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from privgate.cli import main
from privgate.errors import ConfigError
from privgate.gates import parse_gate_config, run_gate
from privgate.gates import run as gate_run
from privgate.history import HistoryStore
from privgate.options import DEFAULTS

BASE = {
    "dataset": "opts",
    "metrics": {"common_rows": {"threshold": {"block": 0.5}}, "authenticity": {"threshold": {"block": 0.99}}},
}


def _frames(n: int = 300):
    rng = np.random.default_rng(0)
    real = pl.DataFrame({"a": rng.normal(size=n), "b": rng.choice(list("xyz"), n)})
    syn = pl.DataFrame({"a": rng.normal(size=n), "b": rng.choice(list("xyz"), n)})
    return real, syn


def test_options_block_parses_and_defaults():
    cfg = parse_gate_config({**BASE, "options": {"threads": 2, "exact": True, "sample_real": 100}})
    assert (cfg.options.threads, cfg.options.exact, cfg.options.sample_real) == (2, True, 100)
    assert cfg.to_dict()["options"] == {"threads": 2, "exact": True, "sample_real": 100, "sample": "auto"}
    plain = parse_gate_config(BASE)
    assert plain.options == DEFAULTS and "options" not in plain.to_dict()
    assert parse_gate_config({**BASE, "options": None}).options == DEFAULTS


@pytest.mark.parametrize(
    "options, message",
    [
        ({"threads": 0}, "options.threads: must be a positive number of threads"),
        ({"threads": "2"}, "options.threads: must be a positive"),
        ({"threads": True}, "options.threads"),
        ({"exact": "yes"}, "options.exact: must be true or false"),
        ({"sample_real": -5}, "options.sample_real: must be a positive number of real records"),
        ({"sample_real": 1.5}, "options.sample_real"),
        ({"sampel_real": 10}, "options.sampel_real: unknown key; did you mean 'sample_real'"),
        ([1, 2], "options: must be a mapping"),
    ],
)
def test_invalid_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        parse_gate_config({**BASE, "options": options})


def test_threads_do_not_change_the_hash_but_sampling_and_exact_do():
    plain = parse_gate_config(BASE)
    assert parse_gate_config({**BASE, "options": {"threads": 3}}).hash == plain.hash
    assert parse_gate_config({**BASE, "options": {"sample_real": 10}}).hash != plain.hash
    assert parse_gate_config({**BASE, "options": {"exact": True}}).hash != plain.hash
    over = plain.with_options(threads=4, sample_real=50)
    assert (over.options.threads, over.options.exact, over.options.sample_real) == (4, False, 50)
    assert over.with_options(exact=True).options.sample_real == 50  # None keeps the others
    with pytest.raises(ConfigError, match="options.sample_real"):
        plain.with_options(sample_real=0)


def _spy(monkeypatch):
    seen = {}
    real_eval = gate_run._evaluate

    def spy(*args, **kwargs):
        seen.update({k: getattr(kwargs["options"], k) for k in ("threads", "exact", "sample_real")})
        return real_eval(*args, **kwargs)

    monkeypatch.setattr(gate_run, "_evaluate", spy)
    return seen


def test_run_gate_takes_options_from_the_config_and_arguments_override(monkeypatch, tmp_path):
    seen = _spy(monkeypatch)
    real, syn = _frames()
    cfg = {**BASE, "options": {"threads": 1, "sample_real": 100}}
    store = HistoryStore(f"sqlite:///{tmp_path / 'h.sqlite'}")
    try:
        out = run_gate(cfg, real, syn, release_id="a", history=store)
        assert seen == {"threads": 1, "exact": False, "sample_real": 100}
        assert out.results["authenticity"].details["sampled"]["n"] == 100
        assert out.to_dict()["config"]["options"] == {
            "threads": 1,
            "exact": False,
            "sample_real": 100,
            "sample": "auto",
        }
        import sqlalchemy as sa

        from privgate.history import schema as S

        with store.engine.connect() as conn:
            text = conn.execute(sa.select(S.runs.c.config_json).where(S.runs.c.run_id == out.run_id)).scalar_one()
        assert json.loads(text)["options"] == {"threads": 1, "exact": False, "sample_real": 100, "sample": "auto"}
        out2 = run_gate(cfg, real, syn, release_id="b", threads=2, exact=True, sample_real=50)
        assert seen == {"threads": 2, "exact": True, "sample_real": 50}
        assert out2.results["common_rows"].details["sampled"]["n"] == 50
    finally:
        store.close()


def test_run_gate_records_the_resolved_thread_budget(monkeypatch):
    monkeypatch.setenv("PRIVGATE_THREADS", "1")
    real, syn = _frames()
    out = run_gate(BASE, real, syn, release_id="a")
    assert out.config.options.threads == 1 and out.to_dict()["config"]["options"]["threads"] == 1
    assert out.config_hash == parse_gate_config(BASE).hash  # the thread budget does not change it


def test_an_invalid_option_override_blocks_with_a_config_error():
    real, syn = _frames()
    out = run_gate(BASE, real, syn, release_id="a", sample_real=0)
    assert out.exit_code == 3 and "options.sample_real" in out.checks[0].message


def test_cli_gate_flags_override_the_config(monkeypatch, tmp_path, capsys):
    seen = _spy(monkeypatch)
    real, syn = _frames()
    real.write_parquet(tmp_path / "real.parquet")
    syn.write_parquet(tmp_path / "syn.parquet")
    (tmp_path / "gate.yaml").write_text(
        "dataset: cli\noptions: {threads: 1, exact: true}\nmetrics:\n  authenticity:\n    threshold: {block: 0.99}\n"
    )
    args = [
        "gate",
        "--config",
        str(tmp_path / "gate.yaml"),
        "--real",
        str(tmp_path / "real.parquet"),
        "--synthetic",
        str(tmp_path / "syn.parquet"),
        "--release-id",
        "r1",
        "--no-history",
        "--quiet",
        "--format",
        "json",
    ]
    assert main(args) == 0
    assert seen == {"threads": 1, "exact": True, "sample_real": None}
    assert main(args + ["--threads", "2", "--no-exact", "--sample-real", "120"]) == 0
    assert seen == {"threads": 2, "exact": False, "sample_real": 120}
    with pytest.raises(SystemExit) as stop:
        main(args + ["--sample-real", "0"])
    assert stop.value.code == 3  # a usage error blocks (exit 3), never 2 (block)


def test_cli_gate_json_report_records_the_options(tmp_path, capsys):
    real, syn = _frames()
    real.write_parquet(tmp_path / "real.parquet")
    syn.write_parquet(tmp_path / "syn.parquet")
    (tmp_path / "gate.yaml").write_text("dataset: cli\nmetrics:\n  authenticity:\n    threshold: {block: 0.99}\n")
    assert (
        main(
            [
                "gate",
                "--config",
                str(tmp_path / "gate.yaml"),
                "--real",
                str(tmp_path / "real.parquet"),
                "--synthetic",
                str(tmp_path / "syn.parquet"),
                "--release-id",
                "r1",
                "--no-history",
                "--quiet",
                "--json",
                str(tmp_path / "out.json"),
                "--threads",
                "1",
                "--sample-real",
                "77",
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["config"]["options"] == {"threads": 1, "exact": False, "sample_real": 77, "sample": "auto"}
    assert report["results"]["authenticity"]["details"]["sampled"]["n"] == 77


def test_cli_evaluate_flags(tmp_path, capsys):
    real, syn = _frames()
    real.write_parquet(tmp_path / "real.parquet")
    syn.write_parquet(tmp_path / "syn.parquet")
    assert (
        main(
            [
                "evaluate",
                "--real",
                str(tmp_path / "real.parquet"),
                "--synthetic",
                str(tmp_path / "syn.parquet"),
                "--metrics",
                "authenticity",
                "--quiet",
                "--threads",
                "1",
                "--exact",
                "--sample-real",
                "90",
                "--json",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    assert "options: threads 1, exact True, sample_real 90" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["params"]["options"] == {
        "threads": 1,
        "exact": True,
        "sample_real": 90,
        "sample": "auto",
        "sampled": {"real": 90, "synthetic": None},
    }
    assert report["results"]["authenticity"]["details"]["sampled"]["n"] == 90


def test_dagster_resource_fields_reach_the_evaluation(tmp_path, monkeypatch):
    pytest.importorskip("dagster")
    from privgate.dagster import PrivgateResource

    seen = _spy(monkeypatch)
    real, syn = _frames()
    real.write_parquet(tmp_path / "real.parquet")
    (tmp_path / "gate.yaml").write_text(
        "dataset: dg\noptions: {sample_real: 200}\nmetrics:\n  authenticity:\n    threshold: {block: 0.99}\n"
    )
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    res = PrivgateResource(
        real_path=str(tmp_path / "real.parquet"),
        gate_config=str(tmp_path / "gate.yaml"),
        history_url=url,
        lock_dir=str(tmp_path),
        threads=1,
        exact=True,
    )
    outcome, _ = res.evaluate(syn, release_id="r1")
    assert seen == {"threads": 1, "exact": True, "sample_real": 200}  # unset sample_real: the config's
    assert outcome.config.options.to_dict() == {"threads": 1, "exact": True, "sample_real": 200, "sample": "auto"}
    res2 = PrivgateResource(
        real_path=str(tmp_path / "real.parquet"),
        gate_config=str(tmp_path / "gate.yaml"),
        history_url=url,
        lock_dir=str(tmp_path),
        threads=None,
        sample_real=60,
    )
    outcome, _ = res2.evaluate(syn, release_id="r2")  # threads unset: the configuration's, else the default
    assert seen["sample_real"] == 60 and seen["exact"] is False and seen["threads"] is None
    assert outcome.results["authenticity"].details["sampled"]["n"] == 60
    zero = PrivgateResource(
        real_path=str(tmp_path / "real.parquet"),
        gate_config=str(tmp_path / "gate.yaml"),
        history_url=url,
        lock_dir=str(tmp_path),
        threads=0,
    )
    outcome, _ = zero.evaluate(syn, release_id="r3")  # 0 is no thread budget: the run is blocked, not defaulted
    assert outcome.exit_code == 3 and "options.threads" in outcome.checks[0].message
