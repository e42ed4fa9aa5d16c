"""The sharded tests' shared module fixtures: a real local cluster's client and the bundled Adult
sample split in two (each test module gets its own, built once)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    """A client of a real ``LocalCluster`` of three single-thread worker processes."""
    pytest.importorskip("distributed", reason="the [dask] extra is part of [test]")
    from sharded_data import local_cluster

    with local_cluster() as (_, c):
        yield c


@pytest.fixture(scope="module")
def adult():
    """The bundled Adult sample's first and last 800 records: (real, holdout)."""
    from privgate.data import load_example

    full = load_example()
    return full.head(800), full.tail(800)
