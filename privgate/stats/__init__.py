"""Uncertainty and tests, in one place: every metric, attack and gate rule calls these functions;
no metric computes its own interval formula (docs/architecture.md, "Uncertainty").

- :mod:`.proportions` — intervals for a share of records (Wilson, Clopper–Pearson, and
  ``share_interval``: the one rule choosing between them) and the anonymeter-style Wilson rate
  with its half-width.
- :mod:`.bootstrap` — seeded bootstrap over records (percentile intervals) of a mean, a weighted
  mean, a paired difference, a sum of independent samples' means, or any statistic that takes a
  block of resampled positions.
- :mod:`.jackknife` — the grouped (delete-a-group) jackknife for statistics whose per-record
  values are dependent (nearest-neighbour reference sets, lookup tables), independent sources of
  variation combined (Satterthwaite), t intervals and the effective-sample-size share interval.
- :mod:`.auc` — the ROC AUC with DeLong's variance, and a normal (Wald) interval.
- :mod:`.combine` — intervals of a difference of two estimates (MOVER) and the control-set risk
  ``(attack − control) / (1 − control)`` with its propagated error.
- :mod:`.testing` — exact binomial tests and multiple-testing corrections (Bonferroni, Holm).
- :mod:`.mirrored` — the mirrored-count test of a tail (memorisation): a side's count against its
  mirror's, the share beyond chance with simultaneous Clopper–Pearson bounds, and the
  record-sampling half-width of a share estimated on a sample.
- :mod:`.dp_audit` — empirical ε (and Gaussian-DP μ) lower bounds from an audit's error counts
  (one-sided Clopper–Pearson on both error rates), the GDP ↔ (ε, δ) conversion, and the
  Bonferroni level for many bounds.
- :mod:`.one_run` — the many-canary ε bound (Steinke, Nasr, Jagielski 2023: correct guesses
  among many canaries against Binomial(r, e^ε/(1+e^ε))) and the largest bound a run count allows.

Every interval is a ``(lower, upper)`` tuple of floats at ``level`` (default 0.95); every random
step takes a seed, so the same inputs and seed give the same interval.
"""

from .auc import delong_auc, hoeffding_auc_interval, normal_interval
from .bootstrap import bootstrap_ci, bootstrap_mean_ci, bootstrap_means_ci, bootstrap_weights, percentile_interval
from .combine import ControlRisk, control_risk, difference_interval
from .dp_audit import (
    bonferroni_alpha,
    epsilon_estimate,
    epsilon_lower_bound,
    gdp_delta,
    gdp_epsilon,
    gdp_mu_lower_bound,
    rate_upper_bound,
)
from .jackknife import (
    combine_variances,
    counts_without_groups,
    default_groups,
    effective_share_interval,
    group_deleted_means,
    group_labels,
    jackknife_interval,
    jackknife_variance,
    leave_group_out_means,
    t_interval,
)
from .mirrored import mirrored_share, mirrored_tail_test, sampled_share_halfwidth, tail_quantiles
from .one_run import canary_epsilon_lower_bound, guess_accuracy_lower, largest_canary_bound, largest_provable_epsilon
from .proportions import clopper_pearson, share_interval, wilson, wilson_rate, z_value
from .testing import binomial_test, binomial_upper_p, bonferroni, holm

DEFAULT_LEVEL = 0.95

__all__ = [
    "DEFAULT_LEVEL",
    "ControlRisk",
    "binomial_test",
    "binomial_upper_p",
    "bonferroni",
    "bootstrap_ci",
    "bootstrap_mean_ci",
    "bootstrap_means_ci",
    "bootstrap_weights",
    "clopper_pearson",
    "combine_variances",
    "control_risk",
    "default_groups",
    "delong_auc",
    "hoeffding_auc_interval",
    "difference_interval",
    "effective_share_interval",
    "group_deleted_means",
    "counts_without_groups",
    "group_labels",
    "holm",
    "jackknife_interval",
    "jackknife_variance",
    "leave_group_out_means",
    "t_interval",
    "normal_interval",
    "percentile_interval",
    "share_interval",
    "wilson",
    "wilson_rate",
    "z_value",
    "bonferroni_alpha",
    "epsilon_estimate",
    "epsilon_lower_bound",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu_lower_bound",
    "rate_upper_bound",
    "canary_epsilon_lower_bound",
    "guess_accuracy_lower",
    "largest_canary_bound",
    "largest_provable_epsilon",
    "mirrored_share",
    "mirrored_tail_test",
    "sampled_share_halfwidth",
    "tail_quantiles",
]
