"""Engineer handoff notes: older session history folded into six fixed sections.

A generic summary keeps the direction that worked and drops the routes that
were ruled out, and it paraphrases exact strings (a commit hash, a session id,
a function name) so that a later reference to them goes wrong. A handoff note
keeps both on purpose: failed approaches get their own section, identifiers and
paths are copied verbatim.

Two builders write the same format. `note_extractive` needs no model and is
deterministic (same events, byte-identical note), so it is always available
and keeps a KV-cache prefix stable; `note_llm` asks the configured LLM, given
the extractive note as a draft so nothing mechanical is lost. `note_build`
picks the LLM when there is one and falls back to the extractive note.

A package: the session log read as events (`events`), the note format
(`format`), what a tool call was (`tools`), identifiers and files found
(`found`), merging a prior note (`merge`), the two builders (`extractive`,
`llm_note`). Every name callers use is re-exported here.
"""

from __future__ import annotations

from contexts.flowctx.notes.events import NoteEvent, note_events
from contexts.flowctx.notes.extractive import note_extractive
from contexts.flowctx.notes.format import (
    FAILED,
    FILES,
    GOAL,
    IDENTIFIERS,
    NONE,
    OPEN,
    SECTIONS,
    WORKING,
    note_sections,
)
from contexts.flowctx.notes.llm_note import note_build, note_llm
from contexts.flowctx.notes.tools import error_line, fix_key, fix_pairs, is_inspection, tool_kind

__all__ = [
    "FAILED",
    "FILES",
    "GOAL",
    "IDENTIFIERS",
    "NONE",
    "OPEN",
    "SECTIONS",
    "WORKING",
    "NoteEvent",
    "error_line",
    "fix_key",
    "fix_pairs",
    "is_inspection",
    "note_build",
    "note_events",
    "note_extractive",
    "note_llm",
    "note_sections",
    "tool_kind",
]
