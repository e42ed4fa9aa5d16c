"""The three risks of the WP29 opinion on anonymisation — singling out, linkability, inference —
as attacks on the release scored against a control set of holdout records (Giomi et al.,
"A Unified Framework for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023; anonymeter).
One module per attack; the control-set arithmetic is :func:`privgate.stats.control_risk`.

Importing this package registers ``singling_out``, ``linkability`` and ``inference``.
"""

from .inference import inference
from .linkability import linkability
from .singling_out import singling_out

__all__ = ["inference", "linkability", "singling_out"]
