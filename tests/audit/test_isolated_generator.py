"""An adapter run in another Python environment (privgate.audit.generators.isolated): the training
frame goes out and the release comes back as Arrow IPC files, and the release equals the
adapter's own in this process. The other environment here is this interpreter (any Python with
privgate's dependencies and the library works the same; a real one for dpmm is built by
benchmarks/isolated_dpmm.py)."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import polars as pl
import pytest

from privgate.audit.generators.isolated import IsolatedGenerator
from privgate.errors import AuditError, ParameterError

DOMAIN = {"age": (0, 120), "city": ["a", "b", "c"]}


def training(n: int = 80) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    return pl.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b", "c"], n)})


def test_the_release_made_in_the_other_process_equals_the_adapters_own():
    pytest.importorskip("copulas")
    from privgate.audit.generators.copulas import CopulaGenerator

    gen = IsolatedGenerator(sys.executable, "copula", domain=DOMAIN)
    out = gen(training(), 40, seed=3)
    assert out.equals(CopulaGenerator(domain=DOMAIN)(training(), 40, 3))
    assert out.schema == training().schema and out.height == 40
    # the adapter's claims are read here, and the generator pickles (for an audit's process pool)
    assert gen.claimed_epsilon is None and gen.deterministic_by_seed is True
    assert pickle.loads(pickle.dumps(gen))(training(), 40, 3).equals(out)


def test_options_are_checked_here_and_failures_there_name_only_the_type(tmp_path):
    with pytest.raises(ParameterError, match="no interpreter"):
        IsolatedGenerator(tmp_path / "nowhere" / "python", "copula")
    with pytest.raises(ParameterError, match="unknown generator adapter"):
        IsolatedGenerator(sys.executable, "nope")
    with pytest.raises(ParameterError):
        IsolatedGenerator(sys.executable, "dpmm_mst", epsilon=-1)
    # a column the public domain does not cover: privgate's own message, from the other process
    gen = IsolatedGenerator(sys.executable, "copula", domain={"age": (0, 120)})
    with pytest.raises(AuditError, match="copula adapter .* failed: ParameterError: .*city"):
        gen(training(), 10, 0)
    # an interpreter that dies: its exit code, nothing of its output
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'secret record 9137' >&2\nexit 7\n")
    fake.chmod(0o755)
    with pytest.raises(AuditError, match="exited with code 7") as err:
        IsolatedGenerator(fake, "copula", domain=DOMAIN)(training(), 10, 0)
    assert "9137" not in str(err.value)
