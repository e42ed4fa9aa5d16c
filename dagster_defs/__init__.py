"""privgate on Dagster: synthetic releases as dynamically partitioned assets, gate rules as
(blocking) asset checks, scores as metadata plotted across releases.

Load with ``dagster dev -m dagster_defs`` (configuration through environment variables, see
:mod:`dagster_defs.definitions`), or build your own with
:func:`dagster_defs.definitions.build_definitions`. Importing this package is cheap: the
Definitions are built when Dagster loads them.
"""

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    """privgate's Definitions, configured from the environment."""
    from .definitions import build_definitions

    return build_definitions()
