"""--memory-limit on the command line: the memory guard refuses a run that would not fit before
any metric runs (gate: blocked, exit 3), and a malformed limit is a usage error."""

from __future__ import annotations

import pytest

from privgate import baselines
from privgate.cli import main
from privgate.data import load_example


@pytest.fixture
def files(tmp_path):
    real = load_example().head(400)
    paths = {"real": tmp_path / "real.parquet", "syn": tmp_path / "syn.parquet"}
    real.write_parquet(paths["real"])
    baselines.noisy_copy(real, seed=1).write_parquet(paths["syn"])
    return paths


def test_gate_refuses_a_run_over_its_memory_limit(files, capsys):
    argv = [
        "gate",
        "--real",
        str(files["real"]),
        "--synthetic",
        str(files["syn"]),
        "--release-id",
        "r",
        "--no-history",
        "--quiet",
    ]
    assert main(argv + ["--memory-limit", "1M"]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "MemoryLimitError" in out and "more than the" in out
    assert main(argv + ["--memory-limit", "off"]) in (0, 1, 2)  # the guard off: the gate decides


def test_evaluate_refuses_and_a_malformed_limit_is_a_usage_error(files, capsys):
    code = main(
        [
            "evaluate",
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files["syn"]),
            "--quiet",
            "--metrics",
            "common_rows",
            "--memory-limit",
            "1M",
        ]
    )
    assert code != 0
    assert "MemoryLimitError" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["syn"]), "--memory-limit", "lots"])
    assert bad.value.code != 0
    assert "--memory-limit must be bytes" in capsys.readouterr().err  # the flag named


def _config(tmp_path, limit: str):
    path = tmp_path / f"gate-{limit}.yaml"
    path.write_text(
        f"dataset: d\noptions: {{memory_limit: {limit}}}\nmetrics:\n  common_rows:\n    threshold: {{block: 0.5}}\n"
    )
    return path


def test_the_configuration_sets_the_limit_and_the_flag_overrides_it(files, tmp_path, capsys):
    """options.memory_limit in a gate configuration is the run's limit (blocked, exit 3, below
    what the run needs), a flag overrides it, and it changes neither the recorded options nor the
    configuration's hash (it changes no score)."""
    from privgate.gates import load_gate_config

    argv = [
        "gate",
        "--real",
        str(files["real"]),
        "--synthetic",
        str(files["syn"]),
        "--release-id",
        "r",
        "--no-history",
        "--quiet",
        "--config",
    ]
    tight = _config(tmp_path, "1M")
    assert main(argv + [str(tight)]) == 3
    assert "MemoryLimitError" in " ".join(capsys.readouterr().out.split())
    assert main(argv + [str(tight), "--memory-limit", "off"]) in (0, 1, 2)  # the flag wins: the gate decides
    loose = load_gate_config(_config(tmp_path, "off"))
    assert load_gate_config(tight).options.memory_limit == "1M" and loose.options.memory_limit == "off"
    assert load_gate_config(tight).hash == loose.hash and "memory_limit" not in str(loose.to_dict())


def test_a_bare_off_in_yaml_switches_sampling_and_the_guard_off(tmp_path):
    """YAML 1.1 reads `off` as false: the documented `sample: off` / `memory_limit: off` mean off."""
    from privgate.gates import load_gate_config

    path = tmp_path / "off.yaml"
    path.write_text(
        "dataset: d\noptions: {sample: off, memory_limit: off}\nmetrics:\n  common_rows:\n    threshold: {block: 0.5}\n"
    )
    options = load_gate_config(path).options
    assert options.sample == "off" and options.memory_limit == "off"


def test_a_malformed_limit_in_a_configuration_is_named(tmp_path):
    from privgate.errors import ConfigError
    from privgate.gates import load_gate_config

    with pytest.raises(ConfigError, match=r"options\.memory_limit"):
        load_gate_config(_config(tmp_path, "lots"))


def test_the_dagster_resource_limit_blocks_its_run(files, tmp_path):
    pytest.importorskip("dagster")
    from privgate.dagster import PrivgateResource

    def gate(**limit):
        resource = PrivgateResource(
            real_path=str(files["real"]), history_url=f"sqlite:///{tmp_path}/h.sqlite", lock_dir=str(tmp_path), **limit
        )
        outcome, _ = resource.evaluate(str(files["syn"]), release_id=f"r{len(limit)}")
        return outcome

    refused = gate(memory_limit="1M")
    assert refused.exit_code == 3 and "MemoryLimitError" in str(refused.errors)
    assert gate().exit_code in (0, 1, 2)
