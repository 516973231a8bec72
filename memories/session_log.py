"""What a session saw and why: its events in order, each injection's blocks
with the reason for each and the memory ids in it, and the ledger marks of
those ids. One reading for the dashboard's session page and the REST
`sessions/{id}/` endpoint.

It lives in `memories` rather than `contexts` because the ledger and the
USER core document are this app's (`contexts` imports neither app).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Func, JSONField, OuterRef, Q, QuerySet, Subquery, Value

from contexts.flowctx.selectors import projection_recorded
from contexts.hooks import MemoryWhy, Ranking
from contexts.models import AgentSession, SessionEvent, Workspace
from memories import core
from memories.models import InjectionEvent, Memory
from memories.selectors.dashboard import (
    Mark,
    ledger_marks,
    memories_by_id,
    memory_access_history,
)
from memories.selectors.entries import visible_to

LEDGER_ROWS = 500  # ids listed with their marks; the rest are counted, not listed

# What each family of injected blocks is, for "why did the model see this".
# The first prefix that matches names it.
BLOCK_ORIGINS = (
    ("context:preload", "the directory's preload, given once per session"),
    ("context:", "a system-prompt section from the directory's declarations"),
    ("memflow:core-", "frozen core memory, as it was when the session started"),
    ("memflow:protocol", "memflow's protocol: how to use the memory tools"),
    ("memflow:session", "the session's id, so memflow's tools keep what they do with it"),
    ("memflow:restore", "recent activity in this workspace, so a new session does not start blind"),
    ("memflow:checkpoint", "names the compaction summary just kept in long-term memory"),
    ("memflow:lessons", "lessons recalled for this prompt"),
    ("memflow:recall", "memories recalled for this prompt"),
    ("memflow:index", "pointers to more memories recalled for this prompt, read on demand"),
    ("memflow:", "memory"),
    ("flowctx:compression", "a note about projected tool output and how to expand it"),
    ("flowctx:handoff", "a handoff note summarising earlier turns"),
    ("flowctx:scratchpad", "the model's own scratchpad"),
    ("flowctx:", "working context"),
    ("skills:nudge", "a nudge to save or use a skill"),
    ("skills:", "skills"),
)
# What a session start's `source` changes in the reason of a block given at it.
SOURCE_ORIGINS = {
    ("memflow:restore", "resume"): "recent activity in this workspace, new since the session "
    "was resumed",
    ("memflow:restore", "clear"): "recent activity in this workspace, given again after /clear",
    ("flowctx:handoff", "compact"): "a handoff note summarising the turns a compaction replaced",
    ("flowctx:handoff", "resume"): "a handoff note summarising earlier turns of the resumed "
    "session",
}


def block_origin(name: str, source: str = "") -> str:
    """Why a block of this name is given; `source`: the session start's, when given at one."""
    family = next((prefix for prefix, _ in BLOCK_ORIGINS if name.startswith(prefix)), "")
    if (family, source) in SOURCE_ORIGINS:
        return SOURCE_ORIGINS[(family, source)]
    return next((why for prefix, why in BLOCK_ORIGINS if prefix == family), "")


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


@dataclass(frozen=True)
class MarkCount:
    """One kind of ledger mark of a memory in a session: how often, first and last."""

    kind: str
    count: int
    first: datetime
    last: datetime


def mark_counts(marks: Iterable[Mark]) -> list[MarkCount]:
    """Marks aggregated by kind (one "injected" badge with its count), kinds in the order they first happened."""
    counts: dict[str, MarkCount] = {}
    for m in marks:
        seen = counts.get(m.kind)
        counts[m.kind] = (
            MarkCount(kind=m.kind, count=1, first=m.at, last=m.at)
            if seen is None
            else MarkCount(kind=m.kind, count=seen.count + 1, first=seen.first, last=m.at)
        )
    return list(counts.values())


def why_json(why: MemoryWhy | None) -> dict[str, Any] | None:
    """A memory's recorded why, with its full field names (the page and the API)."""
    if why is None:
        return None
    return {
        "rank": why.rank,
        "score": why.score,
        "fused": why.fused,
        "cosine": why.cosine,
        "dense_rank": why.dense_rank,
        "bm25": why.bm25,
        "lexical_rank": why.lexical_rank,
        "terms": list(why.terms),
        "retention": why.retention,
        "basis": why.basis,
    }


