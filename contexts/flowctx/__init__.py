"""flowctx: working memory for long sessions (seed 003).

Recent work stays verbatim, nearby history is compressed reversibly
(`projection`), older history folds into engineer handoff notes (`notes`,
`llm`). The pure parts live here; models live in the `contexts` app proper,
and flowctx's services, selectors, API and hook providers beside the pure parts.

Other apps use flowctx through the names below and nothing deeper: the LLM
client (skills writes with it too) and the session log read as events.
"""

from __future__ import annotations

from contexts.flowctx.llm import LlmConfig, LlmError, llm_complete
from contexts.flowctx.notes import (
    NoteEvent,
    error_line,
    fix_key,
    fix_pairs,
    is_inspection,
    note_events,
    tool_kind,
)

__all__ = [
    "LlmConfig",
    "LlmError",
    "NoteEvent",
    "error_line",
    "fix_key",
    "fix_pairs",
    "is_inspection",
    "llm_complete",
    "note_events",
    "tool_kind",
]
