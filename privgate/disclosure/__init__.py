"""synthpop's identity and attribute disclosure measures (Raab, Nowok & Dibben), exact.

``disclosure(real, synthetic, keys, target, **options)`` and ``multi_disclosure(real,
synthetic, keys, targets=None, **options)``; see :mod:`privgate.disclosure.api`.
"""

from .api import DisclosureResult, MultiDisclosureResult, disclosure, multi_disclosure

__all__ = ["disclosure", "multi_disclosure", "DisclosureResult", "MultiDisclosureResult"]
