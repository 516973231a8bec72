"""Reads of the memory engine (a package: recall and its two arms, fusion,
states, insights, session packs, stats and the ledger, dedupe probes).

Raw SQL lives here and only here, each statement with a comment saying why
the ORM would not do. Every name callers use is re-exported here:
`from memories import selectors`.
"""

from __future__ import annotations

from memories.selectors.bm25 import (
    LEXICAL_CANDIDATES,
    LEXICAL_POSTINGS_BUDGET,
    PHRASE_MIN_WORDS,
    LexicalFeatures,
    LexicalHit,
    LexicalResult,
    LexicalStats,
    lexical_arm,
    lexical_statement,
    lexical_stats,
)
from memories.selectors.currency import Currency, currency_of
from memories.selectors.dedupe import (
    dedupe_neighbours,
    dedupe_neighbours_known,
    memories_by_norm_hash,
)
from memories.selectors.dense import DENSE_CANDIDATES, DenseHit, dense_arm, dense_hits
from memories.selectors.embedder import (
    EmbedderStatus,
    embedder_for,
    serving_backend,
    workspace_embedder_status,
)
from memories.selectors.entries import (
    MemoryFilters,
    is_visible,
    memory_forgotten_list,
    memory_get,
    memory_list,
    memory_purge_due,
    private_audit_targets,
    unexpired,
    visible_sql,
    visible_to,
)
from memories.selectors.floor import above_floor
from memories.selectors.fusion import (
    DENSE_BLIND_SHARE,
    DENSE_BLIND_WEIGHT,
    PHRASE_BONUS,
    RRF_K,
    Fusion,
    Scored,
    fuse,
)
from memories.selectors.insights import (
    Conflict,
    ConflictCluster,
    memory_below_retention,
    memory_conflict_clusters,
    memory_conflicts,
    memory_fading,
)
from memories.selectors.packs import SessionPack, cut_at_sentence, session_pack
from memories.selectors.projects import other_project, project_label
from memories.selectors.prompts import PromptRanking, asks_past_requests, is_captured_prompt
from memories.selectors.recall import Hit, RecallResult, memory_recall
from memories.selectors.search import (
    EXACT_PROBE_BUDGET,
    EXACT_SCAN_BELOW,
    GIN_PENDING_LIST_BULK_KB,
    GIN_PENDING_LIST_KB,
    SEARCH_SETTINGS,
    SIDE_CONNECTION_WAIT_S,
    STAT_DOCS,
    STAT_LENGTH,
    STAT_SWAPPING,
    QueryVector,
    Seen,
    _vector_literal,
    beside,
    reembed_swapping,
    search_settings_apply,
    workspace_size,
)
from memories.selectors.states import state_current, state_history, state_keys
from memories.selectors.stats import (
    HottestRank,
    MostUsed,
    ledger_hottest,
    ledger_summary,
    memory_counts_by_workspace,
    memory_stats,
)

__all__ = [
    "DENSE_BLIND_SHARE",
    "DENSE_BLIND_WEIGHT",
    "DENSE_CANDIDATES",
    "EXACT_PROBE_BUDGET",
    "EXACT_SCAN_BELOW",
    "GIN_PENDING_LIST_BULK_KB",
    "GIN_PENDING_LIST_KB",
    "LEXICAL_CANDIDATES",
    "LEXICAL_POSTINGS_BUDGET",
    "PHRASE_BONUS",
    "PHRASE_MIN_WORDS",
    "RRF_K",
    "SEARCH_SETTINGS",
    "SIDE_CONNECTION_WAIT_S",
    "STAT_DOCS",
    "STAT_LENGTH",
    "STAT_SWAPPING",
    "Conflict",
    "ConflictCluster",
    "Currency",
    "DenseHit",
    "EmbedderStatus",
    "Fusion",
    "Hit",
    "HottestRank",
    "LexicalFeatures",
    "LexicalHit",
    "LexicalResult",
    "LexicalStats",
    "MemoryFilters",
    "MostUsed",
    "PromptRanking",
    "QueryVector",
    "RecallResult",
    "Scored",
    "Seen",
    "SessionPack",
    "_vector_literal",
    "above_floor",
    "asks_past_requests",
    "beside",
    "currency_of",
    "cut_at_sentence",
    "dedupe_neighbours",
    "dedupe_neighbours_known",
    "dense_arm",
    "dense_hits",
    "embedder_for",
    "fuse",
    "is_captured_prompt",
    "is_visible",
    "ledger_hottest",
    "ledger_summary",
    "lexical_arm",
    "lexical_statement",
    "lexical_stats",
    "memories_by_norm_hash",
    "memory_below_retention",
    "memory_conflict_clusters",
    "memory_conflicts",
    "memory_counts_by_workspace",
    "memory_fading",
    "memory_forgotten_list",
    "memory_get",
    "memory_list",
    "memory_purge_due",
    "memory_recall",
    "memory_stats",
    "other_project",
    "private_audit_targets",
    "project_label",
    "reembed_swapping",
    "search_settings_apply",
    "serving_backend",
    "session_pack",
    "state_current",
    "state_history",
    "state_keys",
    "unexpired",
    "visible_sql",
    "visible_to",
    "workspace_embedder_status",
    "workspace_size",
]
