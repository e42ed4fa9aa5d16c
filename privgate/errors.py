"""One exception hierarchy for everything privgate rejects or cannot compute.

Every message names its culprit (the column, the row count, the parameter, the config key) and
never contains a value of a real record.
"""

from __future__ import annotations

import math


class PrivgateError(Exception):
    """Base class of every error privgate raises on purpose."""


class InputError(PrivgateError):
    """An input frame or file cannot be used."""


class InputLoadError(InputError):
    """A path does not exist, has an unsupported suffix, or cannot be parsed."""


class EmptyInputError(InputError):
    """A frame has no rows or no columns."""


class SchemaMismatchError(InputError):
    """Real, synthetic and holdout frames do not have the same column names."""


class IncompatibleDtypeError(InputError):
    """A column is numeric in one frame and categorical in another (e.g. string vs number)."""


class NonFiniteValueError(InputError):
    """A numeric column holds +inf or -inf (NaN is read as missing; infinity has no reading)."""


class UnsupportedDtypeError(InputError):
    """A column has a dtype privgate cannot compare (list, struct, binary, object...)."""


class AllNullColumnError(InputError):
    """A column of the real data has no non-null value."""


class HighCardinalityError(InputError):
    """A categorical column has too many levels to one-hot encode (an identifier-like column)."""


class TooFewRowsError(InputError):
    """A frame has fewer rows than a metric needs."""


class ParameterError(PrivgateError, ValueError):
    """A metric parameter (keys, sensitive, targets, k, options...) is invalid. Also a
    ``ValueError``, so code written for anonymeter (whose parameter checks raise ValueError)
    catches it unchanged."""


class UnknownMetricError(ParameterError):
    """A metric name is not in the registry."""


class NotApplicableError(PrivgateError):
    """A metric cannot be computed for these inputs by its definition (e.g. hidden_rate without a
    pairing, a membership metric without a holdout)."""


class MetricComputationError(PrivgateError):
    """A metric failed while computing; wraps the underlying exception."""


class ConfigError(PrivgateError):
    """A gate configuration is invalid; the message names the offending key."""


class UnknownRuleKindError(ConfigError, ValueError):
    """A gate rule kind that no declaration has (:mod:`privgate.gates.rule_kinds`)."""


class HistoryError(PrivgateError):
    """The score history store cannot be opened, migrated or written."""


class CodebookMismatchError(InputError):
    """A categorical column of the release does not use the real data's categories: its levels
    are a relabelling of the real ones (case, whitespace, or a one-to-one renaming)."""


class AuditError(PrivgateError):
    """A generator audit cannot be computed (every run failed, the generator refused every
    target, runs are missing); the message says which runs or targets."""


class MemoryLimitError(PrivgateError):
    """A run's estimated peak memory exceeds the memory it may use (privgate.memory_guard); the
    message names the metric, the sizes, the limit and the options that would fit."""


def type_name(x: object) -> str:
    """How a configuration error names the type of a value it refused ("a mapping", "a list",
    "a string", else the type's name) — the type only, never the value."""
    return {dict: "a mapping", list: "a list", str: "a string"}.get(type(x), type(x).__name__)


def bounded_number(where: str, x: object, lo: float, hi: float, what: str | None = None, *, name: str = "") -> float:
    """A configuration value that must be a finite number in [``lo``, ``hi``], as a float; else a
    :class:`ConfigError` that starts with ``where`` (the offending key's dotted path) and says
    what was expected (``what``, by default the interval) and what came: a refused number, or
    only the type of a value that is no number (never a string's text). ``name``: what the value
    is ("the limit"), put before "must be"."""
    what = what or f"a finite number in [{lo:g}, {hi:g}]"
    subject = f"{name} " if name else ""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ConfigError(f"{where}: {subject}must be {what}, got {type_name(x)}")
    v = float(x)
    if not math.isfinite(v) or v < lo or v > hi:
        raise ConfigError(f"{where}: {subject}must be {what}, got {x!r}")
    return v
