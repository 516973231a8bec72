"""Per-workspace knobs of the memory engine, with their defaults.

Stored in `Workspace.settings` (JSON), edited in the dashboard's settings
page; anything unset falls back to these.
"""

from __future__ import annotations

from typing import Any

from contexts.models import Workspace

DEFAULTS: dict[str, Any] = {
    "decay_tau_days": 30.0,
    "cleanup_threshold": 0.1,  # remove below this retention…
    "cleanup_threshold_valuable": 0.1 / 3,  # …or this, for model/import entries
    "recall_block_chars": 6000,
    "recall_index_chars": 1200,
    "max_text_chars": 20000,
}

# Dedupe gates per embedding model. Cosine alone never decides: a fold also
# needs the lexical evidence in `services._dedupe_decision`. Measured with
# `memflow bench dedupe` (see README); unknown models use the default.
DEDUPE_MERGE_COSINE: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.55,
}
DEDUPE_MERGE_COSINE_DEFAULT = 0.75
# The contained text must be at least this share of the containing one: a
# two-word entry inside a paragraph is not "the same fact, extended".
DEDUPE_MIN_CONTAINED_SHARE = 0.3


def memory_setting(workspace: Workspace, name: str) -> Any:
    value = (workspace.settings or {}).get(name)
    return DEFAULTS[name] if value is None else value


def merge_cosine(model_id: str) -> float:
    return DEDUPE_MERGE_COSINE.get(model_id, DEDUPE_MERGE_COSINE_DEFAULT)
