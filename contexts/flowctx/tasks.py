"""Background jobs of flowctx (django-q2): summary folds and the ref cleanup."""

from __future__ import annotations

import logging

from django.db import transaction
from django_q.tasks import async_task

from contexts.flowctx import services, work
from contexts.models import AgentSession
from contexts.tenancy.knobs import knob

logger = logging.getLogger(__name__)


def summaries_enqueue(*, session: AgentSession, force: bool = False) -> int:
    """Bump the session's fold generation and queue a fold for it (after commit)."""
    generation = services.summaries_request_fold(session=session)
    transaction.on_commit(
        lambda: async_task(
            "contexts.flowctx.tasks.summaries_fold",
            session.pk,
            generation,
            force,
            task_name=f"fold-{session.pk}-{generation}",
        )
    )
    return generation


def summaries_fold(session_id: int, generation: int, force: bool = False) -> int:
    session = AgentSession.objects.select_related("workspace").filter(pk=session_id).first()
    if session is None or session.fold_generation != generation:
        return 0  # gone, or superseded before it started
    nodes = services.summaries_fold(session=session, generation=generation, force=force)
    work.work_hand_on(session=session, notes=work.work_leaves(nodes))
    return len(nodes)


def session_work_enqueue(*, session: AgentSession) -> None:
    """Queue the capture of what an ended session did (after commit)."""
    transaction.on_commit(
        lambda: async_task(
            "contexts.flowctx.tasks.session_work_capture",
            session.pk,
            task_name=f"work-{session.pk}-{session.turns}",
        )
    )


def session_work_capture(session_id: int) -> int:
    """A session ended: fold what is left, and hand on its leaves and the tail.

    Returns how many notes were handed on. A span that gives no note is
    recorded in the session log with the reason.
    """
    session = AgentSession.objects.select_related("workspace").filter(pk=session_id).first()
    if session is None or not work.work_wanted(session.workspace):
        return 0
    nodes = []
    if knob(session.workspace, "summaries"):
        generation = services.summaries_request_fold(session=session)
        nodes = services.summaries_fold(session=session, generation=generation, force=True)
    notes = work.work_leaves(nodes)
    end = max(services.session_last_turn(session=session), 0)
    tail = work.work_tail(session=session, end=end)
    if isinstance(tail, str):
        start = work.work_uncovered_from(session)
        if start <= end or end == 0:  # a span that gave nothing: say why, once
            work.work_record(session=session, start=min(start, end), end=end, kept={}, why=tail)
    else:
        notes.append(tail)
    return len(work.work_hand_on(session=session, notes=notes))


def compression_cleanup() -> int:
    """The daily schedule: drop unpinned compression refs past their expiry."""
    deleted = services.compression_cleanup()
    if deleted:
        logger.info("compression cleanup removed %d expired refs", deleted)
    return deleted
