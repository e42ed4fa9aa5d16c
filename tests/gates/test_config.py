"""Gate configuration parsing: valid forms, and errors that name the offending key."""

from __future__ import annotations

import pytest

from privgate.errors import ConfigError
from privgate.gates import GateConfig, default_gate_config, load_gate_config, parse_gate_config, rules
from privgate.gates.config_model import Rule


def _cfg(**metrics):
    return {"version": 1, "dataset": "d", "metrics": metrics}


def test_rule_forms():
    cfg = parse_gate_config(
        _cfg(
            common_rows={"threshold": {"warn": 0.0, "block": 0.01}},
            authenticity={"baseline": {"max": 0.05, "severity": "warn", "when": "with_holdout"}, "trend": 0.1},
        )
    )
    assert isinstance(cfg, GateConfig)
    assert cfg.metrics["common_rows"].rules == (Rule("threshold", 0.0, "warn"), Rule("threshold", 0.01, "block"))
    assert cfg.metrics["authenticity"].rules == (
        Rule("baseline", 0.05, "warn", "with_holdout"),
        Rule("trend", 0.1, "block"),
    )
    assert cfg.needs_baseline and cfg.needs_history
    assert cfg.metric_names == ["common_rows", "authenticity"]


def test_hash_is_stable_and_changes_with_rules():
    a = parse_gate_config(_cfg(common_rows={"threshold": 0.01}))
    b = parse_gate_config(_cfg(common_rows={"threshold": 0.01}))
    c = parse_gate_config(_cfg(common_rows={"threshold": 0.02}))
    assert a.hash == b.hash and a.hash != c.hash and len(a.hash) == 64


@pytest.mark.parametrize(
    "data, key",
    [
        (None, "config"),
        ([1, 2], "config"),
        ({"metrics": {"common_rows": {"threshold": 0.1}}, "colour": "red"}, "colour"),
        ({"version": 2, "metrics": {"common_rows": {"threshold": 0.1}}}, "version"),
        ({"dataset": "", "metrics": {"common_rows": {"threshold": 0.1}}}, "dataset"),
        ({"seed": -1, "metrics": {"common_rows": {"threshold": 0.1}}}, "seed"),
        ({"keys": "", "metrics": {"common_rows": {"threshold": 0.1}}}, "keys"),
        ({"keys": ["a"], "sensitive": ["a"], "metrics": {"common_rows": {"threshold": 0.1}}}, "sensitive"),
        ({"schema": {"age": "number"}, "metrics": {"common_rows": {"threshold": 0.1}}}, "schema.age"),
        ({"require_holdout": "yes", "metrics": {"common_rows": {"threshold": 0.1}}}, "require_holdout"),
        ({"dataset": "d"}, "metrics"),
        ({"metrics": {}}, "metrics"),
        (_cfg(no_such_metric={"threshold": 0.1}), "metrics.no_such_metric"),
        (_cfg(common_rows={}), "metrics.common_rows"),
        (_cfg(common_rows={"threshold": 0.1, "treshold": 0.2}), "metrics.common_rows.treshold"),
        (_cfg(common_rows={"threshold": 1.5}), "metrics.common_rows.threshold"),
        (_cfg(common_rows={"threshold": "high"}), "metrics.common_rows.threshold"),
        (_cfg(common_rows={"threshold": {"block": True}}), "metrics.common_rows.threshold.block"),
        (_cfg(common_rows={"threshold": {"warn": 0.5, "block": 0.1}}), "metrics.common_rows.threshold.warn"),
        (_cfg(common_rows={"threshold": {"stop": 0.5}}), "metrics.common_rows.threshold.stop"),
        (_cfg(common_rows={"threshold": {"max": 0.5, "severity": "fatal"}}), "metrics.common_rows.threshold.severity"),
        (_cfg(common_rows={"threshold": {"severity": "warn"}}), "metrics.common_rows.threshold.max"),
        (_cfg(common_rows={"threshold": {"block": 0.1, "when": "sometimes"}}), "metrics.common_rows.threshold.when"),
        (_cfg(common_rows={"baseline": {"block": float("nan")}}), "metrics.common_rows.baseline.block"),
        (_cfg(common_rows={"optional": "no", "threshold": 0.1}), "metrics.common_rows.optional"),
        (_cfg(close_values={"params": {"treshold": 0.3}, "threshold": 0.1}), "metrics.close_values.params.treshold"),
        (_cfg(close_values={"params": [1], "threshold": 0.1}), "metrics.close_values.params"),
        # evidence rules: on, test
        (_cfg(memorisation={"threshold": {"on": "median", "block": 0.01}}), "metrics.memorisation.threshold.on"),
        (_cfg(memorisation={"threshold": {"max": 0.01, "on": "low"}}), "metrics.memorisation.threshold.on"),
        (_cfg(nnaa={"trend": {"on": "lower", "warn": 0.05}}), "metrics.nnaa.trend.on"),
        (_cfg(memorisation={"test": {"on": "lower", "block": 0.01}}), "metrics.memorisation.test.on"),
        (_cfg(memorisation={"test": 0.0}), "metrics.memorisation.test"),
        (_cfg(memorisation={"test": {"block": -0.01}}), "metrics.memorisation.test.block"),
        (_cfg(memorisation={"test": {"block": 1.5}}), "metrics.memorisation.test.block"),
        (_cfg(memorisation={"test": {"warn": 0.001, "block": 0.01}}), "metrics.memorisation.test.warn"),
        (_cfg(memorisation={"test": {"max": 0.01, "side": "left"}}), "metrics.memorisation.test.side"),
        (_cfg(memorisation={"test": {"severity": "warn"}}), "metrics.memorisation.test.max"),
    ],
)
def test_errors_name_the_key(data, key):
    with pytest.raises(ConfigError) as err:
        parse_gate_config(data)
    assert str(err.value).startswith(key + ":"), str(err.value)


