"""Adapters that make generator libraries callable as ``generate(training, n_rows, seed)`` for the
generator audit, each an optional extra:

* ``privbayes``: :class:`.datasynthesizer.PrivBayesGenerator`, extra ``datasynthesizer``, ε-DP claim
* ``gaussian_copula``: :class:`.sdv.GaussianCopulaGenerator`, extra ``sdv``, no guarantee
* ``tvae``, ``ctgan``: :class:`.sdv.TVAEGenerator`, :class:`.sdv.CTGANGenerator` (SDV's torch
  models, trained on the CPU), extra ``sdv``, no guarantee
* ``copula``: :class:`.copulas.CopulaGenerator` (the same model from Copulas and RDT, without SDV
  and torch), extra ``copulas``, no guarantee
* ``dpmm_mst``: :class:`.dpmm.MSTGenerator`, (ε, δ)-DP claim
* ``dpmm_aim``: :class:`.dpmm.AIMGenerator`, (ε, δ)-DP claim — dpmm pins a stack that cannot
  live beside privgate's: no extra; it runs in an environment of its own through
  :class:`.isolated.IsolatedGenerator` (any adapter can)

Every adapter is a picklable class (an audit's process pool pickles it) taking a PUBLIC
``domain`` (column → levels, or ``(low, high)`` for a numeric column); without one it reads the
domain from the training data, which breaks any DP guarantee — an audit's canaries find that.
The modules import their library only when called, so this package imports without any of them;
a call without the library raises an ImportError naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

ADAPTERS: dict[str, str] = {
    "privbayes": "privgate.audit.generators.datasynthesizer:PrivBayesGenerator",
    "gaussian_copula": "privgate.audit.generators.sdv:GaussianCopulaGenerator",
    "tvae": "privgate.audit.generators.sdv:TVAEGenerator",
    "ctgan": "privgate.audit.generators.sdv:CTGANGenerator",
    "copula": "privgate.audit.generators.copulas:CopulaGenerator",
    "dpmm_mst": "privgate.audit.generators.dpmm:MSTGenerator",
    "dpmm_aim": "privgate.audit.generators.dpmm:AIMGenerator",
}


def load_adapter(name: str) -> Any:
    """The adapter class registered as ``name`` (see :data:`ADAPTERS`)."""
    from ...errors import ParameterError

    if name not in ADAPTERS:
        raise ParameterError(f"unknown generator adapter {name!r}; known: {sorted(ADAPTERS)}")
    module, _, attr = ADAPTERS[name].partition(":")
    return getattr(importlib.import_module(module), attr)
