"""Run options: how a run computes — never what it decides on — as one validated, immutable
object, :class:`RunOptions`, taken by :func:`privgate.evaluate`, :class:`~privgate.context.
EvaluationContext`, :func:`privgate.gates.run_gate`, a gate configuration's ``options:`` block,
the ``privgate gate`` / ``privgate evaluate`` flags and the Dagster resource.

**Not given is None**, in every field: the value then comes from the next layer — a command-line
flag or a Dagster resource field, over the gate configuration's ``options:``, over privgate's
defaults (:meth:`RunOptions.with_defaults`: no forced exact search, ``sample`` "auto", a 6-hour
deadline, ``memory_limit`` "auto"; the thread budget is resolved when the run starts,
:func:`privgate.threads.resolve_threads`). Sampling and the memory check are switched off with
the word ``"off"``.

Two inputs keep their documented older spelling, translated where they are read: a
configuration file's ``sample: null`` means off (as ``sample: off``; :func:`parse_options`),
and so do the keywords ``privgate.evaluate(sample=None)``, ``EvaluationContext(sample=None)``
and ``evaluate(memory_limit=None)`` (:func:`call_options`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Mapping

from .errors import ConfigError, ParameterError, type_name

OFF = "off"
AUTO = "auto"
# seconds a gate run may take before it is stopped and blocked (options.deadline, --deadline)
DEFAULT_DEADLINE = 6 * 3600.0
MAX_DEADLINE = 7 * 24 * 3600.0
# the largest values the numeric options take: beyond them a value is a typo or an attack, never
# a setting (an unbounded number of threads or records, a limit no machine has)
MAX_THREADS = 1024
MAX_RECORDS = 10**12
MAX_MEMORY_LIMIT = 2**60  # bytes (1 EiB): a larger limit is no limit, say "off"
# seeds are handed to NumPy, scikit-learn and LightGBM, which take 32-bit unsigned seeds
MAX_SEED = 2**32 - 1

# sample="auto" (docs/performance.md "Sampling"; benchmarks/LOG.md "Sampling query records"): a
# side with more than AUTO_SAMPLE_ABOVE rows is estimated on AUTO_SAMPLE_SIZE seeded query
# records, each searched against every target record. The size is set by what the estimates must
# show, not by the table's size: a share's 95 % half-width is at most 1.96·0.5/√10,000 = 0.0098
# (within the 0.01 the scale target allows; the gate's baseline limits are 0.02-0.05), and
# memorisation's power was validated on releases of 5,000 records (0.5 % copies flagged in every
# seed, docs/validity.md) — 10,000 sampled records carry at least that evidence at any size. The
# cost is then 10,000 query rows per search whatever the table's size (only the targets grow), and
# above 10 × the sample a full search of every record would cost more than ten sampled ones.
# (privgate.context, which samples, imports them from here.)
AUTO_SAMPLE_ABOVE = 100_000
AUTO_SAMPLE_SIZE = 10_000
# the keys of a gate configuration's options: block
FILE_KEYS = ("threads", "exact", "sample_real", "sample", "deadline", "memory_limit")


class _Invalid(Exception):
    """A value an option does not take; ``requirement`` says what it takes."""

    def __init__(self, requirement: str) -> None:
        super().__init__(requirement)
        self.requirement = requirement


def _integer(x: Any) -> bool:
    import numpy as np

    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _threads(x: Any) -> int:
    if not _integer(x) or not 1 <= x <= MAX_THREADS:
        raise _Invalid(
            f"a positive number of threads, at most {MAX_THREADS} (or null for the default: "
            "$PRIVGATE_THREADS, else the free cores)"
        )
    return int(x)


def _exact(x: Any) -> bool:
    import numpy as np

    if not isinstance(x, (bool, np.bool_)):
        raise _Invalid("true or false")
    return bool(x)


def _sample_real(x: Any) -> int:
    if not _integer(x) or not 1 <= x <= MAX_RECORDS:
        raise _Invalid(f"a positive number of real records to sample, at most {MAX_RECORDS:,} (or null: every record)")
    return int(x)


def _sample(x: Any) -> int | str:
    if isinstance(x, str) and x.isdigit():  # --sample 100000 from a command line
        x = int(x)
    if x in (AUTO, OFF) or (_integer(x) and 1 <= x <= MAX_RECORDS):
        return x if isinstance(x, str) else int(x)
    raise _Invalid(
        f"auto (sample {AUTO_SAMPLE_SIZE:,} query records of a side only above "
        f"{AUTO_SAMPLE_ABOVE:,} rows), off (every record) or a positive number of query records per "
        f"side, at most {MAX_RECORDS:,}"
    )


def _deadline(x: Any) -> float:
    if isinstance(x, str):  # --deadline 600 from a command line
        try:
            x = float(x)
        except ValueError:
            pass
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not 0 < x <= MAX_DEADLINE:
        raise _Invalid(
            f"a number of seconds in (0, {MAX_DEADLINE:g}] after which the run is stopped and "
            f"blocked (default {DEFAULT_DEADLINE:g})"
        )
    return float(x)


def _memory_limit(x: Any) -> int | str:
    if isinstance(x, str) and x.strip().lower() in (AUTO, OFF):
        return x.strip().lower()
    requirement = "bytes or a size such as '8G' (at most 2**60 bytes = 1 EiB), 'auto' or 'off'"
    if isinstance(x, float) and not math.isfinite(x):  # YAML .inf / .nan
        raise _Invalid(requirement)
    try:
        limit = parse_limit(x)
    except ParameterError:
        raise _Invalid(requirement) from None
    if limit is not None and limit > MAX_MEMORY_LIMIT:
        raise _Invalid(requirement)
    return x


def parse_limit(value: Any) -> int | None:
    """A memory limit in bytes from an int or a string ("8G", "512M", "8000000000"); None for
    "off", "none" or 0 (no guard)."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0):
        return None
    if isinstance(value, bool):
        raise ParameterError(f"memory_limit must be bytes, a size such as '8G', or 'off'; got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ParameterError(f"memory_limit must be a finite number of bytes ≥ 0; got {value!r}")
        return int(value)
    text = str(value).strip().lower()
    if text in ("off", "none", "0", ""):
        return None
    scale = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    number, mult = text.rstrip("ib").rstrip("b"), 1
    if number and number[-1] in scale:
        number, mult = number[:-1], scale[number[-1]]
    try:
        out = float(number) * mult
    except ValueError:
        raise ParameterError(f"memory_limit must be bytes, a size such as '8G', or 'off'; got {value!r}") from None
    if not math.isfinite(out):
        raise ParameterError(f"memory_limit must be a finite size; got {value!r}")
    if out < 0:
        raise ParameterError(f"memory_limit must be ≥ 0 bytes; got {value!r}")
    return int(out)


def check_seed(x: Any, *, where: str = "seed") -> int:
    """``x`` as a seed: an integer in [0, 2**32 − 1] (what NumPy, scikit-learn and LightGBM
    take); :class:`~privgate.errors.ParameterError` naming ``where`` otherwise."""
    if isinstance(x, str):  # a command line's text
        try:
            x = int(x.strip())
        except ValueError:
            pass
    if not _integer(x) or not 0 <= x <= MAX_SEED:
        raise ParameterError(f"{where} must be an integer in [0, {MAX_SEED}]; got {x!r}")
    return int(x)


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "threads": _threads,
    "exact": _exact,
    "sample_real": _sample_real,
    "sample": _sample,
    "deadline": _deadline,
    "memory_limit": _memory_limit,
}