def test_params_accepted_when_the_metric_takes_them():
    cfg = parse_gate_config(_cfg(close_values={"params": {"threshold": 0.3}, "threshold": 0.9}))
    assert cfg.params() == {"close_values": {"threshold": 0.3}}


def test_baseline_limits_may_be_negative_thresholds_may_not():
    assert parse_gate_config(_cfg(nnaa={"baseline": -0.1})).metrics["nnaa"].rules[0].limit == -0.1
    with pytest.raises(ConfigError, match=r"^metrics\.nnaa\.threshold:"):
        parse_gate_config(_cfg(nnaa={"threshold": -0.1}))


def test_load_yaml_toml_and_file_errors(tmp_path):
    y = tmp_path / "g.yaml"
    y.write_text("dataset: a\nmetrics:\n  common_rows:\n    threshold: {block: 0.01}\n")
    t = tmp_path / "g.toml"
    t.write_text('dataset = "a"\n[metrics.common_rows.threshold]\nblock = 0.01\n')
    a, b = load_gate_config(y), load_gate_config(t)
    assert a.hash == b.hash and a.source == str(y)

    with pytest.raises(ConfigError, match="^config: file not found"):
        load_gate_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("metrics: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_gate_config(bad)
    bad_t = tmp_path / "bad.toml"
    bad_t.write_text("metrics = = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_gate_config(bad_t)
    weird = tmp_path / "g.json"
    weird.write_text("{}")
    with pytest.raises(ConfigError, match="unsupported file suffix"):
        load_gate_config(weird)


def test_default_config_loads_and_follows_validity():
    cfg = default_gate_config()
    # raw thresholds only where a raw value means something on its own (identifier_reuse: fresh
    # identifiers score 0, and its value is already beyond the holdout's share with one)
    raw_threshold_metrics = {m.name for m, r in cfg.rules("threshold") if r.when != "no_holdout"}
    assert raw_threshold_metrics <= {
        "common_rows",
        "hitting_rate",
        "disclosure_identity",
        "identifier_reuse",
        "disclosure_attribute",
        "memorisation",
        "label_free_memorisation",
    }
    # memorisation (its value is already relative to the holdout) decides on its lower bound and
    # runs only with a holdout; so does its label-free view
    for name in ("memorisation", "label_free_memorisation"):
        mem = cfg.metrics[name]
        assert {r.on for r in mem.rules if r.kind == "threshold"} == {"lower"}
        assert all(r.when == "with_holdout" for r in mem.rules)
        assert name in cfg.metrics_for(True) and name not in cfg.metrics_for(False)
    # a copy is a copy whatever its labels: the label-free views are gated with and without a holdout
    assert {"label_free_copies", "label_free_authenticity"} <= set(cfg.metrics_for(False))
    # the metrics docs/validity.md shows to be ≈ 1 for every realistic release are not gated
    assert not {"close_values", "distant_values", "nsnd", "nndr"} & set(cfg.metrics)
    # holdout-relative rules exist, and only apply with a holdout
    assert cfg.rules("baseline")
    assert default_gate_config("adult").dataset == "adult"


def test_evidence_rules_on_and_test():
    cfg = parse_gate_config(
        _cfg(
            memorisation={
                "threshold": {"on": "lower", "warn": 0.0, "block": 0.01},
                "test": {"warn": 0.05, "block": 0.01, "when": "with_holdout"},
            },
            nnaa={"baseline": {"max": 0.05, "on": "upper"}, "trend": 0.05},
            common_rows={"threshold": 0.01},
        )
    )
    mem = cfg.metrics["memorisation"].rules
    assert [(r.kind, r.limit, r.severity, r.on) for r in mem] == [
        ("threshold", 0.0, "warn", "lower"),
        ("threshold", 0.01, "block", "lower"),
        ("test", 0.05, "warn", "p_value"),
        ("test", 0.01, "block", "p_value"),
    ]
    assert all(r.metric == "memorisation" for r in mem) and mem[2].name == "memorisation__test_warn"
    # a test rule fires below its limit, the others above
    assert rules.fires(mem[2].kind, 0.04, mem[2].limit) and not rules.fires(mem[2].kind, 0.06, mem[2].limit)
    assert rules.fires(mem[0].kind, 0.01, mem[0].limit) and not rules.fires(mem[0].kind, 0.0, mem[0].limit)
    assert [r.on for r in cfg.metrics["nnaa"].rules] == ["upper", "estimate"]
    # the default of on is the point estimate: existing configurations decide as before
    assert cfg.metrics["common_rows"].rules[0].on == "estimate"
    assert Rule("threshold", 0.1, "block") == Rule("threshold", 0.1, "block", "always", "estimate")
    assert Rule("test", 0.01, "block").on == "p_value"
    assert cfg.metrics_for(False) == ["memorisation", "nnaa", "common_rows"]
    # on changes the decision, so it changes the hash
    other = parse_gate_config(
        _cfg(
            memorisation={
                "threshold": {"on": "estimate", "warn": 0.0, "block": 0.01},
                "test": {"warn": 0.05, "block": 0.01, "when": "with_holdout"},
            },
            nnaa={"baseline": {"max": 0.05, "on": "upper"}, "trend": 0.05},
            common_rows={"threshold": 0.01},
        )
    )
    assert other.hash != cfg.hash
    assert cfg.to_dict()["metrics"]["memorisation"]["rules"][0]["on"] == "lower"


def test_only_holdout_rules_mean_the_metric_is_not_run_without_a_holdout():
    cfg = parse_gate_config(
        _cfg(
            memorisation={"threshold": {"on": "lower", "block": 0.01, "when": "with_holdout"}},
            common_rows={"threshold": 0.01},
        )
    )
    assert cfg.metrics_for(True) == ["memorisation", "common_rows"]
    assert cfg.metrics_for(False) == ["common_rows"]


def test_yaml_reads_the_on_key(tmp_path):
    # PyYAML turns a bare `on` key into True; the configuration still means `on`
    y = tmp_path / "g.yaml"
    y.write_text(
        "metrics:\n  memorisation:\n    threshold: {on: lower, block: 0.01}\n    test:\n      block: 0.001\n",
        encoding="utf-8",
    )
    rules = load_gate_config(y).metrics["memorisation"].rules
    assert [(r.kind, r.on, r.limit) for r in rules] == [("threshold", "lower", 0.01), ("test", "p_value", 0.001)]


def test_check_names_cover_test_rules():
    from privgate.gates import check_name

    cfg = parse_gate_config(_cfg(memorisation={"test": {"warn": 0.05, "block": 0.01}}))
    names = [check_name(m.name, r.kind, r.severity) for m, r in cfg.rules()]
    assert names == ["memorisation__test_warn", "memorisation__test_block"]


def test_a_limit_that_is_no_number_is_named_by_its_type_never_its_text():
    """A limit is read by privgate.errors.bounded_number, as an audit rule's numbers are: the
    message names the key and the type; a refused number is shown, a string's text is not."""
    with pytest.raises(ConfigError) as info:
        parse_gate_config({"metrics": {"common_rows": {"threshold": {"block": "Ann Smith 1970"}}}})
    assert str(info.value) == (
        "metrics.common_rows.threshold.block: the limit must be a finite number in [0, 1], got a string"
    )
    with pytest.raises(ConfigError, match=r"threshold\.block: the limit must be a finite number in \[0, 1\], got 2$"):
        parse_gate_config({"metrics": {"common_rows": {"threshold": {"block": 2}}}})
