"""The metrics' interval helpers, as the metric modules import them: they live in
:mod:`privgate.stats.metric_intervals`, below every module that attaches an interval (the metric
modules, the disclosure metrics, the evaluation), so importing them runs no metric package."""

from ..stats.metric_intervals import (  # noqa: F401
    BOOT,
    OFF,
    result,
    without_intervals,
    intervals_on,
    map_interval,
    set_share_ci,
    set_count_ci,
    set_mean_ci,
    _mark_mean_of_per_record,
    per_record_mean,
    set_bootstrap_ci,
    jackknife_labels,
    keep_jackknife,
    jackknife_sources,
    _jackknife_text,
    set_jackknife_ci,
    set_jackknife_share_ci,
    set_no_ci,
    clip_unit,
    _INTERVALS,
)
