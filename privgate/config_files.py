"""Reading configuration text: every YAML, TOML and JSON document privgate reads as configuration
(gate configurations, audit configurations, JSON flags such as ``--schema``) is parsed here, so
one rule holds everywhere: **a key is set once**.

A mapping that names a key twice is refused, naming the key's dotted path and the line; PyYAML
and :mod:`json` would silently keep the last entry, so a lax rule written after a strict one of
the same name would win. YAML merge keys (``<<: *defaults``) count as setting every key they bring:
a key brought by two merged mappings, or brought by a merge and written in the mapping too, is
refused as well (YAML lets the mapping's own entry win and, among merges, the first — a silent
choice between two values). TOML parsers already refuse a key defined twice; their error is
turned into a :class:`~privgate.errors.ConfigError` naming the file, the key and the line.

Mapping keys of a configuration are names, never data: a message may quote them. Values are never
quoted in a message.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

SUFFIXES = (".yaml", ".yml", ".toml")
MERGE_TAG = "tag:yaml.org,2002:merge"


def read_config_file(path: str | Path, *, what: str = "config") -> Any:
    """The parsed document of the YAML (``.yaml`` / ``.yml`` / no suffix) or TOML (``.toml``) file
    ``path``. Raises :class:`ConfigError` whose message starts with ``what`` (or the dotted path
    of a repeated key) and names the file: missing, a folder, unreadable, not valid YAML / TOML,
    a key set twice, an unsupported suffix."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{what}: file not found: {p}")
    if p.is_dir():
        raise ConfigError(f"{what}: {p} is a directory, not a configuration file")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES and suffix != "":
        raise ConfigError(f"{what}: unsupported file suffix {p.suffix!r} for {p}; expected .yaml, .yml or .toml")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what}: cannot read {p}: {type(exc).__name__}") from None
    if suffix == ".toml":
        return parse_toml(text, source=str(p), what=what)
    return parse_yaml(text, source=str(p), what=what)


def parse_yaml(text: str, *, source: str = "<text>", what: str = "config") -> Any:
    """A YAML document parsed with PyYAML's safe loader, refusing a key set twice (merge keys
    included, module docstring)."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise ConfigError(
            f"{exc.path}: duplicate key in {source} (line {exc.line}: {exc.how}); each key may "
            "be set once — otherwise one value would silently replace the other"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{what}: {source} is not valid YAML{where}: {problem}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an out-of-range timestamp
        raise ConfigError(f"{what}: {source} holds a value YAML cannot read ({type(exc).__name__})") from None


def parse_toml(text: str, *, source: str = "<text>", what: str = "config") -> Any:
    """A TOML document; a key defined twice is refused naming its dotted path and line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        dup = _toml_duplicate(text, str(exc))
        if dup is not None:
            raise ConfigError(
                f"{dup[0]}: duplicate key in {source} (line {dup[1]}); each key may be set once"
            ) from None
        raise ConfigError(f"{what}: {source} is not valid TOML: {_toml_problem(str(exc))}") from None


def parse_json(text: str, *, what: str) -> Any:
    """A JSON document given as configuration (a flag's value, a file's text); a key set twice in
    one object is refused, naming it. ``what`` names the flag, variable or file in messages."""
    try:
        return json.loads(
            text, object_pairs_hook=_unique_object, parse_constant=_no_constant, parse_float=_finite_float
        )
    except _DuplicateKey as exc:
        raise ConfigError(
            f"{what}: key {exc.path!r} appears twice in one JSON object; each key may be set once"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except _NonFinite as exc:
        raise ConfigError(f"{what}: {exc.token} is not a JSON number; give a finite number") from None


class _NonFinite(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _no_constant(token: str) -> Any:
    raise _NonFinite(token)


def _finite_float(token: str) -> float:
    import math

    value = float(token)
    if not math.isfinite(value):
        raise _NonFinite(token)
    return value


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key, 0)
        out[key] = value
    return out


def _toml_problem(message: str) -> str:
    """tomllib's message without a quoted value (its messages name positions, not content)."""
    return message.splitlines()[0][:200]


def _toml_duplicate(text: str, message: str) -> tuple[str, int] | None:
    """(dotted path, line) of the key a TOML parser refused as written twice, or None. The path is
    the table header in force at that line plus the key on it (a repeated ``[table]`` header is
    its own path)."""
    m = re.search(r"(Cannot overwrite a value|Cannot declare .* twice|Cannot mutate) \(at line (\d+)", message)
    if m is None:
        return None
    line = int(m.group(2))
    lines = text.splitlines()
    here = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?", here)
    if header:
        return header.group(1).replace('"', ""), line
    table = ""
    for previous in reversed(lines[: line - 1]):
        h = re.match(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?", previous)
        if h:
            table = h.group(1).replace('"', "")
            break
    key = here.split("=", 1)[0].strip().strip('"') if "=" in here else ""
    return ".".join(part for part in (table, key) if part) or "config", line


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, path: str, line: int, how: str = "") -> None:
        super().__init__(path)
        self.path, self.line, self.how = path, line, how


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader refusing a key set twice in one mapping, directly or through merge
    keys (module docstring). The dotted path of the key is kept for the message."""

    def construct_document(self, node: yaml.Node) -> Any:
        self._pg_root = node
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            self._check_unique(node)
        return super().construct_mapping(node, deep=deep)

    def _check_unique(self, node: yaml.MappingNode) -> None:
        seen: dict[Any, str] = {}
        for key, line, how in self._keys_of(node, set()):
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the base loader reports it
                continue
            if repeated:
                raise _DuplicateKey(_key_path(self, node, key), line, f"set {how} and {seen[key]}")
            seen[key] = how

    def _keys_of(self, node: yaml.MappingNode, visiting: set[int]) -> list[tuple[Any, int, str]]:
        """(key, line, how it is set) of every key ``node`` sets, its own and those its merge keys
        bring (recursively; a merge cycle is left to the base loader)."""
        if id(node) in visiting:
            return []
        visiting = visiting | {id(node)}
        out: list[tuple[Any, int, str]] = []
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                merged = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                line = key_node.start_mark.line + 1
                for sub in merged:
                    if isinstance(sub, yaml.MappingNode):
                        for key, _, sub_how in self._keys_of(sub, visiting):
                            origin = sub_how.removeprefix("at ")
                            out.append((key, line, f"by the merge (<<) at line {line} (key {origin})"))
                continue
            line = key_node.start_mark.line + 1
            out.append((self.construct_object(key_node, deep=True), line, f"at line {line}"))
        return out


def _key_path(loader: yaml.SafeLoader, node: yaml.Node, key: Any) -> str:
    """The dotted path of ``key`` in mapping ``node`` (found by walking from the document root)."""
    root = getattr(loader, "_pg_root", None)
    parts = _find_path(root, node, set()) if root is not None else None
    return ".".join([*(parts or []), str(key)])


def _find_path(at: yaml.Node, target: yaml.Node, seen: set[int]) -> list[str] | None:
    if at is target:
        return []
    if id(at) in seen:  # an alias met again
        return None
    seen.add(id(at))
    if isinstance(at, yaml.MappingNode):
        for k, v in at.value:
            found = _find_path(v, target, seen)
            if found is not None:
                return [str(k.value), *found]
    elif isinstance(at, yaml.SequenceNode):
        for i, v in enumerate(at.value):
            found = _find_path(v, target, seen)
            if found is not None:
                return [str(i), *found]
    return None
