"""Session work as recallable memory: a handoff note's fixes, failures, task and lessons.

flowctx hands each new note on (`contexts.flowctx.work`) from the worker;
`session_work_remember` turns it into a few memories of source `session`
(`work_items`; a failed call and the different call that then worked is a
lesson in `lessons`, `work_lessons`)
through the ordinary remember path, so they are deduped against what exists
and against each other, pass the same credential checks and are framed like
every memory. A text the session's model already remembered in other words
is left out; past `session_work_max` entries a session adds no more.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from contexts.errors import MemflowError
from contexts.flowctx.notes import GOAL, note_sections
from contexts.flowctx.work import WorkNote
from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memories import selectors
from memories.conf import SESSION_WORK_KNOWN_COSINE
from memories.models import Memory
from memories.services.inputs import RememberInput, memory_validate
from memories.services.remember import memory_remember_bulk
from memories.services.work_items import WorkItem, commit_messages, work_goal, work_items
from memories.services.work_lessons import lesson_items

logger = logging.getLogger(__name__)


def session_work_enabled(workspace: Workspace) -> bool:
    return bool(knob(workspace, "session_work"))


def _inputs(note: WorkNote, items: list[WorkItem]) -> tuple[list[RememberInput], int]:
    """The items as remember inputs, and how many were refused (a credential, a size)."""
    session = note.session
    kept, refused = [], 0
    for item in items:
        candidate = RememberInput(
            text=item.text,
            compartment=item.compartment,
            source=Memory.Source.SESSION,
            app=session.app[:64],
            metadata={
                "session": session.external_id,
                "node": note.node_id,
                "turns": [note.start_turn, note.end_turn],
                "kind": item.kind,
                "builder": note.builder,
            },
        )
        try:
            kept.append(memory_validate(workspace=session.workspace, item=candidate))
        except MemflowError as exc:  # SecretDetected, TextTooLong: the same rules as remember
            logger.info("session work item refused: %s", type(exc).__name__)
            refused += 1
    return kept, refused


def _known(note: WorkNote, vectors: np.ndarray) -> list[bool]:
    """For each vector, whether what the session's model remembered already says it."""
    session = note.session
    rows = list(
        Memory.objects.filter(
            workspace=session.workspace,
            session=session,
            source=Memory.Source.MODEL,  # not its captured prompts: those are the request
            valid_to__isnull=True,
            embedding__isnull=False,
        ).values_list("embedding", flat=True)
    )
    if not rows:
        return [False] * len(vectors)
    known = np.asarray([np.asarray(r, dtype=np.float32) for r in rows])
    return [bool((known @ v).max() >= SESSION_WORK_KNOWN_COSINE) for v in vectors]


def session_work_remember(note: WorkNote) -> dict[str, Any]:
    """Remember what `note` says the session did; what was kept, for the session log."""
    session = note.session
    workspace = session.workspace
    try:
        sections = note_sections(note.text)
    except ValueError:
        return {"added": [], "why": "the note does not parse"}
    goal = work_goal(sections[GOAL])
    events = note.events()
    items = work_items(sections, commits=commit_messages(events))
    items += lesson_items(events, goal=goal)
    if not items:
        return {"added": [], "why": "nothing in the note to keep"}
    inputs, refused = _inputs(note, items)
    room = int(knob(workspace, "session_work_max")) - (
        Memory.objects.filter(session=session, source=Memory.Source.SESSION).count()
    )
    capped = max(len(inputs) - max(room, 0), 0)
    inputs = inputs[: max(room, 0)]
    embedder = selectors.embedder_for(workspace)
    vectors = embedder.encode_passages([i.text for i in inputs]) if inputs else np.zeros((0, 1))
    known = _known(note, vectors) if inputs else []
    fresh = [(i, v) for i, v, k in zip(inputs, vectors, known, strict=True) if not k]
    try:
        results = (
            memory_remember_bulk(
                workspace=workspace,
                items=[i for i, _ in fresh],
                user=session.user,
                session=session,
                vectors=np.asarray([v for _, v in fresh]),
                vectors_model=embedder.model_id,
            )
            if fresh
            else []
        )
    except MemflowError as exc:  # the workspace's quota: nothing half-written, said once
        return {"added": [], "why": f"not stored: {exc.code}"}
    outcome: dict[str, Any] = {
        "added": [r.memory.pk for r in results if r.outcome == "created"],
        "repeated": [r.memory.pk for r in results if r.outcome != "created"],
    }
    skipped = {"known": sum(known), "refused": refused, "cap": capped}
    outcome["skipped"] = {k: n for k, n in skipped.items() if n}
    return outcome