def ranking_json(ranking: Ranking | None) -> dict[str, Any] | None:
    if ranking is None:
        return None
    weight = ranking.lexical_weight
    return {
        "lexical_weight": weight,
        "dense_weight": None if weight is None else round(1 - weight, 3),
        "reason": ranking.reason,
    }


def _block_view(
    block: dict[str, Any],
    *,
    source: str,
    marks: dict[int, list[Mark]],
    known: set[int],
    viewer: Any,
    session: AgentSession,
) -> dict[str, Any]:
    name = str(block.get("name", ""))
    text, withheld = core.injected_block_text(
        name=name, text=str(block.get("text", "")), viewer=viewer, session=session
    )
    if not withheld and _holds_private(_block_ids(block), viewer):
        # A block that gave its author a private entry reads as theirs alone.
        text, withheld = "", True
    ranking = Ranking.from_json(block.get("why"))
    return {
        "name": name,
        "order": block.get("order"),
        "why": block_origin(name, source),
        "ranking": ranking_json(ranking),
        "text": text,
        "withheld": withheld,
        "sha256": str(block.get("sha256", "")),
        "memories": [
            {
                "id": i,
                "exists": i in known,
                "marks": sorted({m.kind for m in marks.get(i, [])}),
                "mark_counts": mark_counts(marks.get(i, [])),
                "why": why_json(ranking.of(i) if ranking else None),
            }
            for i in _block_ids(block)
        ],
    }


def _holds_private(ids: list[int], viewer: Any) -> bool:
    if not ids:
        return False
    return (
        Memory.objects.filter(pk__in=ids, private=True)
        .exclude(visible_to(getattr(viewer, "pk", None)))
        .exists()
    )


def session_event_view(
    *,
    event: SessionEvent,
    marks: dict[int, list[Mark]],
    known: set[int],
    viewer: Any,
    session: AgentSession,
) -> dict[str, Any]:
    """One event as it is shown: an injection's blocks (the USER document
    withheld from anyone but the session's user) with why each memory ranked,
    a prompt's or reply's text, a tool's name, an assembly's sections.
    `payload` is the stored payload, except for injections, whose blocks replace it.
    """
    payload = event.payload if isinstance(event.payload, dict) else {}
    view: dict[str, Any] = {"event": event, "kind": event.kind, "payload": payload}
    if event.kind == "injection":
        view["payload"] = None  # it holds every block's text, the USER document's too
        said = payload.get("source")
        source = said if isinstance(said, str) else ""
        view["blocks"] = [
            _block_view(
                block, source=source, marks=marks, known=known, viewer=viewer, session=session
            )
            for block in payload.get("blocks") or []
            if isinstance(block, dict)
        ]
        view["trigger"] = str(payload.get("event", ""))
        view["source"] = source
        projection = projection_recorded(payload.get("tool_result"))
        if projection is not None:
            view["projection"] = projection
    elif event.kind == "user-prompt":
        view["text"] = _first_text(payload, "prompt", "user_prompt", "text")
    elif event.kind.startswith("post-tool-use"):
        view["tool"] = _first_text(payload, "tool_name", "toolName", "tool")
    elif event.kind == "stop":
        view["text"] = _first_text(
            payload, "last_assistant_message", "assistant_message", "message", "text"
        )
    elif event.kind == "context.error":
        view["text"] = _first_text(payload, "error")
    elif event.kind == "context.assembly":
        view["sections"] = payload.get("sections") or []
        view["warnings"] = payload.get("warnings") or []
        view["preload"] = payload.get("preload")
    agent = _first_text(payload, "agent_id")
    if agent:
        # A sub-agent's event, in the session it shares with the main thread.
        view["agent"] = {"id": agent, "type": _first_text(payload, "agent_type")}
    return view


# --- filters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventFilters:
    """Which of a session's events to show: of one kind, of one turn, naming one memory."""

    kind: str = ""
    turn: int | None = None
    memory: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.kind) or self.turn is not None or self.memory is not None


