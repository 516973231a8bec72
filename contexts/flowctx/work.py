"""What a session did, handed on to whoever keeps it.

Each leaf note a fold writes, and at a session's end the note over the turns
no leaf covers, goes to the work observers; `memories` registers one in its
`AppConfig.ready()` (contexts imports neither memories nor skills, so the
hand-off is a registry, like the hook pipeline's). Runs in the worker, never
on a hook's path. What each observer kept, and why a span gave nothing, is
recorded in the session log as a `work-capture` event, once per span.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Max

from contexts.flowctx.notes import NoteEvent
from contexts.models import AgentSession, SessionEvent, SummaryNode, Workspace

logger = logging.getLogger(__name__)

WORK_EVENT = "work-capture"


@dataclass(frozen=True)
class WorkNote:
    """One handoff note over a span of a session's turns."""

    session: AgentSession
    node_id: str  # "" for the tail a session end folds without storing a node
    start_turn: int
    end_turn: int
    text: str
    builder: str  # "llm" | "extractive"

    def events(self) -> list[NoteEvent]:
        """The span's events as the note's builder read them (tool calls with their output)."""
        from contexts.flowctx.services import _span_events

        return _span_events(self.session, self.start_turn, self.end_turn)


WorkObserver = Callable[[WorkNote], dict[str, Any]]
_observers: dict[str, tuple[WorkObserver, Callable[[Workspace], bool]]] = {}


def register_work_observer(
    name: str, fn: WorkObserver, *, enabled: Callable[[Workspace], bool] = lambda w: True
) -> None:
    """`fn(note)` is called for every new note of a workspace where `enabled`, in
    the worker; it returns what it kept (stored in the session log: small, JSON)."""
    _observers[name] = (fn, enabled)


def work_wanted(workspace: Workspace) -> bool:
    """Whether any observer takes this workspace's session work."""
    return any(enabled(workspace) for _, enabled in _observers.values())


def _captured(session: AgentSession) -> set[tuple[str, int, int]]:
    rows = SessionEvent.objects.filter(session=session, kind=WORK_EVENT).values_list(
        "payload", flat=True
    )
    spans = set()
    for payload in rows:
        turns = payload.get("turns") if isinstance(payload, dict) else None
        if isinstance(turns, list) and len(turns) == 2:
            spans.add((str(payload.get("node", "")), int(turns[0]), int(turns[1])))
    return spans


def work_record(
    *, session: AgentSession, start: int, end: int, node: str = "", **payload: Any
) -> SessionEvent:
    """The session log's word on one span: what was kept of it, or why nothing was."""
    return SessionEvent.objects.create(
        session=session,
        kind=WORK_EVENT,
        payload={"node": node, "turns": [start, end], **payload},
        turn=max(end, 1),
    )


def work_hand_on(*, session: AgentSession, notes: Iterable[WorkNote]) -> list[SessionEvent]:
    """Give each note not handed on before to every observer; record what each kept.

    An observer that fails is logged and recorded with the note; the others
    still run, and the fold that wrote the note stands.
    """
    wanted = {name: fn for name, (fn, enabled) in _observers.items() if enabled(session.workspace)}
    if not wanted:
        return []
    done = _captured(session)
    recorded = []
    for note in notes:
        if (note.node_id, note.start_turn, note.end_turn) in done:
            continue
        kept: dict[str, Any] = {}
        for name, fn in sorted(wanted.items()):
            try:
                kept[name] = fn(note)
            except Exception as exc:
                logger.exception("work observer %s failed on session %s", name, session.pk)
                kept[name] = {"error": type(exc).__name__}
        recorded.append(
            work_record(
                session=session,
                start=note.start_turn,
                end=note.end_turn,
                node=note.node_id,
                builder=note.builder,
                kept=kept,
            )
        )
    return recorded


def work_leaves(nodes: Iterable[SummaryNode]) -> list[WorkNote]:
    """The leaves among a fold's nodes, as notes: a condensed node restates its leaves."""
    return [
        WorkNote(
            session=n.session,
            node_id=n.node_id,
            start_turn=n.start_turn,
            end_turn=n.end_turn,
            text=n.text,
            builder=n.builder,
        )
        for n in nodes
        if n.depth == 0
    ]


def work_uncovered_from(session: AgentSession) -> int:
    """The first turn no leaf of the session covers."""
    covered = SummaryNode.objects.filter(session=session, depth=0).aggregate(end=Max("end_turn"))
    return int(covered["end"] or 0) + 1


def work_tail(*, session: AgentSession, end: int) -> WorkNote | str:
    """The note over the turns no leaf covers, or why there is none (in words).

    Built like a leaf (the LLM port when configured, else the extractive
    builder) but not stored as a node: the session is over, nobody resumes
    from it, and the notes API keeps showing only what the folds wrote.
    """
    from contexts.flowctx.services import _default_builder, _span_events

    start = work_uncovered_from(session)
    if end == 0:
        return "the session has no events"
    if end < start:
        return "every turn is already in a note"
    events = _span_events(session, start, end)
    if not events:
        return "no readable events to build a note from"
    try:
        text, how = _default_builder(session.workspace)(events)
    except Exception as exc:  # a builder's bug must not lose the session's record
        logger.exception("work note of session %s could not be built", session.pk)
        return f"the note could not be built ({type(exc).__name__})"
    return WorkNote(
        session=session, node_id="", start_turn=start, end_turn=end, text=text, builder=how
    )
