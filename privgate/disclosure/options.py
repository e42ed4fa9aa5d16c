"""Options of ``disclosure()`` with synthpop 1.9-2's defaults, validated once.

Defaults (synthpop 1.9-2's ``disclosure()``): ``denom_lim = 5``, ``exclude_ov_denom_lim = False``,
``not_targetlev = None``, ``usekeys_na = True``, ``usetarget_na = True``, ``exclude_keys =
exclude_keylevs = exclude_targetlevs = None``, ``ngroups_keys = None``, ``ngroups_target =
None``, ``cont_na = None``, ``thresh_1way = (50, 90)``, ``thresh_2way = (4, 80)`` (the code's
default; the vignette text says (5, 80)).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import ParameterError


@dataclass(frozen=True)
class DisclosureOptions:
    """Validated options of one ``disclosure()`` call (keys in the caller's order)."""

    keys: tuple[str, ...]
    target: str
    denom_lim: int = 5
    exclude_ov_denom_lim: bool = False
    not_targetlev: tuple[str, ...] = ()
    usekeys_na: tuple[bool, ...] = ()
    usetarget_na: bool = True
    exclude_keys: tuple[str, ...] = ()
    exclude_keylevs: tuple[str, ...] = ()
    exclude_targetlevs: tuple[str, ...] = ()
    ngroups_keys: tuple[int, ...] = ()
    ngroups_target: int = 0
    cont_na: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    thresh_1way: tuple[float, float] = (50.0, 90.0)
    thresh_2way: tuple[float, float] = (4.0, 80.0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "keys": list(self.keys),
            "target": self.target,
            "denom_lim": self.denom_lim,
            "exclude_ov_denom_lim": self.exclude_ov_denom_lim,
            "not_targetlev": list(self.not_targetlev),
            "usekeys_na": list(self.usekeys_na),
            "usetarget_na": self.usetarget_na,
            "exclude_keys": list(self.exclude_keys),
            "exclude_keylevs": list(self.exclude_keylevs),
            "exclude_targetlevs": list(self.exclude_targetlevs),
            "ngroups_keys": list(self.ngroups_keys),
            "ngroups_target": self.ngroups_target,
            "cont_na": {k: list(v) for k, v in self.cont_na.items()},
            "thresh_1way": list(self.thresh_1way),
            "thresh_2way": list(self.thresh_2way),
        }


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    try:
        items = list(value)
    except TypeError:
        raise ParameterError(f"{name} must be a string or a list of strings, got {type(value).__name__}") from None
    out = []
    for v in items:
        if not isinstance(v, str):
            raise ParameterError(f"{name} must hold strings, got {type(v).__name__}")
        if v != "":  # synthpop's multi.disclosure uses "" for "none"
            out.append(v)
    return tuple(out)


def _ngroups(value: Any, name: str) -> int:
    if value is None:
        return 0
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or (isinstance(value, float) and not value.is_integer())
    ):
        raise ParameterError(f"{name} must be a whole number (0 = no grouping), got {value!r}")
    n = int(value)
    if n == 1:
        raise ParameterError(
            f"{name} = 1 is not allowed: one group would merge every value (use 0 for no grouping or at least 2 groups)"
        )
    if n < 0:
        raise ParameterError(f"{name} must be 0 (no grouping) or at least 2, got {n}")
    return n


def _threshold(value: Any, name: str) -> tuple[float, float]:
    try:
        a, b = value
        out = (float(a), float(b))
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be two numbers (count, percentage), got {value!r}") from None
    if any(math.isnan(x) for x in out):
        raise ParameterError(f"{name} must not contain NaN")
    return out


