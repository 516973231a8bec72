"""Per-workspace knobs of flowctx, with their defaults (`Workspace.settings`)."""

from __future__ import annotations

from typing import Any

from contexts.models import Workspace

DEFAULTS: dict[str, Any] = {
    # Reversible projection of tool results (seed 003, capability 3).
    "projection": True,
    "projection_threshold_tokens": 1000,
    "compression_ttl_days": 7,
    # Layered handoff-note summaries (capabilities 1 and 2).
    "summaries": True,
    "summary_leaf_tokens": 40000,
    "summary_keep_turns": 2,
    "summary_condense_fanout": 6,
    "summary_max_depth": 1,
    # The model's own working memory (capability 4; off by default, as in the seed).
    "scratchpad": False,
    "scratchpad_max_chars": 8000,
}


def flowctx_setting(workspace: Workspace, name: str) -> Any:
    value = (workspace.settings or {}).get(name)
    return DEFAULTS[name] if value is None else value