@dataclass(frozen=True)
class RunOptions:
    """How a run computes; None in a field: not given (module docstring).

    ``threads``: the thread budget of the native libraries (:mod:`privgate.threads`).
    ``exact``: exact neighbour searches at every size. ``sample_real``: estimate per-real-record
    means on a seeded sample of this many real records (else as ``sample`` says). ``sample``:
    query-record sampling of both sides, "auto" (a side of more than ``AUTO_SAMPLE_ABOVE`` rows is
    estimated on ``AUTO_SAMPLE_SIZE`` seeded query records, never with ``exact``), "off", or N per side (docs/performance.md
    "Sampling"). ``deadline``: seconds after which a gate run is stopped and blocked
    (exit 3). ``memory_limit``: the most memory an evaluation may use (bytes, "8G", "auto", "off";
    :mod:`privgate.memory_guard`).

    Invalid values raise :class:`~privgate.errors.ParameterError` naming the option.
    """

    threads: int | None = None
    exact: bool | None = None
    sample_real: int | None = None
    sample: int | str | None = None
    deadline: float | None = None
    memory_limit: int | str | None = None

    def __post_init__(self) -> None:
        for key, check in _CHECKS.items():
            value = getattr(self, key)
            if value is None:
                continue
            try:
                object.__setattr__(self, key, check(value))
            except _Invalid as exc:
                raise ParameterError(f"{key} must be {exc.requirement}; got {value!r}") from None

    def given(self) -> dict[str, Any]:
        """The options that are given (not None)."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def over(self, base: "RunOptions") -> "RunOptions":
        """These options where given, else ``base``'s."""
        return replace(base, **self.given())

    def to_dict(self) -> dict[str, Any]:
        """The recorded form (a gate configuration's ``options``, its history row): the thread
        budget, exact searches and sampling; the deadline only when it is not the default (so
        stored forms of earlier runs stay alike); never the memory limit (it changes no score)."""
        out = {"threads": self.threads, "exact": self.exact, "sample_real": self.sample_real, "sample": self.sample}
        if self.deadline is not None and self.deadline != DEFAULT_DEADLINE:
            out["deadline"] = self.deadline
        return out

    def with_defaults(self) -> "RunOptions":
        """These options over privgate's defaults (the thread budget stays None: resolved when
        the run starts)."""
        return self.over(DEFAULTS)


