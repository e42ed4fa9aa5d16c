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
    argv = ["gate", "--real", str(files["real"]), "--synthetic", str(files["syn"]), "--release-id", "r",
            "--no-history", "--quiet"]
    assert main(argv + ["--memory-limit", "1M"]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "MemoryLimitError" in out and "more than the" in out
    assert main(argv + ["--memory-limit", "off"]) in (0, 1, 2)  # the guard off: the gate decides


def test_evaluate_refuses_and_a_malformed_limit_is_a_usage_error(files, capsys):
    code = main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["syn"]), "--quiet",
                 "--metrics", "common_rows", "--memory-limit", "1M"])
    assert code != 0
    assert "MemoryLimitError" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main(["evaluate", "--real", str(files["real"]), "--synthetic", str(files["syn"]), "--memory-limit", "lots"])
    assert bad.value.code != 0
    assert "memory_limit must be bytes" in capsys.readouterr().err
