"""Where a memory came from, as recall, the index and the dashboard show it.

Session work (source `session`) names the session and the turns its note
covered, and the note node that can be read in full; the other sources say
only their source and app.
"""

from __future__ import annotations

from typing import Any

from contexts.hooks import inert
from memories.models import Memory


def work_provenance(memory: Memory) -> dict[str, Any] | None:
    """{"session", "node", "turns", "kind"} of a session-work memory, else None."""
    meta = memory.metadata if isinstance(memory.metadata, dict) else {}
    if memory.source != Memory.Source.SESSION or not isinstance(meta.get("session"), str):
        return None
    turns = meta.get("turns")
    valid = isinstance(turns, list) and len(turns) == 2 and all(isinstance(t, int) for t in turns)
    return {
        "session": meta["session"],
        "node": meta.get("node") if isinstance(meta.get("node"), str) else "",
        "turns": turns if valid else None,
        "kind": meta.get("kind") if isinstance(meta.get("kind"), str) else "",
    }


def source_label(memory: Memory) -> str:
    """`source[:app]`, and for session work the session and turns it came from."""
    label = memory.source + (f":{memory.app}" if memory.app else "")
    work = work_provenance(memory)
    if work is not None:
        flat = " ".join(work["session"].split())[:60]
        label += f" | session {inert(flat)}"
        if work["turns"]:
            label += f" turns {work['turns'][0]}-{work['turns'][1]}"
    return label
