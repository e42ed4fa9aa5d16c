"""privgate on Dagster (``pip install 'privgate[dagster]'``).

Put the gate on your own release asset::

    from privgate.dagster import PrivgateResource, build_privgate_checks

    checks = build_privgate_checks(assets=[my_release])           # blocking asset checks
    checks = build_privgate_family_checks(assets=[my_release])    # the same, one step per metric family
    audit = build_generator_audit("my_audit", generate=my_generate, real=dg.AssetKey("real"),
                                  claimed_epsilon=1.0)            # audit the generator, runs fanned out
    audit_ok = build_audit_required_check(my_release, audit)       # releases need a passing audit
    resources = {"privgate": PrivgateResource(real_path="real.parquet")}

Every factory takes ``translator=``: a :class:`~privgate.dagster.translator.PrivgateTranslator`
(subclass it to rename or redescribe the checks, ops, pools, work folders and metadata).

Or load the bundled pipeline (watched folder → partitions → checks → publication) with
``dagster dev -m privgate.dagster`` (configuration through environment variables, see
:mod:`privgate.dagster.definitions`) or :func:`build_definitions`. Importing this package is
cheap: the names below are imported on first use and the bundled Definitions are built when
Dagster loads them. See docs/dagster.md.
"""

from __future__ import annotations

import importlib
from typing import Any

try:
    import dagster as dg
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("privgate.dagster needs Dagster: pip install 'privgate[dagster]'") from exc

_EXPORTS = {
    "PrivgateResource": ".privgate_resource",
    "PrivgateRunConfig": ".build_checks",
    "build_privgate_checks": ".build_checks",
    "build_privgate_family_checks": ".family",
    "build_privgate_scorecards": ".scorecard",
    "build_privgate_latest_release": ".latest",
    "build_definitions": ".definitions",
    "build_executor": ".definitions",
    "DataLocations": ".data_locations",
    "PolarsParquetIOManager": ".io_manager",
    "build_generator_audit": ".audit",
    "build_audit_required_check": ".audit_check",
    "audit_passes": ".audit_check",
    "PrivgateTranslator": ".translator",
}

__all__ = [*_EXPORTS, "defs"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dg.definitions
def defs() -> dg.Definitions:
    """privgate's bundled Definitions, configured from the environment."""
    from .definitions import build_definitions

    return build_definitions()
