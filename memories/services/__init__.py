"""Writes of the memory engine (a package: remember and dedupe, an entry's
lifecycle, usage and the ledger, index upkeep, re-embedding).

Embedding happens before any transaction opens; the database part of a
write runs under a per-workspace advisory lock, so two sessions remembering
the same thing at the same moment fold into one entry instead of racing.
Every name callers use is re-exported here: `from memories import services`.
"""

from __future__ import annotations

from contexts.errors import Conflict, Invalid, MemflowError, NotFound
from memories import selectors
from memories.services.dedupe import _insert_unfolded, dedupe_undo
from memories.services.forget import (
    memory_forget,
    memory_purge,
    memory_purge_expired,
    memory_restore,
)
from memories.services.forget_bulk import (
    BULK_FORGET_MAX,
    BulkForgetResult,
    ForgetFilter,
    memory_forget_matching,
)
from memories.services.index import PENDING_LIST_INDEXES, bulk_index_writes, index_pending_fold
from memories.services.inputs import (
    Outcome,
    RememberInput,
    RememberResult,
    SecretDetected,
    TextTooLong,
    memory_validate,
    parse_expiry,
)
from memories.services.lifecycle import (
    CleanupReport,
    memory_cleanup,
    memory_consolidate,
    memory_pin,
    memory_supersede,
    memory_update,
)
from memories.services.reembed import (
    REEMBED_BATCH,
    REEMBED_CATCH_UP,
    REEMBED_STEP_SECONDS,
    SWAP_CHUNK,
    ReembedOutcome,
    reembed_enqueue,
    reembed_step,
    workspace_embedder_set,
)
from memories.services.remember import memory_remember, memory_remember_bulk, memory_remember_stream
from memories.services.triage import memory_conflict_resolve, memory_fading_resolve
from memories.services.usage import ledger_record, memory_recall_answer, memory_rehearse
from memories.services.visibility import memory_set_private
from memories.services.writes import _workspace_lock

__all__ = [
    "BULK_FORGET_MAX",
    "PENDING_LIST_INDEXES",
    "REEMBED_BATCH",
    "REEMBED_CATCH_UP",
    "REEMBED_STEP_SECONDS",
    "SWAP_CHUNK",
    "BulkForgetResult",
    "CleanupReport",
    "Conflict",
    "ForgetFilter",
    "Invalid",
    "MemflowError",
    "NotFound",
    "Outcome",
    "ReembedOutcome",
    "RememberInput",
    "RememberResult",
    "SecretDetected",
    "TextTooLong",
    "_insert_unfolded",
    "_workspace_lock",
    "bulk_index_writes",
    "dedupe_undo",
    "index_pending_fold",
    "ledger_record",
    "memory_cleanup",
    "memory_conflict_resolve",
    "memory_consolidate",
    "memory_fading_resolve",
    "memory_forget",
    "memory_forget_matching",
    "memory_pin",
    "memory_purge",
    "memory_purge_expired",
    "memory_recall_answer",
    "memory_rehearse",
    "memory_remember",
    "memory_remember_bulk",
    "memory_remember_stream",
    "memory_restore",
    "memory_set_private",
    "memory_supersede",
    "memory_update",
    "memory_validate",
    "parse_expiry",
    "reembed_enqueue",
    "reembed_step",
    "selectors",
    "workspace_embedder_set",
]
