"""Deprecated: the Dagster adapter is now :mod:`privgate.dagster` (``pip install 'privgate[dagster]'``).

``import dagster_defs``, ``dagster_defs.<module>`` and ``dagster dev -m dagster_defs`` keep working
for one release (same module objects as ``privgate.dagster``) with a :class:`DeprecationWarning`.
"""

from privgate._aliases import alias_package, deprecation

deprecation("dagster_defs", "privgate.dagster", "dagster")
alias_package("dagster_defs", "privgate.dagster")

from privgate.dagster import *  # noqa: E402,F401,F403
from privgate.dagster import __all__, defs  # noqa: E402,F401
