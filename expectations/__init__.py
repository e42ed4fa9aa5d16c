"""Deprecated: the Great Expectations adapter is now :mod:`privgate.gx` (``pip install 'privgate[gx]'``).

``import expectations`` and ``expectations.<module>`` keep working for one release (same module
objects as ``privgate.gx``, so the GX expectation classes are registered once) with a
:class:`DeprecationWarning`.
"""

from privgate._aliases import alias_package, deprecation

deprecation("expectations", "privgate.gx", "gx")
alias_package("expectations", "privgate.gx")

from privgate.gx import *  # noqa: E402,F401,F403
from privgate.gx import __all__  # noqa: E402,F401
