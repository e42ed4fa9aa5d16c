"""Gate configuration: which metrics run, with which parameters, and the rules that decide.

A configuration is a YAML (``.yaml`` / ``.yml``) or TOML (``.toml``) file, or the equivalent
dict, validated here; every error is a :class:`~privgate.errors.ConfigError` whose message
starts with the dotted path of the offending key (``metrics.common_rows.threshold.block``)::

    version: 1
    dataset: adult-census
    seed: 0
    keys: [age, sex, race]          # optional, passed to every metric that uses keys
    sensitive: [income]             # optional
    require_holdout: false          # true: a missing holdout blocks the release
    allow_unchecked: false          # true: a run in which no rule could be evaluated may pass
    options:                        # optional run options (the CLI / Dagster resource override them)
      threads: 2                    # thread budget (default: $PRIVGATE_THREADS or the free cores)
      exact: false                  # true: exact neighbour searches at every size
      sample_real: 100000           # estimate per-real-record means on a sample of this many records
      sample: auto                  # query-record sampling of both sides: auto (default: only a side of
                                    # more than 100,000 rows, 10,000 sampled), off, or N per side
      deadline: 21600               # seconds before the run is stopped and blocked (default 6 hours)
    metrics:
      common_rows:
        threshold: {warn: 0.0, block: 0.01}       # value > limit fires
      memorisation:
        threshold: {on: lower, warn: 0.0, block: 0.01}   # the interval's lower bound > limit
        test: {warn: 0.01}                         # p-value < limit fires
      authenticity:
        baseline: {warn: 0.05, block: 0.10}       # value − holdout baseline > limit fires
        trend: {warn: 0.05}                        # value − last accepted release's value > limit
      disclosure_identity:
        optional: true                             # an error here does not block
        params: {keys: [age, sex]}
        threshold: {max: 0.2, severity: warn, when: no_holdout}

Rule kinds (each a mapping of severity → limit, or ``{max, severity, when, on}``, or a bare number
meaning a ``block`` limit):

- ``threshold``: the metric's ``value`` (risk in [0, 1]) must not exceed the limit.
- ``baseline``: ``excess`` = value − the same metric computed with a holdout sample of the
  release's size in place of the synthetic set must not exceed the limit (needs a holdout; skipped
  without one unless ``require_holdout`` is true).
- ``trend``: value − the value of the last accepted release of the same dataset must not exceed
  the limit (needs a history store; skipped for the first release).
- ``test``: the metric's ``p_value`` (a metric that is a hypothesis test, e.g. memorisation) must
  not fall strictly below the limit, e.g. ``memorisation: {test: {block: 0.01}}``; a warn limit
  is ≥ the block limit.

``on`` (threshold and baseline rules) says what is compared: ``estimate`` (default: the value,
or the excess), ``lower`` or ``upper`` (that end of the 95 % interval: ``ci`` for threshold rules,
``excess_ci`` for baseline rules). ``on: lower`` fires only when the evidence puts the quantity
above the limit; a rule asking for an interval or p-value the result does not have blocks (fails
closed).

``when`` restricts a rule to runs ``with_holdout`` or ``no_holdout`` (default ``always``), so a
configuration can use raw thresholds when no holdout exists and holdout-relative rules when one
is given (see ``docs/gates.md`` and ``docs/validity.md``).

The configuration's vocabulary and validated form are :mod:`privgate.gates.config_model`,
validating a document :mod:`privgate.gates.config_validate`; this module turns whatever a caller
was given (a :class:`GateConfig`, a file, a dict) into a configuration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .config_model import GateConfig, _check_name
from .config_validate import parse_gate_config


def load_gate_config(path: str | Path, *, check_metrics: bool = True) -> GateConfig:
    """Read and validate a YAML or TOML gate configuration file.

    Raises :class:`ConfigError` when the file is missing, cannot be parsed, sets a key twice (merge
    keys included: :mod:`privgate.config_files`) or any key is invalid (the message names the key).
    """
    from ..config_files import read_config_file

    p = Path(path)
    data = read_config_file(p, what="config")
    cfg = parse_gate_config(data, check_metrics=check_metrics)
    return GateConfig(**{**cfg.__dict__, "source": str(p)})


def resolve_gate_config(cfg: Any, dataset: str | None = None) -> GateConfig:
    """The gate configuration ``cfg`` — a :class:`GateConfig`, a path to a YAML / TOML file or the
    parsed dict — with ``dataset`` (when given) in place of its own. The one way every caller
    (the gate run, the GX suite, the Dagster resource) turns what it was given into a
    configuration; raises :class:`ConfigError` naming the offending key."""
    if isinstance(cfg, GateConfig):
        config = cfg
    elif isinstance(cfg, (str, os.PathLike)):
        config = load_gate_config(cfg)
    else:
        config = parse_gate_config(cfg)
    return config.with_dataset(dataset) if dataset else config


def declared_dataset(cfg: Any) -> str | None:
    """The ``dataset`` a configuration names even when the configuration is invalid (a typo in
    another key), so the blocked run of a broken gate file is recorded under its dataset rather
    than under ``unknown``; None when the document cannot be read or names no valid dataset."""
    from ..config_files import read_config_file

    try:
        if isinstance(cfg, GateConfig):
            return cfg.dataset
        data = read_config_file(cfg) if isinstance(cfg, (str, os.PathLike)) else cfg
        name = data.get("dataset", "default") if hasattr(data, "get") else None
        _check_name("dataset", name)
        return name
    except Exception:  # noqa: BLE001 - best effort: the run reports the configuration's problem
        return None
