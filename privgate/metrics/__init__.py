"""Every built-in metric, importable by name: ``privgate.metrics.<name>(real, synthetic, ...)``.

Importing this package registers each metric in :mod:`privgate.registry`.
"""

from .distance import (  # noqa: F401
    authenticity,
    close_values,
    common_rows,
    dcr,
    distant_values,
    hidden_rate,
    hitting_rate,
    identifiability,
    median_dcr,
    nnaa,
    nndr,
    nsnd,
)
from .reconstruction import attribute_inference, generalized_cap, zero_cap  # noqa: F401