DEFAULTS = RunOptions(exact=False, sample=AUTO, deadline=DEFAULT_DEADLINE, memory_limit=AUTO)


def call_options(options: RunOptions | None = None, **keywords: Any) -> RunOptions:
    """The options of one call of :func:`privgate.evaluate` or :class:`EvaluationContext`:
    ``options`` where given, else the keyword arguments (their documented meaning kept:
    ``sample=None`` and ``memory_limit=None`` are "off"), over privgate's defaults."""
    for key in ("sample", "memory_limit"):
        if key in keywords and keywords[key] is None:
            keywords[key] = OFF
    from_keywords = RunOptions(**{k: v for k, v in keywords.items() if v is not None})
    return (options or RunOptions()).over(from_keywords).with_defaults()


def parse_options(value: Any, *, where: str = "options", keys: tuple[str, ...] = FILE_KEYS) -> RunOptions:
    """Validate a mapping of run options (a configuration's ``options:`` block, a run's
    overrides) into :class:`RunOptions`; raises :class:`~privgate.errors.ConfigError` whose
    message starts with ``<where>.<key>``. Absent or null keys are not given, except
    ``sample: null``, which means off (a configuration file's spelling); ``sample`` and
    ``memory_limit`` false mean off too (a YAML file's bare ``off`` reads as false)."""
    if value is None:
        return RunOptions()
    if isinstance(value, RunOptions):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a mapping with {', '.join(keys)}, got {type_name(value)}")
    unknown = [k for k in value if k not in keys]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(keys)}")
    given: dict[str, Any] = {}
    for key in keys:
        v = value.get(key)
        if key == "sample" and key in value and v is None:
            v = OFF
        if key in ("sample", "memory_limit") and v is False:  # YAML 1.1 reads a bare `off` as false
            v = OFF
        if v is None:
            continue
        try:
            given[key] = _CHECKS[key](v)
        except _Invalid as exc:
            raise ConfigError(f"{where}.{key}: must be {exc.requirement}, got {v!r}") from None
    return RunOptions(**given)
