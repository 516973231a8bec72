"""The resolver's options, with the names and defaults of the MEMFLOW design.

On an agent's machine they come from `memflow context --config FILE`; on
the server from the workspace's settings (`Workspace.settings["context"]`).
Both spell them as the design does (`perFileBytes`, `suppressRoots`, …).
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from contexts.declarations.sources import normalize_path

Discover = Literal["nearest", "cwd"]

DEFAULT_MEMORY_PRIORITY = ("history", "brick_index", "notes", "status", "tasks")

# Options of earlier versions that are accepted and mean nothing now.
_REMOVED = frozenset({"protocolFile", "rosterlessProtocol"})
# Earlier names of options that still exist.
_RENAMED = {"memoryPerFileBytes": "perFileBytes", "memoryTotalBytes": "totalBytes"}


class ConfigError(ValueError):
    """An option with a value the resolver cannot use."""


@dataclass(frozen=True)
class ContextConfig:
    declaration_file: str = ".dsh/context.yaml"
    discover: Discover = "nearest"
    section_order_base: int = 10
    max_sections: int = 16
    system_prompt: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    ignore_declaration: bool = False
    allow_env_override: bool = True
    legacy_memory_fallback: bool = True
    memory_bootstrap: bool = True
    memory_priority: tuple[str, ...] = DEFAULT_MEMORY_PRIORITY
    per_file_bytes: int | None = None  # None: unlimited
    total_bytes: int | None = None
    skip_delegated: bool = False
    suppress_roots: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> ContextConfig:
        """Read options spelt as in the design; raise `ConfigError` on a bad one."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError("the context options must be a mapping")
        values: dict[str, Any] = {}
        by_camel = {_camel(f.name): f.name for f in dataclasses.fields(cls)}
        for key in sorted(data):
            value = data[key]
            if not isinstance(key, str):
                raise ConfigError(f"option names are strings, not {key!r}")
            if key in _REMOVED:
                continue
            if key == "includeDelegated":  # the old, inverted name of skipDelegated
                values["skip_delegated"] = not _bool(key, value)
                continue
            name = by_camel.get(_RENAMED.get(key, key))
            if name is None:
                raise ConfigError(f"unknown option {key!r}")
            if key in _RENAMED and _RENAMED[key] in data:
                continue  # the current name wins
            values[name] = _PARSERS[name](key, value)
        return cls(**values)

    def to_mapping(self) -> dict[str, Any]:
        return {
            _camel(f.name): list(value) if isinstance(value, tuple) else value
            for f in dataclasses.fields(self)
            for value in [getattr(self, f.name)]
        }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false")
    return value


def _int(key: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{key} must be a whole number of at least {minimum}")
    return value


def _limit(key: str, value: Any) -> int | None:
    return None if value is None else _int(key, value, minimum=0)


def _strings(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key} must be a list of strings")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{key} must be a list of non-empty strings")
    return tuple(value)


def _relative_file(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key} must be a relative file path")
    clean = posixpath.normpath(value.strip())
    if clean.startswith(("/", "..")) or clean == ".":
        raise ConfigError(f"{key} must be a relative path inside the directory")
    return clean


def _discover(key: str, value: Any) -> Discover:
    if value == "nearest":
        return "nearest"
    if value == "cwd":
        return "cwd"
    raise ConfigError(f"{key} must be 'nearest' or 'cwd'")


def _roots(key: str, value: Any) -> tuple[str, ...]:
    roots = _strings(key, value)
    if not all(root.startswith("/") for root in roots):
        raise ConfigError(f"{key} must list absolute paths")
    return tuple(normalize_path(root) for root in roots)


_PARSERS: dict[str, Any] = {
    "declaration_file": _relative_file,
    "discover": _discover,
    "section_order_base": lambda k, v: _int(k, v, minimum=0),
    "max_sections": lambda k, v: _int(k, v, minimum=0),
    "system_prompt": _strings,
    "preload": _strings,
    "ignore_declaration": _bool,
    "allow_env_override": _bool,
    "legacy_memory_fallback": _bool,
    "memory_bootstrap": _bool,
    "memory_priority": _strings,
    "per_file_bytes": _limit,
    "total_bytes": _limit,
    "skip_delegated": _bool,
    "suppress_roots": _roots,
}