def _cont_na(value: Any) -> dict[str, tuple[Any, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ParameterError(
            f"cont_na must map column names to a special value or a list of special values, got {type(value).__name__}"
        )
    out: dict[str, tuple[Any, ...]] = {}
    for col, codes in value.items():
        if codes is None:
            continue
        if isinstance(codes, (str, numbers.Number)):
            codes = [codes]
        vals = tuple(c for c in codes if c is not None and not (isinstance(c, float) and math.isnan(c)))
        if vals:
            out[str(col)] = vals
    return out


def _usekeys_per_key(usekeys_na: Any, k: int) -> tuple[bool, ...]:
    """``usekeys_na`` as one boolean per key (one value given applies to every key)."""
    if isinstance(usekeys_na, bool):
        return (usekeys_na,) * k
    use_keys = tuple(bool(v) for v in usekeys_na)
    if len(use_keys) == 1:
        use_keys = use_keys * k
    if len(use_keys) != k:
        raise ParameterError(f"usekeys_na must be one boolean or one per key ({k}), got {len(use_keys)}")
    return use_keys


def _ngroups_per_key(ngroups_keys: Any, k: int) -> tuple[int, ...]:
    """``ngroups_keys`` as one whole number of groups per key (one number given applies to every key)."""
    if ngroups_keys is None:
        return (0,) * k
    if isinstance(ngroups_keys, numbers.Real) and not isinstance(ngroups_keys, bool):
        return (_ngroups(ngroups_keys, "ngroups_keys"),) * k
    ng_keys = tuple(_ngroups(v, f"ngroups_keys[{i}]") for i, v in enumerate(ngroups_keys))
    if len(ng_keys) != k:
        raise ParameterError(f"ngroups_keys must have one entry per key ({k}), got {len(ng_keys)}")
    return ng_keys


def build_options(
    keys: Sequence[str] | str,
    target: str,
    *,
    denom_lim: Any = 5,
    exclude_ov_denom_lim: bool = False,
    not_targetlev: Any = None,
    usekeys_na: Any = True,
    usetarget_na: bool = True,
    exclude_keys: Any = None,
    exclude_keylevs: Any = None,
    exclude_targetlevs: Any = None,
    ngroups_keys: Any = None,
    ngroups_target: Any = None,
    cont_na: Any = None,
    thresh_1way: Any = (50, 90),
    thresh_2way: Any = (4, 80),
) -> DisclosureOptions:
    """Validate and normalise the options (independent of the data)."""
    key_list = _str_list(keys, "keys")
    if not key_list:
        raise ParameterError("keys must name at least one column")
    if len(set(key_list)) != len(key_list):
        dupes = sorted({k for k in key_list if key_list.count(k) > 1})
        raise ParameterError(f"keys name a column more than once: {dupes}")
    if not isinstance(target, str) or not target:
        raise ParameterError(f"target must be one column name, got {target!r}")
    if target in key_list:
        raise ParameterError(f"target {target!r} is also one of the keys {list(key_list)}; a target cannot be a key")
    if (
        isinstance(denom_lim, bool)
        or not isinstance(denom_lim, numbers.Real)
        or (isinstance(denom_lim, float) and not float(denom_lim).is_integer())
        or denom_lim <= 0
    ):
        raise ParameterError(f"denom_lim must be a positive whole number, got {denom_lim!r}")
    k = len(key_list)
    use_keys = _usekeys_per_key(usekeys_na, k)
    ng_keys = _ngroups_per_key(ngroups_keys, k)
    ex_keys = _str_list(exclude_keys, "exclude_keys")
    ex_keylevs = _str_list(exclude_keylevs, "exclude_keylevs")
    ex_tlevs = _str_list(exclude_targetlevs, "exclude_targetlevs")
    if not (len(ex_keys) == len(ex_keylevs) == len(ex_tlevs)):
        raise ParameterError(
            "exclude_keys, exclude_keylevs and exclude_targetlevs must have the "
            f"same length, got {len(ex_keys)}, {len(ex_keylevs)}, {len(ex_tlevs)}"
        )
    bad = [kk for kk in ex_keys if kk not in key_list]
    if bad:
        raise ParameterError(f"exclude_keys names columns that are not keys: {bad}")
    return DisclosureOptions(
        keys=key_list,
        target=target,
        denom_lim=int(denom_lim),
        exclude_ov_denom_lim=bool(exclude_ov_denom_lim),
        not_targetlev=_str_list(not_targetlev, "not_targetlev"),
        usekeys_na=use_keys,
        usetarget_na=bool(usetarget_na),
        exclude_keys=ex_keys,
        exclude_keylevs=ex_keylevs,
        exclude_targetlevs=ex_tlevs,
        ngroups_keys=ng_keys,
        ngroups_target=_ngroups(ngroups_target, "ngroups_target"),
        cont_na=_cont_na(cont_na),
        thresh_1way=_threshold(thresh_1way, "thresh_1way"),
        thresh_2way=_threshold(thresh_2way, "thresh_2way"),
    )


def warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)
