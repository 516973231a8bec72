"""Writes the dashboard needs that `contexts.services` has no service for yet:
the workspace's knobs (`Workspace.settings`).

The knobs are the defaults tables the apps register (`contexts.knobs`:
memories, flowctx, skills), so a knob added there appears here with its
type taken from its default. Text knobs (the embedder choice) have a
service of their own with side effects (re-embedding) and are shown, not
edited, here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from contexts.errors import Invalid
from contexts.knobs import registered_knobs
from contexts.models import Workspace

# (minimum, maximum) per knob; numbers without an entry must be >= 0.
BOUNDS: dict[str, tuple[float, float]] = {
    "decay_tau_days": (0.1, 3650),
    "cleanup_threshold": (0, 1),
    "cleanup_threshold_valuable": (0, 1),
    "recall_block_chars": (200, 200_000),
    "recall_index_chars": (100, 100_000),
    "max_text_chars": (100, 1_000_000),
    "projection_threshold_tokens": (50, 1_000_000),
    "compression_ttl_days": (1, 3650),
    "summary_leaf_tokens": (500, 10_000_000),
    "summary_keep_turns": (0, 1000),
    "summary_condense_fanout": (2, 1000),
    "summary_max_depth": (0, 10),
    "scratchpad_max_chars": (100, 1_000_000),
}

HELP: dict[str, str] = {
    "decay_tau_days": "Days after which an untouched memory's retention falls to 1/e.",
    "cleanup_threshold": "The daily cleanup removes hook-captured memories below this retention.",
    "cleanup_threshold_valuable": "…and the model's own or imported memories below this one.",
    "recall_block_chars": "Characters of the recall block injected per turn.",
    "recall_index_chars": "Characters of the compact recall index.",
    "max_text_chars": "The longest memory text accepted.",
    "embedder": "The embedding model; changing it re-embeds every memory, so it has a page of its own.",
    "projection": "Shorten long tool results, keeping the original retrievable by hash.",
    "projection_threshold_tokens": "Tool results above this many tokens are projected.",
    "compression_ttl_days": "Days a stored original is kept (pinned ones are kept for good).",
    "summaries": "Fold long sessions into layered handoff notes.",
    "summary_leaf_tokens": "Tokens of raw events one leaf note covers.",
    "summary_keep_turns": "The last turns that are never folded.",
    "summary_condense_fanout": "Notes of one depth condensed into one of the next.",
    "summary_max_depth": "The deepest condensation level.",
    "scratchpad": "Give the model its own editable working memory per session.",
    "scratchpad_max_chars": "The scratchpad's size limit.",
}


@dataclass(frozen=True)
class Knob:
    name: str
    group: str
    default: Any
    kind: str  # "bool", "int", "float" or "text"
    minimum: float | None
    maximum: float | None
    help: str

    @property
    def editable(self) -> bool:
        return self.kind != "text"

    def value_in(self, workspace: Workspace) -> Any:
        value = (workspace.settings or {}).get(self.name)
        return self.default if value is None else value

    def is_set_in(self, workspace: Workspace) -> bool:
        return (workspace.settings or {}).get(self.name) is not None


def _kind(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    return "text"


def workspace_knobs() -> list[Knob]:
    knobs = []
    for group, defaults in registered_knobs():
        for name, default in defaults.items():
            kind = _kind(default)
            low, high = BOUNDS.get(name, (0, math.inf)) if kind in ("int", "float") else (0, 0)
            knobs.append(
                Knob(
                    name=name,
                    group=group,
                    default=default,
                    kind=kind,
                    minimum=low if kind in ("int", "float") else None,
                    maximum=high if kind in ("int", "float") and high != math.inf else None,
                    help=HELP.get(name, ""),
                )
            )
    return knobs


def _checked(knob: Knob, value: Any) -> Any:
    if knob.kind == "bool":
        if not isinstance(value, bool):
            raise Invalid(f"{knob.name} is on or off.", code="invalid_setting")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid(f"{knob.name} must be a number.", code="invalid_setting")
    if knob.kind == "int" and not float(value).is_integer():
        raise Invalid(f"{knob.name} must be a whole number.", code="invalid_setting")
    if not math.isfinite(value):
        raise Invalid(f"{knob.name} must be a finite number.", code="invalid_setting")
    if knob.minimum is not None and value < knob.minimum:
        raise Invalid(f"{knob.name} must be at least {knob.minimum:g}.", code="invalid_setting")
    if knob.maximum is not None and value > knob.maximum:
        raise Invalid(f"{knob.name} must be at most {knob.maximum:g}.", code="invalid_setting")
    return int(value) if knob.kind == "int" else float(value)


def workspace_settings_update(*, workspace: Workspace, values: Mapping[str, Any]) -> list[str]:
    """Set knobs by name; None resets a knob to its default. Returns the names that changed.

    All or nothing: one invalid value and nothing is written. Other keys of
    `Workspace.settings` (context options, mutes) are left as they are.
    """
    knobs = {k.name: k for k in workspace_knobs()}
    cleaned: dict[str, Any] = {}
    for name, value in values.items():
        knob = knobs.get(name)
        if knob is None or not knob.editable:
            raise Invalid(f"{name} cannot be changed here.", code="invalid_setting")
        cleaned[name] = None if value is None else _checked(knob, value)
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        settings = dict(locked.settings or {})
        changed = []
        for name, value in cleaned.items():
            if settings.get(name) == value:
                continue
            if value is None:
                settings.pop(name, None)
            else:
                settings[name] = value
            changed.append(name)
        if changed:
            locked.settings = settings
            locked.save(update_fields=["settings"])
    workspace.settings = locked.settings
    return changed