def _names_memory(memory_id: int) -> Q:
    """An injection that gave the memory, or a tool call that named it (MCP get, supersede)."""
    return Q(kind="injection", payload__contains={"blocks": [{"memory_ids": [memory_id]}]}) | Q(
        Q(payload__tool_input__memory_id=memory_id)
        | Q(payload__tool_input__old_memory_id=memory_id),
        kind__startswith="post-tool-use",
    )


def session_events(*, session: AgentSession, filters: EventFilters) -> QuerySet[SessionEvent]:
    """The session's event log under `filters`, in the order it happened."""
    # Uses index: sessionevent_kind_idx (session prefix, and kind when one is asked for).
    events = SessionEvent.objects.filter(session=session)
    if filters.kind:
        events = events.filter(kind=filters.kind)
    if filters.turn is not None:
        events = events.filter(turn=filters.turn)
    if filters.memory is not None:
        events = events.filter(_names_memory(filters.memory))
    return events.order_by("at", "id")


def session_event_kinds(*, session: AgentSession) -> list[str]:
    """The kinds of event the session has, for the filter's choices."""
    return sorted(
        SessionEvent.objects.filter(session=session)
        .order_by()
        .values_list("kind", flat=True)
        .distinct()
    )


# --- the log ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerRow:
    id: int
    memory: Memory | None  # None: forgotten since
    marks: list[Mark]
    counts: list[MarkCount] = field(default_factory=list)


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
    memories = memories_by_id(
        workspace=session.workspace,
        ids=injected_ids(events) | set(listed),
        viewer_id=getattr(viewer, "pk", None),
    )
    known = set(memories)  # every id shown in a block of these events was looked up
    return SessionLog(
        events=[
            session_event_view(
                event=event, marks=marks, known=known, viewer=viewer, session=session
            )
            for event in events
        ],
        ledger=[
            LedgerRow(id=i, memory=memories.get(i), marks=marks[i], counts=mark_counts(marks[i]))
            for i in listed
        ],
        ledger_ids=len(marks),
    )


# --- a memory's access history ---------------------------------------------------------------

# A hook records the ledger mark and then the injection, in one transaction.
INJECTION_WINDOW = timedelta(minutes=1)


def _first_in_path(path: str) -> Func:
    return Func(
        F("payload"), Value(path), function="jsonb_path_query_first", output_field=JSONField()
    )


def memory_access_events(*, workspace: Workspace, memory: Memory) -> QuerySet[InjectionEvent]:
    """The memory's ledger marks, newest first, each with the session event to open.

    An `injected` mark: the injection that gave it (`event_id`), its block's
    name (`block`) and why it ranked there (`why`, as recorded). Another mark:
    the first event after it (`event_id`, `event_turn`), the tool call that
    used it.
    """
    memory_id = int(memory.pk)
    gave = SessionEvent.objects.filter(
        session=OuterRef("session"),
        kind="injection",
        at__gte=OuterRef("at"),
        at__lte=OuterRef("at") + INJECTION_WINDOW,
        payload__contains={"blocks": [{"memory_ids": [memory_id]}]},
    ).order_by("at", "id")
    after = (
        SessionEvent.objects.filter(session=OuterRef("session"), at__gte=OuterRef("at"))
        .exclude(kind="injection")
        .order_by("at", "id")
    )
    # memory_id is an integer: safe inside the JSON path.
    block = _first_in_path(f"$.blocks[*] ? (@.memory_ids[*] == {memory_id}).name")
    why = _first_in_path(f"$.blocks[*].why.memories[*] ? (@.id == {memory_id})")
    return memory_access_history(workspace=workspace, memory=memory).annotate(
        gave_id=Subquery(gave.values("id")[:1]),
        gave_turn=Subquery(gave.values("turn")[:1]),
        gave_block=Subquery(gave.annotate(b=block).values("b")[:1]),
        gave_why=Subquery(gave.annotate(w=why).values("w")[:1]),
        after_id=Subquery(after.values("id")[:1]),
        after_turn=Subquery(after.values("turn")[:1]),
    )


def access_row_why(row: InjectionEvent) -> dict[str, Any] | None:
    """The recorded why of an `injected` row of `memory_access_events`."""
    return why_json(MemoryWhy.from_json(getattr(row, "gave_why", None)))
