"""Typed readers for configuration from the environment.

Every setting memflow has is read here, once, at start-up. A bad value fails
loudly with the variable's name, instead of turning into a surprise later.
Secrets may come from a file: `FOO_FILE=/run/secrets/foo` is read when `FOO`
is unset.
"""

from __future__ import annotations

import os
from pathlib import Path


class ConfigError(ValueError):
    """A configuration variable holds a value memflow cannot use."""


def env_str(name: str, default: str = "") -> str:
    value = os.environ.get(name)
    if value is None:
        path = os.environ.get(f"{name}_FILE")
        if path:
            try:
                return Path(path).read_text().strip()
            except OSError as exc:
                raise ConfigError(f"{name}_FILE={path!r} cannot be read: {exc}") from exc
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]
