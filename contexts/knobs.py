"""Per-workspace knobs (`Workspace.settings`), registered by the apps that read them.

Each app registers its defaults table in `AppConfig.ready()`, so the settings
page lists every knob without `contexts` importing the apps built on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_groups: dict[str, tuple[int, Mapping[str, Any]]] = {}


def register_knobs(group: str, defaults: Mapping[str, Any], *, order: int) -> None:
    """Add (or replace) a titled group of knobs with their defaults; `order` sorts groups."""
    _groups[group] = (order, defaults)


def registered_knobs() -> list[tuple[str, Mapping[str, Any]]]:
    """(group, defaults), by order."""
    ranked = sorted(_groups.items(), key=lambda item: (item[1][0], item[0]))
    return [(group, defaults) for group, (_, defaults) in ranked]
