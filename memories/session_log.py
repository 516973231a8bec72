"""What a session saw and why: its events in order, each injection's blocks
with the reason for each and the memory ids in it, and the ledger marks of
those ids. One reading for the dashboard's session page and the REST
`sessions/{id}/` endpoint.

It lives in `memories` rather than `contexts` because the ledger and the
USER core document are this app's (`contexts` imports neither app).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contexts.models import AgentSession, SessionEvent
from memories import core
from memories.dashboard_selectors import Mark, ledger_marks, memories_by_id
from memories.models import Memory

LEDGER_ROWS = 500  # ids listed with their marks; the rest are counted, not listed

# What each family of injected blocks is, for "why did the model see this".
BLOCK_ORIGINS = (
    ("context:preload", "the directory's preload, given once per session"),
    ("context:", "a system-prompt section from the directory's declarations"),
    ("memflow:core-", "frozen core memory, as it was when the session started"),
    ("memflow:protocol", "memflow's protocol: how to use the memory tools"),
    ("memflow:restore", "memories restored after a compaction"),
    ("memflow:lessons", "lessons recalled for this prompt"),
    ("memflow:recall", "memories recalled for this prompt"),
    ("memflow:", "memory"),
    ("flowctx:compression", "a note about projected tool output and how to expand it"),
    ("flowctx:handoff", "a handoff note summarising earlier turns"),
    ("flowctx:scratchpad", "the model's own scratchpad"),
    ("flowctx:", "working context"),
    ("skills:nudge", "a nudge to save or use a skill"),
    ("skills:", "skills"),
)


def block_origin(name: str) -> str:
    return next((why for prefix, why in BLOCK_ORIGINS if name.startswith(prefix)), "")


def _first_text(payload: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _block_ids(block: dict[str, Any]) -> list[int]:
    return [int(i) for i in block.get("memory_ids") or [] if isinstance(i, int)]


def injected_ids(events: Iterable[SessionEvent]) -> set[int]:
    """Every memory id named by the injections among `events`."""
    return {
        i
        for event in events
        if event.kind == "injection" and isinstance(event.payload, dict)
        for block in event.payload.get("blocks") or []
        if isinstance(block, dict)
        for i in _block_ids(block)
    }


def session_event_view(
    *,
    event: SessionEvent,
    marks: dict[int, list[Mark]],
    known: set[int],
    viewer: Any,
    session: AgentSession,
) -> dict[str, Any]:
    """One event as it is shown: an injection's blocks (the USER document
    withheld from anyone but the session's user), a prompt's or reply's text,
    a tool's name, an assembly's sections. `payload` is the stored payload,
    except for injections, whose blocks replace it.
    """
    payload = event.payload if isinstance(event.payload, dict) else {}
    view: dict[str, Any] = {"event": event, "kind": event.kind, "payload": payload}
    if event.kind == "injection":
        view["payload"] = None  # it holds every block's text, the USER document's too
        blocks = []
        for block in payload.get("blocks") or []:
            if not isinstance(block, dict):
                continue
            name = str(block.get("name", ""))
            text, withheld = core.injected_block_text(
                name=name, text=str(block.get("text", "")), viewer=viewer, session=session
            )
            blocks.append(
                {
                    "name": name,
                    "order": block.get("order"),
                    "why": block_origin(name),
                    "text": text,
                    "withheld": withheld,
                    "sha256": str(block.get("sha256", "")),
                    "memories": [
                        {
                            "id": i,
                            "exists": i in known,
                            "marks": sorted({m.kind for m in marks.get(i, [])}),
                        }
                        for i in _block_ids(block)
                    ],
                }
            )
        view["blocks"] = blocks
        view["trigger"] = str(payload.get("event", ""))
    elif event.kind == "user-prompt":
        view["text"] = _first_text(payload, "prompt", "user_prompt", "text")
    elif event.kind.startswith("post-tool-use"):
        view["tool"] = _first_text(payload, "tool_name", "toolName", "tool")
    elif event.kind == "stop":
        view["text"] = _first_text(
            payload, "last_assistant_message", "assistant_message", "message", "text"
        )
    elif event.kind == "context.assembly":
        view["sections"] = payload.get("sections") or []
        view["warnings"] = payload.get("warnings") or []
        view["preload"] = payload.get("preload")
    return view


@dataclass(frozen=True)
class LedgerRow:
    id: int
    memory: Memory | None  # None: forgotten since
    marks: list[Mark]


@dataclass(frozen=True)
class SessionLog:
    events: list[dict[str, Any]]  # `session_event_view` of each event asked for
    ledger: list[LedgerRow]  # the first `ledger_rows` ids with marks, by id
    ledger_ids: int  # how many ids have marks in all


def session_log(
    *,
    session: AgentSession,
    events: Iterable[SessionEvent],
    viewer: Any,
    ledger_rows: int = LEDGER_ROWS,
) -> SessionLog:
    """`events` (a page of the session's log) as shown to `viewer`, and its ledger.

    The session must have been fetched through a workspace the caller may read.
    """
    events = list(events)
    marks = ledger_marks(session=session)
    listed = sorted(marks)[:ledger_rows]
    memories = memories_by_id(workspace=session.workspace, ids=injected_ids(events) | set(listed))
    known = set(memories)  # every id shown in a block of these events was looked up
    return SessionLog(
        events=[
            session_event_view(
                event=event, marks=marks, known=known, viewer=viewer, session=session
            )
            for event in events
        ],
        ledger=[LedgerRow(id=i, memory=memories.get(i), marks=marks[i]) for i in listed],
        ledger_ids=len(marks),
    )
