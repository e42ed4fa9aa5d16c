"""Every built-in metric, importable by name: ``privgate.metrics.<name>(real, synthetic, ...)``.

Importing this package registers each metric in :mod:`privgate.registry`.
"""

# the import order is the registration order, which is the order metrics run in (not sorted: pyproject.toml)
from .distance import (  # noqa: F401
    authenticity,
    close_values,
    common_rows,
    dcr,
    distant_values,
    hidden_rate,
    hitting_rate,
    identifiability,
    identifier_reuse,
    median_dcr,
    nnaa,
    nndr,
    nsnd,
)
from .reconstruction import attribute_inference, generalized_cap, zero_cap  # noqa: F401
from .classifier import detection_mlp, membership_inference  # noqa: F401
from .statistical import chi_squared, inverse_kl, jensen_shannon, kolmogorov_smirnov  # noqa: F401
from .proximity import proximity_score  # noqa: F401
from .memorisation import memorisation  # noqa: F401
from .label_free import label_free_authenticity, label_free_copies, label_free_memorisation  # noqa: F401
from ..disclosure.metrics import disclosure_attribute, disclosure_identity  # noqa: F401
from ..attacks import inference, linkability, singling_out  # noqa: F401
