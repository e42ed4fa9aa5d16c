"""``privgate audit`` records the generator's digest and ``privgate gate --generator`` (or
``--generator-digest``) matches it: an audit of a harmless function recorded under the production
generator's name and version does not let the production generator's release through."""

from __future__ import annotations

import re

import pytest
from audit_helpers import GENERATOR_MODULE, real_frame, work_folder

from privgate.cli import main

# the production generator copies its training rows; the harmless one draws from nothing
GENERATORS = GENERATOR_MODULE + "\nproduction = copy_gen\nharmless = blind_gen\n"
FAST = [
    "--real",
    "real.parquet",
    "--design",
    "shared",
    "--runs",
    "100",
    "--n-targets",
    "2",
    "--training-rows",
    "100",
    "--workers",
    "1",
    "--threads",
    "1",
    "--attacks",
    "distance",
    "--claimed-epsilon",
    "1",
    "--history",
    "h.sqlite",
    "--dataset",
    "d",
    "--generator-version",
    "1",
    "--quiet",
]
GATE = (
    "dataset: d\nmetrics:\n  common_rows: {threshold: {block: 0.9}}\n"
    "require_audit: {generator: 'gens_rq:production', version: '1'}\n"
)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    real = real_frame()
    real.sample(200, seed=1).write_parquet(tmp_path / "syn.parquet")
    return work_folder(tmp_path, monkeypatch, real, {"gens_rq.py": GENERATORS, "gate.yaml": GATE})


def gate(*extra):
    return main(
        [
            "gate",
            "--config",
            "gate.yaml",
            "--real",
            "real.parquet",
            "--synthetic",
            "syn.parquet",
            "--release-id",
            "r1",
            "--history",
            "h.sqlite",
            "--quiet",
            *extra,
        ]
    )


def test_only_an_audit_of_the_generator_itself_lets_its_release_through(workdir, capsys):
    assert main(["audit", "--generator", "gens_rq:production", *FAST]) == 2  # a training-data copier
    # a passing audit of a harmless function recorded under the production name and version
    assert main(["audit", "--generator", "gens_rq:harmless", "--generator-name", "gens_rq:production", *FAST]) == 0
    out = capsys.readouterr().out
    harmless_digest = re.findall(r"generator digest: ([0-9a-f]{64})", out)[-1]
    assert gate("--generator", "gens_rq:production") == 2
    assert "audited another generator" in capsys.readouterr().out
    # the harmless function's own digest matches its audit: the identity, not the name, decides
    assert gate("--generator", "gens_rq:harmless") == 0
    assert gate("--generator-digest", harmless_digest) == 0
    assert gate("--generator", "gens_rq:harmless", "--generator-digest", "0" * 64) == 3
    assert gate() == 3  # no identity to match
    assert "no identity" in capsys.readouterr().out
    assert gate("--generator-args", "{}") == 3
    assert "--generator-args needs --generator" in capsys.readouterr().err
    # the module changed after its audit: another generator
    (workdir / "gens_rq.py").write_text(GENERATORS + "\n# changed\n", encoding="utf-8")
    assert gate("--generator", "gens_rq:harmless") == 2


def test_a_version_given_as_a_yaml_number_is_refused_naming_the_key(workdir, capsys):
    (workdir / "gate.yaml").write_text(GATE.replace("version: '1'", "version: 2.10"), encoding="utf-8")
    assert gate("--generator", "gens_rq:production") == 3
    captured = capsys.readouterr()
    assert "require_audit.version" in captured.out + captured.err


def test_a_default_audit_is_evidence_for_the_release_gate(workdir, capsys):
    """The default audit (the many-canary design, pooled evidence, sequential with a claim) is
    read back by require_audit: its pooled bounds are re-derived from their guesses at the α of
    the look it stopped at. A copier is blocked (exit 2, not a refused row), a harmless generator's
    full audit lets the release through."""
    default = [
        "--real",
        "real.parquet",
        "--runs",
        "8",
        "--training-rows",
        "100",
        "--workers",
        "1",
        "--threads",
        "1",
        "--claimed-epsilon",
        "1",
        "--history",
        "h.sqlite",
        "--dataset",
        "d",
        "--generator-version",
        "1",
        "--quiet",
    ]
    assert main(["audit", "--generator", "gens_rq:production", *default]) == 2
    assert gate("--generator", "gens_rq:production") == 2
    assert "refused" not in capsys.readouterr().out
    assert main(["audit", "--generator", "gens_rq:harmless", *default, "--generator-name", "gens_rq:production"]) == 0
    capsys.readouterr()
    (workdir / "gate8.yaml").write_text(GATE.replace("version: '1'}", "version: '1', min_runs: 8}"), encoding="utf-8")
    code = main(
        [
            "gate",
            "--config",
            "gate8.yaml",
            "--real",
            "real.parquet",
            "--synthetic",
            "syn.parquet",
            "--release-id",
            "r2",
            "--history",
            "h.sqlite",
            "--quiet",
            "--generator",
            "gens_rq:harmless",
        ]
    )
    out = capsys.readouterr().out
    assert "refused" not in out and code == 0, out
