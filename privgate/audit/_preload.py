"""Imported once by the fork server the audit's workers are forked from (privgate.audit.workers):
the modules a run imports on first use (the neighbour searches' faiss and SciPy, threadpoolctl),
so each worker starts with them loaded. Imports only: no library starts a thread pool here (a
pool started before a fork would not exist in the forked worker)."""

from __future__ import annotations

import contextlib

with contextlib.suppress(Exception):
    import threadpoolctl  # noqa: F401
with contextlib.suppress(Exception):
    import scipy.spatial  # noqa: F401
with contextlib.suppress(Exception):
    from ..neighbours.backends import faiss_module

    faiss_module()
